//! Reports from the journal: reads a run's rows and stored answers into core's plain run facts,
//! builds the typed [`Report`] with [`skilltrial_core::report::build`], and writes the two report
//! files (`report.json`, `report.html`) durably. Shared by the CLI and, later, the hosted daemon.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use skilltrial_core::manifest::{self as manifest, Arm, Manifest};
use skilltrial_core::report::{self as model, AttemptFacts, CheckerIdentity, RunFacts, TrialFacts};
pub use skilltrial_core::report::{Report, SENSITIVE_WARNING, html};

use crate::engine::EngineError;
use crate::journal::{AttemptRow, AttemptState, Journal, JournalError, RunRow, RunStatus};
use crate::store::{Store, StoreError, parse_hex};

/// Why a report could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Model(#[from] model::ReportError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why the report files could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Whether the run is still live could not be read (its lock file).
    #[error(transparent)]
    Liveness(EngineError),
    /// The report could not be built or sealed from the journal and stores.
    #[error(transparent)]
    Build(#[from] ReportError),
    // The OS error is part of the message, not a `#[source]`: these read whole on their own.
    #[error("cannot create {}: {cause}", path.display())]
    CreateDir {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot write the report file {}: {cause}", path.display())]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error(transparent)]
    Store(StoreError),
}

/// The facts core's builder needs, read from the journal and the stores.
pub fn facts(
    journal: &Journal,
    store: &Store,
    payloads: &Store,
    run: &RunRow,
) -> Result<RunFacts, ReportError> {
    let manifest_hash = parse_hex(&run.manifest_sha256)
        .ok_or_else(|| ReportError::Invalid("the run id is not a hash".to_owned()))?;
    let manifest: Manifest = serde_json::from_slice(&store.get(&manifest_hash)?)
        .map_err(|e| ReportError::Invalid(format!("manifest: {e}")))?;
    let runner_times = journal.runner_times(&run.id)?;
    let rows = journal.attempts(&run.id)?;
    let progressive = Progressive::of(journal, store, &run.id, &manifest, &rows)?;
    let attempts = rows
        .into_iter()
        .map(|a| attempt_facts(journal, payloads, &runner_times, a, progressive.is_some()))
        .collect::<Result<Vec<_>, _>>()?;
    let money = journal.money(&run.id)?;
    Ok(RunFacts {
        run: model::Run {
            id: run.id.clone(),
            status: run.status,
            complete: false,
            created_at_ms: run.created_at_ms,
            started_at_ms: run.started_at_ms,
            finished_at_ms: run.finished_at_ms,
            concurrency: run.concurrency,
        },
        manifest_hash: manifest_hash.to_string(),
        families: families(store, &manifest)?,
        trials: journal
            .trials(&run.id)?
            .into_iter()
            .map(|t| TrialFacts {
                index: t.idx,
                task: t.task,
                arm: t.arm,
                repetition: t.repetition,
                evidence: progressive
                    .as_ref()
                    .and_then(|p| p.evidence.get(&t.idx).cloned()),
            })
            .collect(),
        attempts,
        spent_usd_micros: money.spent.0,
        reserved_usd_micros: money.reserved.0,
        verdicts_by: journal
            .verdict_checkers(&run.id)?
            .into_iter()
            .map(|(version, source_sha256)| CheckerIdentity {
                version,
                source_sha256,
            })
            .collect(),
        readable_files: progressive.map(|p| p.readable_files).unwrap_or_default(),
        manifest,
    })
}

/// What a progressive run's report adds: each trial's evidence, replayed from its journaled
/// turns, and each skill arm's readable files.
struct Progressive {
    evidence: BTreeMap<u32, skilltrial_core::delivery::TrialEvidence>,
    readable_files: BTreeMap<String, Vec<String>>,
}

impl Progressive {
    /// `None` for an inline run.
    fn of(
        journal: &Journal,
        store: &Store,
        run_id: &str,
        manifest: &Manifest,
        rows: &[AttemptRow],
    ) -> Result<Option<Self>, ReportError> {
        let Some(pin) = &manifest.delivery else {
            return Ok(None);
        };
        let (a, b, others) = crate::engine::load_bundles(store, manifest)
            .map_err(|e| ReportError::Invalid(format!("the run's bundles: {e}")))?;
        let mut evidence = BTreeMap::new();
        for trial in journal.trials(run_id)? {
            let arm = match trial.arm.as_str() {
                "a" => Arm::A,
                "b" => Arm::B,
                _ => Arm::Baseline,
            };
            let Some(last) = rows
                .iter()
                .filter(|r| r.trial_idx == trial.idx)
                .max_by_key(|r| r.seq)
            else {
                continue;
            };
            // No answered turn: nothing is known about loading (the trial is left out of the
            // activation counts, not counted as not loaded).
            if last.turn == 1 && last.state != AttemptState::Result {
                continue;
            }
            let catalog = manifest::catalog_for(arm, a.as_ref(), b.as_ref(), &others);
            let own = manifest::bundle_for(arm, a.as_ref(), b.as_ref()).map(|b| b.name.as_str());
            let found = crate::engine::turns::evidence(journal, &catalog, own, pin.max_turns, last)
                .map_err(|e| ReportError::Invalid(format!("trial {}: {e}", trial.idx)))?;
            evidence.insert(trial.idx, found);
        }
        let mut readable_files = BTreeMap::new();
        for (arm, bundle) in [(Arm::A, a.as_ref()), (Arm::B, b.as_ref())] {
            if let Some(bundle) = bundle {
                readable_files.insert(
                    arm.as_str().to_owned(),
                    skilltrial_core::report::readable_files(bundle),
                );
            }
        }
        Ok(Some(Self {
            evidence,
            readable_files,
        }))
    }
}

fn attempt_facts(
    journal: &Journal,
    payloads: &Store,
    runner_times: &BTreeMap<String, u64>,
    a: AttemptRow,
    progressive: bool,
) -> Result<AttemptFacts, ReportError> {
    let answer = match a.answer_sha256.as_deref().and_then(parse_hex) {
        Some(sha) => crate::answers::read::<ReportError>(journal, payloads, &sha)?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        None => None,
    };
    Ok(AttemptFacts {
        trial_index: a.trial_idx,
        dispatched: a.dispatched_at_ms.is_some(),
        record: model::Attempt {
            runner_us: runner_times.get(&a.id).copied(),
            id: a.id,
            seq: a.seq,
            // Inline reports keep their bytes: turns are stated for progressive runs only.
            turn: progressive.then_some(a.turn),
            state: a.state,
            outcome: a.outcome,
            reasons: a.reasons,
            details: a.details,
            retry_of: a.retry_of,
            retry_reason: a.retry_reason,
            reserved_usd_micros: a.reserved_micros,
            spent_usd_micros: a.spent_micros,
            input_tokens: a.input_tokens,
            output_tokens: a.output_tokens,
            latency_ms: a.latency_ms,
            http_status: a.http_status,
            provider_request_id: a.provider_request_id,
            model_reported: a.model_reported,
            system_fingerprint: a.system_fingerprint,
            request_sha256: a.request_sha256,
            answer_sha256: a.answer_sha256,
            answer,
            answer_purged: false,
            error: a.error,
        },
    })
}

/// Task id → family, from the pinned pack.
fn families(store: &Store, manifest: &Manifest) -> Result<BTreeMap<String, String>, ReportError> {
    let Some(hash) = parse_hex(&manifest.pack.hash) else {
        return Ok(BTreeMap::new());
    };
    let files: BTreeMap<String, Vec<u8>> = store.get_tree(&hash)?.into_iter().collect();
    let pack = skilltrial_core::pack::from_files(&manifest.pack.id, files)
        .map_err(|e| ReportError::Invalid(e.to_string()))?;
    Ok(pack
        .tasks
        .iter()
        .map(|t| (t.id.clone(), t.family.as_str().to_owned()))
        .collect())
}

/// Builds the (unsealed) report of a run from the journal and the stores.
pub fn build(
    journal: &Journal,
    store: &Store,
    payloads: &Store,
    run: &RunRow,
) -> Result<Report, ReportError> {
    Ok(model::build(facts(journal, store, payloads, run)?))
}

/// Where the two report files go: each its own path, both in `dir` by default.
#[derive(Debug, Default)]
pub struct Targets<'a> {
    /// Default directory for both files (default: `<state dir>/reports/<run12>`).
    pub dir: Option<&'a Path>,
    pub json: Option<&'a Path>,
    pub html: Option<&'a Path>,
}

