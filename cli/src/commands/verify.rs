//! `skilltrial verify <report.json>`: recompute both hashes from the file alone. The file must be
//! a report of this format (it is read into the typed report); anything else is refused, naming
//! the file. A hosted run's report also carries its settlement: its digest is recomputed from the
//! evidence records and each record tied to a published attempt (`Report::verify_settlement`).
//! With `--run-account` (the Run account as `solana account <RUN> --output json` prints it), the
//! report is also compared with the account field by field (`skilltrial_chain::account`): run id,
//! digest, batches, trials, usage and the report hash the runner anchored.
//!
//! Both hashes are always checked and both reported, in one shape whether they match or not:
//! `{"ok", "report_hash": {"stated", "recomputed", "ok"}, "manifest_hash": {…}}`, so a script
//! reads a mismatch the way it reads a success, and an edited manifest names both hashes it
//! breaks (the manifest is part of the report's content). A `settlement` member is added only
//! when the report has one.

use std::fmt::Write as _;
use std::io::Read as _;

use anyhow::Context;
use serde_json::{Value, json};
use skilltrial_chain::account::{self, Disagreement};
use skilltrial_chain::anchor::{AnchorMemo, check_transaction};
use skilltrial_chain::cli_config::Commitment;
use skilltrial_core::report::{self, Report};
use skilltrial_core::settlement::{SettlementCheck, SettlementError};

use crate::cli::{Global, VerifyArgs};
use crate::commands::{chain, input};
use crate::exit::{CliError, Status};
use crate::output;

/// One hash: what the file states and what its content hashes to (null when absent).
fn check(stated: Option<&str>, recomputed: Option<String>) -> Value {
    let ok = stated.is_some() && stated == recomputed.as_deref();
    json!({ "stated": stated, "recomputed": recomputed, "ok": ok })
}

/// The largest file `verify` reads. A report holds every answer: 100 requests of at most 256 KiB
/// each is 25 MiB, and JSON may escape a byte as six (`\u0001`), so 150 MiB at worst, plus the
/// manifest and the verdicts. 256 MiB is above that and far below what would exhaust memory.
const MAX_REPORT_BYTES: u64 = 256 * 1024 * 1024;

/// Reads and types a report file: refused (naming the file) unless it is a report of this
/// format that writes back exactly as read.
pub fn read_report(path: &std::path::Path) -> Result<Report, CliError> {
    // A FIFO or device is refused before it is opened: reading one would block or never end.
    let meta = input::regular_file(path, "a report.json file")?;
    let too_large = || {
        CliError::Rejected(anyhow::anyhow!(
            "{} is larger than {} MiB, more than any report holds: not a report",
            path.display(),
            MAX_REPORT_BYTES / (1024 * 1024)
        ))
    };
    if meta.len() > MAX_REPORT_BYTES {
        return Err(too_large());
    }
    // Read through `take` too: the file may grow between the check and the read.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_REPORT_BYTES + 1).read_to_end(&mut bytes))
        .with_context(|| format!("cannot read {}", path.display()))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_REPORT_BYTES {
        return Err(too_large());
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        CliError::Rejected(anyhow::anyhow!(
            "{} is not JSON: not UTF-8 at byte {}",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| CliError::Rejected(anyhow::anyhow!("{} is not JSON: {e}", path.display())))?;
    if !doc.is_object() {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "{} is not a report: not a JSON object",
            path.display()
        )));
    }
    // Typed, and only if the type writes back exactly this document: the hashes of the typed
    // report are then the hashes of the file's content.
    let report = Report::from_value(&doc)
        .map_err(|e| CliError::Rejected(anyhow::anyhow!("{}: {e}", path.display())))?;
    Ok(report)
}

