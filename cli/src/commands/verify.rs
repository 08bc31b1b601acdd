//! `skilltrial verify <report.json>`: recompute both hashes from the file alone.
//!
//! Both hashes are always checked and both reported, in one shape whether they match or not:
//! `{"ok", "report_hash": {"stated", "recomputed", "ok"}, "manifest_hash": {…}}`, so a script
//! reads a mismatch the way it reads a success, and an edited manifest names both hashes it
//! breaks (the manifest is part of the report's content).

use std::fmt::Write as _;

use anyhow::Context;
use serde_json::{Value, json};
use skilltrial_runner::{canonical, report};

use crate::cli::{Global, VerifyArgs};
use crate::exit::{CliError, Status};
use crate::output;

/// One hash: what the file states and what its content hashes to (null when absent).
fn check(stated: Option<&str>, recomputed: Option<String>) -> Value {
    let ok = stated.is_some() && stated == recomputed.as_deref();
    json!({ "stated": stated, "recomputed": recomputed, "ok": ok })
}

pub fn run(args: &VerifyArgs, global: &Global) -> Result<Status, CliError> {
    let text = std::fs::read_to_string(&args.report)
        .with_context(|| format!("cannot read {}", args.report.display()))?;
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
    let rejected = |e: String| {
        CliError::Rejected(anyhow::anyhow!(
            "{}: cannot hash it: {e}",
            args.report.display()
        ))
    };
    let report_hash = check(
        doc.get("report_hash").and_then(Value::as_str),
        Some(
            report::hash(&doc)
                .map_err(|e| rejected(e.to_string()))?
                .to_string(),
        ),
    );
    let manifest_hash = check(
        doc.get("manifest_hash").and_then(Value::as_str),
        doc.get("manifest")
            .map(canonical::hash)
            .transpose()
            .map_err(|e| rejected(e.to_string()))?
            .map(|h| h.to_string()),
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
