//! `verify`'s checks against the chain (built with the `chain` feature): the report against its
//! Run account (`--run-account`, a file the Solana CLI wrote; `--run`, fetched, or its
//! finalization found in the address's history once closed) and its anchor memo
//! (`--signature`).

use std::fmt::Write as _;
use std::io::Read as _;

use anyhow::Context;
use skilltrial_chain::account::{self, Disagreement};
use skilltrial_chain::anchor::{AnchorMemo, check_transaction};
use skilltrial_chain::cli_config::Commitment;
use skilltrial_chain::history;
use skilltrial_core::report::Report;
use skilltrial_core::settlement::{SettlementCheck, SettlementError};

use crate::cli::{Global, VerifyArgs};
use crate::commands::verify::{self, AnchorView, OnChainFindings, RunAccountCheck};
use crate::commands::{chain, input};
use crate::exit::CliError;

/// Runs the on-chain checks `args` asks for and says what they found.
pub(crate) fn on_chain(
    args: &VerifyArgs,
    global: &Global,
    report: &Report,
    settlement: Option<&Result<SettlementCheck, SettlementError>>,
) -> Result<OnChainFindings, CliError> {
    let session = if args.signature.is_some() || args.run.is_some() {
        Some(chain::connect(&args.solana, global)?)
    } else {
        None
    };
    let (on_chain, run_user) = match (&args.run_account, &args.run, &session) {
        (Some(path), _, _) => (Some(run_account(path, report, settlement)?), None),
        (None, Some(address), Some(session)) => {
            let (checked, user) = live_run_account(
                session,
                &skilltrial_chain::host_key(address),
                report,
                settlement,
                args.wait_secs,
            )?;
            (Some(checked), Some(user))
        }
        _ => (None, None),
    };
    let anchor = match (&args.signature, &session) {
        (Some(signature), Some(session)) => {
            let signer = match (&args.signer, run_user) {
                (Some(given), _) => skilltrial_chain::host_key(given),
                (None, Some(user)) => user,
                (None, None) => {
                    return Err(CliError::Rejected(anyhow::anyhow!(
                        "--signature: say whose anchor it must be with --signer <ADDRESS> (or give --run, whose user it then must be)"
                    )));
                }
            };
            Some(anchor_check(
                session,
                &solana_signature::Signature::from(signature.0),
                signer,
                report,
                args.wait_secs,
            )?)
        }
        _ => None,
    };
    let mut found = OnChainFindings::none();
    found.ok = on_chain.as_ref().is_none_or(OnChain::agrees)
        && anchor.as_ref().is_none_or(|a| a.problems.is_empty());
    found.pending = anchor.as_ref().is_some_and(|a| a.pending.is_some());
    if let Some(chain) = &on_chain {
        found.run_account = Some(chain.json());
        let _ = writeln!(
            found.ok_text,
            "{} agrees (run id, digest, batches, trials, usage and the anchored report hash)",
            chain.describe()
        );
        if !chain.compared {
            let _ = writeln!(
                found.mismatch_text,
                "run account {}: not compared: the report's settlement does not recompute",
                chain.address
            );
        }
    }
    if let Some(anchor) = &anchor {
        found.anchor = Some(anchor.json());
        match anchor.pending {
            None => {
                let _ = writeln!(
                    found.ok_text,
                    "anchor: transaction {} is finalized and carries {} in a top-level memo signed by {}",
                    anchor.signature, anchor.memo, anchor.signer
                );
            }
            Some(level) => {
                let _ = writeln!(
                    found.ok_text,
                    "PENDING: anchor {} is {} but not finalized after {} s: nothing is wrong and nothing is proven yet; run verify again shortly (exit {})",
                    anchor.signature,
                    level.as_str(),
                    anchor.waited_secs,
                    crate::exit::PENDING_EXIT
                );
            }
        }
        for problem in &anchor.problems {
            let _ = writeln!(
                found.mismatch_text,
                "MISMATCH: anchor {}: {problem}",
                anchor.signature
            );
        }
    }
    if let Some(chain) = &on_chain {
        for d in &chain.disagreements {
            let _ = writeln!(
                found.mismatch_text,
                "MISMATCH: {}: {}: the report says {}, the chain holds {}",
                chain.describe(),
                d.field,
                d.report,
                d.account
            );
        }
    }
    Ok(found)
}

/// The largest account file `--run-account` reads: a Run account is a few hundred bytes, which
/// the Solana CLI's JSON wraps in well under a kilobyte.
const MAX_ACCOUNT_BYTES: u64 = 64 * 1024;

/// The report against its Run account: where they disagree (nothing when they agree), or not
/// compared at all when the report's own settlement does not recompute.
pub(crate) struct OnChain {
    pub(crate) address: String,
    pub(crate) source: Source,
    compared: bool,
    pub(crate) disagreements: Vec<Disagreement>,
}

impl OnChain {
    /// Agreement, which needs a comparison: a report whose settlement does not recompute is
    /// never said to agree with an account.
    pub(crate) fn agrees(&self) -> bool {
        self.compared && self.disagreements.is_empty()
    }