pub fn run(args: &VerifyArgs, global: &Global) -> Result<Status, CliError> {
    let report = read_report(&args.report)?;
    let rejected = |e: report::ReportError| {
        CliError::Rejected(anyhow::anyhow!(
            "{}: cannot hash it: {e}",
            args.report.display()
        ))
    };
    let report_hash = check(
        report.report_hash.as_deref(),
        Some(report.hash().map_err(rejected)?.to_string()),
    );
    let manifest_hash = check(
        Some(&report.manifest_hash),
        Some(report.manifest_digest().map_err(rejected)?.to_string()),
    );
    let settlement = report.verify_settlement();
    let settled_ok = settlement.as_ref().is_none_or(Result::is_ok);
    let session = if args.signature.is_some() || args.run.is_some() {
        Some(chain::connect(&args.solana, global)?)
    } else {
        None
    };
    let (on_chain, run_user) = match (&args.run_account, &args.run, &session) {
        (Some(path), _, _) => (Some(run_account(path, &report, settlement.as_ref())?), None),
        (None, Some(address), Some(session)) => {
            let (checked, user) = live_run_account(session, address, &report, settlement.as_ref())?;
            (Some(checked), Some(user))
        }
        _ => (None, None),
    };
    let anchor = match (&args.signature, &session) {
        (Some(signature), Some(session)) => {
            let signer = match (&args.signer, run_user) {
                (Some(given), _) => *given,
                (None, Some(user)) => user,
                (None, None) => {
                    return Err(CliError::Rejected(anyhow::anyhow!(
                        "--signature: say whose anchor it must be with --signer <ADDRESS> (or give --run, whose user it then must be)"
                    )));
                }
            };
            Some(anchor_check(
                session,
                signature,
                signer,
                &report,
                args.wait_secs,
            )?)
        }
        _ => None,
    };
    let on_chain_ok = on_chain.as_ref().is_none_or(OnChain::agrees);
    let anchor_ok = anchor.as_ref().is_none_or(|a| a.problems.is_empty());
    let ok = report_hash["ok"] == true
        && manifest_hash["ok"] == true
        && settled_ok
        && on_chain_ok
        && anchor_ok;
    if global.json {
        let mut doc =
            json!({ "ok": ok, "report_hash": report_hash, "manifest_hash": manifest_hash });
        // Only a hosted run's report has the member, so a local report's output is unchanged.
        if let (Some(result), Some(section)) = (&settlement, &report.settlement) {
            doc["settlement"] = settlement_json(&section.digest_sha256, result);
        }
        if let Some(chain) = &on_chain {
            doc["run_account"] = chain.json();
        }
        if let Some(anchor) = &anchor {
            doc["anchor"] = anchor.json();
        }
        output::json(&doc)?;
    } else if ok {
        let mut out = format!(
            "ok: report hash {} and manifest hash {} recompute from the file\n",
            report_hash["stated"].as_str().unwrap_or(""),
            manifest_hash["stated"].as_str().unwrap_or("")
        );
        if let Some(Ok(check)) = &settlement {
            let _ = writeln!(
                out,
                "settlement: digest {} recomputed from {} in {} ({} lamports of usage)",
                check.digest.hex(),
                report::count_of(check.records as u64, "evidence record", "evidence records"),
                report::count_of(check.batches as u64, "batch", "batches"),
                check.usage_lamports
            );
        }
        if let Some(chain) = &on_chain {
            let _ = writeln!(
                out,
                "run account: {} agrees (run id, digest, batches, trials, usage and the anchored report hash)",
                chain.address
            );
        }
        if let Some(anchor) = &anchor {
            let _ = writeln!(
                out,
                "anchor: transaction {} is finalized and carries {} in a top-level memo signed by {}",
                anchor.signature, anchor.memo, anchor.signer
            );
        }
        output::text(&out)?;
    } else {
        let mut out = String::new();
        for (name, what, check) in [
            ("report hash", "the content", &report_hash),
            ("manifest hash", "the manifest", &manifest_hash),
        ] {
            if check["ok"] == true {
                continue;
            }
            let said = |v: &Value| {
                v.as_str()
                    .map_or_else(|| "nothing".to_owned(), str::to_owned)
            };
            let _ = writeln!(
                out,
                "MISMATCH: {name}: the file states {}, {what} hashes to {}",
                said(&check["stated"]),
                said(&check["recomputed"])
            );
        }
        if let Some(Err(e)) = &settlement {
            let _ = writeln!(out, "MISMATCH: {e}");
        }
        if let Some(chain) = on_chain.as_ref().filter(|c| !c.compared) {
            let _ = writeln!(
                out,
                "run account {}: not compared: the report's settlement does not recompute",
                chain.address
            );
        }
        if let Some(anchor) = &anchor {
            for problem in &anchor.problems {
                let _ = writeln!(out, "MISMATCH: anchor {}: {problem}", anchor.signature);
            }
        }
        if let Some(chain) = &on_chain {
            for d in &chain.disagreements {
                let _ = writeln!(
                    out,
                    "MISMATCH: run account {}: {}: the report says {}, the account holds {}",
                    chain.address, d.field, d.report, d.account
                );
            }
        }
        output::text(&out)?;
    }
    Ok(if ok { Status::Ok } else { Status::CheckFailed })
}

/// The largest account file `--run-account` reads: a Run account is a few hundred bytes, which
/// the Solana CLI's JSON wraps in well under a kilobyte.
const MAX_ACCOUNT_BYTES: u64 = 64 * 1024;

/// The report against its Run account: where they disagree (nothing when they agree), or not
/// compared at all when the report's own settlement does not recompute.
pub(crate) struct OnChain {
    pub(crate) address: String,
    compared: bool,
    pub(crate) disagreements: Vec<Disagreement>,
}

