//! `skilltrial verify <report.json>`: recompute both hashes from the file alone.

use anyhow::Context;
use serde_json::Value;
use skilltrial_runner::report;

use crate::cli::{Global, VerifyArgs};
use crate::exit::{CliError, Status};
use crate::output;

pub fn run(args: &VerifyArgs, global: &Global) -> Result<Status, CliError> {
    let text = std::fs::read_to_string(&args.report)
        .with_context(|| format!("cannot read {}", args.report.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| {
        CliError::Rejected(anyhow::anyhow!(
            "{} is not JSON: {e}",
            args.report.display()
        ))
    })?;
    match report::verify(&doc) {
        Ok((report_hash, manifest_hash)) => {
            if global.json {
                output::json(
                    &serde_json::json!({ "ok": true, "report_hash": report_hash.to_string(), "manifest_hash": manifest_hash.to_string() }),
                )?;
            } else {
                output::text(&format!(
                    "ok: report hash {report_hash} and manifest hash {manifest_hash} recompute from the file\n"
                ))?;
            }
            Ok(Status::Ok)
        }
        Err(e) => {
            if global.json {
                output::json(&serde_json::json!({ "ok": false, "error": e.to_string() }))?;
            } else {
                output::text(&format!("MISMATCH: {e}\n"))?;
            }
            Ok(Status::CheckFailed)
        }
    }
}