    /// What the report was compared with, in words.
    fn describe(&self) -> String {
        match &self.source {
            Source::Account => format!("run account {}", self.address),
            Source::Finalization(signature) => format!(
                "run {} (closed): its finalize transaction {signature}",
                self.address
            ),
        }
    }

    fn json(&self) -> RunAccountCheck {
        let disagreements = self
            .disagreements
            .iter()
            .map(|d| verify::Disagreement {
                field: d.field,
                report: d.report.clone(),
                account: d.account.clone(),
            })
            .collect();
        let (source, signature) = match &self.source {
            Source::Account => ("account", None),
            Source::Finalization(signature) => ("finalize_transaction", Some(signature.clone())),
        };
        RunAccountCheck {
            ok: self.compared.then_some(self.disagreements.is_empty()),
            compared: self.compared,
            address: self.address.clone(),
            source,
            finalize_signature: signature,
            disagreements,
        }
    }
}

/// Reads `path` (`solana account <RUN> --output json`) and compares it with the report. Refuses a
/// report without a settlement, a file that is not a Run account of the program, and a
/// settlement that does not recompute (there is then nothing sound to compare).
fn run_account(
    path: &std::path::Path,
    report: &Report,
    settlement: Option<&Result<SettlementCheck, SettlementError>>,
) -> Result<OnChain, CliError> {
    let (Some(section), Some(result)) = (&report.settlement, settlement) else {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "--run-account {}: the report is not a hosted run's (it has no settlement to compare)",
            path.display()
        )));
    };
    let meta = input::regular_file(path, "an account JSON file")
        .map_err(|e| CliError::from(e).context("--run-account"))?;
    let rejected = |why: String| {
        CliError::Rejected(anyhow::anyhow!("--run-account {}: {why}", path.display()))
    };
    if meta.len() > MAX_ACCOUNT_BYTES {
        return Err(rejected(format!(
            "larger than {} KiB: not a Run account",
            MAX_ACCOUNT_BYTES / 1024
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_ACCOUNT_BYTES + 1).read_to_end(&mut bytes))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| rejected("not UTF-8 text".to_owned()))?;
    let account = account::run_from_cli_json(&text).map_err(|e| rejected(e.to_string()))?;
    let books = account::RunBooks::of_account(&account);
    compare_run(&books, Source::Account, report, result, section, &rejected)
}

/// The most transactions naming a closed Run's address that `--run` reads back through (newest
/// first) looking for its finalization: a run is a handful (open, its batches, cancel,
/// finalize, close), so this bounds only a re-used address's many lifetimes.
const HISTORY_LIMIT: usize = 10_000;

/// Compares the report with the Run at `address`: its account over RPC while it is open, else —
/// closed, or re-opened as another run — its finalize transaction found in the cluster's
/// history. Also returns the Run's user (whose anchor the memo must be, unless --signer says
/// otherwise).
pub(crate) fn live_run_account(
    session: &chain::Session,
    address: &skilltrial_chain::Pubkey,
    report: &Report,
    settlement: Option<&Result<SettlementCheck, SettlementError>>,
    wait_secs: u64,
) -> Result<(OnChain, skilltrial_chain::Pubkey), CliError> {
    let (Some(section), Some(result)) = (&report.settlement, settlement) else {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "--run {address}: the report is not a hosted run's (it has no settlement to compare)"
        )));
    };
    let rejected = |why: String| CliError::Rejected(anyhow::anyhow!("--run {address}: {why}"));
    let live = session.chain.run(address)?;
    // The account, while it holds the report's run — or when it is not the report's Run at all,
    // which the comparison then names (address, run id, manifest). The history only for the
    // report's own address, closed or re-opened as another run.
    let own_address = address.to_string() == section.run_address;
    if let Some(live) = live.filter(|l| l.account.run.run_id == section.run_id || !own_address) {
        let user = live.account.run.user;
        let books = account::RunBooks::of_account(&live.account);
        return Ok((
            compare_run(&books, Source::Account, report, result, section, &rejected)?,
            user,
        ));
    }
    let url = session.chain.url().to_owned();
    let mut told = false;
    let started = std::time::Instant::now();
    // A node indexes a transaction under its addresses a moment after it confirms it (longer under
    // load): a run whose finalization is not listed yet is looked for again, up to --wait-secs.
    let found = loop {
        let found = session
            .chain
            .find_finalization(
                address,
                section.run_id,
                HISTORY_LIMIT,
                session.chain.commitment(),
                &mut |_| {},
            )
            .map_err(|e| match e {
                history::HistoryError::Rpc(e) => CliError::from(e),
                other => rejected(other.to_string()),
            })?;
        if matches!(found, history::Found::Finalized(_)) || started.elapsed().as_secs() >= wait_secs
        {
            break found;
        }
        if !told {
            crate::commands::progress::notice(&format!(
                "{address}: no finalization of run id {} in {url}'s history yet; looking again for up to {wait_secs} s…",
                section.run_id
            ));
            told = true;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    };
    match found {
        history::Found::Finalized(found) => {
            let books = &found.books;
            // The event names the Run's own user and manifest: the address must be theirs.
            let expected = skilltrial_chain::pda::run(&found.user, &books.manifest_hash);
            if expected != *address {
                return Err(rejected(format!(
                    "its finalization {} names user {} and a manifest whose Run address is {expected}, not this one",
                    found.signature, found.user
                )));
            }
            Ok((
                compare_run(
                    books,
                    Source::Finalization(found.signature.to_string()),
                    report,
                    result,
                    section,
                    &rejected,
                )?,
                found.user,
            ))
        }
        history::Found::NotFinalized { opened, read } => Err(rejected(format!(
            "run id {} was opened (transaction {opened}) and {url} holds no finalization of it: no report hash is anchored (read after it: {})",
            section.run_id,
            read.join("; ")
        ))),
        history::Found::Nothing { searched } => Err(rejected(format!(
            "{url} has no Run account for run id {} there, and none of the {searched} finalized transactions it keeps that name the address finalized it (never opened on this cluster, or a node that keeps no history that old: ask one that does)",
            section.run_id
        ))),
    }
}

