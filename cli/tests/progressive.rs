//! Progressive delivery end to end, on the real `skilltrial` binary and a real journal: a trial
//! of several turns survives a kill at every turn boundary, a turn killed in flight is `unknown`
//! and never sent again, a user's retry rebuilds that turn's request byte for byte from the
//! journal, and spent + reserved stays within the cap at every commit of a run the cap cuts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use skilltrial_core::manifest::PlannedTrial;
use skilltrial_engine::journal::{AttemptRow, AttemptState};
use skilltrial_engine::scripted::{Reply, ScriptedServer, ServerRequest};

mod support;
use support::Env;

/// Each trial's outcome, reasons and the answers of its attempts, with their turns.
fn trials(report: &Value) -> Vec<Value> {
    report["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let attempts: Vec<Value> = t["attempts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| serde_json::json!([a["answer_sha256"], a["state"]]))
                .collect();
            serde_json::json!({
                "index": t["index"],
                "outcome": t["outcome"],
                "reasons": t["reasons"],
                "attempts": attempts,
            })
        })
        .collect()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The attempts of `run` in the state directory `home`.
fn attempts_in(home: &Path, run: &str) -> Vec<AttemptRow> {
    skilltrial_engine::journal::Journal::open(&home.join("journal.sqlite3"))
        .unwrap()
        .attempts(run)
        .unwrap()
}

/// Every (trial, turn) was dispatched at most once, and each trial's turns are 1, 2, … in order.
fn each_turn_sent_once(attempts: &[AttemptRow]) -> BTreeMap<u32, u32> {
    let mut sent: BTreeMap<(u32, u32), u32> = BTreeMap::new();
    for a in attempts.iter().filter(|a| a.dispatched_at_ms.is_some()) {
        *sent.entry((a.trial_idx, a.turn)).or_default() += 1;
    }
    for ((trial, turn), n) in &sent {
        assert_eq!(*n, 1, "trial {trial} turn {turn} was sent {n} times");
    }
    let mut turns: BTreeMap<u32, u32> = BTreeMap::new();
    for (trial, turn) in sent.keys() {
        let most = turns.entry(*trial).or_default();
        assert_eq!(*turn, *most + 1, "trial {trial} skipped to turn {turn}");
        *most = *turn;
    }
    turns
}

