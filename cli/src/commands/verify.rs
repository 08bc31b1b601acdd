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

use serde_json::{Value, json};
use skilltrial_core::report;
use skilltrial_core::settlement::{SettlementCheck, SettlementError};

use crate::cli::{Global, VerifyArgs};
use crate::exit::{CliError, Status};
use crate::output;

/// One hash: what the file states and what its content hashes to (null when absent).
fn check(stated: Option<&str>, recomputed: Option<String>) -> Value {
    let ok = stated.is_some() && stated == recomputed.as_deref();
    json!({ "stated": stated, "recomputed": recomputed, "ok": ok })
}

pub fn run(args: &VerifyArgs, global: &Global) -> Result<Status, CliError> {
    let report = skilltrial_engine::files::read_report(&args.report)?;
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
    // The members the builder derives must be what the report's own trials give: a summary
    // edited and sealed again has hashes that recompute, and is still a forgery.
    // They are derived with the manifest, so they are checked only when it recomputes (an edited
    // manifest is already named, and everything derived from it would differ with it).
    let derived = if manifest_hash["ok"] == true {
        Some(report::derivations(&report).map_err(rejected)?)
    } else {
        None
    };
    let settlement = report.verify_settlement();
    let settled_ok = settlement.as_ref().is_none_or(Result::is_ok);
    let on_chain = on_chain(args, global, &report, settlement.as_ref())?;
    let failed = !(report_hash["ok"] == true
        && manifest_hash["ok"] == true
        && derived.as_ref().is_none_or(Vec::is_empty)
        && settled_ok
        && on_chain.ok);
    // Nothing failed, but the anchor is not final: nothing is proven yet either.
    let pending = on_chain.pending;
    let ok = !failed && !pending;
    if global.json {
        let mut doc = json!({
            "ok": ok,
            "pending": !failed && pending,
            "report_hash": report_hash,
            "manifest_hash": manifest_hash,
            "derived": derived_json(derived.as_ref()),
        });
        // Only a hosted run's report has the member, so a local report's output is unchanged.
        if let (Some(result), Some(section)) = (&settlement, &report.settlement) {
            doc["settlement"] = settlement_json(&section.digest_sha256, result);
        }
        for (member, value) in &on_chain.members {
            doc[*member] = value.clone();
        }
        output::json(&doc)?;
    } else if !failed {
        let mut out = format!(
            "ok: report hash {} and manifest hash {} recompute from the file\n",
            report_hash["stated"].as_str().unwrap_or(""),
            manifest_hash["stated"].as_str().unwrap_or("")
        );
        out.push_str(
            "derived: the summary, pairs, task table, trial outcomes and cost sums are what its trials give\n",
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
        out.push_str(&on_chain.ok_text);
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
        let derived = derived.as_deref().unwrap_or_default();
        for d in derived.iter().take(SHOWN_DERIVATIONS) {
            let _ = writeln!(out, "MISMATCH: {}", d.shown());
        }
        if derived.len() > SHOWN_DERIVATIONS {
            let _ = writeln!(
                out,
                "MISMATCH: … and {} more members its trials do not give (--json lists them all)",
                derived.len() - SHOWN_DERIVATIONS
            );
        }
        if let Some(Err(e)) = &settlement {
            let _ = writeln!(out, "MISMATCH: {e}");
        }
        out.push_str(&on_chain.mismatch_text);
        output::text(&out)?;
    }
    Ok(if failed {
        Status::CheckFailed
    } else if pending {
        Status::Pending
    } else {
        Status::Ok
    })
}

/// What `verify` found on-chain (`--run-account`, `--run`, `--signature`), ready to show: the
/// `--json` members, the lines said when everything agrees, the lines said when something does
/// not. Empty when none of those flags was given.
#[derive(Debug)]
pub(crate) struct OnChainFindings {
    /// Every on-chain check that ran agrees (or is still pending).
    pub(crate) ok: bool,
    /// The anchor landed but is not finalized yet.
    pub(crate) pending: bool,
    pub(crate) members: Vec<(&'static str, Value)>,
    pub(crate) ok_text: String,
    pub(crate) mismatch_text: String,
}

impl OnChainFindings {
    /// Nothing asked of the chain.
    pub(crate) fn none() -> Self {
        OnChainFindings {
            ok: true,
            pending: false,
            members: Vec::new(),
            ok_text: String::new(),
            mismatch_text: String::new(),
        }
    }
}

#[cfg(feature = "chain")]
use crate::commands::verify_chain::on_chain;

/// A build with the local commands only checks the file alone.
#[cfg(not(feature = "chain"))]
fn on_chain(
    args: &VerifyArgs,
    _global: &Global,
    _report: &report::Report,
    _settlement: Option<&Result<SettlementCheck, SettlementError>>,
) -> Result<OnChainFindings, CliError> {
    if args.run_account.is_some() || args.run.is_some() || args.signature.is_some() {
        return Err(crate::commands::not_built(
            "verify --run, --run-account or --signature",
        ));
    }
    Ok(OnChainFindings::none())
}

/// The derived members that differ shown in text; `--json` lists every one.
const SHOWN_DERIVATIONS: usize = 10;

/// The derivation check as `--json` reports it: every member that differs; `ok` null when it
/// was not checked (the manifest does not recompute).
fn derived_json(derived: Option<&Vec<report::Derivation>>) -> Value {
    let differences: Vec<Value> = derived
        .into_iter()
        .flatten()
        .map(|d| json!({ "path": d.path, "stated": d.stated, "derived": d.derived }))
        .collect();
    json!({ "ok": derived.map(Vec::is_empty), "differences": differences })
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
