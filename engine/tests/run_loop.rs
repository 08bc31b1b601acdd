//! The run loop with requests in flight, against a real loopback model that HOLDS requests until
//! the test lets them through: the cap, the order, the once-only sends and the results hold at
//! any concurrency.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use skilltrial_core::concurrency::Concurrency;
use skilltrial_core::manifest::{self, Manifest, PlanOptions};
use skilltrial_core::money::{MicroUsd, PerMtok};
use skilltrial_core::pack::Pack;
use skilltrial_core::profile::{Price, Profile, ProviderKind};
use skilltrial_core::{bundle, pack};
use skilltrial_engine::engine::{self, RunOptions, RunSummary};
use skilltrial_engine::home::Layout;
use skilltrial_engine::journal::{AttemptRow, AttemptState, Journal};
use skilltrial_engine::provider::Anthropic;
use skilltrial_engine::scripted::{Reply, ScriptedServer, ServerRequest};
use skilltrial_engine::store::Store;

/// What the holding model has seen, under one lock.
#[derive(Debug, Default)]
struct Held {
    /// Requests waiting to be let through now.
    now: usize,
    /// The most ever waiting at once.
    most: usize,
    /// Requests the test lets through (each answers one); `None` lets every request through.
    allowance: Option<usize>,
    /// Every attempt id seen, in arrival order.
    seen: Vec<String>,
}

/// A loopback model whose every request waits until the test lets it through.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<Held>, Condvar)>);

impl Gate {
    /// Holds `request` until the test lets it through, then for `linger` more, counted held.
    fn hold(&self, request: &ServerRequest, linger: Duration) {
        let (lock, signal) = &*self.0;
        let mut held = lock.lock().unwrap();
        held.seen.push(
            request
                .header("x-skilltrial-attempt")
                .unwrap_or("")
                .to_owned(),
        );
        held.now += 1;
        held.most = held.most.max(held.now);
        signal.notify_all();
        while held.allowance == Some(0) {
            held = signal.wait(held).unwrap();
        }
        if let Some(n) = held.allowance.as_mut() {
            *n -= 1;
        }
        drop(held);
        std::thread::sleep(linger);
        let mut held = lock.lock().unwrap();
        held.now -= 1;
        signal.notify_all();
    }

    fn now(&self) -> usize {
        self.0.0.lock().unwrap().now
    }

    fn allow(&self, n: Option<usize>) {
        let (lock, signal) = &*self.0;
        lock.lock().unwrap().allowance = n;
        signal.notify_all();
    }

    fn add(&self, n: usize) {
        let (lock, signal) = &*self.0;
        let mut held = lock.lock().unwrap();
        held.allowance = Some(held.allowance.unwrap_or(0) + n);
        signal.notify_all();
    }

    fn most(&self) -> usize {
        self.0.0.lock().unwrap().most
    }

    fn seen(&self) -> Vec<String> {
        self.0.0.lock().unwrap().seen.clone()
    }
}

/// An answer that depends only on the request's task text, so that every order of sending gives
/// the same answers: some parse and pass or fail, some do not parse.
fn answer_for(request: &ServerRequest) -> Reply {
    let user = request.user_text();
    let n = user
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
    match n % 3 {
        0 => Reply::Answer("{}".into()),
        1 => Reply::Answer("no JSON here".into()),
        _ => Reply::Answer(r#"{"answer": 1}"#.into()),
    }
}

fn profile(url: &str) -> Profile {
    Profile {
        id: "loopback".into(),
        provider: ProviderKind::Anthropic,
        model: "loopback-model".into(),
        revision: None,
        base_url: Some(url.to_owned()),
        context_tokens: 200_000,
        max_output_tokens: 1024,
        price: Some(Price {
            input: PerMtok(3_000_000),
            output: PerMtok(15_000_000),
            source: "test".into(),
            as_of: "2026-12-04".into(),
            cache: None,
        }),
        origin: "test".into(),
    }
}

/// The 54-trial plan (six tasks, three arms, three repetitions) against `url`, capped at `cap`.
fn plan(url: &str, cap: MicroUsd) -> (Pack, bundle::Bundle, bundle::Bundle, Manifest) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pack = pack::open("solana-core@1.0.3").unwrap();
    let a = bundle::import(&root.join("fixtures/bundles/solana-reader-1.4.2")).unwrap();
    let b = bundle::import(&root.join("fixtures/bundles/solana-reader-1.5.0")).unwrap();
    let options = PlanOptions {
        repetitions: 3,
        seed: 7,
        cap: Some(cap),
        max_requests: None,
        max_tokens: None,
        max_output_tokens: Some(1024),
        endpoint: url.to_owned(),
        scripted: false,
    };
    let m = manifest::build(&pack, Some(&a), Some(&b), &profile(url), &options).unwrap();
    (pack, a, b, m)
}