#[test]
fn a_progressive_demo_killed_after_every_turn_resumes_to_the_uninterrupted_results() {
    let tmp = tempfile::tempdir().unwrap();
    let whole_home = tmp.path().join("home-whole");
    let whole = tmp.path().join("whole");
    let out = support::offline_output(
        &whole_home,
        &[
            "demo",
            "--delivery",
            "progressive",
            "--reps",
            "1",
            "--out",
            whole.to_str().unwrap(),
            "--json",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let whole_report = read_json(&whole.join("report.json"));
    let run = whole_report["run"]["id"]
        .as_str()
        .or_else(|| whole_report["manifest_hash"].as_str())
        .unwrap()
        .trim_start_matches("sha256:")
        .to_owned();
    let turns = each_turn_sent_once(&attempts_in(&whole_home, &run));
    // Some trials loaded the skill (more than one turn), some answered at once.
    assert!(turns.values().any(|t| *t >= 2), "{turns:?}");
    assert!(turns.values().any(|t| *t == 1), "{turns:?}");

    // The same demo, ended on the spot right after its first turn that asked for a tool is
    // journaled with the trial's next turn; then every resume ended the same way.
    let home = tmp.path().join("home-killed");
    let out = support::offline_output(
        &home,
        &["demo", "--delivery", "progressive", "--reps", "1"],
        Some("after_turn"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(86), "{stderr}");
    // The scripted model listens on a new port, which the manifest pins: another run id.
    let run = support::manifest_in(&stderr);
    let resumes = support::resume_until_done(&home, &run, "after_turn", 60);
    assert!(
        resumes >= 2,
        "only {resumes} resumes: the kill point was not hit"
    );
    let attempts = attempts_in(&home, &run);
    assert_eq!(each_turn_sent_once(&attempts), turns);
    // Every trial scored once: one verdict per trial, on its last turn.
    let scored = attempts.iter().filter(|a| a.outcome.is_some()).count();
    assert_eq!(scored, turns.len());

    let resumed = tmp.path().join("resumed");
    let out = support::offline_output(
        &home,
        &["report", &run, "--out", resumed.to_str().unwrap(), "--json"],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        trials(&read_json(&resumed.join("report.json"))),
        trials(&whole_report),
        "per-trial results of the killed and resumed demo"
    );
}

/// A loopback model that loads the catalog's skill on its first turn and answers on the next.
fn loads_then_answers(request: &ServerRequest) -> Reply {
    if request.tool_results().is_empty() {
        let system = request.system_text();
        match system
            .split("<name>")
            .nth(1)
            .and_then(|s| s.split("</name>").next())
        {
            Some(name) => Reply::Tools {
                text: "Loading the skill.".to_owned(),
                calls: vec![(
                    "load_skill".to_owned(),
                    serde_json::json!({ "name": name }).to_string(),
                )],
            },
            None => Reply::Answer("{}".to_owned()),
        }
    } else {
        Reply::Answer("{\"answer\": 1}".to_owned())
    }
}

#[test]
fn a_turn_killed_in_flight_is_unknown_never_sent_again_and_a_retry_rebuilds_it_byte_for_byte() {
    let server = ScriptedServer::start(loads_then_answers).unwrap();
    let env = Env::new(&server);
    let run = env.plan(&[
        "--reps",
        "1",
        "--delivery",
        "progressive",
        "--cap-usd",
        "20",
    ]);

    // The run ends right after the first second turn is journaled `dispatched`.
    env.kill_at(&run, "after_dispatch_turn_2");
    let attempts = env.attempts(&run);
    let second = attempts
        .iter()
        .find(|a| a.turn == 2 && a.state == AttemptState::Dispatched)
        .expect("a second turn was dispatched")
        .clone();
    let first = attempts
        .iter()
        .find(|a| Some(&a.id) == second.prior_turn.as_ref())
        .unwrap();
    assert_eq!(first.state, AttemptState::Result);
    assert!(first.exchange.as_deref().unwrap().contains("load_skill"));

    // The next run finds it unknown, keeps its reserve, and never sends it again.
    let out = env.run(&["run", "--manifest", &run, "--yes"]);
    assert!(out.status.success(), "{}", support::output_text(&out));
    let attempts = env.attempts(&run);
    let unknown = attempts.iter().find(|a| a.id == second.id).unwrap();
    assert_eq!(unknown.state, AttemptState::Unknown);
    assert!(unknown.reserved_micros > 0);
    assert!(
        !server
            .requests()
            .iter()
            .any(|r| r.attempt.as_deref() == Some(second.id.as_str())),
        "the turn in flight at the kill was sent again"
    );
    assert_eq!(
        attempts
            .iter()
            .filter(|a| a.trial_idx == second.trial_idx)
            .count(),
        2,
        "the trial was continued or restarted by itself"
    );
    each_turn_sent_once(&attempts);

    // The user says it never left: a retry of that turn, after the same first turn, whose
    // request is the same bytes, rebuilt from the journal.
    let out = env.run(&[
        "resolve",
        &second.id,
        "--retry",
        "--reason",
        "the runner was killed before it sent the request",
    ]);
    assert!(out.status.success(), "{}", support::output_text(&out));
    let out = env.run(&["run", "--manifest", &run, "--yes"]);
    assert!(out.status.success(), "{}", support::output_text(&out));
    let attempts = env.attempts(&run);
    let retry = attempts
        .iter()
        .find(|a| a.retry_of.as_deref() == Some(second.id.as_str()))
        .expect("the retry");
    assert_eq!(retry.turn, 2);
    assert_eq!(retry.prior_turn, second.prior_turn);
    assert_eq!(retry.request_sha256, second.request_sha256);
    assert_eq!(retry.state, AttemptState::Result);
    assert!(
        retry.outcome.is_some(),
        "the retried turn's answer is scored"
    );
}

#[test]
fn a_response_with_more_calls_than_can_be_answered_ends_the_trial_without_reaching_its_turn_limit()
{
    // Given a model that asks for nine loads at once on its first turn (more than the 8 a
    // response may carry) whenever its catalog lists a skill,
    let server = ScriptedServer::start(|request: &ServerRequest| {
        let system = request.system_text();
        match system
            .split("<name>")
            .nth(1)
            .and_then(|rest| rest.split("</name>").next())
        {
            Some(name) if request.tool_results().is_empty() => Reply::Tools {
                text: String::new(),
                calls: vec![
                    (
                        "load_skill".to_owned(),
                        serde_json::json!({ "name": name }).to_string()
                    );
                    9
                ],
            },
            _ => Reply::Answer("{}".to_owned()),
        }
    })
    .unwrap();
    let env = Env::new(&server);
    let run = env.plan(&[
        "--reps",
        "1",
        "--delivery",
        "progressive",
        "--max-turns",
        "6",
        "--max-requests",
        "200",
        "--cap-usd",
        "20",
    ]);
    let out = env.run(&["run", "--manifest", &run, "--yes"]);
    assert!(out.status.success(), "{}", support::output_text(&out));
    // then each skill trial ends after that one request, its nine calls counted as too many,
    // and none is said to have used its six turns.
    let report = env.report(&run);
    let mut skill_trials = 0;
    for trial in report["trials"].as_array().unwrap() {
        let evidence = &trial["evidence"];
        assert_eq!(evidence["turn_limit"], false, "{evidence}");
        if trial["arm"] == "baseline" {
            continue;
        }
        skill_trials += 1;
        assert_eq!(evidence["turns"], 1, "{evidence}");
        assert_eq!(
            evidence["tool_errors"],
            serde_json::json!([{"error": "too_many_calls", "count": 9}]),
            "{evidence}"
        );
    }
    assert_eq!(skill_trials, 12);
}

#[test]
fn plan_says_when_no_trial_fits_the_cap() {
    let server = ScriptedServer::start(loads_then_answers).unwrap();
    let env = Env::new(&server);
    let flags = [
        "--reps",
        "1",
        "--delivery",
        "progressive",
        "--max-requests",
        "200",
        "--cap-usd",
        "0.01",
    ];
    let doc = env.plan_doc(&flags);
    let smallest = doc["smallest_trial_usd_micros"].as_u64().unwrap();
    assert!(smallest > 10_000, "{doc}");
    let mut args = env.plan_args(&flags);
    args.extend(["--seed".to_owned(), "3".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = env.text(&args);
    assert!(
        text.contains(&format!(
            "no trial fits the cap: the smallest trial's upper cost is {}",
            skilltrial_core::money::MicroUsd(smallest)
        )),
        "{text}"
    );
    // A cap that fits the smallest trial says only that the bound is over it.
    let text = env.text(
        &args
            .iter()
            .map(|a| if *a == "0.01" { "0.30" } else { a })
            .collect::<Vec<_>>(),
    );
    assert!(!text.contains("no trial fits"), "{text}");
}

/// The trials `run` plans, recomputed from its manifest file with the core's own functions.
fn planned_trials(manifest: &Path) -> (Option<skilltrial_core::profile::Price>, Vec<PlannedTrial>) {
    let manifest: skilltrial_core::manifest::Manifest =
        serde_json::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
    let pack = skilltrial_core::pack::open(&manifest.pack.id).unwrap();
    let bundle = |path: &str| skilltrial_core::bundle::import(&support::root().join(path)).unwrap();
    let (a, b) = (
        bundle("fixtures/bundles/solana-reader-1.4.2"),
        bundle("fixtures/bundles/solana-reader-1.5.0"),
    );
    let (trials, _) =
        skilltrial_core::manifest::trials_with(&manifest, &pack, Some(&a), Some(&b), &[]).unwrap();
    (manifest.budget.price.clone(), trials)
}

#[test]
fn an_unknown_turn_holds_and_books_only_its_own_bound_never_the_turns_after_it() {
    let server = ScriptedServer::start(loads_then_answers).unwrap();
    let env = Env::new(&server);
    let manifest = env.dir.path().join("manifest.json");
    let run = env.plan(&[
        "--reps",
        "1",
        "--delivery",
        "progressive",
        "--max-turns",
        "4",
        "--cap-usd",
        "20",
        "--out",
        manifest.to_str().unwrap(),
    ]);
    let (price, trials) = planned_trials(&manifest);

    // The run ends with a first turn journaled `dispatched`; the next run finds it unknown.
    env.kill_at(&run, "after_dispatch");
    let cancel = env.run(&["cancel", &run]);
    assert!(cancel.status.success(), "{}", support::output_text(&cancel));
    let out = env.run(&["run", "--manifest", &run, "--yes"]);
    assert!(out.status.success(), "{}", support::output_text(&out));
    let unknown = env
        .attempts(&run)
        .into_iter()
        .find(|a| a.state == AttemptState::Unknown)
        .expect("the turn in flight at the kill is unknown");
    assert_eq!(unknown.turn, 1);
    let trial = trials
        .iter()
        .find(|t| t.index == unknown.trial_idx)
        .unwrap();
    // It holds what its own turn may cost: the trial's reserve less what turns 2 to 4 keep.
    let whole = trial.reserve_from(price.as_ref(), 1).unwrap().0;
    let own = whole - trial.reserve_from(price.as_ref(), 2).unwrap().0;
    assert!(own > 0 && own < whole, "{own} of {whole}");
    assert_eq!(unknown.reserved_micros, own);
    assert_eq!(
        unknown.reserved_tokens,
        trial.tokens_from(1) - trial.tokens_from(2)
    );
    // Released as spent, it books that bound, not the turns that were never sent.
    let out = env.run(&["resolve", &unknown.id, "--release"]);
    assert!(out.status.success(), "{}", support::output_text(&out));
    let status = env.json(&["status", &run, "--json"]);
    assert_eq!(status["spent_usd_micros"], own, "{status}");
    assert_eq!(status["reserved_usd_micros"], 0, "{status}");
}

#[test]
fn spent_plus_reserved_stays_within_the_cap_at_every_commit_of_a_progressive_run_the_cap_cuts() {
    let server = ScriptedServer::start(loads_then_answers).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let probe = env.plan_seeded(
        "11",
        &[
            "--reps",
            "3",
            "--delivery",
            "progressive",
            "--cap-usd",
            "50",
            "--max-requests",
            "300",
        ],
    );
    let reserves = env.reserves(&probe);
    let cap: u64 = reserves.iter().sum::<u64>() / 8;
    let cap_usd = format!("{}.{:06}", cap / 1_000_000, cap % 1_000_000);
    let run = env.plan(&[
        "--reps",
        "3",
        "--delivery",
        "progressive",
        "--cap-usd",
        &cap_usd,
        "--max-requests",
        "300",
    ]);
    let out = env.run(&["run", "--manifest", &run, "--concurrency", "8", "--yes"]);
    assert!(out.status.success(), "{}", support::output_text(&out));

    // Replayed in commit order, the ledger never holds more than the cap.
    let db = rusqlite::Connection::open(env.home().join("journal.sqlite3")).unwrap();
    let mut stmt = db
        .prepare("SELECT kind, micros FROM ledger WHERE run_id = ?1 ORDER BY id")
        .unwrap();
    let rows: Vec<(String, i64)> = stmt
        .query_map([&run], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let (mut spent, mut reserved) = (0i64, 0i64);
    let mut most = 0i64;
    for (kind, micros) in &rows {
        match kind.as_str() {
            "reserve" => reserved += micros,
            "release" => reserved -= micros,
            "spend" => spent += micros,
            other => panic!("ledger kind {other}"),
        }
        most = most.max(spent + reserved);
        assert!(
            spent + reserved <= i64::try_from(cap).unwrap(),
            "{spent} + {reserved} > {cap}"
        );
    }
    assert!(most > 0);
    let status = env.json(&["status", &run, "--json"]);
    assert!(
        status["not_run_reasons"]["not_run_budget"].as_u64() > Some(0),
        "the cap did not cut the run: {status}"
    );
    // No trial was cut between its turns: every trial that sent a first turn that asked for a
    // tool sent its second turn too.
    let attempts = env.attempts(&run);
    for first in attempts.iter().filter(|a| a.exchange.is_some()) {
        assert!(
            attempts
                .iter()
                .any(|a| a.prior_turn.as_ref() == Some(&first.id) && a.dispatched_at_ms.is_some()),
            "trial {} was cut after its first turn",
            first.trial_idx
        );
    }
}
