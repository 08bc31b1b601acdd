//! `skilltrial verify <report.json>`: recompute both hashes from the file alone. The file must be
//! a report of this format (it is read into the typed report); anything else is refused, naming
//! the file.
//!
//! Both hashes are always checked and both reported, in one shape whether they match or not:
//! `{"ok", "report_hash": {"stated", "recomputed", "ok"}, "manifest_hash": {…}}`, so a script
//! reads a mismatch the way it reads a success, and an edited manifest names both hashes it
//! breaks (the manifest is part of the report's content).

use std::fmt::Write as _;
use std::io::Read as _;

use anyhow::Context;
use serde_json::{Value, json};
use skilltrial_core::report::{self, Report};

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
    let ok = report_hash["ok"] == true && manifest_hash["ok"] == true;
    if global.json {
        output::json(
            &json!({ "ok": ok, "report_hash": report_hash, "manifest_hash": manifest_hash }),
        )?;
    } else if ok {
        output::text(&format!(
            "ok: report hash {} and manifest hash {} recompute from the file\n",
            report_hash["stated"].as_str().unwrap_or(""),
            manifest_hash["stated"].as_str().unwrap_or("")
        ))?;
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
        output::text(&out)?;
    }
    Ok(if ok { Status::Ok } else { Status::CheckFailed })
}
