//! `run --concurrency N` end to end: the real `skilltrial` binary, a real SQLite journal under a
//! temporary state directory, and a loopback server speaking the Anthropic wire format that can
//! hold requests open, so a test sees exactly how many are in flight at once. What docs/runs.md
//! promises at one request in flight must hold at N: a kill leaves exactly the requests in flight
//! `unknown`, none re-sent; Ctrl-C waits for every request in flight and sends nothing more; a
//! rate limit on one request pauses the whole run; the money never passes the cap; the report is
//! the sequential one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;
use skilltrial_engine::journal::AttemptState;
use skilltrial_engine::scripted::{Reply, ScriptedServer, ServerRequest};

mod support;

use support::{Env, files_under, output_text, scripted_answer};

/// How long a test waits for something the runner must do before it calls it a failure.
const DEADLINE: Duration = Duration::from_secs(60);

/// Waits until `done` holds, failing with `what` after [`DEADLINE`].
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One request as the holding server saw it: when it arrived and the attempt it carried.
#[derive(Debug, Clone)]
struct Arrival {
    at: Instant,
    attempt: String,
}

#[derive(Debug, Default)]
struct Held {
    arrivals: Vec<Arrival>,
    /// Requests held now, and the most held at once.
    held: usize,
    most_held: usize,
    /// Every request is answered at once from now on.
    open: bool,
    /// Requests (by arrival index) let through while the others stay held.
    released: BTreeSet<u64>,
    /// When each request left the hold (its answer is written right after).
    answered: BTreeMap<u64, Instant>,
}

/// A loopback model that holds every request until the test lets it through, so "N in flight"
/// is something the test observes rather than assumes.
#[derive(Debug, Clone, Default)]
struct Holding(Arc<(Mutex<Held>, Condvar)>);

impl Holding {
    /// A server that holds each request, then answers what `reply` says.
    fn server(
        &self,
        reply: impl Fn(&ServerRequest) -> Reply + Send + Sync + 'static,
    ) -> ScriptedServer {
        let holding = self.clone();
        ScriptedServer::start(move |r| {
            holding.hold(r);
            reply(r)
        })
        .unwrap()
    }

    fn state(&self) -> MutexGuard<'_, Held> {
        self.0.0.lock().unwrap()
    }

    fn hold(&self, request: &ServerRequest) {
        let (lock, changed) = &*self.0;
        let mut s = lock.lock().unwrap();
        s.arrivals.push(Arrival {
            at: Instant::now(),
            attempt: request
                .header("x-skilltrial-attempt")
                .unwrap_or_default()
                .to_owned(),
        });
        s.held += 1;
        s.most_held = s.most_held.max(s.held);
        changed.notify_all();
        while !s.open && !s.released.contains(&request.index) {
            s = changed.wait(s).unwrap();
        }
        s.held -= 1;
        s.answered.insert(request.index, Instant::now());
        changed.notify_all();
    }

    /// Answers every request held and every later one at once.
    fn open(&self) {
        self.state().open = true;
        self.0.1.notify_all();
    }

    /// Lets the request that arrived `index`th through.
    fn release(&self, index: u64) {
        self.state().released.insert(index);
        self.0.1.notify_all();
    }

    /// Waits until `count` requests are held at once.
    fn wait_held(&self, count: usize) {
        wait_until(&format!("{count} requests held at once"), || {
            self.state().held >= count
        });
    }

    fn arrivals(&self) -> Vec<Arrival> {
        self.state().arrivals.clone()
    }
}

fn count(status: &Value, key: &str) -> u64 {
    status["counts"]
        .get(key)
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// Sends `name` (a signal `kill` understands, e.g. `INT`) to `child`.
fn signal(child: &Child, name: &str) {
    let (flag, pid) = (format!("-{name}"), child.id().to_string());
    let sent = Command::new("kill").args([flag, pid]).status().unwrap();
    assert!(sent.success(), "kill -{name}");
}

/// The child's stderr, collected as it comes (so a test can wait for a line).
fn collect_stderr(child: &mut Child) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    let mut stderr = child.stderr.take().unwrap();
    let sink = Arc::clone(&text);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    text
}

/// Waits (at most [`DEADLINE`]) for `child` to exit; its exit code.
fn wait_exit(child: &mut Child) -> Option<i32> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        assert!(Instant::now() < deadline, "the runner did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The attempt ids the server received, in arrival order, asserting each arrived at most once.
fn each_attempt_once(server: &ScriptedServer) -> Vec<String> {
    let ids: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.attempt.clone().expect("every request names its attempt"))
        .collect();
    let distinct: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(
        distinct.len(),
        ids.len(),
        "an attempt was sent twice: {ids:?}"
    );
    ids
}

