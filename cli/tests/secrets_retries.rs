//! Keys never reach the disk, and rate limits are retried within bounds: the real `skilltrial`
//! binary, a real SQLite journal under a temporary state directory, and the loopback server
//! speaking the Anthropic wire format, with faults that echo the key or turn requests away.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use skilltrial_core::digest::Sha256Digest;
use skilltrial_engine::scripted::{Reply, ScriptedServer, ServerRequest};

/// A key long enough to have many 12-character pieces, with no piece that occurs elsewhere.
const SECRET: &str = "sk-ant-api03-Qm7vT2xLp9RwZk4NcY8dHj3F-Ub6sGe1Ao5KiWq0Xr-7hTz2Mv";

mod support;

use support::{BACKOFF_VAR, Env, files_under, scripted_answer};

/// Every file under `dir` (recursively) that contains any `piece`-byte substring of `secret`.
fn files_with_key_pieces(dir: &Path, secret: &str, piece: usize) -> Vec<(PathBuf, String)> {
    let pieces: Vec<&[u8]> = secret.as_bytes().windows(piece).collect();
    files_under(dir)
        .into_iter()
        .filter_map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            pieces
                .iter()
                .find(|p| bytes.windows(p.len()).any(|w| w == **p))
                .map(|p| (path, String::from_utf8_lossy(p).into_owned()))
        })
        .collect()
}

/// All attempts of a report, by id.
fn attempts_by_id(report: &Value) -> HashMap<String, Value> {
    report["trials"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["attempts"].as_array().unwrap().clone())
        .map(|a| (a["id"].as_str().unwrap().to_owned(), a))
        .collect()
}

/// The attempt ids of a trial's attempts in order, for the trial that holds `attempt`.
fn chain_of(report: &Value, attempt: &str) -> Vec<Value> {
    report["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["attempts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["id"] == attempt)
        })
        .map(|t| t["attempts"].as_array().unwrap().clone())
        .unwrap()
}

