//! The runner daemon (`skilltrial runner serve`) serving a hosted run end to end: the user
//! submits with the real binary (sign in, upload, escrow, register), the daemon executes
//! against a loopback model server, settles in batches, is SIGKILLed mid-run and restarted,
//! honours an on-chain cancel, finalizes with the report hash; the user downloads the report,
//! verifies it against the Run, and closes with exact balances. A second wallet is refused at
//! every endpoint.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use skilltrial_chain::Pubkey;
use skilltrial_core::report::Report;
use skilltrial_engine::scripted::{Reply, ScriptedServer};
use skilltrial_runner::client::{Client, ClientError};
use solana_signer::Signer;

use crate::harness::{Localnet, said};

/// A daemon process and where it listens.
pub(crate) struct Daemon {
    pub(crate) child: Child,
    pub(crate) url: url::Url,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The operator's profiles file: one priced Anthropic-format profile `id` at `server`.
pub(crate) fn operator_profile(net: &Localnet, id: &str, server: &ScriptedServer) -> PathBuf {
    let path = net.dir.path().join(format!("{id}-profiles.toml"));
    std::fs::write(
        &path,
        format!(
            "[[profile]]\nid = \"{id}\"\nprovider = \"anthropic\"\nmodel = \"loopback-model\"\nbase_url = \"{}\"\ncontext_tokens = 200000\nmax_output_tokens = 1024\ninput_usd_per_mtok = \"3\"\noutput_usd_per_mtok = \"15\"\nprice_source = \"test\"\nprice_as_of = \"2026-11-30\"\n",
            server.url()
        ),
    )
    .unwrap();
    path
}

/// Plans the example bundles against profile `id` at $150/SOL; returns the manifest hash.
pub(crate) fn plan(
    net: &Localnet,
    profiles: &std::path::Path,
    id: &str,
    reps: &str,
    cap: &str,
    seed: &str,
) -> String {
    plan_with(net, profiles, id, &[reps, cap, seed], &[])
}

/// [`plan`] with `[reps, cap_usd, seed]` and `extra` flags.
pub(crate) fn plan_with(
    net: &Localnet,
    profiles: &std::path::Path,
    id: &str,
    [reps, cap, seed]: &[&str; 3],
    extra: &[&str],
) -> String {
    let mut args = vec![
        "plan",
        "--model",
        id,
        "--profiles",
        profiles.to_str().unwrap(),
        "--a",
        "fixtures/bundles/solana-reader-1.4.2",
        "--b",
        "fixtures/bundles/solana-reader-1.5.0",
        "--reps",
        reps,
        "--cap-usd",
        cap,
        "--seed",
        seed,
        "--sol-usd",
        "150",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = net.local(&args);
    assert!(out.status.success(), "plan: {}", said(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    plan["run"].as_str().unwrap().to_owned()
}

/// `report RUN --remote --runner URL --out DIR` as the user (add `--json` by [`Localnet::cli_json`]).
pub(crate) fn remote_report_args<'a>(
    run: &'a str,
    daemon: &'a Daemon,
    out: &'a str,
) -> [&'a str; 7] {
    [
        "report",
        run,
        "--remote",
        "--runner",
        daemon.url.as_str(),
        "--out",
        out,
    ]
}

/// `submit` of `manifest` to the daemon at `url`, with a 15-minute deadline, approved (`--yes`
/// last).
pub(crate) fn submit_args<'a>(manifest: &'a str, url: &'a url::Url) -> [&'a str; 8] {
    [
        "submit",
        "--manifest",
        manifest,
        "--runner",
        url.as_str(),
        "--deadline",
        "15m",
        "--yes",
    ]
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `status --remote --json` of `run` (and `extra`: `--follow`), as the user.
pub(crate) fn status_command(
    net: &Localnet,
    daemon: &Daemon,
    run: &str,
    extra: &[&str],
) -> Command {
    let mut cmd = net.command(
        &net.user_keypair,
        &[
            "status",
            "--remote",
            "--runner",
            daemon.url.as_str(),
            run,
            "--json",
        ],
    );
    cmd.args(extra);
    cmd
}

/// `status --remote --follow --json` of `run`, running: the child (its stdout read by a thread)
/// and its lines as they come.
fn follow_in_background(
    net: &Localnet,
    daemon: &Daemon,
    run: &str,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead as _;
    let mut child = status_command(net, daemon, run, &["--follow"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines)
}

fn start_daemon(net: &Localnet, port: u16, state: &PathBuf, profiles: &PathBuf) -> Daemon {
    // Buybacks on: the daemon looks every 2 s and buys back once the program's interval allows.
    start_daemon_with(
        net,
        port,
        state,
        profiles,
        &[
            "--batch",
            "8",
            "--buyback-every",
            "2",
            "--buyback-min-lamports",
            "1",
        ],
    )
}

pub(crate) fn start_daemon_with(
    net: &Localnet,
    port: u16,
    state: &PathBuf,
    profiles: &PathBuf,
    extra: &[&str],
) -> Daemon {
    start_daemon_launch(net, port, state, profiles, extra, &Launch::default())
}

/// How a daemon is started beyond its flags.
#[derive(Debug, Default)]
pub(crate) struct Launch<'a> {
    /// Without the operator's Anthropic key in its environment.
    pub(crate) without_anthropic_key: bool,
    /// Where its log (stderr) goes: inherited when `None`.
    pub(crate) log: Option<&'a std::path::Path>,
    /// More environment variables (a failpoint).
    pub(crate) env: &'a [(&'a str, &'a str)],
}

/// [`start_daemon_with`], as `launch` says. The daemon never has an OpenAI key (whatever the
/// test's environment holds), so that which profiles it serves is the test's to say.
pub(crate) fn start_daemon_launch(
    net: &Localnet,
    port: u16,
    state: &PathBuf,
    profiles: &PathBuf,
    extra: &[&str],
    launch: &Launch<'_>,
) -> Daemon {
    let origin = format!("http://127.0.0.1:{port}");
    let stderr = launch.log.map_or_else(Stdio::inherit, |path| {
        Stdio::from(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .unwrap(),
        )
    });
    let mut command = Command::new(skilltrial_e2e::skilltrial_bin().unwrap());
    if launch.without_anthropic_key {
        command.env_remove("ANTHROPIC_API_KEY");
    } else {
        command.env("ANTHROPIC_API_KEY", "sk-ant-operator-test-key");
    }
    let mut child = command
        .args(["--json", "--home"])
        .arg(net.home())
        .args([
            "runner",
            "serve",
            "--public-origin",
            &origin,
            "--sol-usd",
            "150",
        ])
        .args(["--bind", &format!("127.0.0.1:{port}"), "--state"])
        .arg(state)
        // `--demo-model` in `extra` serves the scripted model alone: no profiles file beside it.
        .args(if extra.contains(&"--demo-model") {
            vec![]
        } else {
            vec![std::ffi::OsString::from("--profiles"), profiles.into()]
        })
        .args(extra)
        .args(["--url", &net.url, "--keypair"])
        .arg(&net.runner_keypair)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_BASE_URL")
        .env("HOME", net.dir.path())
        .envs(launch.env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
        let _ = child.kill();
        panic!("`runner serve --json` printed {line:?}: {e}")
    });
    assert_eq!(ready["origin"], origin.as_str(), "{ready}");
    assert_eq!(ready["runner"], net.runner.pubkey().to_string());
    assert_eq!(ready["chain_id"], "localnet");
    Daemon {
        child,
        url: origin.parse().unwrap(),
    }
}

/// The model server holds request 5 until the daemon is killed, and request 11 until the user's
/// cancel has landed.
const HELD_FOR_KILL: usize = 5;
const HELD_FOR_CANCEL: usize = 11;
/// The model server refuses the operator's key on request 2: one request more before the cancel, so
/// that as many trials are answered before it as without the refusal.
const KEY_REFUSED: usize = 2;

/// Waits until the model server has received `count` requests; returns the attempt id of the
/// last one.
pub(crate) fn wait_requests(server: &ScriptedServer, count: usize) -> String {
    let started = Instant::now();
    loop {
        let requests = server.requests();
        if requests.len() >= count {
            return requests[count - 1].attempt.clone().unwrap();
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "the model server got {} requests in 180 s, not {count}",
            requests.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `status --remote --json` of `run`, as the user.
pub(crate) fn remote_status(net: &Localnet, daemon: &Daemon, run: &str) -> Value {
    let out = status_command(net, daemon, run, &[]).output().unwrap();
    assert!(out.status.success(), "status --remote: {}", said(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    // One document on one line.
    assert_eq!(text.lines().count(), 1, "{text}");
    serde_json::from_str(&text).unwrap()
}

fn refused(result: Result<impl std::fmt::Debug, ClientError>, status: u16, what: &str) {
    match result {
        Err(ClientError::Refused { status: got, .. }) if got == status => {}
        other => panic!("{what}: expected HTTP {status}, got {other:?}"),
    }
}

pub fn the_runner_daemon_serves_a_hosted_run(net: &Localnet) {
    // --- a model server the test paces: request `i` is answered only once `i < released`, so
    // the daemon can be killed while a request is in flight, and cancelled at a known point.
    let released = Arc::new(AtomicUsize::new(HELD_FOR_KILL));
    let gate = Arc::clone(&released);
    let server = ScriptedServer::start(move |request| {
        let index = usize::try_from(request.index).unwrap();
        while index >= gate.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        if index == KEY_REFUSED {
            // The operator's key refused once: the run waits and sends the trial again.
            return Reply::Status(401);
        }
        Reply::Answer("I do not know.".to_owned())
    })
    .unwrap();
    let profiles = operator_profile(net, "loopback-slow", &server);
    let buybacks_before = net.chain.buyback_log().unwrap().unwrap().count;

    // --- a 54-trial plan whose money cap ($0.30) cuts trials early: the large ones first, while
    // small ones still fit (the engine's admission, per trial), so trials are cut by the budget
    // before the cancel and requests still go out after. (The request killed in flight keeps
    // its reserve, as an unknown attempt does, which tightens the cap further.)
    let manifest = plan(net, &profiles, "loopback-slow", "3", "0.30", "13");

    let state = net.dir.path().join("daemon-state");
    let port = free_port();
    let mut daemon = start_daemon(net, port, &state, &profiles);

    // --- the second wallet: nothing without a session, nothing of another's with one.
    let mut stranger = Client::new(&daemon.url).unwrap();
    refused(stranger.runs(), 401, "runs without a session");
    stranger.sign_in(&net.other()).unwrap();
    refused(
        stranger.register(&manifest),
        422,
        "registering a manifest never uploaded",
    );

    // --- submit: sign in, upload, escrow (one transaction), register.
    let user = net.user();
    let user_0 = net.balance(&user.pubkey());
    let submit = submit_args(&manifest, &daemon.url);
    // Without --yes and without a terminal to ask on, `submit` refuses before it signs in,
    // uploads or signs anything.
    let unapproved = net.cli(&net.user_keypair, &submit[..submit.len() - 1]);
    assert_eq!(unapproved.status.code(), Some(2), "{}", said(&unapproved));
    assert!(
        String::from_utf8_lossy(&unapproved.stderr).contains("approve with --yes"),
        "{}",
        said(&unapproved)
    );
    let submitted = net.cli_json(&net.user_keypair, &submit);
    let run = submitted["run"].as_str().unwrap().to_owned();
    let address: Pubkey = run.parse().unwrap();
    assert_eq!(submitted["escrow"]["planned_trials"], 54);
    let escrow = submitted["escrow"]["escrow_lamports"].as_u64().unwrap();
    let fee = submitted["escrow"]["fee_per_trial_lamports"]
        .as_u64()
        .unwrap();
    let open_fee = net.cost(
        "submit (run_open)",
        submitted["escrow"]["signature"].as_str().unwrap(),
    );

    // A second `submit` of the same manifest escrows nothing again: the runner says it has the run.
    let again = net.cli_json(&net.user_keypair, &submit);
    assert_eq!(again["already_registered"], true, "{again}");
    assert_eq!(again["run"], run.as_str());

    // Now uploaded, the manifest is still not the stranger's to register: no Run of theirs.
    refused(
        stranger.register(&manifest),
        403,
        "registering a manifest the stranger never escrowed",
    );
    // The stranger cannot read, follow or download it.
    refused(stranger.run(&run), 403, "another wallet's run");
    refused(
        stranger.report(&run, "report.json"),
        403,
        "another wallet's report",
    );
    refused(
        stranger.follow(&run, 0, &mut |_| true),
        403,
        "another wallet's events",
    );
    assert!(
        stranger.runs().unwrap().is_empty(),
        "the stranger has no runs"
    );

    // A follower connected before the kill goes on through it: it reconnects from the last
    // event it saw once the daemon is back, and ends with the run.
    let (follower, follower_lines) = follow_in_background(net, &daemon, &run);
    let first = follower_lines
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the follower prints the run's events");

    // --- SIGKILL the daemon while request HELD_FOR_KILL is in flight, then start it again.
    let in_flight = wait_requests(&server, HELD_FOR_KILL + 1);
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    released.store(HELD_FOR_CANCEL, Ordering::SeqCst);
    let daemon = start_daemon(net, port, &state, &profiles);
    wait_requests(&server, HELD_FOR_CANCEL + 1);
    // --- the user cancels on-chain midway; the daemon stops dispatching, settles, finalizes.
    // Request HELD_FOR_CANCEL is in flight; once the cancel has landed it is answered, and the
    // daemon's next read of the Run stops the run.
    let cancelled = net.cli_json(&net.user_keypair, &["cancel", "--chain", &run]);
    released.store(usize::MAX, Ordering::SeqCst);
    let cancel_fee = net.cost(
        "cancel --chain (daemon run)",
        cancelled["signature"].as_str().unwrap(),
    );
    let followed = status_command(net, &daemon, &run, &["--follow"])
        .output()
        .unwrap();
    assert!(followed.status.success(), "follow: {}", said(&followed));
    let events: Vec<Value> = String::from_utf8_lossy(&followed.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = events.last().unwrap();
    assert!(last["at"].is_i64(), "every event carries its time: {last}");
    assert_eq!(last["kind"], "phase", "{last}");
    assert_eq!(last["data"]["phase"], "finalized", "{last}");
    let view = remote_status(net, &daemon, &run);
    assert_eq!(view["phase"], "finalized", "{view}");
    let through_kill = follower.wait_with_output().unwrap();
    assert!(through_kill.status.success(), "{}", said(&through_kill));
    assert!(
        String::from_utf8_lossy(&through_kill.stderr).contains("reconnecting"),
        "{}",
        said(&through_kill)
    );
    let seen: Vec<Value> = std::iter::once(first)
        .chain(follower_lines.iter())
        .map(|l| serde_json::from_str(&l).unwrap())
        .collect();
    let ids: Vec<u64> = seen.iter().map(|e| e["id"].as_u64().unwrap()).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "no event twice, none out of order: {ids:?}"
    );
    assert_eq!(
        seen.last().unwrap()["data"]["phase"],
        "finalized",
        "{seen:?}"
    );
    assert_eq!(
        ids.last(),
        events.last().and_then(|e| e["id"].as_u64()).as_ref(),
        "the follower through the kill saw the run to its last event"
    );

    // --- a report whose settlement is not the Run account's is refused, naming each field, and
    // nothing is written, even when its own hashes recompute: the daemon's kept report, re-sealed
    // without its last batch.
    let kept = state.join("runs").join(&run).join("report.json");
    let original = std::fs::read_to_string(&kept).unwrap();
    let mut short = Report::from_json(&original).unwrap();
    let section = short.settlement.clone().unwrap();
    let mut batches = section.batches.clone();
    batches.pop();
    short.settlement = Some(skilltrial_core::settlement::Settlement::new(
        section.program_id.clone(),
        section.run_address.clone(),
        section.run_id,
        batches,
    ));
    short.seal().unwrap();
    let mut text = serde_json::to_string_pretty(&short.to_value().unwrap()).unwrap();
    text.push('\n');
    std::fs::write(&kept, text).unwrap();
    let refused_dir = net.dir.path().join("daemon-report-refused");
    let out = net.cli(
        &net.user_keypair,
        &remote_report_args(&run, &daemon, refused_dir.to_str().unwrap()),
    );
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let said_err = String::from_utf8_lossy(&out.stderr);
    assert!(said_err.contains("settle batches"), "{said_err}");
    assert!(said_err.contains("trials settled"), "{said_err}");
    assert!(!refused_dir.exists(), "nothing is written");
    std::fs::write(&kept, original).unwrap();

    // --- the report, downloaded and checked before it is written.
    let out_dir = net.dir.path().join("daemon-report");
    let downloaded = net.cli_json(
        &net.user_keypair,
        &remote_report_args(&run, &daemon, out_dir.to_str().unwrap()),
    );
    assert_eq!(downloaded["report_hash"], view["report_hash"]);
    assert_eq!(downloaded["run_account"], "agrees");
    let text = std::fs::read_to_string(out_dir.join("report.json")).unwrap();
    let report = Report::from_json(&text).unwrap();
    let settlement = report.settlement.clone().unwrap();
    // Its warning says where it is kept: with the runner, for the run's wallet.
    assert_eq!(report.warning, skilltrial_core::report::HOSTED_WARNING);

    // Every trial with an answer was settled exactly once; nothing else was.
    let answered: Vec<u32> = report
        .trials
        .iter()
        .filter(|t| t.attempts.last().is_some_and(|a| a.answer_sha256.is_some()))
        .map(|t| t.index)
        .collect();
    let mut settled: Vec<u32> = settlement
        .batches
        .iter()
        .flat_map(|b| b.evidence.iter().map(|r| u32::from(r.trial())))
        .collect();
    settled.sort_unstable();
    let unique = settled.len();
    settled.dedup();
    assert_eq!(unique, settled.len(), "a trial settled twice");
    assert_eq!(settled, answered, "settled = executed with an answer");
    let executed = u64::try_from(settled.len()).unwrap();
    assert!(executed >= 8, "{executed}");
    // Every request the model server received ended answered (and settled, above) or unknown:
    // the one in flight at the kill is `unknown`, held for the user, and was never charged.
    // (Under load the request held for the cancel may outlast the request timeout and be
    // unknown too.)
    let unknown: Vec<&str> = report
        .trials
        .iter()
        .flat_map(|t| t.attempts.iter())
        .filter(|a| a.outcome.map(|o| o.as_str()) == Some("unknown"))
        .map(|a| a.id.as_str())
        .collect();
    assert!(
        unknown.contains(&in_flight.as_str()),
        "{unknown:?} {in_flight}"
    );
    // The request whose key was refused paid nothing and did not end its trial: the run waited
    // (a notice told the owner) and sent the trial again, naming the refused attempt.
    let refused_key: Vec<_> = report
        .trials
        .iter()
        .flat_map(|t| t.attempts.iter().map(move |a| (t, a)))
        .filter(|(_, a)| a.http_status == Some(401))
        .collect();
    assert_eq!(refused_key.len(), 1, "{refused_key:?}");
    let (trial, refusal) = refused_key[0];
    assert_eq!(refusal.spent_usd_micros, Some(0));
    let resent = trial.attempts.last().unwrap();
    assert_eq!(resent.retry_of.as_deref(), Some(refusal.id.as_str()));
    assert!(resent.answer_sha256.is_some(), "{resent:?}");
    assert!(
        events.iter().any(|e| e["kind"] == "notice"
            && e["data"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("refused the model key"))),
        "the owner is told why the run waits"
    );
    assert_eq!(
        executed + u64::try_from(unknown.len()).unwrap() + 1,
        u64::try_from(server.requests().len()).unwrap(),
        "every request sent was answered and settled, or is unknown, or had its key refused"
    );
    // Cut by the money cap, or by the cancel: never dispatched, never charged.
    let reasons: BTreeMap<String, usize> = report
        .trials
        .iter()
        .filter(|t| t.outcome.as_str() == "not_run")
        .fold(BTreeMap::new(), |mut m, t| {
            *m.entry(t.reasons.join(",")).or_default() += 1;
            m
        });
    assert!(reasons.contains_key("not_run_budget"), "{reasons:?}");
    assert!(reasons.contains_key("cancelled"), "{reasons:?}");
    // No request was sent twice (the kill's in-flight request became unknown, not re-sent).
    let sent = server.requests();
    let mut attempts: Vec<_> = sent.iter().filter_map(|r| r.attempt.clone()).collect();
    let total = attempts.len();
    attempts.sort();
    attempts.dedup();
    assert_eq!(total, attempts.len(), "an attempt was sent twice");

    // --- a finalized run is not escrowed again: `submit` is refused before it signs anything.
    let resubmit = net.command(&net.user_keypair, &submit).output().unwrap();
    assert_eq!(resubmit.status.code(), Some(1), "{}", said(&resubmit));
    assert!(
        String::from_utf8_lossy(&resubmit.stderr).contains("already finalized"),
        "{}",
        said(&resubmit)
    );
    assert!(
        !String::from_utf8_lossy(&resubmit.stderr).contains("sending transaction"),
        "{}",
        said(&resubmit)
    );

    // --- verify: the export passes against the Run; a tampered copy fails.
    let status = net.cli_json(&net.user_keypair, &["chain-status", &run]);
    assert_eq!(status["settled_trials"], executed);
    let usage: u64 = settlement
        .batches
        .iter()
        .flat_map(|b| b.evidence.iter().map(|r| r.usage_lamports()))
        .sum();
    assert_eq!(status["settled_usage_lamports"], usage);
    assert_eq!(status["settled_fees_lamports"], executed * fee);
    let verified = net.cli(
        &net.user_keypair,
        &[
            "verify",
            out_dir.join("report.json").to_str().unwrap(),
            "--run",
            &run,
        ],
    );
    assert_eq!(verified.status.code(), Some(0), "{}", said(&verified));
    let tampered = net.dir.path().join("daemon-report-tampered.json");
    assert!(text.contains("I do not know."));
    std::fs::write(&tampered, text.replacen("I do not know.", "I do know.", 1)).unwrap();
    let verified = net.cli(
        &net.user_keypair,
        &["verify", tampered.to_str().unwrap(), "--run", &run],
    );
    assert_eq!(verified.status.code(), Some(1), "{}", said(&verified));

    // --- close: the user gets back escrow − usage − fee × executed, to the lamport.
    let closed = net.cli_json(&net.user_keypair, &["close", &run]);
    let close_fee = net.cost("close (daemon run)", closed["signature"].as_str().unwrap());
    assert_eq!(net.balance(&address), 0);
    assert_eq!(
        user_0 - net.balance(&user.pubkey()),
        usage + executed * fee + open_fee + cancel_fee + close_fee,
        "the user paid exactly the usage, the fees of executed trials, and their transactions"
    );
    assert!(escrow > usage + executed * fee);

    // --- the daemon's scheduler bought back and burned with the fees, once the interval since
    // the previous buyback (`runner buyback`, in the scenario before) allowed it.
    let info = Client::new(&daemon.url).unwrap().info().unwrap();
    assert_eq!(
        info.buyback.as_ref().map(|b| b.venue.as_str()),
        Some("localnet pool"),
        "{:?}",
        info.buyback
    );
    let started = std::time::Instant::now();
    let entry = loop {
        let log = net.chain.buyback_log().unwrap().unwrap();
        if log.count > buybacks_before {
            let entries = skilltrial_chain::account::buyback_entries(&log);
            break *entries.first().unwrap(); // newest first
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "the daemon made no buyback in 180 s; its last attempt: {:?}",
            Client::new(&daemon.url).unwrap().info().unwrap().buyback
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(entry.lamports_in > 0 && entry.tokens_burned >= entry.lamports_in);
    assert_eq!(
        entry.token_account,
        skilltrial_chain::token::associated_account(
            &net.runner.pubkey(),
            &net.chain.config().unwrap().unwrap().sktrial_mint,
            &skilltrial_chain::token::TOKEN_PROGRAM_ID
        )
    );
    drop(daemon);
    server.stop();
}

/// The daemon's throughput: 20 wallets each submit a run (18 trials) at once against a model
/// that answers at once, served concurrently (`--max-runs 20`). Prints trials per second from the
/// last registration to the last finalization, settlement transactions per run, and the daemon's
/// peak resident memory. A benchmark: it prints numbers and asserts only that every run
/// finalized with every trial settled.
#[allow(clippy::print_stdout)]
pub fn bench_twenty_concurrent_runs(net: &Localnet) {
    const RUNS: usize = 20;
    let server = ScriptedServer::start(|_| Reply::Answer("I do not know.".to_owned())).unwrap();
    let profiles = operator_profile(net, "loopback-instant", &server);
    let manifest = plan(net, &profiles, "loopback-instant", "1", "4", "21");

    // Twenty wallets, 2 SOL each from the user.
    let user = net.user();
    let wallets: Vec<PathBuf> = (0..RUNS)
        .map(|i| {
            let key = solana_keypair::Keypair::new();
            let path = net.dir.path().join(format!("bench-wallet-{i}.json"));
            solana_keypair::write_keypair_file(&key, &path).unwrap();
            net.send_as(
                &user,
                &format!("bench fund {i}"),
                &[crate::harness::system_transfer(
                    &user.pubkey(),
                    &key.pubkey(),
                    2_000_000_000,
                )],
            )
            .unwrap();
            path
        })
        .collect();

    let state = net.dir.path().join("bench-daemon-state");
    let port = free_port();
    let origin = format!("http://127.0.0.1:{port}");
    let mut daemon = start_daemon_with(
        net,
        port,
        &state,
        &profiles,
        &["--max-runs", "20", "--batch", "18"],
    );
    let first_submit = Instant::now();
    // All twenty submit at once (each its own process).
    let children: Vec<Child> = wallets
        .iter()
        .map(|wallet| {
            net.command(
                wallet,
                &[
                    "submit",
                    "--manifest",
                    &manifest,
                    "--runner",
                    &origin,
                    "--deadline",
                    "15m",
                    "--yes",
                    "--json",
                ],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let runs: Vec<String> = children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "submit: {}", said(&out));
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            doc["run"].as_str().unwrap().to_owned()
        })
        .collect();
    let submitted_in = first_submit.elapsed();
    let mut batches = Vec::new();
    for (run, wallet) in runs.iter().zip(&wallets) {
        let follow = net
            .command(
                wallet,
                &[
                    "status", "--remote", "--runner", &origin, run, "--follow", "--json",
                ],
            )
            .output()
            .unwrap();
        assert!(follow.status.success(), "follow {run}: {}", said(&follow));
        let view = net.cli_json(wallet, &["status", "--remote", "--runner", &origin, run]);
        assert_eq!(view["phase"], "finalized", "{view}");
        assert_eq!(view["settled_trials"], 18, "{view}");
        batches.push(view["settle_batches"].as_u64().unwrap());
    }
    let elapsed = first_submit.elapsed();
    let peak_kib = std::fs::read_to_string(format!("/proc/{}/status", daemon.child.id()))
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|n| n.parse::<u64>().ok())
            })
        })
        .unwrap_or(0);
    let trials = RUNS * 18;
    println!(
        "hosted bench: {RUNS} runs, {trials} trials, from the first submit to the last finalization {:.1} s (the {RUNS} concurrent submits took {:.1} s): {:.1} trials/s; settlement transactions per run: {:?}; daemon peak RSS {} MiB",
        elapsed.as_secs_f64(),
        submitted_in.as_secs_f64(),
        f64::from(u32::try_from(trials).unwrap()) / elapsed.as_secs_f64(),
        batches,
        peak_kib / 1024
    );
    let _ = daemon.child.kill();
    server.stop();
}