/// A model that holds every request, an environment planning an 18-trial run on it, and that
/// run started at `concurrency` with its stderr as given.
fn start_held(concurrency: &str, stderr: Stdio) -> (Holding, ScriptedServer, Env, String, Child) {
    let holding = Holding::default();
    let server = holding.server(|r| Reply::Answer(scripted_answer(r)));
    let env = Env::new(&server).backoff_scale("0");
    let run = env.plan(&["--reps", "1", "--cap-usd", "20"]);
    let child = env
        .command(&["run", "--manifest", &run, "--concurrency", concurrency])
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    (holding, server, env, run, child)
}

#[test]
fn a_kill_with_eight_requests_in_flight_leaves_eight_unknown_and_resume_sends_none() {
    // Given a model that holds every request, and an 18-trial run started at N = 8
    let (holding, server, env, run, mut child) = start_held("8", Stdio::null());

    // When 8 requests are in flight (and no 9th comes while they are), the runner is killed
    holding.wait_held(8);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        holding.arrivals().len(),
        8,
        "a 9th request with 8 in flight"
    );
    assert_eq!(holding.state().most_held, 8);
    child.kill().unwrap();
    child.wait().unwrap();
    let sent: BTreeSet<String> = each_attempt_once(&server).into_iter().collect();
    assert_eq!(sent.len(), 8);

    // Then the journal holds exactly those 8 as sent without an answer, each holding its reserve
    let in_flight: Vec<_> = env
        .attempts(&run)
        .into_iter()
        .filter(|a| a.state == AttemptState::Dispatched)
        .collect();
    let ids: BTreeSet<String> = in_flight.iter().map(|a| a.id.clone()).collect();
    assert_eq!(ids, sent);
    assert!(in_flight.iter().all(|a| a.reserved_micros > 0));
    let held: u64 = in_flight.iter().map(|a| a.reserved_micros).sum();
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["status"], "interrupted", "{status}");
    assert_eq!(status["concurrency"], 8, "{status}");
    assert_eq!(count(&status, "in_flight"), 8, "{status}");
    assert_eq!(status["reserved_usd_micros"], held, "{status}");
    assert_eq!(status["in_flight"].as_array().unwrap().len(), 8);

    // When the model answers again and the run resumes at the same N
    holding.open();
    let summary = env.json(&["run", "--manifest", &run, "--concurrency", "8", "--json"]);

    // Then the 8 became unknown, none of them was sent again, every attempt went out at most once
    let recovered: BTreeSet<String> = summary["recovered_unknown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(recovered, sent, "{summary}");
    let all = each_attempt_once(&server);
    assert_eq!(all.len(), 18, "8 lost and the 10 other trials: {all:?}");
    assert!(all[8..].iter().all(|id| !sent.contains(id)), "{all:?}");
    let lost_trials: BTreeSet<&str> = sent.iter().map(|id| trial_of(id)).collect();
    assert!(
        all[8..]
            .iter()
            .all(|id| !lost_trials.contains(trial_of(id))),
        "a lost trial was retried: {all:?}"
    );
    // And the 8 stay unknown, each still holding its reserve
    let status = env.json(&["status", "--json"]);
    assert_eq!(count(&status, "unknown"), 8, "{status}");
    let unknown: BTreeMap<String, u64> = status["unknown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["attempt"].as_str().unwrap().to_owned(),
                u["reserved_usd_micros"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected: BTreeMap<String, u64> = in_flight
        .iter()
        .map(|a| (a.id.clone(), a.reserved_micros))
        .collect();
    assert_eq!(unknown, expected);
    assert_eq!(status["reserved_usd_micros"], held, "{status}");
}

/// The trial index part of an attempt id (`<run12>-<trial>-<seq>-<nonce>`).
fn trial_of(attempt: &str) -> &str {
    attempt.split('-').nth(1).unwrap()
}

#[test]
fn ctrl_c_with_four_in_flight_waits_for_all_four_and_sends_nothing_more() {
    for sig in ["INT", "TERM"] {
        // Given a model that holds every request, and a run at N = 4 with 4 held
        let (holding, server, env, run, mut child) = start_held("4", Stdio::piped());
        let stderr = collect_stderr(&mut child);
        holding.wait_held(4);

        // When the runner is told to stop, and only then do the 4 answers come
        signal(&child, sig);
        wait_until("the stop notice", || {
            stderr.lock().unwrap().contains("stopping:")
        });
        assert_eq!(holding.arrivals().len(), 4, "SIG{sig}");
        holding.open();
        let code = wait_exit(&mut child);
        let stderr = stderr.lock().unwrap().clone();

        // Then it exits stopped and resumable, with all 4 answers journaled and nothing more sent
        assert_eq!(code, Some(130), "SIG{sig}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "stopped: resume with `skilltrial run --manifest {}`",
                &run[..12]
            )),
            "SIG{sig}: {stderr}"
        );
        assert_eq!(each_attempt_once(&server).len(), 4, "SIG{sig}");
        let attempts = env.attempts(&run);
        assert_eq!(attempts.len(), 4, "SIG{sig}: {attempts:?}");
        assert!(
            attempts
                .iter()
                .all(|a| a.state == AttemptState::Result && a.outcome.is_some()),
            "SIG{sig}: {attempts:?}"
        );
        let status = env.json(&["status", "--json"]);
        assert_eq!(status["status"], "stopped", "SIG{sig}: {status}");
        assert_eq!(count(&status, "pending"), 14, "SIG{sig}: {status}");
        assert_eq!(count(&status, "unknown"), 0, "SIG{sig}: {status}");
        assert_eq!(status["reserved_usd_micros"], 0, "SIG{sig}: {status}");
    }
}