/// What was written.
#[derive(Debug)]
pub struct Written {
    /// The sealed report.
    pub report: Report,
    /// Its `report_hash`.
    pub hash: String,
    pub json: PathBuf,
    pub html: PathBuf,
}

/// The default report directory of a run: `<state dir>/reports/<run12>`.
pub fn default_dir(state_root: &Path, run_id: &str) -> PathBuf {
    state_root
        .join("reports")
        .join(skilltrial_core::state::short_id(run_id))
}

/// Builds, seals and writes the report of `run`: `report.json` and `report.html`, each where
/// `targets` says (by default in [`default_dir`] of `state_root`). A run the journal says is
/// `running` but whose lock nobody holds was killed or crashed, and the report says
/// `interrupted`, as `status` does.
pub fn write(
    journal: &Journal,
    store: &Store,
    payloads: &Store,
    state_root: &Path,
    run: &RunRow,
    targets: &Targets<'_>,
) -> Result<Written, WriteError> {
    let interrupted;
    let run = if run.status == RunStatus::Running
        && !crate::engine::run_is_live(journal.path(), &run.id).map_err(WriteError::Liveness)?
    {
        interrupted = RunRow {
            status: RunStatus::Interrupted,
            ..run.clone()
        };
        &interrupted
    } else {
        run
    };
    let mut report = build(journal, store, payloads, run)?;
    let hash = report.seal().map_err(ReportError::from)?;
    let dir = targets
        .dir
        .map_or_else(|| default_dir(state_root, &run.id), Path::to_path_buf);
    let json_path = targets
        .json
        .map_or_else(|| dir.join("report.json"), Path::to_path_buf);
    let html_path = targets
        .html
        .map_or_else(|| dir.join("report.html"), Path::to_path_buf);
    // Members sorted, as the canonical form has them: the file reads in the same order.
    let value = report.to_value().map_err(ReportError::from)?;
    let mut text = serde_json::to_string_pretty(&value)
        .map_err(|e| ReportError::Invalid(format!("cannot encode the report: {e}")))?;
    text.push('\n');
    for (path, bytes) in [
        (&json_path, text.into_bytes()),
        (&html_path, html::render(&report).into_bytes()),
    ] {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|cause| WriteError::CreateDir {
                path: parent.to_path_buf(),
                cause,
            })?;
        }
        // The store's error names "store"; this is a report file the user chose.
        crate::store::write_durably(path, &bytes).map_err(|e| match e {
            StoreError::Io { source, .. } => WriteError::Write {
                path: path.clone(),
                cause: source,
            },
            other => WriteError::Store(other),
        })?;
    }
    Ok(Written {
        report,
        hash: hash.to_string(),
        json: json_path,
        html: html_path,
    })
}