/// Runs the plan in a state directory of its own with `concurrency`, on this thread.
fn run(
    dir: &std::path::Path,
    url: &str,
    planned: &(Pack, bundle::Bundle, bundle::Bundle, Manifest),
    concurrency: u32,
) -> RunSummary {
    run_with(
        dir,
        url,
        planned,
        RunOptions {
            concurrency: Concurrency::new(concurrency).unwrap(),
            ..RunOptions::default()
        },
    )
    .unwrap()
}

/// [`run`] with options of the test's own.
fn run_with(
    dir: &std::path::Path,
    url: &str,
    planned: &(Pack, bundle::Bundle, bundle::Bundle, Manifest),
    options: RunOptions,
) -> Result<RunSummary, engine::EngineError> {
    let (pack, a, b, m) = planned;
    let layout = Layout::new(dir);
    let store = Store::open(&layout.store).unwrap();
    let payloads = Store::open(&layout.payloads).unwrap();
    let hash = engine::save_inputs(&store, m, pack, Some(a), Some(b)).unwrap();
    let inputs = engine::load_inputs(&store, &hash.hex()).unwrap();
    let mut journal = Journal::open(&layout.journal).unwrap();
    let provider = Anthropic::new(url, "k".into(), Duration::from_secs(30)).unwrap();
    engine::run(
        &mut journal,
        &payloads,
        &provider,
        &inputs,
        options,
        &mut |_| {},
    )
}

fn attempts(dir: &std::path::Path, run: &str) -> Vec<AttemptRow> {
    Journal::open(&Layout::new(dir).journal)
        .unwrap()
        .attempts(run)
        .unwrap()
}

/// A loopback model that holds every request until the test lets it through, then answers
/// [`answer_for`] it.
fn holding() -> (Gate, ScriptedServer) {
    let gate = Gate::default();
    gate.allow(Some(0));
    let server = {
        let gate = gate.clone();
        ScriptedServer::start(move |r| {
            gate.hold(r, Duration::ZERO);
            answer_for(r)
        })
        .unwrap()
    };
    (gate, server)
}

/// How a trial ended: its outcome, reasons, cost and answer.
type Ending = (Option<String>, Vec<String>, Option<u64>, Option<String>);

#[test]
fn spent_plus_reserved_never_passes_a_cap_that_cuts_a_run_with_eight_in_flight() {
    // Given a model that holds every request, and a cap that fits ten trials' upper costs
    let (gate, server) = holding();
    let probe = plan(&server.url(), MicroUsd::parse_usd("1000").unwrap());
    let (trials, _) = manifest::trials(&probe.3, &probe.0, Some(&probe.1), Some(&probe.2)).unwrap();
    let most_reserve = trials.iter().map(|t| t.reserve.0).max().unwrap();
    let cap = 10 * most_reserve;
    let planned = plan(&server.url(), MicroUsd(cap));
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().to_path_buf();

    // When it runs with eight in flight, and the test samples the journal's money every time
    // the model holds what the run can send, then lets three through
    let url = server.url();
    let runner = {
        let dir = dir.clone();
        std::thread::spawn(move || run(&dir, &url, &planned, 8))
    };
    let journal = Journal::open(&Layout::new(&dir).journal).unwrap();
    let mut samples = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !runner.is_finished() {
        assert!(Instant::now() < deadline, "the run never ended");
        std::thread::sleep(Duration::from_millis(10));
        let Some(run_id) = journal.latest_run().unwrap().map(|r| r.id) else {
            continue;
        };
        // Sample once every request the journal says is in flight has reached the model.
        let in_flight = journal
            .attempts_without_details(&run_id)
            .unwrap()
            .iter()
            .filter(|a| a.state == AttemptState::Dispatched)
            .count();
        let money = journal.money(&run_id).unwrap();
        let committed = money.spent.0 + money.reserved.0;
        assert!(committed <= cap, "spent + reserved {committed} > cap {cap}");
        if in_flight > 0 && gate.now() == in_flight {
            samples += 1;
            gate.add(3);
        }
    }
    let summary = runner.join().unwrap();

    // Then eight were in flight at once, the cap cut the run, and it held at every sample
    assert_eq!(gate.most(), 8, "eight requests in flight at once");
    assert!(samples >= 5, "{samples} samples");
    assert!(
        summary.counts.get("not_run").copied().unwrap_or(0) > 0,
        "the cap cut the run: {:?}",
        summary.counts
    );
    assert!(summary.spent.0 + summary.reserved.0 <= cap);
    assert_eq!(summary.reserved, MicroUsd::ZERO, "every reserve released");
}

