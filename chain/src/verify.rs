//! A report checked against the chain: against its Run (the account while it holds the report's
//! run, else the finalize transaction found in the address's history) and against its anchor memo.
//! `skilltrial verify --run/--run-account/--signature` and the runner client's `report --remote`
//! both ask here, so the two can never judge one report differently.

use std::time::{Duration, Instant};

use skilltrial_core::report::Report;
use skilltrial_core::settlement::{Settlement, SettlementCheck, SettlementError};
use solana_signature::Signature;

use crate::Pubkey;
use crate::account::{self, Disagreement, RunBooks};
use crate::anchor::{AnchorMemo, check_transaction};
use crate::cli_config::Commitment;
use crate::history::{Found, HistoryError};
use crate::rpc::{Chain, RpcFailure};

/// The most transactions naming a closed Run's address read back through (newest first) looking
/// for its finalization: a run is a handful (open, its batches, cancel, finalize, close), so this
/// bounds only a re-used address's many lifetimes.
pub const HISTORY_LIMIT: usize = 10_000;

/// Why a report could not be compared with the chain. The node failing is the environment; every
/// other reason is a judgement on the report or the address given.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Rpc(#[from] RpcFailure),
    /// The report, the address or what the chain holds for it rules a comparison out.
    #[error("{0}")]
    Refused(String),
}

/// Where the books a report was compared with came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The Run account itself.
    Account,
    /// The `RunFinalized` event of this finalize transaction (the account is closed or holds
    /// another run).
    Finalization(String),
}

/// The report against its Run: where they disagree (nothing when they agree), or not compared at
/// all when the report's own settlement does not recompute.
#[derive(Debug, Clone)]
pub struct OnChain {
    pub address: String,
    pub source: Source,
    pub compared: bool,
    pub disagreements: Vec<Disagreement>,
}

impl OnChain {
    /// Agreement, which needs a comparison: a report whose settlement does not recompute is never
    /// said to agree with an account.
    pub fn agrees(&self) -> bool {
        self.compared && self.disagreements.is_empty()
    }

    /// What the report was compared with, in words.
    pub fn describe(&self) -> String {
        match &self.source {
            Source::Account => format!("run account {}", self.address),
            Source::Finalization(signature) => format!(
                "run {} (closed): its finalize transaction {signature}",
                self.address
            ),
        }
    }
}

/// The report's settlement section and its recomputation, or the refusal of a report that is not
/// a hosted run's.
fn settled<'a>(
    report: &'a Report,
    settlement: Option<&'a Result<SettlementCheck, SettlementError>>,
) -> Result<(&'a Settlement, &'a Result<SettlementCheck, SettlementError>), VerifyError> {
    match (&report.settlement, settlement) {
        (Some(section), Some(result)) => Ok((section, result)),
        _ => Err(VerifyError::Refused(
            "the report is not a hosted run's (it has no settlement to compare)".to_owned(),
        )),
    }
}

