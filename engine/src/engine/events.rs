//! The run loop, as events handled one at a time.
//!
//! One thread — the loop's — owns the journal and decides everything; up to N sending threads
//! only carry a request to the provider and its answer back ([`Landing`]). Every guarantee of
//! docs/runs.md is decided here, in one place, whatever N is:
//!
//! - a trial is admitted ([`admit`]) only when a slot is free, the run is not backing off, and
//!   its whole upper cost fits beside what is spent and reserved — the reserves of the requests
//!   in flight included, since each was journaled before its request left — so spent + reserved
//!   never passes the cap, and the request and token caps hold exactly;
//! - trials are admitted in their planned order (a due automatic retry first);
//! - a request leaves only after the journal synced its `dispatched` row, and an answer is
//!   checked only after the journal synced it: one sync per round of events, however many
//!   dispatches and answers the round holds ([`Journal::sync`]);
//! - a rate-limited or overloaded answer backs off the whole run (its `retry-after` honoured),
//!   not only its trial; each trial keeps its own bound on automatic retries;
//! - a stop (Ctrl-C, `--max-dispatch`, a gate's `Stop`), a cancel, or a refusal that ends the
//!   run stops new dispatches, and the loop still waits for every request in flight and
//!   journals its answer;
//! - a kill leaves each request in flight `dispatched` with its reserve, and the next start
//!   turns each into `unknown` (never re-sent): the loop keeps nothing that matters in memory.
//!
//! Each round: the events that arrived ([`Event`]) are handled in order, each returning the
//! [`Action`]s it needs once the journal is durable. The answers are journaled, the journal
//! syncs, and they are scored; then [`Event::Ready`] admits trials into the free slots, the
//! journal syncs again, and their requests leave. Progress is shown, and the loop waits for the
//! next answer, the next due time, or a tick that looks for a stop or a cancel. So a trial costs
//! at most two syncs (its dispatch and its answer), and fewer when requests leave or answers
//! land together.

use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::Scope;
use std::time::{Duration, Instant};

use skilltrial_core::manifest::PlannedTrial;

use super::admission::{Admission, LimitsNow, admit};
use super::dispatch::{self, Flight, Landed, Landing, Outgoing, ToScore, Which, latest_of};
use super::scoring::Checker;
use super::{EngineError, Gate, Inputs, Progress, Refusal, RunOptions, close_not_run, kill_point};
use crate::journal::{AttemptRow, AttemptState, Journal, Money};
use crate::provider::Provider;

/// How often the loop looks for a stop or a cancel while it waits.
const TICK: Duration = Duration::from_millis(100);

/// What happens to a run.
#[derive(Debug)]
pub(super) enum Event {
    /// A request came back from the provider: answered, rejected, or lost.
    Answered(Box<Landing>),
    /// Time passed: a stop or a cancel may have been asked, a wait may be over.
    Tick,
    /// A trial's automatic retry is due: its wait and the run's backoff are over.
    RetryDue(u32),
    /// There may be room for more requests: admit trials while a slot is free.
    Ready,
}

/// What an event needs done once the journal is durable.
#[derive(Debug)]
pub(super) enum Action {
    /// Send this request: its `dispatched` row is durable by then.
    Send(Outgoing),
    /// Check this answer: it is durable by then.
    Score(ToScore),
}

/// Why the loop sends nothing more in this invocation.
#[derive(Debug)]
pub(super) enum Halt {
    /// A stop (Ctrl-C, `--max-dispatch`, a gate's `Stop`): the run stays resumable.
    Pause,
    /// A refusal that ends this invocation: the run stops, resumable, and `run` returns it.
    Refused(Refusal),
}

/// A trial waiting for its automatic retry.
#[derive(Debug)]
struct Retry {
    /// The rejected attempt and the reason its retry carries.
    of: String,
    reason: String,
    /// When it may be sent; `None` once it is due (queued again).
    due: Option<Instant>,
}

/// The run's own clock: the time executed before this invocation, plus this invocation's.
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    pub before_ms: u64,
    pub started: Instant,
    pub limit_ms: u64,
}

impl Clock {
    pub fn executed_ms(&self) -> u64 {
        self.before_ms
            .saturating_add(u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX))
    }
}

