//! `skilltrial recheck <run>`: re-score stored answers with this binary's checker; no network.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use skilltrial_core::pack;
use skilltrial_engine::journal::AttemptState;
use skilltrial_engine::store::{StoreError, parse_hex};

use crate::cli::{Global, RunRef};
use crate::commands::state::{self, short};
use crate::exit::{CliError, Status};
use crate::output;

#[derive(Debug, Serialize)]
struct Change {
    attempt: String,
    from: Option<String>,
    to: String,
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
    let manifest: skilltrial_core::manifest::Manifest =
        serde_json::from_slice(&store.get(&manifest_hash).map_err(anyhow::Error::from)?)
            .map_err(anyhow::Error::from)?;
    let pack_hash = parse_hex(&manifest.pack.hash)
        .ok_or_else(|| CliError::Rejected(anyhow::anyhow!("bad pack hash")))?;
    let files: BTreeMap<String, Vec<u8>> = store
        .get_tree(&pack_hash)
        .map_err(anyhow::Error::from)?
        .into_iter()
        .collect();
    let pack =
        pack::from_files(&manifest.pack.id, files).map_err(|e| CliError::Rejected(e.into()))?;
    let trials = journal.trials(&run.id).map_err(anyhow::Error::from)?;

    let mut rechecked = 0;
    let mut purged = Vec::new();
    let mut changes = Vec::new();
    for attempt in journal.attempts(&run.id).map_err(anyhow::Error::from)? {
        if attempt.state != AttemptState::Result {
            continue;
        }
        let Some(sha) = attempt.answer_sha256.as_deref().and_then(parse_hex) else {
            continue;
        };
        let answer = match payloads.get(&sha) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(StoreError::Missing(_)) => {
                purged.push(attempt.id.clone());
                continue;
            }
            Err(e) => return Err(CliError::Rejected(e.into())),
        };
        let Some(trial) = trials.iter().find(|t| t.idx == attempt.trial_idx) else {
            continue;
        };
        let task = pack
            .task(&trial.task)
            .map_err(|e| CliError::Rejected(e.into()))?;
        let verdict = task.check(&answer);
        journal
            .record_verdict(&attempt.id, &verdict)
            .map_err(anyhow::Error::from)?;
        rechecked += 1;
        if attempt.outcome != Some(verdict.outcome) {
            changes.push(Change {
                attempt: attempt.id.clone(),
                from: attempt.outcome.map(|o| o.as_str().to_owned()),
                to: verdict.outcome.as_str().to_owned(),
            });
        }
    }
    if global.json {
        output::json(&serde_json::json!({
            "run": run.id,
            "checker_version": skilltrial_core::checker::CHECKER_VERSION,
            "checker_source_sha256": skilltrial_core::checker::source_sha256(),
            "rechecked": rechecked,
            "changed": changes,
            "answers_purged": purged,
        }))?;
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
