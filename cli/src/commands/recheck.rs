//! `skilltrial recheck <run>`: re-score stored answers with this binary's checker; no network.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_engine::engine;
use skilltrial_engine::store::parse_hex;

use crate::cli::{Global, RunRef};
use crate::exit::{CliError, Status};
use crate::output;
use crate::state::{self, short};

/// `recheck --json`: every stored answer re-scored with this binary's checker.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Rechecked {
    /// The run id.
    pub run: String,
    /// The checker that re-scored them (this binary's).
    pub checker_version: &'static str,
    /// The SHA-256 of that checker's source.
    pub checker_source_sha256: &'static str,
    /// How many stored answers were re-scored.
    pub rechecked: usize,
    /// The attempts whose outcome changed.
    pub changed: Vec<Change>,
    /// The attempts whose answer was purged (`purge`), so not re-scored.
    pub answers_purged: Vec<String>,
}

/// One attempt whose outcome the checker changed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Change {
    /// The attempt id.
    pub attempt: String,
    /// Its outcome before (null when it had none).
    pub from: Option<String>,
    /// Its outcome now.
    pub to: String,
}

pub fn run(args: &RunRef, global: &Global) -> Result<Status, CliError> {
    let layout = state::layout(global)?;
    let mut journal = state::existing_journal(&layout)?;
    let store = state::store(&layout)?;
    let payloads = state::payloads(&layout)?;
    let run = state::find_run(&journal, args.run.as_deref())?;
    // The pack comes from the store, by the hash the run pinned; the checker is this binary's.
    let manifest_hash = parse_hex(&run.manifest_sha256)
        .ok_or_else(|| CliError::Rejected(anyhow::anyhow!("run id is not a hash")))?;
    let (_manifest, pack) = engine::load_pinned(&store, &manifest_hash)?;
    let done = engine::rescore(
        &mut journal,
        &payloads,
        &pack,
        &run.id,
        engine::Select::All,
        &mut engine::Checker::new(),
    )?;
    let rechecked = done.scored.len();
    let purged: Vec<String> = done
        .purged
        .into_iter()
        .map(|(attempt, _)| attempt)
        .collect();
    let changes: Vec<Change> = done
        .scored
        .into_iter()
        .filter(|r| r.before != Some(r.verdict.outcome))
        .map(|r| Change {
            attempt: r.attempt,
            from: r.before.map(|o| o.as_str().to_owned()),
            to: r.verdict.outcome.as_str().to_owned(),
        })
        .collect();
    if global.json {
        output::json(&Rechecked {
            run: run.id.clone(),
            checker_version: skilltrial_core::checker::CHECKER_VERSION,
            checker_source_sha256: skilltrial_core::checker::source_sha256(),
            rechecked,
            changed: changes,
            answers_purged: purged,
        })?;
    } else {
        let mut out = format!(
            "run {}: {rechecked} stored answers re-scored with checker {} (no model calls); {} changed\n",
            short(&run.id),
            skilltrial_core::checker::CHECKER_VERSION,
            changes.len()
        );
        for c in &changes {
            let _ = writeln!(
                out,
                "  {}  {} -> {}",
                c.attempt,
                c.from.as_deref().unwrap_or("-"),
                c.to
            );
        }
        if !purged.is_empty() {
            let _ = writeln!(
                out,
                "{} answers were purged and could not be re-scored",
                purged.len()
            );
        }
        output::text(&out)?;
    }
    Ok(Status::Ok)
}