#[test]
fn a_rate_limit_on_one_request_pauses_the_whole_run_for_its_retry_after() {
    // Given a model that holds every request and answers the first one 429, retry-after 1 s
    const WAIT: Duration = Duration::from_secs(1);
    let holding = Holding::default();
    let server = holding.server(|r| {
        if r.index == 0 {
            Reply::RetryAfter(429, "1".into())
        } else {
            Reply::Answer(scripted_answer(r))
        }
    });
    // The real waits: no backoff scale.
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "20"]);
    let child = env
        .command(&["run", "--manifest", &run, "--concurrency", "4", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    holding.wait_held(4);
    let first = holding.arrivals()[0].attempt.clone();

    // When the first request is turned away, and the other three are answered as soon as the
    // runner has journaled the rejection (so their free slots are there to fill during the wait)
    holding.release(0);
    wait_until("the 429 journaled", || {
        env.attempts(&run)
            .iter()
            .any(|a| a.id == first && a.http_status == Some(429))
    });
    holding.open();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", output_text(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["status"], "finished", "{summary}");

    // Then no request reached the model until the retry-after had passed since the 429 was sent
    // (the runner reads it after that instant, so an honest wait ends later still; 20 ms spare
    // for the clock's granularity)
    let rejected_at = holding.state().answered[&0];
    let early: Vec<Duration> = holding
        .arrivals()
        .iter()
        .filter(|a| a.at > rejected_at)
        .map(|a| a.at - rejected_at)
        .filter(|after| *after + Duration::from_millis(20) < WAIT)
        .collect();
    assert!(
        early.is_empty(),
        "requests during the wait, after: {early:?}"
    );
    assert!(
        holding.arrivals().len() > 4,
        "the run went on after the wait"
    );

    // And the rate-limited trial was retried automatically and ends answered
    let attempts = env.attempts(&run);
    let retry = attempts
        .iter()
        .find(|a| a.retry_of.as_deref() == Some(first.as_str()))
        .expect("the rejected attempt was retried");
    assert_eq!(retry.state, AttemptState::Result, "{retry:?}");
    assert!(retry.outcome.is_some(), "{retry:?}");
    assert_eq!(
        attempts
            .iter()
            .filter(|a| a.trial_idx == retry.trial_idx)
            .count(),
        2
    );
    let ids = each_attempt_once(&server);
    assert_eq!(ids.len(), 19, "18 trials plus the one retry: {ids:?}");
}

#[test]
fn a_concurrency_outside_one_to_sixty_four_is_a_usage_error_that_writes_nothing() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server);
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let snapshot = || {
        let mut files: Vec<(std::path::PathBuf, Vec<u8>)> = files_under(&env.home())
            .into_iter()
            .map(|p| {
                let bytes = std::fs::read(&p).unwrap();
                (p, bytes)
            })
            .collect();
        files.sort();
        files
    };
    let before = snapshot();
    for value in ["0", "65", "x", "-1", "2.5"] {
        for command in ["run", "demo"] {
            let args: Vec<&str> = if command == "run" {
                vec!["run", "--manifest", &run, "--concurrency", value]
            } else {
                vec!["demo", "--concurrency", value]
            };
            let out = env.run(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert_eq!(out.stdout, b"", "{args:?}");
            let first = stderr.lines().next().unwrap_or("");
            assert!(
                first.contains(&format!("'{value}'"))
                    && first.contains("--concurrency")
                    && first.contains("from 1 to 64"),
                "{args:?}: {stderr}"
            );
        }
    }
    assert!(server.requests().is_empty());
    assert!(
        before == snapshot(),
        "a refused invocation changed the state"
    );
}

/// An answer delay that differs from trial to trial (0-40 ms), so that at N > 1 answers come
/// back out of their planned order.
fn jitter(request: &ServerRequest) -> Duration {
    let trial: u64 = request
        .header("x-skilltrial-attempt")
        .and_then(|a| a.split('-').nth(1))
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    Duration::from_millis((trial * 7 % 5) * 10)
}

