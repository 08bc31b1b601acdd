//! Several runner workers on one PostgreSQL (`runner serve --database`), on the real local
//! validator and a real throwaway PostgreSQL server: runs of many wallets shared out with every
//! trial executed and settled once; a worker SIGKILLed with a request in flight, another killed
//! between sending a settlement and seeing it land, a third cut off from the database — each
//! taken over within the lease and 10 s, nothing sent or charged twice, never two workers writing
//! for one run at once; and a follower on a worker that executes nothing sees every run to its end.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use skilltrial_core::report::Report;
use skilltrial_core::state::AttemptState;
use skilltrial_engine::scripted::{Reply, ScriptedServer};
use skilltrial_pgtest::Cluster;
use solana_signer::Signer;

use crate::daemon::{
    Daemon, Launch, free_port, operator_profile, plan, remote_report_args, start_daemon_launch,
    submit_args,
};
use crate::harness::{Localnet, said, system_transfer};

/// The lease the workers here hold runs by: short, so that takeovers are quick to see.
const LEASE_SECS: u64 = 5;

/// A worker on `db`, named `name` (its state directory and log file), with `extra` flags and
/// `env`.
fn worker(
    net: &Localnet,
    db: &str,
    name: &str,
    profiles: &PathBuf,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Daemon {
    let state = net.dir.path().join(format!("worker-{name}"));
    let log = log_of(net, name);
    let lease = format!("{LEASE_SECS}s");
    let mut flags = vec!["--database", db, "--lease", lease.as_str(), "--batch", "18"];
    flags.extend_from_slice(extra);
    start_daemon_launch(
        net,
        free_port(),
        &state,
        profiles,
        &flags,
        &Launch {
            without_anthropic_key: false,
            log: Some(&log),
            env,
        },
    )
}

/// A worker's log: in the test's directory, or under `SKILLTRIAL_WORKER_LOGS` when set (to read
/// them after a failure, which removes the test's directory).
fn log_of(net: &Localnet, name: &str) -> PathBuf {
    match std::env::var_os("SKILLTRIAL_WORKER_LOGS") {
        Some(dir) => PathBuf::from(dir).join(format!("worker-{name}.log")),
        None => net.dir.path().join(format!("worker-{name}.log")),
    }
}

/// Waits until `name`'s log says `words` (a failpoint reached); returns that line.
fn wait_in_log(net: &Localnet, name: &str, words: &str) -> String {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(log_of(net, name)).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains(words)) {
            return line.to_owned();
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "worker {name} never logged {words:?}; its log:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The number a `psql` query prints.
fn count(cluster: &Cluster, db: &str, sql: &str) -> u64 {
    let out = cluster.psql(db, sql).unwrap();
    out.trim()
        .parse()
        .unwrap_or_else(|e| panic!("{sql}: {out:?}: {e}"))
}

/// Waits until every run in the database is finalized (none failed).
fn wait_all_final(cluster: &Cluster, db: &str, runs: usize, limit: Duration) {
    let started = Instant::now();
    loop {
        let finalized = count(
            cluster,
            db,
            "SELECT count(*) FROM runs WHERE phase = 'finalized'",
        );
        let failed = cluster
            .psql(
                db,
                "SELECT address || ': ' || coalesce(detail, '') FROM runs WHERE phase = 'failed'",
            )
            .unwrap();
        assert!(failed.trim().is_empty(), "failed runs: {failed}");
        if finalized == runs as u64 {
            return;
        }
        assert!(
            started.elapsed() < limit,
            "{finalized} of {runs} runs finalized after {} s",
            limit.as_secs()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The write log of every run is fenced: per run and file, every entry of an epoch was
/// appended before any entry of a later epoch — two workers never wrote for one run at once.
fn assert_never_two_writers(cluster: &Cluster, db: &str) {
    let out = cluster
        .psql(
            db,
            "SELECT run, file, epoch, extract(epoch FROM min(at)), extract(epoch FROM max(at)) FROM replica_log GROUP BY run, file, epoch ORDER BY run, file, epoch",
        )
        .unwrap();
    let mut last: BTreeMap<(String, String), (i64, f64)> = BTreeMap::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('|').collect();
        let (run, file) = (cols[0], cols[1]);
        let epoch: i64 = cols[2].parse().unwrap();
        let first: f64 = cols[3].parse().unwrap();
        let end: f64 = cols[4].parse().unwrap();
        if let Some((before, before_end)) = last.get(&(run.to_owned(), file.to_owned())) {
            assert!(epoch > *before, "{line}");
            assert!(
                *before_end < first,
                "run {run} {file}: epoch {before} wrote until {before_end}, after epoch {epoch} began at {first}"
            );
        }
        last.insert((run.to_owned(), file.to_owned()), (epoch, end));
    }
}

/// Each attempt the model server saw, sent once.
fn assert_each_attempt_sent_once(server: &ScriptedServer) -> usize {
    let attempts: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.attempt.clone().expect("every request names its attempt"))
        .collect();
    let distinct: BTreeSet<&String> = attempts.iter().collect();
    assert_eq!(distinct.len(), attempts.len(), "an attempt was sent twice");
    attempts.len()
}

/// A funded wallet of its own: its keypair file.
fn wallet(net: &Localnet, i: usize) -> PathBuf {
    let path = net.dir.path().join(format!("wallet-{i}.json"));
    let keypair = solana_keypair::Keypair::new();
    solana_keypair::write_keypair_file(&keypair, &path).unwrap();
    net.send_as(
        &net.user(),
        &format!("fund wallet {i}"),
        &[system_transfer(
            &net.user().pubkey(),
            &keypair.pubkey(),
            2_000_000_000,
        )],
    )
    .unwrap();
    path
}

/// `submit`s of `manifest` by each of `wallets`, to `daemons` in turn, all at once; the runs.
fn submit_all(
    net: &Localnet,
    manifest: &str,
    wallets: &[PathBuf],
    daemons: &[&Daemon],
) -> Vec<Value> {
    let children: Vec<_> = wallets
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let daemon = daemons[i % daemons.len()];
            let mut args = submit_args(manifest, &daemon.url).to_vec();
            args.push("--json");
            net.command(w, &args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "submit: {}", said(&out));
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect()
}

/// The `claims` counter of `kind` a worker's `/metrics` reports.
fn claims(daemon: &Daemon, kind: &str) -> u64 {
    let text = reqwest::blocking::get(daemon.url.join("/metrics").unwrap())
        .unwrap()
        .text()
        .unwrap();
    let series = format!("skilltrial_runner_claims_total{{kind=\"{kind}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

pub fn three_workers_share_thirty_runs_of_ten_wallets(net: &Localnet) {
    let cluster = Cluster::start().unwrap();
    let db = cluster.create_database("shared").unwrap();
    let server = ScriptedServer::start(|_| Reply::Answer("I do not know.".to_owned())).unwrap();
    let profiles = operator_profile(net, "loopback-workers", &server);
    let manifests: Vec<String> = ["41", "42", "43"]
        .iter()
        .map(|seed| plan(net, &profiles, "loopback-workers", "1", "5", seed))
        .collect();
    let wallets: Vec<PathBuf> = (0..10).map(|i| wallet(net, i)).collect();
    let daemons: Vec<Daemon> = ["a", "b", "c"]
        .iter()
        .map(|name| worker(net, &db, name, &profiles, &["--max-runs", "4"], &[]))
        .collect();
    let by: Vec<&Daemon> = daemons.iter().collect();

    let started = Instant::now();
    let mut submitted = Vec::new();
    for manifest in &manifests {
        submitted.extend(submit_all(net, manifest, &wallets, &by));
    }
    assert_eq!(submitted.len(), 30);
    wait_all_final(&cluster, "shared", 30, Duration::from_secs(900));
    let took = started.elapsed();

    // Every trial executed once: 30 runs of 18 trials, one request each, none sent twice.
    let sent = assert_each_attempt_sent_once(&server);
    assert_eq!(sent, 30 * 18, "requests");
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "three workers: 30 runs, {sent} trials in {:.1} s from the first submit ({:.2} trials/s)",
            took.as_secs_f64(),
            sent as f64 / took.as_secs_f64()
        );
    }
    // Each worker claimed some: the runs were shared out, each claimed once (a run waiting for
    // the cluster stays with its worker), none taken over.
    let mut claimed = 0;
    for daemon in &daemons {
        let fresh = claims(daemon, "fresh");
        assert!(fresh > 0, "{} claimed nothing", daemon.url);
        assert_eq!(claims(daemon, "takeover"), 0, "{}", daemon.url);
        claimed += fresh;
    }
    assert_eq!(claimed, 30, "each run claimed once");
    assert_never_two_writers(&cluster, "shared");

    // Settled once, to the lamport: each Run holds its 18 trials, the fees of 18, and the usage
    // the runner recorded for its batches.
    for s in &submitted {
        let run = s["run"].as_str().unwrap();
        let fee = s["escrow"]["fee_per_trial_lamports"].as_u64().unwrap();
        let status = net.cli_json(&net.user_keypair, &["chain-status", run]);
        assert_eq!(status["settled_trials"], 18, "{status}");
        assert_eq!(status["settled_fees_lamports"], 18 * fee, "{status}");
        let evidence = cluster
            .psql(
                "shared",
                &format!(
                    "SELECT evidence FROM batches WHERE run = '{run}' AND signature IS NOT NULL"
                ),
            )
            .unwrap();
        let usage: u64 = evidence
            .lines()
            .filter(|l| !l.trim().is_empty())
            .flat_map(|l| serde_json::from_str::<Vec<Value>>(l).unwrap())
            .map(|r| r["usage_lamports"].as_u64().unwrap())
            .sum();
        assert_eq!(status["settled_usage_lamports"], usage, "{status}");
        assert_eq!(status["status"], "finalized", "{status}");
        assert_eq!(
            status["settle_batches"], 1,
            "one batch, landed once: {status}"
        );
    }
    // A report downloaded through any worker verifies against its Run.
    for (i, s) in submitted.iter().step_by(10).enumerate() {
        let run = s["run"].as_str().unwrap();
        let out_dir = net.dir.path().join(format!("shared-report-{i}"));
        let downloaded = net.cli_json(
            &wallets[0],
            &remote_report_args(run, &daemons[i % 3], out_dir.to_str().unwrap()),
        );
        assert_eq!(downloaded["run_account"], "agrees", "{downloaded}");
    }
    drop(daemons);
    server.stop();
}

/// Seconds from `since` until the model server has seen more than `seen` requests.
fn next_request_after(server: &ScriptedServer, seen: usize, since: Instant) -> Duration {
    loop {
        if server.requests().len() > seen {
            return since.elapsed();
        }
        assert!(
            since.elapsed() < Duration::from_secs(120),
            "no request in 120 s after the kill"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Follows `run` on `daemon` in the background; its lines once it ends.
fn follow(net: &Localnet, daemon: &Daemon, wallet: &Path, run: &str) -> std::process::Child {
    let args = [
        "status",
        "--remote",
        "--runner",
        daemon.url.as_str(),
        run,
        "--json",
        "--follow",
    ];
    net.command(wallet, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The events a finished follower printed: each must follow the one before by one, the last
/// the run's finalization.
fn assert_followed_to_the_end(child: std::process::Child) {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "follow: {}", said(&out));
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = events.last().unwrap();
    assert_eq!(last["data"]["phase"], "finalized", "{last}");
    let ids: Vec<u64> = events.iter().filter_map(|e| e["id"].as_u64()).collect();
    for pair in ids.windows(2) {
        assert!(pair[1] > pair[0], "events out of order: {ids:?}");
    }
}

pub fn dead_and_cut_off_workers_are_taken_over_with_nothing_sent_or_charged_twice(net: &Localnet) {
    let cluster = Cluster::start().unwrap();
    let db = cluster.create_database("takeover").unwrap();
    // The model server holds request HOLD (the first run's) until the server stops: it is in
    // flight when its worker is killed. Every other request is answered after 100 ms.
    const HOLD: u64 = 3;
    let server = ScriptedServer::start(|request| {
        if request.index == HOLD {
            Reply::Hang
        } else {
            Reply::Slow("I do not know.".to_owned(), Duration::from_millis(100))
        }
    })
    .unwrap();
    let profiles = operator_profile(net, "loopback-takeover", &server);
    let wallet = wallet(net, 100);
    // The API node: serves every request of the user and executes nothing.
    let api = worker(net, &db, "api", &profiles, &["--max-runs", "0"], &[]);

    // --- 1. SIGKILL with a request in flight: `one` executes the run alone; killed while the
    // model holds request HOLD, `two` takes the run over after the lease.
    let mut one = worker(net, &db, "one", &profiles, &["--max-runs", "1"], &[]);
    let manifest = plan(net, &profiles, "loopback-takeover", "1", "5", "51");
    let first = net.cli_json(&wallet, &submit_args(&manifest, &api.url));
    let first_run = first["run"].as_str().unwrap().to_owned();
    let follower = follow(net, &api, &wallet, &first_run);
    let held = crate::daemon::wait_requests(&server, usize::try_from(HOLD).unwrap() + 1);
    let seen = server.requests().len();
    let killed = Instant::now();
    one.child.kill().unwrap();
    one.child.wait().unwrap();
    let two = worker(net, &db, "two", &profiles, &["--max-runs", "1"], &[]);
    let takeover = next_request_after(&server, seen, killed);
    assert!(
        takeover <= Duration::from_secs(LEASE_SECS + 10),
        "taken over after {takeover:?}"
    );
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "a killed worker's run dispatched again elsewhere {:.2} s after the SIGKILL",
            takeover.as_secs_f64()
        );
    }
    wait_all_final(&cluster, "takeover", 1, Duration::from_secs(300));
    assert_followed_to_the_end(follower);
    assert_eq!(claims(&two, "takeover"), 1);
    // The request in flight was never sent again, and is in the report as unknown, uncharged.
    assert_each_attempt_sent_once(&server);
    let out_dir = net.dir.path().join("takeover-report");
    let downloaded = net.cli_json(
        &wallet,
        &remote_report_args(&first_run, &two, out_dir.to_str().unwrap()),
    );
    assert_eq!(downloaded["run_account"], "agrees", "{downloaded}");
    let report =
        Report::from_json(&std::fs::read_to_string(out_dir.join("report.json")).unwrap()).unwrap();
    let attempt = report
        .trials
        .iter()
        .flat_map(|t| t.attempts.iter())
        .find(|a| a.id == held)
        .unwrap_or_else(|| panic!("attempt {held} is not in the report"));
    assert_eq!(attempt.state, AttemptState::Unknown, "{attempt:?}");
    let charged: Vec<String> = report
        .settlement
        .as_ref()
        .unwrap()
        .batches
        .iter()
        .flat_map(|b| b.evidence.iter().map(|r| r.attempt_id().to_owned()))
        .collect();
    assert!(!charged.contains(&held), "the unknown attempt was charged");
    drop(two);

    // --- 2. SIGKILL between sending a settlement and seeing it land: `three` stops cold right
    // after its first send of the batch; `four` resends the very same transaction.
    let three = worker(
        net,
        &db,
        "three",
        &profiles,
        &["--max-runs", "1"],
        &[("SKILLTRIAL_FAILPOINT", "tx-sent:settle:")],
    );
    let manifest = plan(net, &profiles, "loopback-takeover", "1", "5", "52");
    let second = net.cli_json(&wallet, &submit_args(&manifest, &api.url));
    let second_run = second["run"].as_str().unwrap().to_owned();
    let line = wait_in_log(net, "three", "failpoint tx-sent reached");
    let signature = line
        .rsplit(' ')
        .next()
        .unwrap()
        .trim_end_matches(')')
        .to_owned();
    let mut three = three;
    let killed = Instant::now();
    three.child.kill().unwrap();
    three.child.wait().unwrap();
    let four = worker(net, &db, "four", &profiles, &["--max-runs", "1"], &[]);
    while claims(&four, "takeover") == 0 {
        assert!(
            killed.elapsed() <= Duration::from_secs(LEASE_SECS + 10),
            "the run was not taken over within the lease and 10 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_all_final(&cluster, "takeover", 2, Duration::from_secs(300));
    let landed = cluster
        .psql(
            "takeover",
            &format!("SELECT signature FROM batches WHERE run = '{second_run}' ORDER BY seq"),
        )
        .unwrap();
    assert_eq!(
        landed.trim(),
        signature,
        "the batch landed under the first signature"
    );
    let status = net.cli_json(&wallet, &["chain-status", &second_run]);
    assert_eq!(status["settle_batches"], 1, "{status}");
    assert_eq!(status["settled_trials"], 18, "{status}");
    assert_eq!(claims(&four, "takeover"), 1);
    drop(four);

    // --- 3. Cut off from the database: `five` connects as a role of its own; that role is
    // refused and its connections ended mid-run. `five` stops writing for the run before its
    // lease ends; `six` takes it over; their writes never overlap.
    cluster
        .psql("takeover", "CREATE ROLE five LOGIN SUPERUSER")
        .unwrap();
    let five_db = db.replace("user=skilltrial", "user=five");
    assert_ne!(five_db, db, "the connection string names its user: {db}");
    let five = worker(net, &five_db, "five", &profiles, &["--max-runs", "1"], &[]);
    let manifest = plan(net, &profiles, "loopback-takeover", "1", "5", "53");
    let third = net.cli_json(&wallet, &submit_args(&manifest, &api.url));
    let third_run = third["run"].as_str().unwrap().to_owned();
    let before = server.requests().len();
    crate::daemon::wait_requests(&server, before + 4);
    cluster
        .psql(
            "takeover",
            "ALTER ROLE five NOLOGIN; SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = 'five'",
        )
        .unwrap();
    let six = worker(net, &db, "six", &profiles, &["--max-runs", "1"], &[]);
    wait_all_final(&cluster, "takeover", 3, Duration::from_secs(300));
    assert_eq!(claims(&six, "takeover"), 1);
    assert_each_attempt_sent_once(&server);
    assert_never_two_writers(&cluster, "takeover");
    let status = net.cli_json(&wallet, &["chain-status", &third_run]);
    assert_eq!(status["status"], "finalized", "{status}");
    drop((five, six, api));
    server.stop();
}

/// A benchmark, not a check (`bench_workers_on_one_database` in main.rs): trials per second with
/// 1, 2 and 3 workers on one database when a 200 ms model is the bottleneck, and the time from a
/// worker's SIGKILL to the first request of its run from another worker.
pub fn bench_workers_on_one_database(net: &Localnet) {
    // Twelve runs of 54 trials (waves of equal runs on 1, 2 or 3 workers); each worker executes
    // two runs at once, one request each in flight, so with a 200 ms model one worker can send
    // at most 10 requests a second.
    const RUNS: usize = 12;
    const TRIALS: usize = RUNS * 54;
    let server = ScriptedServer::start(|_| {
        Reply::Slow("I do not know.".to_owned(), Duration::from_millis(200))
    })
    .unwrap();
    let profiles = operator_profile(net, "loopback-200ms", &server);
    let wallets: Vec<PathBuf> = (0..RUNS / 3).map(|i| wallet(net, 200 + i)).collect();
    let mut lines = Vec::new();
    let mut rates = Vec::new();
    for n in 1..=3usize {
        let cluster = Cluster::start().unwrap();
        let name = format!("bench{n}");
        let db = cluster.create_database(&name).unwrap();
        // Registered through a worker that executes nothing, so that the clock starts with the
        // executing workers, not with the submits.
        let api = worker(
            net,
            &db,
            &format!("{name}-api"),
            &profiles,
            &["--max-runs", "0"],
            &[],
        );
        for seed in 0..3 {
            let manifest = plan(
                net,
                &profiles,
                "loopback-200ms",
                "3",
                "20",
                &format!("{}", 300 + n * 10 + seed),
            );
            submit_all(net, &manifest, &wallets, &[&api]);
        }
        let before = server.requests().len();
        let started = Instant::now();
        let executing: Vec<Daemon> = (0..n)
            .map(|i| {
                worker(
                    net,
                    &db,
                    &format!("{name}-{i}"),
                    &profiles,
                    &["--max-runs", "2"],
                    &[],
                )
            })
            .collect();
        // The model's part: from the first request to the last.
        let (mut first, mut last) = (None, None);
        while last.is_none() {
            let sent = server.requests().len() - before;
            if sent > 0 && first.is_none() {
                first = Some(Instant::now());
            }
            if sent >= TRIALS {
                last = Some(Instant::now());
            }
            assert!(
                started.elapsed() < Duration::from_secs(1800),
                "{sent} of {TRIALS} sent"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        wait_all_final(&cluster, &name, RUNS, Duration::from_secs(1800));
        let took = started.elapsed().as_secs_f64();
        let sending = last
            .zip(first)
            .map_or(0.0, |(l, f)| l.duration_since(f).as_secs_f64());
        let rate = TRIALS as f64 / sending;
        rates.push(rate);
        lines.push(format!(
            "{n} worker(s), --max-runs 2 each: {TRIALS} trials of {RUNS} runs sent in {sending:.1} s = {rate:.2} trials/s ({:.2}x one worker); {took:.1} s from the first claim to the last finalization",
            rate / rates[0]
        ));
        drop(executing);
        drop(api);
    }

    // Takeover: SIGKILL the worker holding a run mid-run, five times.
    let mut takeovers = Vec::new();
    let cluster = Cluster::start().unwrap();
    let db = cluster.create_database("benchkill").unwrap();
    let api = worker(
        net,
        &db,
        "benchkill-api",
        &profiles,
        &["--max-runs", "0"],
        &[],
    );
    for k in 0..5usize {
        let mut holder = worker(
            net,
            &db,
            &format!("benchkill-{k}"),
            &profiles,
            &["--max-runs", "1"],
            &[],
        );
        let manifest = plan(
            net,
            &profiles,
            "loopback-200ms",
            "1",
            "5",
            &format!("{}", 400 + k),
        );
        submit_all(net, &manifest, &wallets[..1], &[&api]);
        // Mid-run: a few requests of it answered.
        let seen = server.requests().len();
        crate::daemon::wait_requests(&server, seen + 5);
        let at = server.requests().len();
        let killed = Instant::now();
        holder.child.kill().unwrap();
        holder.child.wait().unwrap();
        let taker = worker(
            net,
            &db,
            &format!("benchkill-{k}-taker"),
            &profiles,
            &["--max-runs", "1"],
            &[],
        );
        takeovers.push(next_request_after(&server, at, killed).as_secs_f64());
        wait_all_final(&cluster, "benchkill", k + 1, Duration::from_secs(600));
        drop(taker);
    }
    drop(api);
    takeovers.sort_by(f64::total_cmp);
    lines.push(format!(
        "takeover with a {LEASE_SECS} s lease, SIGKILL to the run's next request from another worker (the taker started right after the kill), 5 times: p50 {:.2} s, max {:.2} s",
        takeovers[takeovers.len() / 2],
        takeovers[takeovers.len() - 1]
    ));
    #[allow(clippy::print_stderr)]
    {
        for line in lines {
            eprintln!("{line}");
        }
    }
    server.stop();
}