/// Everything the loop reads and never changes.
pub(super) struct Setting<'r> {
    pub provider: &'r dyn Provider,
    pub inputs: &'r Inputs,
    pub run_id: &'r str,
    pub trials: &'r [PlannedTrial],
    pub options: &'r RunOptions,
    pub clock: Clock,
    pub backoff_scale: f64,
}

/// The loop's state.
pub(super) struct Loop<'r> {
    journal: &'r mut Journal,
    set: Setting<'r>,
    by_index: BTreeMap<u32, &'r PlannedTrial>,
    checker: Checker,
    /// Trials still to be looked at, in planned order; a due retry goes to the front.
    queue: VecDeque<u32>,
    retries: BTreeMap<u32, Retry>,
    in_flight: BTreeMap<String, Flight>,
    /// The trial sent last among those in flight, for the progress line.
    latest_sent: Option<(String, u32)>,
    /// No request leaves before this: a rate limit on any request backs off the whole run.
    backoff_until: Option<Instant>,
    halt: Option<Halt>,
    dispatched_now: u32,
    /// What the progress line last showed: it is shown again only when it changed.
    shown: Option<Progress>,
}

impl<'r> Loop<'r> {
    /// A loop over `set.trials`, with the automatic retries a stopped invocation left waiting
    /// (and, for a run that stops on a refused key, the refused trials to send again).
    pub fn new(journal: &'r mut Journal, set: Setting<'r>) -> Result<Self, EngineError> {
        let attempts = journal.attempts_without_details(set.run_id)?;
        let mut queue = VecDeque::new();
        let mut retries = BTreeMap::new();
        let mut backoff_until = None;
        let now = Instant::now();
        for trial in set.trials {
            let idx = trial.index;
            if let Some((of, reason, wait)) =
                dispatch::resumed_auto_retry(&attempts, idx, set.backoff_scale)
            {
                // The rejection's wait goes on, for the whole run.
                let due = now + wait;
                backoff_until = backoff_until.max(Some(due));
                retries.insert(
                    idx,
                    Retry {
                        of,
                        reason,
                        due: Some(due),
                    },
                );
                continue;
            }
            if set.options.stop_on_key_refusal
                && let Some((of, reason)) = dispatch::key_refused_latest(&attempts, idx)
            {
                retries.insert(
                    idx,
                    Retry {
                        of,
                        reason,
                        due: None,
                    },
                );
            }
            queue.push_back(idx);
        }
        Ok(Self {
            journal,
            by_index: set.trials.iter().map(|t| (t.index, t)).collect(),
            set,
            checker: Checker::new(),
            queue,
            retries,
            in_flight: BTreeMap::new(),
            latest_sent: None,
            backoff_until,
            halt: None,
            dispatched_now: 0,
            shown: None,
        })
    }