impl OnChain {
    /// Agreement, which needs a comparison: a report whose settlement does not recompute is
    /// never said to agree with an account.
    pub(crate) fn agrees(&self) -> bool {
        self.compared && self.disagreements.is_empty()
    }

    fn json(&self) -> Value {
        let disagreements: Vec<Value> = self
            .disagreements
            .iter()
            .map(|d| json!({ "field": d.field, "report": d.report, "account": d.account }))
            .collect();
        json!({
            "ok": self.compared.then_some(self.disagreements.is_empty()),
            "compared": self.compared,
            "address": self.address,
            "disagreements": disagreements,
        })
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
        .map_err(|e| e.context("--run-account"))?;
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
    compare_run(&account, report, result, section, &rejected)
}

/// Fetches the Run at `address` over RPC and compares it with the report; also returns the
/// Run's user (whose anchor the memo must be, unless --signer says otherwise).
pub(crate) fn live_run_account(
    session: &chain::Session,
    address: &skilltrial_chain::Pubkey,
    report: &Report,
    settlement: Option<&Result<SettlementCheck, SettlementError>>,
) -> Result<(OnChain, skilltrial_chain::Pubkey), CliError> {
    let (Some(section), Some(result)) = (&report.settlement, settlement) else {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "--run {address}: the report is not a hosted run's (it has no settlement to compare)"
        )));
    };
    let key = *address;
    let live = session
        .chain
        .run(&key)
        .map_err(chain::rpc_error)?
        .ok_or_else(|| {
            CliError::Rejected(anyhow::anyhow!(
                "--run {address}: {} has no Run account there (closed, or never opened on this cluster)",
                session.chain.url()
            ))
        })?;
    let rejected = |why: String| CliError::Rejected(anyhow::anyhow!("--run {address}: {why}"));
    let user = live.account.run.user;
    Ok((
        compare_run(&live.account, report, result, section, &rejected)?,
        user,
    ))
}

/// The report against a Run account already read and checked as the program's.
fn compare_run(
    account: &account::RunAccount,
    report: &Report,
    result: &Result<SettlementCheck, SettlementError>,
    section: &skilltrial_core::settlement::Settlement,
    rejected: &dyn Fn(String) -> CliError,
) -> Result<OnChain, CliError> {
    let address = account.address.to_string();
    let Ok(check) = result else {
        // The settlement itself is already reported as a mismatch: nothing sound to compare.
        return Ok(OnChain {
            address,
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
        compared: true,
        disagreements: account::compare(section, check, &manifest_hash.0, &report_hash.0, account),
    })
}

/// The anchor memo transaction checked against the report.
struct AnchorCheck {
    signature: String,
    signer: skilltrial_chain::Pubkey,
    memo: String,
    /// Every way it falls short; empty when it anchors this report.
    problems: Vec<String>,
}

impl AnchorCheck {
    fn json(&self) -> Value {
        json!({
            "ok": self.problems.is_empty(),
            "signature": self.signature,
            "signer": self.signer.to_string(),
            "memo": self.memo,
            "problems": self.problems,
        })
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
    let problems = loop {
        if let Some(tx) = session
            .chain
            .transaction(parsed, Commitment::Finalized)
            .map_err(chain::rpc_error)?
        {
            break check_transaction(&tx, &memo, &signer);
        }
        let status = session
            .chain
            .signature_status(parsed)
            .map_err(chain::rpc_error)?;
        // A signature the cluster has never seen is not waited for the whole time: a sent
        // transaction is known to the node within seconds.
        let unseen_for_long = status.is_none() && started.elapsed().as_secs() >= wait_secs.min(15);
        if unseen_for_long || started.elapsed().as_secs() >= wait_secs {
            break vec![match status {
                None => format!("{} has no such transaction", session.chain.url()),
                Some(s) => format!(
                    "not finalized after {wait_secs} s (it is {}); try again shortly",
                    s.level.as_str()
                ),
            }];
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
    })
}

/// The settlement as `--json` reports it, in one shape whether it recomputes or not: the digest
/// the file states, the one recomputed (`null` when the evidence stops short of a digest), the
/// counts, and the first thing that does not hold.
fn settlement_json(stated: &str, result: &Result<SettlementCheck, SettlementError>) -> Value {
    match result {
        Ok(check) => json!({
            "ok": true,
            "stated": stated,
            "recomputed": check.digest.hex(),
            "records": check.records,
            "batches": check.batches,
            "usage_lamports": check.usage_lamports,
            "error": null,
        }),
        Err(e) => {
            let recomputed = match e {
                SettlementError::Digest { expected, .. } => Some(expected.as_str()),
                _ => None,
            };
            json!({
                "ok": false,
                "stated": stated,
                "recomputed": recomputed,
                "records": null,
                "batches": null,
                "usage_lamports": null,
                "error": e.to_string(),
            })
        }
    }
}