/// Compares the report with the Run at `address`: its account over RPC while it holds the
/// report's run, else (closed, or re-opened as another run) its finalize transaction found in the
/// cluster's history, looked for again for up to `wait` while the node has not indexed it yet
/// (`notice` is told once). Also returns the Run's user (whose anchor a memo must be, unless the
/// caller names another signer).
pub fn against_run(
    chain: &Chain,
    address: &Pubkey,
    report: &Report,
    settlement: Option<&Result<SettlementCheck, SettlementError>>,
    wait: Duration,
    notice: &mut dyn FnMut(&str),
) -> Result<(OnChain, Pubkey), VerifyError> {
    let (section, result) = settled(report, settlement)?;
    let live = chain.run(address)?;
    // The account, while it holds the report's run — or when it is not the report's Run at all,
    // which the comparison then names (address, run id, manifest). The history only for the
    // report's own address, closed or re-opened as another run.
    let own_address = address.to_string() == section.run_address;
    if let Some(live) = live.filter(|l| l.account.run.run_id == section.run_id || !own_address) {
        let user = live.account.run.user;
        let books = RunBooks::of_account(&live.account);
        return Ok((
            compare(&books, Source::Account, report, result, section)?,
            user,
        ));
    }
    let url = chain.url().to_owned();
    let mut told = false;
    let started = Instant::now();
    // A node indexes a transaction under its addresses a moment after it confirms it (longer
    // under load): a run whose finalization is not listed yet is looked for again.
    let found = loop {
        let found = chain
            .find_finalization(
                address,
                section.run_id,
                HISTORY_LIMIT,
                chain.commitment(),
                &mut |_| {},
            )
            .map_err(|e| match e {
                HistoryError::Rpc(e) => VerifyError::Rpc(e),
                other => VerifyError::Refused(other.to_string()),
            })?;
        if matches!(found, Found::Finalized(_)) || started.elapsed() >= wait {
            break found;
        }
        if !told {
            notice(&format!(
                "{address}: no finalization of run id {} in {url}'s history yet; looking again for up to {} s…",
                section.run_id,
                wait.as_secs()
            ));
            told = true;
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    match found {
        Found::Finalized(found) => {
            let books = &found.books;
            // The event names the Run's own user and manifest: the address must be theirs.
            let expected = crate::pda::run(&found.user, &books.manifest_hash);
            if expected != *address {
                return Err(VerifyError::Refused(format!(
                    "its finalization {} names user {} and a manifest whose Run address is {expected}, not this one",
                    found.signature, found.user
                )));
            }
            let source = Source::Finalization(found.signature.to_string());
            Ok((compare(books, source, report, result, section)?, found.user))
        }
        Found::NotFinalized { opened, read } => Err(VerifyError::Refused(format!(
            "run id {} was opened (transaction {opened}) and {url} holds no finalization of it: no report hash is anchored (read after it: {})",
            section.run_id,
            read.join("; ")
        ))),
        Found::Nothing { searched } => Err(VerifyError::Refused(format!(
            "{url} has no Run account for run id {} there, and none of the {searched} finalized transactions it keeps that name the address finalized it (never opened on this cluster, or a node that keeps no history that old: ask one that does)",
            section.run_id
        ))),
    }
}

/// Compares the report with a Run account the caller read (`solana account <RUN> --output json`,
/// decoded and checked as the program's).
pub fn against_account(
    books: &RunBooks,
    report: &Report,
    settlement: Option<&Result<SettlementCheck, SettlementError>>,
) -> Result<OnChain, VerifyError> {
    let (section, result) = settled(report, settlement)?;
    compare(books, Source::Account, report, result, section)
}

/// The report against a run's books (its account, or its finalization).
fn compare(
    books: &RunBooks,
    source: Source,
    report: &Report,
    result: &Result<SettlementCheck, SettlementError>,
    section: &Settlement,
) -> Result<OnChain, VerifyError> {
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
    let (report_hash, manifest_hash) = report
        .hash()
        .and_then(|r| report.manifest_digest().map(|m| (r, m)))
        .map_err(|e| VerifyError::Refused(format!("cannot hash the report: {e}")))?;
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
#[derive(Debug, Clone)]
pub struct AnchorCheck {
    pub signature: String,
    pub signer: Pubkey,
    pub memo: String,
    /// Every way it falls short; empty when it anchors this report (or is still pending).
    pub problems: Vec<String>,
    /// Where it stands when it landed but was not finalized within the wait: nothing can be said
    /// of it yet.
    pub pending: Option<Commitment>,
    pub waited_secs: u64,
}

/// Fetches transaction `signature` finalized (waiting up to `wait` for finality; `notice` is told
/// once) and checks that it anchors this report's recomputed hashes for `signer`.
pub fn anchor(
    chain: &Chain,
    signature: &Signature,
    signer: Pubkey,
    report: &Report,
    wait: Duration,
    notice: &mut dyn FnMut(&str),
) -> Result<AnchorCheck, VerifyError> {
    let (manifest_hash, report_hash) = report
        .manifest_digest()
        .and_then(|m| report.hash().map(|r| (m, r)))
        .map_err(|e| VerifyError::Refused(format!("cannot hash the report: {e}")))?;
    let memo = AnchorMemo {
        manifest_hash: manifest_hash.0,
        report_hash: report_hash.0,
    };
    let started = Instant::now();
    let mut told = false;
    let (problems, pending) = loop {
        if let Some(tx) = chain.transaction(signature, Commitment::Finalized)? {
            break (check_transaction(&tx, &memo, &signer), None);
        }
        let status = chain.signature_status(signature)?;
        // A signature the cluster has never seen is not waited for the whole time: a sent
        // transaction is known to the node within seconds.
        let unseen_for_long =
            status.is_none() && started.elapsed() >= wait.min(Duration::from_secs(15));
        if unseen_for_long || started.elapsed() >= wait {
            break match status {
                None => (
                    vec![format!("{} has no such transaction", chain.url())],
                    None,
                ),
                // Landed but not final: nothing is wrong yet, and nothing is proven.
                Some(s) => (Vec::new(), Some(s.level)),
            };
        }
        if !told {
            notice(&format!(
                "waiting for transaction {signature} to be finalized (up to {} s)…",
                wait.as_secs()
            ));
            told = true;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    Ok(AnchorCheck {
        signature: signature.to_string(),
        signer,
        memo: memo.text(),
        problems,
        pending,
        waited_secs: wait.as_secs(),
    })
}