    /// Runs the loop to its end: every trial looked at and nothing in flight, or a halt with
    /// nothing in flight. Returns the halt, if any.
    pub fn drive(
        mut self,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<Option<Halt>, EngineError> {
        let (tx, rx) = mpsc::channel::<Landing>();
        let slots = self.set.options.concurrency.slots();
        std::thread::scope(|scope| {
            let mut events = VecDeque::from([Event::Tick, Event::Ready]);
            loop {
                let mut actions = Vec::new();
                while let Some(event) = events.pop_front() {
                    // Answers are durable and scored before the next trials are admitted: a
                    // crash right after an answer leaves no request journaled but unsent.
                    if matches!(event, Event::Ready) {
                        self.act(std::mem::take(&mut actions), scope, &tx)?;
                    }
                    actions.extend(self.on(event, slots)?);
                }
                self.act(actions, scope, &tx)?;
                self.progress(on_progress)?;
                if self.ended() {
                    return Ok(self.halt);
                }
                self.next_events(&rx, &mut events);
            }
        })
    }

    /// Handles one event, returning what it needs done after the sync.
    fn on(&mut self, event: Event, slots: usize) -> Result<Vec<Action>, EngineError> {
        match event {
            Event::Answered(landing) => self.on_answered(*landing),
            Event::Tick => self.on_tick().map(|()| Vec::new()),
            Event::RetryDue(idx) => {
                self.on_retry_due(idx);
                Ok(Vec::new())
            }
            Event::Ready => self.on_ready(slots),
        }
    }

    /// Syncs the journal when an action needs it, then sends the requests and scores the
    /// answers.
    fn act<'s>(
        &mut self,
        actions: Vec<Action>,
        scope: &'s Scope<'s, '_>,
        tx: &Sender<Landing>,
    ) -> Result<(), EngineError>
    where
        'r: 's,
    {
        if actions.is_empty() {
            return Ok(());
        }
        let synced = Instant::now();
        self.journal
            .sync(self.set.run_id, self.set.clock.executed_ms())?;
        // The sync is shared by the round's trials: each counts its part as its own time.
        let share = synced.elapsed() / u32::try_from(actions.len()).unwrap_or(u32::MAX);
        for action in actions {
            match action {
                Action::Send(outgoing) => {
                    kill_point("after_dispatch");
                    if outgoing.turn > 1 {
                        // A later turn of a progressive trial, by its number: the crash tests
                        // end the process with that turn journaled `dispatched`.
                        kill_point(&format!("after_dispatch_turn_{}", outgoing.turn));
                    }
                    if let Some(flight) = self.in_flight.get_mut(&outgoing.attempt) {
                        flight.runner += share;
                    }
                    self.latest_sent = Some((outgoing.attempt.clone(), outgoing.trial_idx));
                    send(scope, self.set.provider, outgoing, tx.clone());
                }
                Action::Score(mut answer) => {
                    kill_point("after_result");
                    answer.runner += share;
                    let trial = self.trial(answer.trial_idx)?;
                    let inputs = self.set.inputs;
                    if let Some(refusal) =
                        dispatch::score(self.journal, inputs, &mut self.checker, trial, answer)?
                    {
                        self.halt_with(Halt::Refused(refusal));
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether the run is over for this invocation.
    fn ended(&self) -> bool {
        self.in_flight.is_empty()
            && (self.halt.is_some() || (self.queue.is_empty() && self.retries.is_empty()))
    }

    /// Waits for the next answer, the next due time, or a tick; then queues what happened.
    fn next_events(&self, rx: &Receiver<Landing>, events: &mut VecDeque<Event>) {
        let now = Instant::now();
        let timeout = self
            .next_due(now)
            .map_or(TICK, |d| d.saturating_duration_since(now).min(TICK));
        match rx.recv_timeout(timeout) {
            Ok(landing) => {
                events.push_back(Event::Answered(Box::new(landing)));
                while let Ok(more) = rx.try_recv() {
                    events.push_back(Event::Answered(Box::new(more)));
                }
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
        }
        events.push_back(Event::Tick);
        let now = Instant::now();
        if !self.backing_off(now) {
            // Each goes to the front of the queue: the highest first, so they leave in order.
            for (idx, retry) in self.retries.iter().rev() {
                if retry.due.is_some_and(|d| d <= now) {
                    events.push_back(Event::RetryDue(*idx));
                }
            }
        }
        events.push_back(Event::Ready);
    }

    /// The next time something becomes due, if it is still ahead: the end of the backoff for the
    /// queued trials, a retry (never before the backoff ends). A time already past was acted on
    /// in this round, so it never makes the wait spin.
    fn next_due(&self, now: Instant) -> Option<Instant> {
        let backoff = self.backoff_until.filter(|b| *b > now);
        let queued = backoff.filter(|_| !self.queue.is_empty());
        let retry = self
            .retries
            .values()
            .filter_map(|r| r.due)
            .min()
            .map(|r| backoff.map_or(r, |b| r.max(b)));
        [queued, retry]
            .into_iter()
            .flatten()
            .filter(|t| *t > now)
            .min()
    }

    fn backing_off(&self, now: Instant) -> bool {
        self.backoff_until.is_some_and(|until| now < until)
    }

    fn halt_with(&mut self, halt: Halt) {
        // The first reason stands; a refusal wins over a pause.
        match (&self.halt, &halt) {
            (None, _) | (Some(Halt::Pause), Halt::Refused(_)) => self.halt = Some(halt),
            _ => {}
        }
    }

    fn trial(&self, idx: u32) -> Result<&'r PlannedTrial, EngineError> {
        self.by_index
            .get(&idx)
            .copied()
            .ok_or_else(|| Refusal::Plan(format!("no planned trial {idx}")).into())
    }

    /// An answer, a rejection or a lost request: journaled; an answer is scored after the sync;
    /// a rate limit backs off the run.
    fn on_answered(&mut self, landing: Landing) -> Result<Vec<Action>, EngineError> {
        let Some(flight) = self.in_flight.remove(&landing.attempt) else {
            return Err(EngineError::Environment(format!(
                "attempt {} came back but was not in flight",
                landing.attempt
            )));
        };
        let trial = self.trial(flight.trial_idx)?;
        let attempt = landing.attempt.clone();
        match dispatch::land(self.journal, self.set.inputs, trial, &flight, landing)? {
            Landed::Answer(answer) => return Ok(vec![Action::Score(answer)]),
            // The next turn goes first: its trial was admitted and holds its reserve.
            Landed::Continue => {
                kill_point("after_turn");
                self.queue.push_front(trial.index);
            }
            Landed::Closed => {}
            Landed::RateLimited {
                status,
                retry_after,
            } => self.on_rate_limited(trial.index, attempt, status, retry_after)?,
            Landed::KeyRefused { status, message } => {
                if self.set.options.stop_on_key_refusal {
                    self.halt_with(Halt::Refused(Refusal::KeyRefused { status, message }));
                }
            }
        }
        Ok(Vec::new())
    }

    /// A request turned away as rate limited or overloaded: the whole run backs off for the
    /// wait the provider asked (or the default backoff), and the trial waits for its automatic
    /// retry, if it has one left.
    fn on_rate_limited(
        &mut self,
        idx: u32,
        attempt: String,
        status: u16,
        retry_after: Option<Duration>,
    ) -> Result<(), EngineError> {
        let attempts = self.journal.attempts_without_details(self.set.run_id)?;
        let Some((wait, reason)) =
            dispatch::auto_retry(&attempts, idx, status, retry_after, self.set.backoff_scale)
        else {
            return Ok(());
        };
        let due = Instant::now() + wait;
        self.backoff_until = self.backoff_until.max(Some(due));
        self.retries.insert(
            idx,
            Retry {
                of: attempt,
                reason,
                due: Some(due),
            },
        );
        Ok(())
    }

    /// Looks for a stop of this invocation and a cancel recorded in the journal. A cancel ends
    /// every wait: the waiting retries are queued, for admission to close them.
    fn on_tick(&mut self) -> Result<(), EngineError> {
        if self.set.options.stop_requested() {
            self.halt_with(Halt::Pause);
        }
        if !self.retries.is_empty() && self.journal.cancel_requested(self.set.run_id)? {
            self.backoff_until = None;
            let waiting: Vec<u32> = self
                .retries
                .iter()
                .filter(|(_, r)| r.due.is_some())
                .map(|(idx, _)| *idx)
                .collect();
            for idx in waiting.into_iter().rev() {
                self.on_retry_due(idx);
            }
        }
        Ok(())
    }

    /// A retry whose wait is over goes to the front of the queue.
    fn on_retry_due(&mut self, idx: u32) {
        if let Some(retry) = self.retries.get_mut(&idx)
            && retry.due.take().is_some()
        {
            self.queue.push_front(idx);
        }
    }

    /// Admits trials in order while a slot is free, the run is not backing off and nothing
    /// halted it: each is sent, closed `not_run` with its reason, skipped (it needs nothing
    /// more), or pauses the run.
    fn on_ready(&mut self, slots: usize) -> Result<Vec<Action>, EngineError> {
        let mut actions = Vec::new();
        // The attempts as read at the round's first admission, the requests sent, and the
        // requests the progressive trials in progress may still send; the last two kept up to
        // date as this round admits trials.
        let mut read: Option<(Vec<AttemptRow>, u32, u32)> = None;
        while self.halt.is_none()
            && self.in_flight.len() < slots
            && !self.backing_off(Instant::now())
        {
            let Some(&idx) = self.queue.front() else {
                break;
            };
            let (attempts, sent, requests_held) = match &mut read {
                Some(read) => read,
                None => {
                    let attempts = self.journal.attempts_without_details(self.set.run_id)?;
                    let sent = attempts
                        .iter()
                        .filter(|a| a.dispatched_at_ms.is_some())
                        .count();
                    let held = requests_held(&attempts, self.set.trials);
                    read.insert((attempts, u32::try_from(sent).unwrap_or(u32::MAX), held))
                }
            };
            let trial = self.trial(idx)?;
            let latest = latest_of(attempts, idx);
            // A retry is taken with its trial once due (a waiting one is not in the queue).
            let retry = match self.retries.get(&idx) {
                Some(r) if r.due.is_none() => self.retries.remove(&idx),
                _ => None,
            };
            if settled(latest) && retry.is_none() {
                self.queue.pop_front();
                continue;
            }
            let pending_retry = latest
                .filter(|a| a.state == AttemptState::Planned)
                .map(|a| a.id.clone());
            // A progressive trial's next turn, planned with its reserve when the turn before
            // it was answered: admitted with its trial.
            let held = latest.is_some_and(|a| {
                a.state == AttemptState::Planned
                    && a.turn > 1
                    && (a.reserved_micros > 0 || a.reserved_tokens > 0)
            });
            // The turn it is sent from: a retry (automatic, or planned by `resolve --retry`)
            // of a progressive trial's later turn goes on from that turn.
            let from_turn = match latest {
                Some(a) if !held && (retry.is_some() || pending_retry.is_some()) => a.turn.max(1),
                _ => 1,
            };
            let money = self.journal.money(self.set.run_id)?;
            match self.admission(trial, &money, (*sent, *requests_held), held, from_turn)? {
                Admission::Send => {
                    self.queue.pop_front();
                    let outgoing = self.dispatch(trial, pending_retry, retry, held)?;
                    *sent = sent.saturating_add(1);
                    // A held turn was one of the requests held; a trial admitted now holds the
                    // rest of its turns after this one.
                    *requests_held = if held {
                        requests_held.saturating_sub(1)
                    } else {
                        requests_held.saturating_add(trial.max_turns().saturating_sub(from_turn))
                    };
                    actions.push(Action::Send(outgoing));
                }
                Admission::NotRun(reason, message) => {
                    self.queue.pop_front();
                    let journal = &mut *self.journal;
                    journal.set_executed_ms(self.set.run_id, self.set.clock.executed_ms())?;
                    close_not_run(
                        journal,
                        self.set.run_id,
                        idx,
                        pending_retry.as_deref(),
                        reason,
                        &message,
                    )?;
                }
                Admission::Pause => {
                    // The trial keeps its place and its retry for the next invocation.
                    if let Some(retry) = retry {
                        self.retries.insert(idx, retry);
                    }
                    self.halt_with(Halt::Pause);
                }
            }
        }
        Ok(actions)
    }

    /// The admission rules for `trial` now, after the journal's cancel and the gate.
    fn admission(
        &mut self,
        trial: &PlannedTrial,
        money: &Money,
        (sent, requests_held): (u32, u32),
        held: bool,
        from_turn: u32,
    ) -> Result<Admission, EngineError> {
        let options = self.set.options;
        let run_id = self.set.run_id;
        let mut cancel_requested = self.journal.cancel_requested(run_id)?;
        let mut gate_stop = false;
        if !cancel_requested && let Some(gate) = &options.gate {
            match gate() {
                Gate::Go => {}
                Gate::Cancel => {
                    self.journal.request_cancel(run_id)?;
                    cancel_requested = true;
                }
                Gate::Stop => gate_stop = true,
                Gate::Close(reason, message) => return Ok(Admission::NotRun(reason, message)),
            }
        }
        let limits = LimitsNow {
            cancel_requested,
            executed_ms: self.set.clock.executed_ms(),
            limit_ms: self.set.clock.limit_ms,
            sent,
            stop_requested: gate_stop
                || options.stop_requested()
                || options
                    .dispatch_limit
                    .is_some_and(|limit| self.dispatched_now >= limit),
            requests_held,
            held,
            from_turn,
        };
        Ok(admit(
            trial,
            money,
            &self.set.inputs.manifest.budget,
            &limits,
        ))
    }

    /// Reserves and journals an admitted trial; it is in flight from here.
    fn dispatch(
        &mut self,
        trial: &PlannedTrial,
        pending_retry: Option<String>,
        retry: Option<Retry>,
        held: bool,
    ) -> Result<Outgoing, EngineError> {
        let started = Instant::now();
        self.dispatched_now = self.dispatched_now.saturating_add(1);
        let outgoing = dispatch::prepare(
            self.journal,
            self.set.provider,
            self.set.inputs,
            self.set.run_id,
            trial,
            match pending_retry {
                Some(id) if held => Which::Continue(id),
                Some(id) => Which::Planned(id),
                None => Which::New(retry.map(|r| (r.of, r.reason))),
            },
            self.set.clock.executed_ms(),
        )?;
        self.in_flight.insert(
            outgoing.attempt.clone(),
            Flight {
                trial_idx: trial.index,
                turn: outgoing.turn,
                reserve: outgoing.reserve,
                runner: started.elapsed(),
            },
        );
        Ok(outgoing)
    }

    /// Shows the run as it stands, when that changed since it was last shown.
    fn progress(&mut self, on_progress: &mut dyn FnMut(&Progress)) -> Result<(), EngineError> {
        let attempts = self.journal.attempts_without_details(self.set.run_id)?;
        let money = self.journal.money(self.set.run_id)?;
        let total = u32::try_from(self.set.trials.len()).unwrap_or(u32::MAX);
        let counts = super::outcome_counts(total, &attempts);
        // A trial waiting for an automatic retry is not done: counting it would step the count
        // back when its retry is planned.
        let pending = counts.get("pending").copied().unwrap_or(0)
            + counts.get("in_flight").copied().unwrap_or(0)
            + u32::try_from(self.retries.len()).unwrap_or(u32::MAX);
        let current = self
            .latest_sent
            .as_ref()
            .filter(|(attempt, _)| self.in_flight.contains_key(attempt))
            .and_then(|(_, idx)| self.by_index.get(idx))
            .map(|t| (t.task.clone(), t.arm.as_str().to_owned(), t.repetition));
        let now = Progress {
            done: total.saturating_sub(pending),
            total,
            counts,
            spent: money.spent,
            reserved: money.reserved,
            current,
            in_flight: u32::try_from(self.in_flight.len()).unwrap_or(u32::MAX),
            trials: super::live_trials(
                &self.set.inputs.manifest,
                self.set.trials,
                &attempts,
                &|idx| self.retries.contains_key(&idx),
            ),
        };
        if self.shown.as_ref() != Some(&now) {
            on_progress(&now);
            self.shown = Some(now);
        }
        Ok(())
    }
}

/// Sends one request on a thread of its own and reports what came back.
fn send<'s>(
    scope: &'s Scope<'s, '_>,
    provider: &'s dyn Provider,
    outgoing: Outgoing,
    tx: Sender<Landing>,
) {
    scope.spawn(move || {
        let started = Instant::now();
        let call = provider.call(&outgoing.request);
        // The loop outlives every sending thread (the scope joins them), so the receiver is
        // there; a loop that already failed no longer listens, and then nothing is lost that
        // recovery does not restore.
        let _ = tx.send(Landing {
            attempt: outgoing.attempt,
            call,
            model_wait: started.elapsed(),
        });
    });
}

/// The requests the progressive trials in progress may still send after the ones already sent:
/// for each trial whose latest attempt is in flight (turn t: K - t more) or a next turn holding
/// its reserve (turn t: K - t + 1). Always 0 inline.
fn requests_held(attempts: &[AttemptRow], trials: &[PlannedTrial]) -> u32 {
    trials
        .iter()
        .filter(|t| t.max_turns() > 1)
        .filter_map(|t| latest_of(attempts, t.index).map(|a| (t.max_turns(), a)))
        .map(|(k, a)| match a.state {
            AttemptState::Dispatched => k.saturating_sub(a.turn),
            AttemptState::Planned if a.reserved_micros > 0 || a.reserved_tokens > 0 => {
                k.saturating_sub(a.turn).saturating_add(1)
            }
            _ => 0,
        })
        .fold(0u32, u32::saturating_add)
}

/// Whether a trial needs no more work: its latest attempt is a result, an unknown held for the
/// user, or closed with a final outcome. A planned attempt (a user's retry, or one planned just
/// before a stop) still needs the run.
fn settled(latest: Option<&AttemptRow>) -> bool {
    latest.is_some_and(|a| {
        matches!(
            a.state,
            AttemptState::Result | AttemptState::Unknown | AttemptState::Closed
        )
    })
}
