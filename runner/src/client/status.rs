//! `skilltrial status --remote`: the wallet's runs on a runner, one run's view, and a run's
//! events followed to its end across restarts of the runner.

use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Serialize;

use super::{Client, ClientError, StreamEvent};
use crate::api::{Event, RunView};

/// `status --remote --json` without a run: the wallet's runs on the runner.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Runs {
    pub runs: Vec<RunView>,
}

/// How long [`follow`] keeps trying to reach a runner that stopped or dropped the stream before
/// it gives up (a restart of the daemon takes seconds).
pub const RECONNECT_FOR: Duration = Duration::from_secs(120);

/// How often [`follow`] asks a runner it lost whether it is back.
const RECONNECT_EVERY: Duration = Duration::from_secs(2);

/// Why following a run stopped before the run ended.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FollowError {
    /// The runner refused the stream (or answered with something that is not its API).
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(
        "the runner at {url} has not answered for {} s while you followed run {run}; it resumes the run when it is back: follow it again then (skilltrial status --remote --runner {url} {run} --follow)",
        RECONNECT_FOR.as_secs()
    )]
    GaveUp { url: url::Url, run: String },
}

/// What [`follow`] reports as it goes.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Followed<'a> {
    /// An event of the run, each once, in order.
    Event(&'a StreamEvent),
    /// The stream ended before the run did (the runner stopped or was killed, or could not be
    /// reached): waiting for the runner, then going on after event `after`.
    Reconnecting { after: u64 },
}

/// How following ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// The reason the runner gave for the run's failure, if it failed with one.
    pub failed: Option<String>,
}

/// Follows `run`'s events until it is over (finalized or failed) or `on` returns `false`,
/// reconnecting after a restart of the runner or a dropped connection from the last event seen
/// (`Last-Event-ID`), so that nothing is shown twice or missed.
pub fn follow(
    client: &Client,
    url: &url::Url,
    run: &str,
    on: &mut dyn FnMut(Followed<'_>) -> bool,
) -> Result<Ended, FollowError> {
    let mut last = 0u64;
    let mut ended = Ended { failed: None };
    let mut over = false;
    loop {
        let mut stopped = false;
        let result = client.follow(run, last, &mut |event| {
            last = last.max(event.id);
            over |= event.event.ends_run();
            if let Event::Phase(p) = &event.event
                && p.phase == crate::api::Phase::Failed
            {
                ended.failed.clone_from(&p.detail);
            }
            stopped = !on(Followed::Event(event));
            !stopped
        });
        match result {
            Ok(()) if over || stopped => return Ok(ended),
            // The stream ended before the run did (the runner stopped, or was killed), or the
            // runner could not be reached: wait for it and go on from the last event.
            Ok(()) | Err(ClientError::Unreachable(_)) => {}
            Err(e) => return Err(e.into()),
        }
        if !on(Followed::Reconnecting { after: last }) {
            return Ok(ended);
        }
        let started = Instant::now();
        while client.info().is_err() {
            if started.elapsed() >= RECONNECT_FOR {
                return Err(FollowError::GaveUp {
                    url: url.clone(),
                    run: run.to_owned(),
                });
            }
            std::thread::sleep(RECONNECT_EVERY);
        }
    }
}