/// Where the books a report was compared with came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// The Run account itself.
    Account,
    /// The `RunFinalized` event of this finalize transaction (the account is closed or holds
    /// another run).
    Finalization(String),
}

/// The report against a run's books (its account, already read and checked as the program's, or
/// its finalization).
fn compare_run(
    books: &account::RunBooks,
    source: Source,
    report: &Report,
    result: &Result<SettlementCheck, SettlementError>,
    section: &skilltrial_core::settlement::Settlement,
    rejected: &dyn Fn(String) -> CliError,
) -> Result<OnChain, CliError> {
    let address = books.address.to_string();
    let Ok(check) = result else {
        // The settlement itself is already reported as a mismatch: nothing sound to compare.
        return Ok(OnChain {
            address,
            source,
            compared: false,
            disagreements: Vec::new(),
        });
    };
    let hashes = report
        .hash()
        .and_then(|r| report.manifest_digest().map(|m| (r, m)))
        .map_err(|e| rejected(format!("cannot hash the report: {e}")))?;
    let (report_hash, manifest_hash) = hashes;
    Ok(OnChain {
        address,
        source,
        compared: true,
        disagreements: account::compare_books(
            section,
            check,
            &manifest_hash.0,
            &report_hash.0,
            books,
        ),
    })
}

/// The anchor memo transaction checked against the report.
struct AnchorCheck {
    signature: String,
    signer: skilltrial_chain::Pubkey,
    memo: String,
    /// Every way it falls short; empty when it anchors this report (or is still pending).
    problems: Vec<String>,
    /// Where it stands when it landed but was not finalized within the wait: nothing can be
    /// said of it yet.
    pending: Option<Commitment>,
    waited_secs: u64,
}

impl AnchorCheck {
    fn json(&self) -> AnchorView {
        AnchorView {
            ok: self.problems.is_empty() && self.pending.is_none(),
            pending: self.pending.map(Commitment::as_str),
            signature: self.signature.clone(),
            signer: self.signer.to_string(),
            memo: self.memo.clone(),
            problems: self.problems.clone(),
        }
    }
}

/// Fetches transaction `signature` finalized (waiting up to `wait_secs` for finality) and checks
/// that it anchors this report's recomputed hashes for `signer`.
fn anchor_check(
    session: &chain::Session,
    parsed: &solana_signature::Signature,
    signer: skilltrial_chain::Pubkey,
    report: &Report,
    wait_secs: u64,
) -> Result<AnchorCheck, CliError> {
    let hashes = report
        .manifest_digest()
        .and_then(|m| report.hash().map(|r| (m, r)))
        .map_err(|e| CliError::Rejected(anyhow::anyhow!("cannot hash the report: {e}")))?;
    let memo = AnchorMemo {
        manifest_hash: hashes.0.0,
        report_hash: hashes.1.0,
    };
    let started = std::time::Instant::now();
    let mut told = false;
    let (problems, pending) = loop {
        if let Some(tx) = session.chain.transaction(parsed, Commitment::Finalized)? {
            break (check_transaction(&tx, &memo, &signer), None);
        }
        let status = session.chain.signature_status(parsed)?;
        // A signature the cluster has never seen is not waited for the whole time: a sent
        // transaction is known to the node within seconds.
        let unseen_for_long = status.is_none() && started.elapsed().as_secs() >= wait_secs.min(15);
        if unseen_for_long || started.elapsed().as_secs() >= wait_secs {
            break match status {
                None => (
                    vec![format!("{} has no such transaction", session.chain.url())],
                    None,
                ),
                // Landed but not final: nothing is wrong yet, and nothing is proven.
                Some(s) => (Vec::new(), Some(s.level)),
            };
        }
        if !told {
            crate::commands::progress::notice(&format!(
                "waiting for transaction {parsed} to be finalized (up to {wait_secs} s)…"
            ));
            told = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    Ok(AnchorCheck {
        signature: parsed.to_string(),
        signer,
        memo: memo.text(),
        problems,
        pending,
        waited_secs: wait_secs,
    })
}
