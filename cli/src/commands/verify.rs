//! `skilltrial verify <report.json>`: recompute both hashes from the file alone. The file must be
//! a report of this format (it is read into the typed report); anything else is refused, naming
//! the file. A hosted run's report also carries its settlement: its digest is recomputed from the
//! evidence records and each record tied to a published attempt (`Report::verify_settlement`);
//! comparing the digest with the Run account's is left to a command that speaks Solana RPC.
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
use skilltrial_core::report::{self, Report};
use skilltrial_core::settlement::{SettlementCheck, SettlementError};

use crate::cli::{Global, VerifyArgs};
use crate::commands::input;
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

pub fn run(args: &VerifyArgs, global: &Global) -> Result<Status, CliError> {
    // A FIFO or device is refused before it is opened: reading one would block or never end.
    let meta = input::regular_file(&args.report, "a report.json file")?;
    let too_large = || {
        CliError::Rejected(anyhow::anyhow!(
            "{} is larger than {} MiB, more than any report holds: not a report",
            args.report.display(),
            MAX_REPORT_BYTES / (1024 * 1024)
        ))
    };
    if meta.len() > MAX_REPORT_BYTES {
        return Err(too_large());
    }
    // Read through `take` too: the file may grow between the check and the read.
    let mut bytes = Vec::new();
    std::fs::File::open(&args.report)
        .and_then(|f| f.take(MAX_REPORT_BYTES + 1).read_to_end(&mut bytes))
        .with_context(|| format!("cannot read {}", args.report.display()))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_REPORT_BYTES {
        return Err(too_large());
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        CliError::Rejected(anyhow::anyhow!(
            "{} is not JSON: not UTF-8 at byte {}",
            args.report.display(),
            e.utf8_error().valid_up_to()
        ))
    })?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| {
        CliError::Rejected(anyhow::anyhow!(
            "{} is not JSON: {e}",
            args.report.display()
        ))
    })?;
    if !doc.is_object() {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "{} is not a report: not a JSON object",
            args.report.display()
        )));
    }
    // Typed, and only if the type writes back exactly this document: the hashes of the typed
    // report are then the hashes of the file's content.
    let report = Report::from_value(&doc)
        .map_err(|e| CliError::Rejected(anyhow::anyhow!("{}: {e}", args.report.display())))?;
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
    let ok = report_hash["ok"] == true && manifest_hash["ok"] == true && settled_ok;
    if global.json {
        let mut doc =
            json!({ "ok": ok, "report_hash": report_hash, "manifest_hash": manifest_hash });
        // Only a hosted run's report has the member, so a local report's output is unchanged.
        if let (Some(result), Some(section)) = (&settlement, &report.settlement) {
            doc["settlement"] = settlement_json(&section.digest_sha256, result);
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
        output::text(&out)?;
    }
    Ok(if ok { Status::Ok } else { Status::CheckFailed })
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