#[test]
fn a_key_quoted_by_the_provider_never_reaches_any_file() {
    // Given a provider (or a gateway in front of it) that quotes the key back: in an error body,
    // in a success body, in a kept header, with the key straddling the error text's truncation
    // point, and in part
    let server = ScriptedServer::start(|r| match r.index {
        0 => Reply::EchoKeyInError {
            status: 401,
            pad: 0,
        },
        1 => Reply::EchoKeyInBody(scripted_answer(r)),
        2 => Reply::EchoKeyInHeader(scripted_answer(r)),
        // `{"error":{"message":"` (21) + pad + `invalid x-api-key ` (18): the key starts at
        // character 285 and runs past the 300 characters kept of an error.
        3 => Reply::EchoKeyInError {
            status: 400,
            pad: 246,
        },
        4 => Reply::EchoKeyInError {
            status: 403,
            pad: 270,
        },
        _ => Reply::Answer(scripted_answer(r)),
    })
    .unwrap();
    let env = Env::new(&server).secret(SECRET).backoff_scale("1");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);

    // When the real binary runs the plan and writes its report
    let out = env.run(&["run", "--manifest", &run, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = env.run(&["status", "--json"]);
    let report = env.report(&run);

    // Then the provider text was kept (scrubbed), the key travelled in its header only
    assert_eq!(
        server.requests().len(),
        18,
        "errors quoting a key are not retried"
    );
    assert!(server.requests().iter().all(|r| r.had_api_key));
    let by_id = attempts_by_id(&report);
    let first = &by_id[server.requests()[0].attempt.as_deref().unwrap()];
    assert_eq!(first["outcome"], "infrastructure_error");
    assert_eq!(first["http_status"], 401);
    let error = first["error"].as_str().unwrap();
    assert!(
        error.starts_with(
            "{\"error\":{\"message\":\"invalid x-api-key <redacted> (key <redacted>...<redacted>; url ?key=<redacted>)\""
        ),
        "{error}"
    );
    let header = &by_id[server.requests()[2].attempt.as_deref().unwrap()];
    assert_eq!(header["provider_request_id"], "req_<redacted>");
    assert_eq!(
        header["state"], "result",
        "an answer with an echoing header is still an answer"
    );

    // And no 12-character piece of the key is in any file: journal (and WAL), payloads, store,
    // reports, nor on any output
    assert_eq!(
        files_with_key_pieces(env.dir.path(), SECRET, 12),
        Vec::<(PathBuf, String)>::new()
    );
    for text in [&out.stdout, &out.stderr, &status.stdout, &status.stderr] {
        let text = String::from_utf8_lossy(text);
        assert!(
            SECRET
                .as_bytes()
                .windows(12)
                .all(|p| !text.contains(std::str::from_utf8(p).unwrap())),
            "{text}"
        );
    }
}

/// Arrival times and attempt ids of every request, in order.
type Arrivals = Arc<Mutex<Vec<(Instant, Option<String>, Sha256Digest)>>>;

fn recording(
    arrivals: &Arrivals,
    reply: impl Fn(&ServerRequest, usize) -> Reply + Send + Sync + 'static,
) -> ScriptedServer {
    let arrivals = Arc::clone(arrivals);
    ScriptedServer::start(move |r| {
        let mut log = arrivals.lock().unwrap();
        let sha = Sha256Digest::of(&r.body);
        // How often this exact body (this trial: one repetition, so bodies are unique) was seen.
        let seen = log.iter().filter(|(_, _, s)| *s == sha).count();
        log.push((
            Instant::now(),
            r.header("x-skilltrial-attempt").map(str::to_owned),
            sha,
        ));
        drop(log);
        reply(r, seen)
    })
    .unwrap()
}

#[test]
fn a_429_with_retry_after_is_retried_once_as_a_new_attempt_after_the_asked_wait() {
    // Given a provider that answers the first request 429 with `retry-after: 10` (seconds)
    let arrivals: Arrivals = Arc::default();
    let server = recording(&arrivals, |r, _| {
        if r.index == 0 {
            Reply::RetryAfter(429, "10".into())
        } else {
            Reply::Answer(scripted_answer(r))
        }
    });
    let env = Env::new(&server).secret(SECRET).backoff_scale("1");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);

    // When the run goes, with waits scaled by 1/50 (10 s become 200 ms)
    let summary = env.json_scaled(&["run", "--manifest", &run, "--json"], "0.02");

    // Then the trial was retried once, as a new attempt, after at least the asked (scaled) wait,
    // and the default backoff (1 s -> 20 ms) was not used instead
    assert_eq!(summary["status"], "finished");
    let log = arrivals.lock().unwrap().clone();
    assert_eq!(log.len(), 19, "18 trials + 1 retry");
    assert_eq!(log[1].2, log[0].2, "the retry sends the same body");
    let gap = log[1].0.duration_since(log[0].0);
    assert!(
        gap >= Duration::from_millis(200) && gap < Duration::from_secs(5),
        "{gap:?}"
    );
    let (first, second) = (log[0].1.clone().unwrap(), log[1].1.clone().unwrap());
    assert_ne!(first, second, "each retry has its own attempt id");

    // And the ledger and the report show both attempts, with the reason
    let report = env.report(&run);
    let chain = chain_of(&report, &first);
    assert_eq!(chain.len(), 2);
    assert_eq!(chain[0]["id"], first.as_str());
    assert_eq!(chain[0]["outcome"], "infrastructure_error");
    assert_eq!(chain[0]["reasons"], serde_json::json!(["http_429"]));
    assert_eq!(chain[0]["spent_usd_micros"], 0);
    assert_eq!(chain[1]["id"], second.as_str());
    assert_eq!(chain[1]["retry_of"], first.as_str());
    assert_eq!(
        chain[1]["retry_reason"],
        "automatic retry 1/3 after HTTP 429, nothing spent; waited 200 ms (retry-after 10000 ms)"
    );
    assert!(chain[1]["spent_usd_micros"].as_u64().unwrap() > 0);
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["executed"], 18);
    assert_eq!(status["counts"].get("infrastructure_error"), None);
    assert_eq!(status["reserved_usd_micros"], 0);
    let html = std::fs::read_to_string(env.dir.path().join("report/report.html")).unwrap();
    assert!(html.contains("automatic retry 1/3 after HTTP 429"));
}