/// The report without what may differ between two executions of the same run: times, the
/// report's own hash, attempt nonces, and the concurrency it ran at.
fn comparable(mut report: Value) -> Value {
    report["run"].as_object_mut().unwrap().remove("concurrency");
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.retain(|key, _| !(key.ends_with("_ms") || key.ends_with("_us")));
                map.remove("report_hash");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            Value::String(s) => {
                // `<run12>-<trial>-<seq>-<nonce>`: the nonce is random per attempt.
                let parts: Vec<&str> = s.split('-').collect();
                if parts.len() == 4
                    && parts[0].len() == 12
                    && parts[3].len() == 12
                    && parts[3].bytes().all(|b| b.is_ascii_hexdigit())
                {
                    *s = format!("{}-{}-{}-<nonce>", parts[0], parts[1], parts[2]);
                }
            }
            _ => {}
        }
    }
    strip(&mut report);
    report
}

#[test]
fn the_same_answers_at_one_and_at_eight_in_flight_give_the_same_report() {
    // Given one scripted model whose answers come back after different delays, and two state
    // directories planning the same 54-trial run
    let server = ScriptedServer::start(|r| Reply::Slow(scripted_answer(r), jitter(r))).unwrap();
    let sequential = Env::new(&server).backoff_scale("0");
    let concurrent = Env::new(&server).backoff_scale("0");
    let run = sequential.plan(&["--reps", "3", "--cap-usd", "20"]);
    assert_eq!(concurrent.plan(&["--reps", "3", "--cap-usd", "20"]), run);

    // When one runs at N = 1 and the other at N = 8
    let one = sequential.json(&["run", "--manifest", &run, "--json"]);
    let eight = concurrent.json(&["run", "--manifest", &run, "--concurrency", "8", "--json"]);

    // Then both finish with the same counts, and the same report but for times and nonces
    assert_eq!(one["status"], "finished", "{one}");
    assert_eq!(one["counts"], eight["counts"]);
    let (one, eight) = (sequential.report(&run), concurrent.report(&run));
    assert_eq!(one["run"]["concurrency"], 1);
    assert_eq!(eight["run"]["concurrency"], 8);
    let (one, eight) = (comparable(one), comparable(eight));
    assert!(one["trials"].as_array().unwrap().len() == 54);
    for key in ["trials", "summary", "pairs", "cost", "run"] {
        assert_eq!(one[key], eight[key], "the reports differ in `{key}`");
    }
    assert_eq!(one, eight);
}

#[test]
fn spent_and_reserved_stay_within_the_cap_throughout_a_run_at_eight_that_the_cap_cuts() {
    // Given a cap that covers fewer trials' reserves than the plan has, and a model that holds
    // each request a little while
    let server =
        ScriptedServer::start(|r| Reply::Slow(scripted_answer(r), Duration::from_millis(100)))
            .unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let probe = env.plan_seeded("11", &["--reps", "3", "--cap-usd", "20"]);
    let reserves = env.reserves(&probe);
    // Room for the reserves of about a tenth of the trials: some 5 in flight at once, and less
    // than the whole run spends.
    let cap: u64 = reserves.iter().sum::<u64>() / 10;
    let cap_usd = format!("{}.{:06}", cap / 1_000_000, cap % 1_000_000);
    let run = env.plan(&["--reps", "3", "--cap-usd", &cap_usd]);
    let mut child = env
        .command(&["run", "--manifest", &run, "--concurrency", "8"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    // When the ledger is sampled while the run goes
    let mut samples = 0;
    let mut most_in_flight = 0;
    while child.try_wait().unwrap().is_none() {
        let status = env.json(&["status", &run, "--json"]);
        let spent = status["spent_usd_micros"].as_u64().unwrap();
        let reserved = status["reserved_usd_micros"].as_u64().unwrap();
        // Then spent + reserved never passes the cap
        assert!(spent + reserved <= cap, "{spent} + {reserved} > {cap}");
        most_in_flight = most_in_flight.max(status["in_flight"].as_array().unwrap().len());
        samples += 1;
    }
    assert!(child.wait().unwrap().success());
    assert!(samples > 3, "too few samples ({samples}) to say anything");

    // And the cap cut the run: trials not run for the budget, nothing over the cap at the end
    let status = env.json(&["status", &run, "--json"]);
    assert!(
        status["not_run_reasons"]["not_run_budget"].as_u64() > Some(0),
        "{status}"
    );
    let spent = status["spent_usd_micros"].as_u64().unwrap();
    assert!(spent <= cap, "{status}");
    assert_eq!(status["reserved_usd_micros"], 0, "{status}");
    assert!(server.requests().len() < 54);
    // With more than one request in flight at a time
    assert!(most_in_flight > 1, "never more than one request in flight");
}