#[test]
fn eight_in_flight_send_every_attempt_once_in_planned_order_with_the_results_of_one() {
    // Given the same deterministic answers served one at a time and eight at a time
    let results = |concurrency: u32| {
        let gate = Gate::default();
        let server = {
            let gate = gate.clone();
            ScriptedServer::start(move |r| {
                // Answers come back out of order: later requests first, now and then.
                let linger = if r.index % 5 == 0 { 60 } else { 15 };
                gate.hold(r, Duration::from_millis(linger));
                answer_for(r)
            })
            .unwrap()
        };
        let planned = plan(&server.url(), MicroUsd::parse_usd("50").unwrap());
        let work = tempfile::tempdir().unwrap();
        let summary = run(work.path(), &server.url(), &planned, concurrency);
        let rows = attempts(work.path(), &summary.run);
        let seen = gate.seen();
        (summary, rows, seen, gate.most())
    };
    let (one, one_rows, one_seen, one_most) = results(1);
    let (eight, eight_rows, eight_seen, eight_most) = results(8);

    // Then one ran one at a time and eight overlapped
    assert_eq!(one_most, 1);
    assert!(eight_most > 1, "requests overlapped: {eight_most}");
    for (rows, seen) in [(&one_rows, &one_seen), (&eight_rows, &eight_seen)] {
        // every attempt was sent exactly once, one per trial
        let mut ids = seen.clone();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), seen.len(), "an attempt was sent twice");
        assert_eq!(seen.len(), 54);
        assert_eq!(rows.len(), 54);
        // and the journal dispatched the trials in their planned order
        let mut by_dispatch: Vec<&AttemptRow> = rows.iter().collect();
        by_dispatch.sort_by_key(|a| (a.dispatched_at_ms, a.seq, a.trial_idx));
        let order: Vec<u32> = by_dispatch.iter().map(|a| a.trial_idx).collect();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(order, sorted, "dispatched out of planned order");
    }
    // and every trial ended the same way, at the same cost
    let outcome = |rows: &[AttemptRow]| -> BTreeMap<u32, Ending> {
        rows.iter()
            .map(|a| {
                (
                    a.trial_idx,
                    (
                        a.outcome.map(|o| o.as_str().to_owned()),
                        a.reasons.clone(),
                        a.spent_micros,
                        a.answer_sha256.clone(),
                    ),
                )
            })
            .collect()
    };
    assert_eq!(outcome(&one_rows), outcome(&eight_rows));
    assert_eq!(one.counts, eight.counts);
    assert_eq!(one.spent, eight.spent);
    assert_eq!(
        (one.status.as_str(), eight.status.as_str()),
        ("finished", "finished")
    );
    let journal_of = |rows: &[AttemptRow]| rows.iter().filter(|a| a.outcome.is_some()).count();
    assert_eq!(journal_of(&one_rows), 54);
}

/// Starts a run of the 54-trial plan with eight in flight on a model that holds every request,
/// and waits until it holds eight. Returns the model, the run's thread and its state directory.
fn eight_held(
    options: RunOptions,
) -> (
    Gate,
    ScriptedServer,
    std::thread::JoinHandle<Result<RunSummary, engine::EngineError>>,
    tempfile::TempDir,
) {
    let (gate, server) = holding();
    let planned = plan(&server.url(), MicroUsd::parse_usd("50").unwrap());
    let work = tempfile::tempdir().unwrap();
    let runner = {
        let (dir, url) = (work.path().to_path_buf(), server.url());
        let options = RunOptions {
            concurrency: Concurrency::new(8).unwrap(),
            ..options
        };
        std::thread::spawn(move || run_with(&dir, &url, &planned, options))
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while gate.now() < 8 {
        assert!(Instant::now() < deadline, "only {} held", gate.now());
        std::thread::sleep(Duration::from_millis(10));
    }
    (gate, server, runner, work)
}

#[test]
fn a_cancel_with_eight_in_flight_journals_all_eight_answers_and_sends_nothing_more() {
    // Given a run holding eight requests
    let (gate, _server, runner, work) = eight_held(RunOptions::default());

    // When another connection cancels it, and the model then answers the eight
    let other = Journal::open(&Layout::new(work.path()).journal).unwrap();
    let run_id = other.latest_run().unwrap().unwrap().id;
    other.request_cancel(&run_id).unwrap();
    gate.allow(None);
    let summary = runner.join().unwrap().unwrap();

    // Then the eight answers are journaled and scored, nothing else was sent, every other trial
    // is `not_run` for the cancel, and nothing stays reserved
    assert_eq!(gate.seen().len(), 8, "nothing sent after the cancel");
    assert_eq!(summary.status, "cancelled");
    let rows = attempts(work.path(), &run_id);
    let answered = rows
        .iter()
        .filter(|a| a.state == AttemptState::Result)
        .count();
    assert_eq!(answered, 8);
    assert!(
        rows.iter()
            .filter(|a| a.state == AttemptState::Result)
            .all(|a| a.outcome.is_some())
    );
    assert_eq!(summary.counts.get("not_run"), Some(&46));
    assert_eq!(summary.reserved, MicroUsd::ZERO);
}

#[test]
fn a_stop_with_eight_in_flight_waits_for_them_and_the_next_run_sends_the_rest_once() {
    // Given a run holding eight requests, with a stop flag as Ctrl-C sets it
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (gate, server, runner, work) = eight_held(RunOptions {
        stop: Some(Arc::clone(&stop)),
        ..RunOptions::default()
    });

    // When the stop is asked, then the model answers the eight
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    gate.allow(None);
    let summary = runner.join().unwrap().unwrap();

    // Then the run is stopped with the eight answered and the rest pending, nothing more sent
    assert_eq!(summary.status, "stopped");
    assert_eq!(gate.seen().len(), 8);
    assert_eq!(summary.counts.get("pending"), Some(&46));
    let run_id = summary.run.clone();
    let rows = attempts(work.path(), &run_id);
    assert_eq!(
        rows.iter()
            .filter(|a| a.state == AttemptState::Result && a.outcome.is_some())
            .count(),
        8
    );

    // And the next run sends the 46 others, each once, and none of the eight again
    let planned = plan(&server.url(), MicroUsd::parse_usd("50").unwrap());
    let again = run(work.path(), &server.url(), &planned, 8);
    assert_eq!(again.status, "finished");
    let seen = gate.seen();
    assert_eq!(seen.len(), 54);
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 54, "an attempt was sent twice");
    assert_eq!(attempts(work.path(), &run_id).len(), 54);
}

