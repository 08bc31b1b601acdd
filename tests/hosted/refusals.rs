//! The runner daemon where it cannot do what was asked, on a config of the test's own
//! (`admin init`: a fee of 1 lamport, a spending limit of 50,000 lamports per 60 s):
//! - it offers and accepts only the profiles it can call, and refuses any other before the user
//!   signs anything;
//! - a run whose model it can no longer call (restarted without its key) is finalized with every
//!   trial `not_run`, reason `not_run_model_unavailable` (or `unknown`, the one in flight at a
//!   kill), and the escrow comes back whole, the user's cancel obeyed meanwhile (its trials then
//!   `cancelled`), `--follow` ending;
//! - a settlement the program refuses for the spending limit pauses dispatch until the limit's
//!   period ends, then settles and finalizes every executed trial: the run never fails;
//! - a settlement refused because the Run's deadline passed is not charged, nothing more is
//!   sent, the run is finalized with what settled and its owner takes the rest back, and the
//!   daemon serves the next run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use skilltrial_chain::Pubkey;
use skilltrial_core::report::Report;
use skilltrial_engine::scripted::{Reply, ScriptedServer};
use skilltrial_runner::client::{Client, ClientError};
use solana_signer::Signer;

use crate::daemon::{
    Daemon, Launch, free_port, operator_profile, plan, remote_status, start_daemon_launch,
    start_daemon_with, status_command, submit_args, wait_requests,
};
use crate::harness::{Localnet, said};

/// Usage of one trial: 100 input and 20 output tokens at $3 and $15 per million, 600 µUSD, at
/// $150/SOL.
const TRIAL_USAGE: u64 = 4_000;
/// The spending limit: room for 12 trials' usage and fees, not 13.
const LIMIT: u64 = 50_000;
const PERIOD_SECS: &str = "60";

/// The program's config as this test needs it (the validator was started with `--no-init`).
pub fn init_config(net: &Localnet) {
    let runner = net.runner.pubkey().to_string();
    let payout = net.payout.to_string();
    let mint = Pubkey::new_unique().to_string();
    let limit = LIMIT.to_string();
    net.cli_json(
        &net.user_keypair,
        &[
            "admin",
            "init",
            "--runner",
            &runner,
            "--runner-payout",
            &payout,
            "--mint",
            &mint,
            "--buyback-rate",
            "1:1",
            "--fee-lamports",
            "1",
            "--min-deadline-secs",
            "10",
            "--usage-limit-lamports",
            &limit,
            "--usage-period-secs",
            PERIOD_SECS,
            "--yes",
        ],
    );
}

/// Runs `command` to its end, at most `within`: a command still running then is killed and
/// the test fails with what it printed (a `--follow` that never ends must not hang the suite).
fn output_within(mut command: Command, within: Duration, what: &str) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > within {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} had not ended after {} s:\n{}",
                within.as_secs(),
                said(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    child.wait_with_output().unwrap()
}

