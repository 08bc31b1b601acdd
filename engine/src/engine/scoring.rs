//! Scoring: the checker's verdict on a stored answer, shared by the run (which scores each answer
//! as it arrives, and on resume any answer whose verdict was lost) and `recheck` (which
//! re-scores every stored answer with this binary's checker).
//!
//! Checks run on one long-lived worker thread per run, under the same limit the core's
//! `Task::check` applies ([`CHECK_LIMIT`]): the core spawns a thread per check, which is a
//! `clone3` per trial for nothing. The checker itself is not touched (its bytes are hashed into
//! every manifest). A check that overruns gets the core's timeout verdict, word for word; its
//! worker is abandoned (it finishes alone and its verdict is dropped) and the next check starts
//! a fresh one, exactly as the core leaves its per-check thread behind.

use std::sync::mpsc;

use skilltrial_core::checker::{self, CHECK_LIMIT, Detail, Expected, Family, Verdict};
use skilltrial_core::outcome::Outcome;
use skilltrial_core::pack::{Pack, Task};

use super::EngineError;
use crate::journal::{AttemptState, Journal};
use crate::store::{Store, parse_hex};

struct Job {
    family: Family,
    expected: Expected,
    answer: String,
}

struct Worker {
    jobs: mpsc::Sender<Job>,
    verdicts: mpsc::Receiver<Verdict>,
}

impl Worker {
    fn spawn() -> Option<Self> {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (verdict_tx, verdicts) = mpsc::channel();
        std::thread::Builder::new()
            .name("checker".to_owned())
            .spawn(move || {
                for job in job_rx {
                    let verdict = checker::check(job.family, &job.expected, &job.answer);
                    if verdict_tx.send(verdict).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(Self { jobs, verdicts })
    }
}

/// The checker, on one worker thread reused for every check of a run.
#[derive(Default)]
pub struct Checker {
    worker: Option<Worker>,
}

impl std::fmt::Debug for Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checker")
            .field("worker", &self.worker.is_some())
            .finish()
    }
}

/// The verdict the core gives when a check cannot finish in time (or cannot start): an overrun
/// is never a pass. Same reason code and message as `checker::run_limited`.
fn not_checked(message: String) -> Verdict {
    Verdict {
        outcome: Outcome::InvalidOutput,
        reasons: vec!["checker_timeout".to_owned()],
        details: vec![Detail {
            reason: "checker_timeout".to_owned(),
            field: String::new(),
            expected: None,
            got: None,
            message,
        }],
    }
}

impl Checker {
    /// A checker; its worker starts with the first check.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks `answer` against `task`'s expected answer, waiting at most [`CHECK_LIMIT`]. The
    /// same verdict as `task.check(answer)`.
    pub fn check(&mut self, task: &Task, answer: &str) -> Verdict {
        if self.worker.is_none() {
            self.worker = Worker::spawn();
        }
        let Some(worker) = &self.worker else {
            return not_checked("the checker could not start".to_owned());
        };
        let job = Job {
            family: task.family,
            expected: task.reveal_expected().clone(),
            answer: answer.to_owned(),
        };
        if worker.jobs.send(job).is_err() {
            // The worker is gone (it panicked): start another for this check.
            self.worker = None;
            return self.check(task, answer);
        }
        match worker.verdicts.recv_timeout(CHECK_LIMIT) {
            Ok(verdict) => verdict,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.worker = None;
                not_checked("the checker could not start".to_owned())
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Abandon the busy worker: a late verdict must never be read as the next one's.
                self.worker = None;
                not_checked(format!(
                    "the check took longer than {} ms; an overrun is never a pass",
                    CHECK_LIMIT.as_millis()
                ))
            }
        }
    }
}

/// Which stored answers [`rescore`] scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Select {
    /// Only answers without a verdict: a stop or a crash between the answer and its verdict.
    Unscored,
    /// Every stored answer (`recheck`).
    All,
}

/// One answer scored by [`rescore`].
#[derive(Debug, Clone, PartialEq)]
pub struct Rescored {
    pub attempt: String,
    /// The outcome the journal held before.
    pub before: Option<Outcome>,
    pub verdict: Verdict,
}

/// What [`rescore`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rescore {
    pub scored: Vec<Rescored>,
    /// Answers whose payload was purged, so they could not be scored: (attempt, answer hash).
    pub purged: Vec<(String, String)>,
}

/// Scores the stored answers of `run_id` that `select` picks, from the payload store, with this
/// binary's checker, and journals each verdict. The answer is read back from disk, never from
/// memory: it is what was journaled before any checker saw it.
pub fn rescore(
    journal: &mut Journal,
    payloads: &Store,
    pack: &Pack,
    run_id: &str,
    select: Select,
    checker: &mut Checker,
) -> Result<Rescore, EngineError> {
    let trials = journal.trials(run_id)?;
    let mut done = Rescore::default();
    let attempts = journal.attempts(run_id)?;
    // A progressive turn that asked for tools and led to the next turn is not an answer: only
    // its trial's last turn is scored.
    let continued: std::collections::BTreeSet<String> = attempts
        .iter()
        .filter_map(|a| a.prior_turn.clone())
        .collect();
    for attempt in attempts {
        if attempt.state != AttemptState::Result
            || continued.contains(&attempt.id)
            || (select == Select::Unscored && attempt.outcome.is_some())
        {
            continue;
        }
        let (Some(sha), Some(trial)) = (
            attempt.answer_sha256.as_deref().and_then(parse_hex),
            trials.iter().find(|t| t.idx == attempt.trial_idx),
        ) else {
            continue;
        };
        let answer = match crate::answers::read::<EngineError>(journal, payloads, &sha)? {
            Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            None => {
                done.purged.push((attempt.id.clone(), sha.hex()));
                continue;
            }
        };
        let task = pack
            .task(&trial.task)
            .map_err(|e| super::Refusal::TaskMissing(e.to_string()))?;
        let verdict = checker.check(task, &answer);
        journal.record_verdict(&attempt.id, &verdict)?;
        done.scored.push(Rescored {
            attempt: attempt.id,
            before: attempt.outcome,
            verdict,
        });
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_worker_gives_the_cores_verdict_and_is_reused() {
        let pack = skilltrial_core::pack::open("solana-core@1.0.3").unwrap();
        let mut checker = Checker::new();
        for task in &pack.tasks {
            for answer in ["{}", "not json", "{\"account_type\":\"mint\"}"] {
                assert_eq!(checker.check(task, answer), task.check(answer));
            }
            if let Expected::Golden(golden) = task.reveal_expected() {
                let text = golden.to_string();
                assert_eq!(checker.check(task, &text), task.check(&text));
            }
        }
        assert!(checker.worker.is_some(), "one worker serves every check");
    }
}
