//! The run's lock: one `skilltrial run` process per run. A second `run` must not recover (and so
//! orphan) the first one's request in flight, nor race it past the cap. The lock is an OS file
//! lock on `<state>/locks/<run>.lock`, so it dies with the process that holds it.
//!
//! Failures here are about the machine (a state directory that cannot be written, a lock the OS
//! will not give), never about the run's inputs: they are [`EngineError::Environment`].

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{EngineError, short};
use crate::journal::Journal;

/// An exclusive lock on one run, held for as long as the value lives.
#[derive(Debug)]
pub struct RunLock {
    _file: std::fs::File,
}

fn lock_path(journal: &Path, run_id: &str) -> PathBuf {
    journal
        .parent()
        .map_or_else(|| PathBuf::from("locks"), |p| p.join("locks"))
        .join(format!("{run_id}.lock"))
}

fn open_lock_file(path: &Path) -> Result<std::fs::File, EngineError> {
    // A state directory that cannot be written is named as such: the lock file is only the
    // first thing `run` would write there.
    let unwritable = |dir: &Path, e: std::io::Error| {
        let why = if e.kind() == std::io::ErrorKind::PermissionDenied
            || e.kind() == std::io::ErrorKind::ReadOnlyFilesystem
        {
            "is read-only (or not writable by you)".to_owned()
        } else {
            format!("cannot be written: {e}")
        };
        EngineError::Environment(format!(
            "the state directory {} {why}; `run` must write there (choose another with --home)",
            dir.display()
        ))
    };
    if let Some(dir) = path.parent() {
        let state_dir = dir.parent().unwrap_or(dir);
        std::fs::create_dir_all(dir).map_err(|e| unwritable(state_dir, e))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| unwritable(path.parent().and_then(|d| d.parent()).unwrap_or(path), e))
}

/// How long `run` keeps trying a held lock: `status` probes it for microseconds
/// ([`run_is_live`]), and such a probe must not turn a starting run away.
const LOCK_PATIENCE: Duration = Duration::from_millis(1500);

/// Takes the run's lock, waiting up to [`LOCK_PATIENCE`] for a probe to let go of it.
pub(super) fn lock_run(journal: &Journal, run_id: &str) -> Result<RunLock, EngineError> {
    let path = lock_path(journal.path(), run_id);
    let file = open_lock_file(&path)?;
    let deadline = Instant::now() + LOCK_PATIENCE;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(RunLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(25));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(EngineError::Environment(format!(
                    "run {} is being run by another skilltrial process; wait for it, or cancel it with `skilltrial cancel`",
                    short(run_id)
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(EngineError::Environment(format!(
                    "cannot lock {}: {e}",
                    path.display()
                )));
            }
        }
    }
}

/// Whether a `skilltrial run` process holds the run's lock now, i.e. is executing it. A run
/// whose journal says `running` but whose lock is free was interrupted (killed, crashed).
/// Probes with a shared lock held for an instant; a `run` starting at that moment waits for it.
pub fn run_is_live(journal: &Path, run_id: &str) -> Result<bool, EngineError> {
    let path = lock_path(journal, run_id);
    if !path.exists() {
        return Ok(false);
    }
    let file = std::fs::File::open(&path)
        .map_err(|e| EngineError::Environment(format!("cannot open {}: {e}", path.display())))?;
    match file.try_lock_shared() {
        Ok(()) => Ok(false),
        Err(std::fs::TryLockError::WouldBlock) => Ok(true),
        Err(std::fs::TryLockError::Error(e)) => Err(EngineError::Environment(format!(
            "cannot probe {}: {e}",
            path.display()
        ))),
    }
}