/// `status --remote --follow --json` of `run`, which must end within `within` (`what` names
/// it) with the run finalized: the events it printed, in order.
fn follow_to_the_end(
    net: &Localnet,
    daemon: &Daemon,
    run: &str,
    within: Duration,
    what: &str,
) -> Vec<Value> {
    let followed = output_within(
        status_command(net, daemon, run, &["--follow"]),
        within,
        what,
    );
    assert!(followed.status.success(), "{}", said(&followed));
    let events: Vec<Value> = String::from_utf8_lossy(&followed.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = events.last().unwrap();
    assert_eq!(last["kind"], "phase", "{last}");
    assert_eq!(last["data"]["phase"], "finalized", "{last}");
    events
}

/// The operator's profile `id`, served by `server`, and a manifest planned on it for each of
/// `seeds` (one repetition, a $4 cap): distinct runs of the same user.
fn planned<const N: usize>(
    net: &Localnet,
    id: &str,
    server: &ScriptedServer,
    seeds: [&str; N],
) -> (PathBuf, [String; N]) {
    let profiles = operator_profile(net, id, server);
    let manifests = seeds.map(|seed| plan(net, &profiles, id, "1", "4", seed));
    (profiles, manifests)
}

/// The model's answer "I do not know.", in Anthropic's wire format, reporting `input` and
/// `output` tokens of usage.
fn answered(input: u64, output: u64) -> Reply {
    let body = serde_json::json!({
        "id": "msg_fixed_usage",
        "type": "message",
        "role": "assistant",
        "model": "loopback-model",
        "content": [{"type": "text", "text": "I do not know."}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": output},
    });
    Reply::Verbatim {
        status: 200,
        headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        body: body.to_string(),
    }
}

fn submit(net: &Localnet, manifest: &str, url: &url::Url) -> Value {
    net.cli_json(&net.user_keypair, &submit_args(manifest, url))
}

/// The report of `run`, downloaded and verified by the user's binary.
fn download(net: &Localnet, url: &url::Url, run: &str, dir: &Path) -> Report {
    let got = net.cli_json(
        &net.user_keypair,
        &[
            "report",
            run,
            "--remote",
            "--runner",
            url.as_str(),
            "--out",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(got["run_account"], "agrees", "{got}");
    Report::from_json(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
}

/// Regression: the daemon offered built-in profiles it held no key for, and accepted runs on them;
/// the user escrowed and saw "0 of 0" for ever.
pub fn only_the_profiles_it_can_call_are_offered(net: &Localnet) {
    let server = ScriptedServer::start(|_| Reply::Answer("I do not know.".to_owned())).unwrap();
    let profiles = net.dir.path().join("keyed-and-keyless-profiles.toml");
    let entry = |id: &str, provider: &str| {
        format!(
            "[[profile]]\nid = \"{id}\"\nprovider = \"{provider}\"\nmodel = \"loopback-model\"\nbase_url = \"{}\"\ncontext_tokens = 200000\nmax_output_tokens = 1024\ninput_usd_per_mtok = \"3\"\noutput_usd_per_mtok = \"15\"\nprice_source = \"test\"\nprice_as_of = \"2026-11-30\"\n",
            server.url()
        )
    };
    std::fs::write(
        &profiles,
        entry("loopback-keyed", "anthropic") + &entry("loopback-keyless", "openai"),
    )
    .unwrap();
    let log = net.dir.path().join("daemon-profiles.log");
    let state = net.dir.path().join("daemon-profiles-state");
    // Given a daemon with an Anthropic key and no OpenAI key,
    let daemon = start_daemon_launch(
        net,
        free_port(),
        &state,
        &profiles,
        &[],
        &Launch {
            without_anthropic_key: false,
            log: Some(&log),
            env: &[],
        },
    );

    // Then /v1/info lists only what it can call: the operator's keyed profile and the built-in
    // Anthropic ones, never an OpenAI one.
    let info = Client::new(&daemon.url).unwrap().info().unwrap();
    assert!(
        info.profiles.iter().any(|p| p == "loopback-keyed"),
        "{:?}",
        info.profiles
    );
    assert!(
        !info
            .profiles
            .iter()
            .any(|p| p == "loopback-keyless" || p.starts_with("gpt-")),
        "a profile whose provider has no key is offered: {:?}",
        info.profiles
    );
    // And its log says which profiles it serves and which it skipped, and why, never a key.
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("serving model profile loopback-keyed (anthropic at http://127.0.0.1"),
        "{logged}"
    );
    assert!(
        logged.contains(
            "not serving model profile loopback-keyless: this daemon holds no openai key (OPENAI_API_KEY is unset"
        ),
        "{logged}"
    );
    assert!(!logged.contains("sk-ant-operator-test-key"), "{logged}");

    // When the user submits a run on the keyless profile,
    let manifest = plan(net, &profiles, "loopback-keyless", "1", "4", "31");
    let user = net.user();
    let before = net.balance(&user.pubkey());
    let out = net.cli(&net.user_keypair, &submit_args(&manifest, &daemon.url));
    // Then it is refused, naming why, before anything is signed: no escrow, no lamport spent.
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("model profile `loopback-keyless` is not served by this runner: this daemon holds no openai key"),
        "{err}"
    );
    assert!(!err.contains("sending transaction"), "{err}");
    assert_eq!(net.balance(&user.pubkey()), before, "nothing was signed");
    let hash: [u8; 32] = (0..32)
        .map(|i| u8::from_str_radix(&manifest[2 * i..2 * i + 2], 16).unwrap())
        .collect::<Vec<_>>()
        .try_into()
        .unwrap();
    let address = skilltrial_chain::pda::run(&user.pubkey(), &hash);
    assert!(net.chain.run(&address).unwrap().is_none(), "no Run opened");
    // And the check before the escrow (what `submit` and the page ask) refuses it the same way.
    let mut client = Client::new(&daemon.url).unwrap();
    client.sign_in(&user).unwrap();
    match client.check(&manifest, 900) {
        Err(ClientError::Refused {
            status: 422,
            message,
            ..
        }) if message.contains("this daemon holds no openai key") => {}
        other => panic!("/v1/runs/check of an unserved profile: {other:?}"),
    }
    drop(daemon);
    server.stop();
}

/// Regression: restarted without its model key, the daemon left a registered run executing for ever
/// — the worker built the provider before it read the run's status, so the user's cancel did
/// nothing and `--follow` never ended. And the trials of such a run said `cancelled` when nobody
/// had cancelled it: now they say why they were not run.
pub fn a_run_whose_model_cannot_be_called_is_finalized(net: &Localnet) {
    let released = Arc::new(AtomicBool::new(false));
    let gate = Arc::clone(&released);
    let server = ScriptedServer::start(move |_| {
        while !gate.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        Reply::Answer("I do not know.".to_owned())
    })
    .unwrap();
    let (profiles, manifests) = planned(net, "loopback-held", &server, ["32", "33"]);
    let state = net.dir.path().join("daemon-keyless-state");
    let port = free_port();
    let user = net.user();
    let user_0 = net.balance(&user.pubkey());

    // Given two runs registered, each with its first request in flight, and the daemon killed,
    let mut daemon = start_daemon_with(net, port, &state, &profiles, &["--batch", "4"]);
    let mut runs = Vec::new();
    let mut fees = 0;
    for manifest in &manifests {
        let submitted = submit(net, manifest, &daemon.url);
        fees += net.fee_of(submitted["escrow"]["signature"].as_str().unwrap());
        runs.push(submitted["run"].as_str().unwrap().to_owned());
    }
    wait_requests(&server, 2);
    let in_flight: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.attempt.clone().unwrap())
        .collect();
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    // and the user cancelling the first on-chain (not the second),
    let cancelled = net.cli_json(&net.user_keypair, &["cancel", "--chain", &runs[0]]);
    fees += net.fee_of(cancelled["signature"].as_str().unwrap());

    // When the daemon comes back without its model key,
    let log = net.dir.path().join("daemon-keyless.log");
    let daemon = start_daemon_launch(
        net,
        port,
        &state,
        &profiles,
        &["--batch", "4"],
        &Launch {
            without_anthropic_key: true,
            log: Some(&log),
            env: &[],
        },
    );
    for (run, reason) in [
        (&runs[0], "cancelled"),
        (&runs[1], "not_run_model_unavailable"),
    ] {
        // Then `--follow` ends, with the run finalized and its owner told why.
        let events = follow_to_the_end(
            net,
            &daemon,
            run,
            Duration::from_secs(180),
            "status --remote --follow of a run whose model cannot be called",
        );
        assert!(
            events.iter().any(|e| e["kind"] == "notice"
                && e["data"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("cannot call the run's model")
                        && m.contains("holds no anthropic key"))),
            "{events:?}"
        );
        let view = remote_status(net, &daemon, run);
        assert_eq!(view["phase"], "finalized", "{view}");
        assert_eq!(view["settled_trials"], 0, "{view}");

        // And every trial is `not_run` — `cancelled` in the run its owner cancelled, and
        // `not_run_model_unavailable` naming why in the other — but the one in flight at the
        // kill, `unknown` and never charged; the Run is finalized with the report's hash,
        // nothing settled.
        let report = download(
            net,
            &daemon.url,
            run,
            &net.dir.path().join(format!("keyless-report-{reason}")),
        );
        assert_eq!(report.trials.len(), 18);
        let mut unknown = 0;
        for trial in &report.trials {
            let last = trial.attempts.last().unwrap();
            if in_flight.contains(&last.id) {
                assert_eq!(
                    last.outcome.map(|o| o.as_str()),
                    Some("unknown"),
                    "{trial:?}"
                );
                unknown += 1;
            } else {
                assert_eq!(trial.outcome.as_str(), "not_run", "{trial:?}");
                assert_eq!(trial.reasons, [reason], "{trial:?}");
            }
        }
        assert_eq!(unknown, 1, "one request of each run was in flight");
        let status = net.cli_json(&net.user_keypair, &["chain-status", run]);
        assert_eq!(status["settled_trials"], 0, "{status}");
        // And closing returns the whole escrow.
        let closed = net.cli_json(&net.user_keypair, &["close", run]);
        fees += net.fee_of(closed["signature"].as_str().unwrap());
        let address: Pubkey = run.parse().unwrap();
        assert_eq!(net.balance(&address), 0);
    }
    assert!(
        std::fs::read_to_string(&log).unwrap().contains(
            "not serving model profile loopback-held: this daemon holds no anthropic key"
        ),
    );
    // The user paid only the transactions: both escrows came back whole.
    assert_eq!(user_0 - net.balance(&user.pubkey()), fees);
    released.store(true, Ordering::SeqCst);
    drop(daemon);
    server.stop();
}

/// Regression: the daemon marked a run failed on any settle refusal, never finalized it, never
/// charged its executed trials, and an exhausted spending limit failed every run in turn.
pub fn a_spent_limit_pauses_dispatch_and_the_run_settles_after(net: &Localnet) {
    // When each request arrived (Unix seconds).
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&arrivals);
    let server = ScriptedServer::start(move |_| {
        log.lock().unwrap().push(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
        );
        answered(100, 20)
    })
    .unwrap();
    let profiles = operator_profile(net, "loopback-fixed", &server);
    let manifest = plan(net, &profiles, "loopback-fixed", "1", "4", "33");
    let state = net.dir.path().join("daemon-limit-state");
    let daemon = start_daemon_with(net, free_port(), &state, &profiles, &["--batch", "4"]);
    let user = net.user();
    let user_0 = net.balance(&user.pubkey());

    // Given 18 trials settled in batches of 4 under a limit with room for 12 a period,
    let submitted = submit(net, &manifest, &daemon.url);
    let run = submitted["run"].as_str().unwrap().to_owned();
    let open_fee = net.fee_of(submitted["escrow"]["signature"].as_str().unwrap());
    // When the fourth batch is refused, the run waits for the next period and goes on:
    let events = follow_to_the_end(
        net,
        &daemon,
        &run,
        Duration::from_secs(300),
        "status --remote --follow of a run over the spending limit",
    );
    assert!(
        !events
            .iter()
            .any(|e| e["kind"] == "phase" && e["data"]["phase"] == "failed"),
        "{events:?}"
    );
    let pause = events
        .iter()
        .find(|e| {
            e["kind"] == "notice"
                && e["data"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("spending limit for this period is used up"))
        })
        .unwrap_or_else(|| panic!("no pause notice: {events:?}"));
    let paused_at = pause["at"].as_u64().unwrap();
    // The notice names when the spent period ends: "… wait until it ends (<RFC 3339>) …".
    let message = pause["data"]["message"].as_str().unwrap();
    let resumes_at = message
        .split_once("until it ends (")
        .and_then(|(_, rest)| rest.split_once(')'))
        .and_then(|(at, _)| skilltrial_core::time::parse_rfc3339(at))
        .unwrap_or_else(|| panic!("the pause notice names no end: {message}"));
    // Then every executed trial is settled and charged, in five batches over two periods,
    let view = remote_status(net, &daemon, &run);
    assert_eq!(view["phase"], "finalized", "{view}");
    assert_eq!(view["settled_trials"], 18, "{view}");
    assert_eq!(view["settle_batches"], 5, "{view}");
    let (vault, _) = net.chain.fee_vault().unwrap().unwrap();
    // (the period after the pause holds batches 4 and 5, usage and their 1-lamport fees — or
    // batch 5 alone when a loaded machine settled it more than a period after batch 4)
    assert!(
        [6 * (TRIAL_USAGE + 1), 2 * (TRIAL_USAGE + 1)].contains(&vault.usage_in_period),
        "{}",
        vault.usage_in_period
    );
    // and no request was sent while the limit was spent: each request after the pause arrived
    // once the next period had opened (the cluster's clock, a second's tolerance).
    let after: Vec<u64> = arrivals
        .lock()
        .unwrap()
        .iter()
        .copied()
        .filter(|at| *at > paused_at)
        .collect();
    assert_eq!(after.len(), 2, "trials 17 and 18: {after:?}");
    let resumes_at = u64::try_from(resumes_at).unwrap();
    assert!(
        after.iter().all(|at| *at + 1 >= resumes_at),
        "requests at {after:?}, the spent period ended at {resumes_at}"
    );
    // And the user paid exactly the usage and fees of the 18 trials and the transactions.
    let report = download(net, &daemon.url, &run, &net.dir.path().join("limit-report"));
    let settled: u64 = report
        .settlement
        .as_ref()
        .unwrap()
        .batches
        .iter()
        .flat_map(|b| b.evidence.iter().map(|r| r.usage_lamports()))
        .sum();
    assert_eq!(settled, 18 * TRIAL_USAGE);
    let closed = net.cli_json(&net.user_keypair, &["close", &run]);
    let close_fee = net.fee_of(closed["signature"].as_str().unwrap());
    assert_eq!(
        user_0 - net.balance(&user.pubkey()),
        18 * TRIAL_USAGE + 18 + open_fee + close_fee
    );
    drop(daemon);
    server.stop();
}

/// Regression: a settlement the program refuses for good (`DeadlinePassed`: the Run's deadline came
/// before the daemon could settle what ran) must not abandon the run. The refused batch is not
/// charged and never sent again, nothing more is sent for the run, the Run is finalized with what
/// had settled so that its owner takes the rest back, and the daemon goes on serving other runs.
/// The deadline is the shortest `submit` accepts (4 minutes: one request's time, the settlement
/// margins and the escrow's landing), so this scenario waits about that long.
pub fn a_run_past_its_deadline_keeps_what_settled_and_the_daemon_goes_on(net: &Localnet) {
    // Answers at once, but the eighth request and those after it wait for `released`.
    let released = Arc::new(AtomicBool::new(false));
    let gate = Arc::clone(&released);
    let seen = Arc::new(Mutex::new(0u32));
    let counter = Arc::clone(&seen);
    let server = ScriptedServer::start(move |_| {
        let nth = {
            let mut seen = counter.lock().unwrap();
            *seen += 1;
            *seen
        };
        while nth >= 8 && !gate.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        // One input and one output token a trial: far under the spending limit.
        answered(1, 1)
    })
    .unwrap();
    let (profiles, [late_manifest, other_manifest]) =
        planned(net, "loopback-late", &server, ["34", "35"]);
    let state = net.dir.path().join("daemon-late-state");
    let port = free_port();
    let user = net.user();
    let user_0 = net.balance(&user.pubkey());

    // Given a run with the shortest deadline, its first batch of 4 settled, trials 5 to 7
    // answered but not yet settled, the 8th in flight, and the daemon killed then,
    let mut daemon = start_daemon_with(net, port, &state, &profiles, &["--batch", "4"]);
    let late = net.cli_json(
        &net.user_keypair,
        &[
            "submit",
            "--manifest",
            &late_manifest,
            "--runner",
            daemon.url.as_str(),
            "--deadline",
            "4m",
            "--yes",
        ],
    );
    let run = late["run"].as_str().unwrap().to_owned();
    let address: Pubkey = run.parse().unwrap();
    let mut fees = net.fee_of(late["escrow"]["signature"].as_str().unwrap());
    wait_requests(&server, 8);
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    released.store(true, Ordering::SeqCst);
    let before = net.chain.run(&address).unwrap().unwrap().account.run;
    assert_eq!(
        before.settled_trials, 4,
        "the first batch settled before the kill"
    );
    let short = &late_manifest[..12];
    let sent_for_late = || {
        server
            .requests()
            .iter()
            .filter(|r| r.attempt.as_deref().is_some_and(|a| a.starts_with(short)))
            .count()
    };
    assert_eq!(sent_for_late(), 8);

    // When the daemon comes back after the Run's deadline (the cluster's clock),
    let deadline = before.deadline;
    let waited = Instant::now();
    while net.chain.cluster_time().unwrap() <= deadline {
        assert!(
            waited.elapsed() < Duration::from_secs(600),
            "the cluster's clock never passed the deadline {deadline}"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
    let daemon = start_daemon_with(net, port, &state, &profiles, &["--batch", "4"]);

    // Then the run is finalized, its owner told that the refused batch costs nothing,
    let events = follow_to_the_end(
        net,
        &daemon,
        &run,
        Duration::from_secs(180),
        "status --remote --follow of a run past its deadline",
    );
    let refused = events
        .iter()
        .find(|e| e["kind"] == "notice" && e["data"]["charged"] == false)
        .unwrap_or_else(|| panic!("no notice of the refused batch: {events:?}"));
    // (trials 5 to 7; the 8th was in flight at the kill: `unknown`, never charged)
    assert_eq!(
        refused["data"]["trials"].as_array().map(Vec::len),
        Some(3),
        "{refused}"
    );
    assert!(
        refused["data"]["message"]
            .as_str()
            .unwrap()
            .contains("deadline has passed"),
        "{refused}"
    );
    // nothing more was sent for it, and only the first batch was charged.
    assert_eq!(sent_for_late(), 8, "a request was sent past the deadline");
    let after = net.chain.run(&address).unwrap().unwrap().account.run;
    assert_eq!(
        (after.settled_trials, after.settle_batches),
        (4, 1),
        "{after:?}"
    );
    let report = download(net, &daemon.url, &run, &net.dir.path().join("late-report"));
    let settlement = report.settlement.as_ref().unwrap();
    assert_eq!(settlement.batches.len(), 1);
    let charged: u64 = settlement.batches[0]
        .evidence
        .iter()
        .map(|r| r.usage_lamports())
        .sum();
    assert_eq!(charged, after.settled_usage);
    assert_eq!(
        after.settled_fees, 4,
        "a fee of 1 lamport for each settled trial"
    );
    // And closing returns the rest: the owner paid the first batch and the transactions only.
    let closed = net.cli_json(&net.user_keypair, &["close", &run]);
    fees += net.fee_of(closed["signature"].as_str().unwrap());
    assert_eq!(net.balance(&address), 0);
    assert_eq!(
        user_0 - net.balance(&user.pubkey()),
        after.settled_usage + after.settled_fees + fees
    );

    // And the daemon goes on: another run is executed, settled whole and finalized.
    let other = submit(net, &other_manifest, &daemon.url);
    let other_run = other["run"].as_str().unwrap().to_owned();
    follow_to_the_end(
        net,
        &daemon,
        &other_run,
        Duration::from_secs(300),
        "status --remote --follow of a run after the refused one",
    );
    let view = remote_status(net, &daemon, &other_run);
    assert_eq!(view["settled_trials"], 18, "{view}");
    drop(daemon);
    server.stop();
}
