//! Opening a fixture pack by the name or folder a person gives: a pack named without its version
//! is answered with the embedded versions of that name, and a pack to run or score with
//! ([`open_verified`]) must also pass `pack verify`, so a golden record, a known-wrong verdict or
//! an input edited after the pack was built never decides a score.

use skilltrial_core::pack::{self, Pack, PackError};

/// Why a pack could not be opened to run or score with.
#[derive(Debug, thiserror::Error)]
pub enum PackOpenError {
    /// Not found, unreadable or malformed (see [`PackError`]).
    #[error("{0}")]
    Open(#[from] PackError),
    /// Not found under a name given without its version: these embedded versions have it.
    #[error("{source}; did you mean {}?", versions.join(" or "))]
    Unversioned {
        #[source]
        source: PackError,
        versions: Vec<String>,
    },
    /// A pack without a task has nothing to run.
    #[error("pack {spec} has no task: add some with `skilltrial pack add-task {spec} …`")]
    NoTask { spec: String },
    /// A folder whose own claims do not hold (its first three failures are named).
    #[error(
        "pack {spec} fails {failed} of its {claims} claims ({}{}): run `skilltrial pack verify {spec}` for all of them, and `skilltrial pack build {spec}` after changing it",
        shown.join("; "),
        if *failed > shown.len() { "; …" } else { "" }
    )]
    FailsClaims {
        spec: String,
        failed: usize,
        claims: usize,
        /// `<task> <check>: <message>` for the first failures.
        shown: Vec<String>,
    },
}

/// How many failed claims a refusal names.
const SHOWN_CLAIMS: usize = 3;

/// Opens a pack: an embedded id or a folder (see [`pack::open`]).
pub fn open(spec: &str) -> Result<Pack, PackOpenError> {
    pack::open(spec).map_err(|e| {
        let versions: Vec<String> = pack::embedded_ids()
            .into_iter()
            .filter(|id| id.split_once('@').is_some_and(|(name, _)| name == spec))
            .collect();
        match e {
            PackError::NotFound(_) if !versions.is_empty() => PackOpenError::Unversioned {
                source: e,
                versions,
            },
            other => other.into(),
        }
    })
}

/// Opens a pack to run or score with (`plan`, `demo`, `check`): it must have a task, and a folder
/// must also pass `pack verify`.
pub fn open_verified(spec: &str) -> Result<Pack, PackOpenError> {
    let p = open(spec)?;
    if p.tasks.is_empty() {
        return Err(PackOpenError::NoTask {
            spec: spec.to_owned(),
        });
    }
    if !pack::is_path_spec(spec) {
        return Ok(p);
    }
    let report = pack::verify(&p);
    let failed: Vec<&pack::VerifyItem> = report.items.iter().filter(|i| !i.ok).collect();
    if failed.is_empty() {
        return Ok(p);
    }
    Err(PackOpenError::FailsClaims {
        spec: spec.to_owned(),
        failed: failed.len(),
        claims: report.items.len(),
        shown: failed
            .iter()
            .take(SHOWN_CLAIMS)
            .map(|i| {
                let task = if i.task.is_empty() {
                    "(pack)"
                } else {
                    i.task.as_str()
                };
                format!("{task} {}: {}", i.check, i.message)
            })
            .collect(),
    })
}
