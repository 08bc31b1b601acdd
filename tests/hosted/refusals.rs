//! The runner daemon where it cannot do what was asked (issue #28, points 6 and 7), on a config
//! of the test's own (`admin init`: a fee of 1 lamport, a spending limit of 50,000 lamports per
//! 60 s):
//! - it offers and accepts only the profiles it can call, and refuses any other before the user
//!   signs anything;
//! - a run whose model it can no longer call (restarted without its key) is finalized with every
//!   trial `not_run` (or `unknown`, the one in flight at a kill) and the escrow comes back whole,
//!   the user's cancel obeyed meanwhile, `--follow` ending;
//! - a settlement the program refuses for the spending limit pauses dispatch until the limit's
//!   period ends, then settles and finalizes every executed trial: the run never fails.

use std::path::Path;
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

/// Regression (walk defect 1): the daemon offered built-in profiles it held no key for, and
/// accepted runs on them; the user escrowed and saw "0 of 0" for ever.
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

/// Regression (walk defect 2): restarted without its model key, the daemon left a registered
/// run executing for ever — the worker built the provider before it read the run's status, so
/// the user's cancel did nothing and `--follow` never ended.
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
    let profiles = operator_profile(net, "loopback-held", &server);
    let manifest = plan(net, &profiles, "loopback-held", "1", "4", "32");
    let state = net.dir.path().join("daemon-keyless-state");
    let port = free_port();
    let user = net.user();
    let user_0 = net.balance(&user.pubkey());

    // Given a run registered and its first request in flight, and the daemon killed,
    let mut daemon = start_daemon_with(net, port, &state, &profiles, &["--batch", "4"]);
    let submitted = submit(net, &manifest, &daemon.url);
    let run = submitted["run"].as_str().unwrap().to_owned();
    let address: Pubkey = run.parse().unwrap();
    let escrow = submitted["escrow"]["escrow_lamports"].as_u64().unwrap();
    let open_fee = net.fee_of(submitted["escrow"]["signature"].as_str().unwrap());
    let in_flight = wait_requests(&server, 1);
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    // and the user cancelling on-chain,
    let cancelled = net.cli_json(&net.user_keypair, &["cancel", "--chain", &run]);
    let cancel_fee = net.fee_of(cancelled["signature"].as_str().unwrap());

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
        },
    );
    // Then `--follow` ends, with the run finalized and its owner told why.
    let events = follow_to_the_end(
        net,
        &daemon,
        &run,
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
    let view = remote_status(net, &daemon, &run);
    assert_eq!(view["phase"], "finalized", "{view}");
    assert_eq!(view["settled_trials"], 0, "{view}");
    assert!(
        std::fs::read_to_string(&log).unwrap().contains(
            "not serving model profile loopback-held: this daemon holds no anthropic key"
        ),
    );

    // And every trial is `not_run` (cancelled), but the one in flight at the kill, `unknown`
    // and never charged; the Run is finalized with the report's hash, nothing settled.
    let report = download(
        net,
        &daemon.url,
        &run,
        &net.dir.path().join("keyless-report"),
    );
    assert_eq!(report.trials.len(), 18);
    for trial in &report.trials {
        let last = trial.attempts.last().unwrap();
        if last.id == in_flight {
            assert_eq!(
                last.outcome.map(|o| o.as_str()),
                Some("unknown"),
                "{trial:?}"
            );
        } else {
            assert_eq!(trial.outcome.as_str(), "not_run", "{trial:?}");
            assert_eq!(trial.reasons, ["cancelled"], "{trial:?}");
        }
    }
    let status = net.cli_json(&net.user_keypair, &["chain-status", &run]);
    assert_eq!(status["settled_trials"], 0, "{status}");
    // And closing returns the whole escrow: the user paid only the transactions.
    let closed = net.cli_json(&net.user_keypair, &["close", &run]);
    let close_fee = net.fee_of(closed["signature"].as_str().unwrap());
    assert_eq!(net.balance(&address), 0);
    assert_eq!(
        user_0 - net.balance(&user.pubkey()),
        open_fee + cancel_fee + close_fee,
        "the escrow of {escrow} lamports came back whole"
    );
    released.store(true, Ordering::SeqCst);
    drop(daemon);
    server.stop();
}

/// Regression (V2-L5): the daemon marked a run failed on any settle refusal, never finalized it,
/// never charged its executed trials, and an exhausted spending limit failed every run in turn.
pub fn a_spent_limit_pauses_dispatch_and_the_run_settles_after(net: &Localnet) {
    let body = serde_json::json!({
        "id": "msg_fixed_usage",
        "type": "message",
        "role": "assistant",
        "model": "loopback-model",
        "content": [{"type": "text", "text": "I do not know."}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    })
    .to_string();
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
        Reply::Verbatim {
            status: 200,
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body: body.clone(),
        }
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