#[test]
fn overloaded_529_every_time_gives_up_after_three_retries_and_resolve_retry_takes_it() {
    // Given a provider overloaded (529, no retry-after) for one trial for as long as it is asked
    let arrivals: Arrivals = Arc::default();
    let overloaded = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let server = {
        let overloaded = Arc::clone(&overloaded);
        let first: Arc<Mutex<Option<Sha256Digest>>> = Arc::default();
        recording(&arrivals, move |r, _| {
            let sha = Sha256Digest::of(&r.body);
            let mut first = first.lock().unwrap();
            let target = *first.get_or_insert(sha);
            if sha == target && overloaded.load(std::sync::atomic::Ordering::SeqCst) {
                Reply::Status(529)
            } else {
                Reply::Answer(scripted_answer(r))
            }
        })
    };
    let env = Env::new(&server).secret(SECRET).backoff_scale("1");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);

    // When the run goes (waits scaled to 1/100)
    env.json_scaled(&["run", "--manifest", &run, "--json"], "0.01");

    // Then that trial was sent four times (three automatic retries) and ended an infrastructure
    // error; the waits followed the default backoff 1 s, 2 s, 4 s (scaled)
    let log = arrivals.lock().unwrap().clone();
    assert_eq!(log.len(), 21, "18 trials + 3 retries");
    assert!(log[..4].iter().all(|(_, _, s)| *s == log[0].2));
    for (i, min_ms) in [(1, 10u64), (2, 20), (3, 40)] {
        let gap = log[i].0.duration_since(log[i - 1].0);
        assert!(gap >= Duration::from_millis(min_ms), "retry {i}: {gap:?}");
    }
    let report = env.report(&run);
    let last = log[3].1.clone().unwrap();
    let chain = chain_of(&report, &last);
    assert_eq!(chain.len(), 4);
    for (i, a) in chain.iter().enumerate() {
        assert_eq!(a["outcome"], "infrastructure_error", "{a}");
        assert_eq!(a["reasons"], serde_json::json!(["http_529"]));
        assert_eq!(a["spent_usd_micros"], 0);
        assert_eq!(a["id"].as_str(), log[i].1.as_deref());
        if i > 0 {
            assert_eq!(a["retry_of"], chain[i - 1]["id"]);
            let waited = 10 * (1u64 << (i - 1));
            assert_eq!(
                a["retry_reason"],
                format!(
                    "automatic retry {i}/3 after HTTP 529, nothing spent; waited {waited} ms (no retry-after: default backoff)"
                )
            );
        }
    }
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["counts"]["infrastructure_error"], 1);
    assert_eq!(status["reserved_usd_micros"], 0);

    // When the user retries the infrastructure error by hand, once the provider recovered
    overloaded.store(false, std::sync::atomic::Ordering::SeqCst);
    let resolved = env.json(&[
        "resolve",
        &last,
        "--retry",
        "--reason",
        "the provider recovered",
        "--json",
    ]);
    assert_eq!(resolved["closed_as"], "infrastructure_error");
    let new_attempt = resolved["new_attempt"].as_str().unwrap().to_owned();
    // An older attempt of the chain is not the one to retry
    let older = env.run(&[
        "resolve",
        chain[0]["id"].as_str().unwrap(),
        "--retry",
        "--reason",
        "x",
    ]);
    assert_eq!(older.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&older.stderr).contains("is not its trial's latest attempt"),
        "{}",
        String::from_utf8_lossy(&older.stderr)
    );
    env.json(&["run", "--manifest", &run, "--json"]);

    // Then it is sent once more and passes; the earlier four stay in the ledger
    let log = arrivals.lock().unwrap().clone();
    assert_eq!(log.len(), 22);
    assert_eq!(log[21].1.as_deref(), Some(new_attempt.as_str()));
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["counts"].get("infrastructure_error"), None);
    assert_eq!(status["executed"], 18);
    assert_eq!(status["attempts"], 22);
}

#[test]
fn a_cut_connection_is_unknown_and_never_retried_automatically() {
    let arrivals: Arrivals = Arc::default();
    let server = recording(&arrivals, |r, _| {
        if r.index == 0 {
            Reply::Close
        } else {
            Reply::Answer(scripted_answer(r))
        }
    });
    let env = Env::new(&server).secret(SECRET).backoff_scale("1");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json_scaled(&["run", "--manifest", &run, "--json"], "0");
    assert_eq!(arrivals.lock().unwrap().len(), 18, "nothing re-sent");
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["counts"]["unknown"], 1);
    assert_eq!(
        status["unknown"][0]["attempt"].as_str(),
        arrivals.lock().unwrap()[0].1.as_deref()
    );
}