#[test]
fn a_rate_limit_on_one_request_backs_off_the_whole_run_for_its_retry_after() {
    // Given a model that turns the third request away (429, retry-after 1 s) at once, holds the
    // other answers of the first four until the test lets them through, and notes when each
    // request arrives
    #[derive(Default)]
    struct Seen {
        arrivals: Vec<(u64, Instant)>,
        refused_at: Option<Instant>,
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let gate = Gate::default();
    gate.allow(Some(0));
    let server = {
        let (seen, gate) = (Arc::clone(&seen), gate.clone());
        ScriptedServer::start(move |r| {
            seen.lock()
                .unwrap()
                .arrivals
                .push((r.index, Instant::now()));
            if r.index == 2 {
                seen.lock().unwrap().refused_at = Some(Instant::now());
                return Reply::RetryAfter(429, "1".into());
            }
            if r.index < 4 {
                gate.hold(r, Duration::ZERO);
            }
            answer_for(r)
        })
        .unwrap()
    };
    let planned = plan(&server.url(), MicroUsd::parse_usd("50").unwrap());
    let work = tempfile::tempdir().unwrap();
    let runner = {
        let (dir, url) = (work.path().to_path_buf(), server.url());
        let options = RunOptions {
            concurrency: Concurrency::new(4).unwrap(),
            ..RunOptions::default()
        };
        std::thread::spawn(move || run_with(&dir, &url, &planned, options))
    };

    // When the rejection is journaled, the three held answers are let through
    let journal = Journal::open(&Layout::new(work.path()).journal).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < deadline, "the 429 was never journaled");
        std::thread::sleep(Duration::from_millis(10));
        let Some(run) = journal.latest_run().unwrap() else {
            continue;
        };
        let rows = journal.attempts_without_details(&run.id).unwrap();
        if rows.iter().any(|a| a.http_status == Some(429)) {
            break;
        }
    }
    gate.allow(None);
    let summary = runner.join().unwrap().unwrap();

    // Then no request reached the model until the retry-after was over, and the refused trial
    // was retried automatically and answered
    let seen = seen.lock().unwrap();
    let refused_at = seen.refused_at.unwrap();
    let after: Vec<Duration> = seen
        .arrivals
        .iter()
        .filter(|(index, _)| *index >= 4)
        .map(|(_, at)| at.duration_since(refused_at))
        .collect();
    assert_eq!(after.len(), 51, "the 50 other trials and the retry");
    let first = after.iter().min().unwrap();
    assert!(
        *first >= Duration::from_secs(1),
        "a request left {first:?} after the 429 asked for 1 s"
    );
    assert_eq!(summary.status, "finished");
    let rows = attempts(work.path(), &summary.run);
    let retry = rows
        .iter()
        .find(|a| a.retry_of.is_some())
        .expect("an automatic retry");
    assert!(
        retry
            .retry_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("automatic retry 1/3 after HTTP 429")),
        "{:?}",
        retry.retry_reason
    );
    assert!(retry.outcome.is_some() && retry.state == AttemptState::Result);
}