#[test]
fn a_backoff_scale_that_is_not_a_fraction_is_refused_by_name() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).secret(SECRET).backoff_scale("1");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let out = env.run_scaled(&["run", "--manifest", &run], "fast");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "SKILLTRIAL_TEST_BACKOFF_SCALE=`fast` is not a number from 0 to 1 (it scales retry waits in tests)"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn every_fault_becomes_exactly_its_outcome_with_its_reserve() {
    // Given a provider that gives the k-th distinct request body (one trial each) its own fault
    let arrivals: Arrivals = Arc::default();
    let order: Arc<Mutex<Vec<Sha256Digest>>> = Arc::default();
    let server = {
        let order = Arc::clone(&order);
        recording(&arrivals, move |r, seen| {
            let sha = Sha256Digest::of(&r.body);
            let mut order = order.lock().unwrap();
            let k = order.iter().position(|s| *s == sha).unwrap_or_else(|| {
                order.push(sha);
                order.len() - 1
            });
            match k {
                0 if seen == 0 => Reply::Status(429),
                1 => Reply::Status(529),
                2 => Reply::Status(503),
                3 => Reply::DieHalfway(scripted_answer(r)),
                4 => Reply::Malformed,
                5 => Reply::Close,
                6 => Reply::Status(401),
                _ => Reply::Answer(scripted_answer(r)),
            }
        })
    };
    let env = Env::new(&server).secret(SECRET).backoff_scale("1");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json_scaled(&["run", "--manifest", &run, "--json"], "0.001");
    let report = env.report(&run);
    let by_id = attempts_by_id(&report);
    let status = env.json(&["status", "--json"]);

    // Then every request the server saw maps (by its attempt header) to one attempt whose outcome,
    // reasons and HTTP status are exactly those of its fault
    let log = arrivals.lock().unwrap().clone();
    let order = order.lock().unwrap().clone();
    assert_eq!(
        log.len(),
        22,
        "18 trials + 1 retry of the 429 + 3 of the 529"
    );
    let mut unknown_reserve = 0;
    for (_, attempt, sha) in &log {
        let attempt = attempt.as_deref().unwrap();
        let a = &by_id[attempt];
        let k = order.iter().position(|s| s == sha).unwrap();
        let retry = a["retry_reason"].as_str().is_some();
        let (outcome, reasons, http) = match k {
            0 if !retry => ("infrastructure_error", vec!["http_429"], Some(429)),
            1 => ("infrastructure_error", vec!["http_529"], Some(529)),
            2 => ("infrastructure_error", vec!["http_503"], Some(503)),
            3..=5 => ("unknown", vec!["no_answer"], None),
            6 => ("infrastructure_error", vec!["http_401"], Some(401)),
            _ => ("", vec![], Some(200)),
        };
        if outcome.is_empty() {
            assert_eq!(a["state"], "result", "{attempt}: {a}");
        } else {
            assert_eq!(a["outcome"], outcome, "fault {k}, {attempt}: {a}");
            assert_eq!(a["reasons"], serde_json::json!(reasons), "fault {k}: {a}");
        }
        // An unknown attempt records no status (a cut body's 200 is not an answer).
        assert_eq!(
            a["http_status"].as_u64(),
            http.map(|h: u16| u64::from(h)),
            "fault {k}: {a}"
        );
        match outcome {
            // Nothing reached the model: its reserve released, nothing spent.
            "infrastructure_error" => assert_eq!(a["spent_usd_micros"], 0, "{a}"),
            // Sent and no answer: the reserve stays held, nothing counted as spent yet.
            "unknown" => {
                assert!(a["reserved_usd_micros"].as_u64().unwrap() > 0);
                assert_eq!(a["spent_usd_micros"], Value::Null, "{a}");
                unknown_reserve += a["reserved_usd_micros"].as_u64().unwrap();
            }
            _ => assert!(a["spent_usd_micros"].as_u64().unwrap() > 0, "{a}"),
        }
    }
    // Only the three unknown attempts still hold a reserve, and exactly theirs.
    assert_eq!(status["reserved_usd_micros"], unknown_reserve);
    assert_eq!(status["counts"]["unknown"], 3);
    assert_eq!(
        status["counts"]["infrastructure_error"], 3,
        "529 x4, 503, 401"
    );
    assert_eq!(status["executed"], 12);
    assert_eq!(status["attempts"], 22);
}

#[test]
fn a_cancel_during_a_retry_wait_ends_it_and_leaves_nothing_planned() {
    // Given a provider that asks for a 30-second wait on the first request
    let arrivals: Arrivals = Arc::default();
    let server = recording(&arrivals, |r, _| {
        if r.index == 0 {
            Reply::RetryAfter(429, "30".into())
        } else {
            Reply::Answer(scripted_answer(r))
        }
    });
    let env = Env::new(&server).secret(SECRET).backoff_scale("1");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let started = Instant::now();
    let mut child = env
        .command(&["run", "--manifest", &run])
        .env_remove(BACKOFF_VAR)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while arrivals.lock().unwrap().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no request came"
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    // When the run is cancelled from another process during the wait
    env.json(&["cancel", &run, "--json"]);
    assert!(child.wait().unwrap().success());

    // Then the wait ended early, nothing more was sent, and no attempt is left planned: the
    // trial ends not_run (cancelled) after its rate-limited attempt
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(arrivals.lock().unwrap().len(), 1);
    let report = env.report(&run);
    let first = arrivals.lock().unwrap()[0].1.clone().unwrap();
    let chain = chain_of(&report, &first);
    assert_eq!(chain.len(), 2, "{chain:?}");
    assert_eq!(chain[0]["outcome"], "infrastructure_error");
    assert_eq!(chain[1]["outcome"], "not_run");
    assert_eq!(chain[1]["reasons"], serde_json::json!(["cancelled"]));
    let planned = report["trials"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["attempts"].as_array().unwrap().clone())
        .filter(|a| a["state"] == "planned")
        .count();
    assert_eq!(planned, 0);
    let status = env.json(&["status", &run, "--json"]);
    assert_eq!(status["status"], "cancelled");
    assert_eq!(status["reserved_usd_micros"], 0);
}
