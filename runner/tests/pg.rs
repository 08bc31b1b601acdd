//! The runner's state on a real PostgreSQL server (a throwaway cluster from the machine's
//! packages, `skilltrial-pgtest`): the same rules as the SQLite file, leases that never let two
//! workers write for one run, the write log a takeover rebuilds from, and hints of new events
//! across workers.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::json;
use skilltrial_core::concurrency::Concurrency;
use skilltrial_core::settlement::EvidenceRecord;
use skilltrial_pgtest::Cluster;
use skilltrial_runner::pg::{Hold, Pg, PgOptions, PgState, ReplicaFile};
use skilltrial_runner::state::{HostedRun, Phase, RunnerState, SqliteState};
use skilltrial_sqlite::replica::ChangeSink;

/// One server for this test binary (its watchdog stops it when the binary ends, however it
/// ends); one database per test.
fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| Cluster::start().expect("a throwaway PostgreSQL cluster"))
}

fn database(name: &str) -> String {
    cluster().create_database(name).expect("a database")
}

fn worker(conninfo: &str, name: &str, lease: Duration) -> Pg {
    let mut options = PgOptions::new(conninfo);
    options.worker = name.to_owned();
    options.lease = lease;
    options.pool_size = 4;
    Pg::connect(&options).expect("connected")
}

fn run(address: &str, user: &str, created_at: i64) -> HostedRun {
    HostedRun {
        address: address.into(),
        user: user.into(),
        manifest: "ab".repeat(32),
        run_id: 7,
        deadline: 2_000_000_000,
        phase: Phase::Executing,
        detail: None,
        report_hash: None,
        finalize_signature: None,
        concurrency: Concurrency::new(3).unwrap(),
        created_at,
        updated_at: created_at,
    }
}

fn record(trial: u16) -> EvidenceRecord {
    EvidenceRecord::new(
        trial,
        format!("r-{trial:03}-1"),
        None,
        1000 + u64::from(trial),
        "ab".repeat(32),
    )
    .unwrap()
}

/// Everything one backend answers to the same sequence of calls, in words.
fn exercise(s: &mut dyn RunnerState) -> Vec<String> {
    let mut seen = Vec::new();
    let mut note = |what: String| seen.push(what);
    let t = 1_000_000;
    note(format!("n1 {:?}", s.spend_nonce("n1", "alice", t + 600, t)));
    note(format!(
        "n1 again {:?}",
        s.spend_nonce("n1", "alice", t + 600, t)
    ));
    note(format!(
        "n1 by bob {:?}",
        s.spend_nonce("n1", "bob", t + 600, t)
    ));
    note(format!("n2 {:?}", s.spend_nonce("n2", "bob", t + 10, t)));
    // n2 expired and was swept: it is fresh again.
    note(format!(
        "n2 later {:?}",
        s.spend_nonce("n2", "bob", t + 900, t + 20)
    ));
    note(format!(
        "session {:?}",
        s.create_session("tok", "alice", t + 100)
    ));
    note(format!("live {:?}", s.session("tok", t + 99)));
    note(format!("expired {:?}", s.session("tok", t + 100)));
    note(format!(
        "hold {:?} {:?}",
        s.hold("alice", "d1"),
        s.hold("alice", "d1")
    ));
    note(format!(
        "holds {:?} {:?}",
        s.holds("alice", "d1"),
        s.holds("bob", "d1")
    ));
    note(format!(
        "register {:?}",
        s.register_run(&run("r1", "alice", 10))
    ));
    note(format!("again {:?}", s.register_run(&run("r1", "bob", 11))));
    note(format!(
        "register {:?}",
        s.register_run(&run("r2", "alice", 12))
    ));
    note(format!(
        "register {:?}",
        s.register_run(&run("r3", "carol", 13))
    ));
    let runs_of = |s: &dyn RunnerState, u: &str| {
        s.runs_of(u)
            .map(|runs| runs.into_iter().map(|r| r.address).collect::<Vec<_>>())
    };
    note(format!("alice's {:?}", runs_of(s, "alice")));
    note(format!(
        "set_phase {:?}",
        s.set_phase("r3", Phase::Failed, Some("refunded"))
    ));
    note(format!(
        "to work {:?}",
        s.runs_to_work()
            .map(|runs| runs.into_iter().map(|r| r.address).collect::<Vec<_>>())
    ));
    note(format!("report {:?}", s.set_report("r1", &"cd".repeat(32))));
    note(format!(
        "finalized {:?}",
        s.set_finalized("r1", "sig-final")
    ));
    let r1 = s.run("r1").unwrap().unwrap();
    note(format!(
        "r1 {} {:?} {:?} {:?} {}",
        r1.phase, r1.detail, r1.report_hash, r1.finalize_signature, r1.concurrency
    ));
    let r3 = s.run("r3").unwrap().unwrap();
    note(format!("r3 {} {:?}", r3.phase, r3.detail));
    note(format!("none {:?}", s.run("nope").map(|r| r.is_none())));
    note(format!(
        "batch {:?}",
        s.add_batch("r2", 1, &[record(0), record(1)])
    ));
    note(format!("batch {:?}", s.add_batch("r2", 2, &[record(2)])));
    note(format!(
        "duplicate batch fails {}",
        s.add_batch("r2", 2, &[record(3)]).is_err()
    ));
    note(format!("landed {:?}", s.batch_landed("r2", 1, "sig-1")));
    // A refusal never overwrites a landed batch.
    note(format!("refused {:?}", s.batch_refused("r2", 1, "late")));
    note(format!(
        "refused {:?}",
        s.batch_refused("r2", 2, "deadline passed")
    ));
    note(format!("batches {:?}", s.batches("r2")));
    for (run, kind) in [("r1", "phase"), ("r2", "progress"), ("r1", "notice")] {
        let e = s.append_event(run, kind, &json!({"k": kind})).unwrap();
        note(format!("event {} {} {} {}", e.run, e.seq, e.kind, e.data));
    }
    note(format!(
        "after 1 {:?}",
        s.events_after("r1", 1).map(|es| es
            .into_iter()
            .map(|e| (e.seq, e.kind, e.data))
            .collect::<Vec<_>>())
    ));
    seen
}

#[test]
fn the_state_on_postgres_answers_every_call_as_the_sqlite_file_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut sqlite = SqliteState::open(&dir.path().join("runner.sqlite")).unwrap();
    let conninfo = database("same_rules");
    let mut postgres = PgState::new(worker(&conninfo, "w1", Duration::from_secs(30)));
    let on_sqlite = exercise(&mut sqlite);
    let on_postgres = exercise(&mut postgres);
    for (a, b) in on_sqlite.iter().zip(&on_postgres) {
        assert_eq!(a, b, "SQLite answered {a}, PostgreSQL {b}");
    }
    assert_eq!(on_sqlite.len(), on_postgres.len());
    // And what they answer is right, not merely the same.
    let text = on_postgres.join("\n");
    for expected in [
        "n1 Ok(true)",
        "n1 again Ok(false)",
        "n1 by bob Ok(false)",
        "n2 later Ok(true)",
        "live Ok(Some(\"alice\"))",
        "expired Ok(None)",
        "holds Ok(true) Ok(false)",
        "again Ok(false)",
        "alice's Ok([\"r2\", \"r1\"])",
        "to work Ok([\"r1\", \"r2\"])",
        "r3 failed Some(\"refunded\")",
        "duplicate batch fails true",
        "event r1 1 phase",
        "event r2 1 progress",
        "event r1 2 notice",
    ] {
        assert!(text.contains(expected), "{expected} missing from:\n{text}");
    }
}

#[test]
fn workers_claim_disjoint_runs_and_take_over_only_a_lapsed_lease() {
    let conninfo = database("claims");
    let lease = Duration::from_secs(2);
    let w1 = worker(&conninfo, "w1", lease);
    let w2 = worker(&conninfo, "w2", lease);
    let mut state = PgState::new(w1.clone());
    for i in 0..6 {
        assert!(
            state
                .register_run(&run(&format!("run{i}"), "alice", i))
                .unwrap()
        );
    }
    let first = w1.claim(4).unwrap();
    let second = w2.claim(4).unwrap();
    let mut all: Vec<String> = first
        .iter()
        .chain(&second)
        .map(|c| c.address.clone())
        .collect();
    assert_eq!(first.len(), 4, "oldest first: {first:?}");
    assert_eq!(second.len(), 2, "{second:?}");
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 6, "every run claimed once: {first:?} {second:?}");
    assert!(
        first
            .iter()
            .chain(&second)
            .all(|c| c.epoch == 1 && c.previous.is_none())
    );
    assert!(w1.claim(4).unwrap().is_empty(), "nothing is free");
    assert!(w2.claim(4).unwrap().is_empty(), "nothing is free");

    // w2 renews; w1 goes silent: only w1's runs are taken over, once its lease lapsed.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut taken = Vec::new();
    while taken.len() < 4 && Instant::now() < deadline {
        assert!(w2.renew().unwrap().is_empty(), "w2 keeps its leases");
        taken.extend(w2.claim(10).unwrap());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(taken.len(), 4, "{taken:?}");
    for claim in &taken {
        assert!(
            first.iter().any(|c| c.address == claim.address),
            "{claim:?}"
        );
        assert_eq!(claim.epoch, 2, "a takeover bumps the epoch");
        assert_eq!(claim.previous.as_deref(), Some("w1"));
    }
    // w1 learns it at its next renewal.
    let mut lost = w1.renew().unwrap();
    lost.sort();
    let mut expected: Vec<String> = first.iter().map(|c| c.address.clone()).collect();
    expected.sort();
    assert_eq!(lost, expected);
    assert!(
        first
            .iter()
            .all(|c| w1.hold(&c.address) == Some(Hold::Lost))
    );
}

#[test]
fn a_worker_whose_lease_was_taken_over_changes_nothing_more() {
    let conninfo = database("fencing");
    let lease = Duration::from_secs(2);
    let w1 = worker(&conninfo, "w1", lease);
    let w2 = worker(&conninfo, "w2", lease);
    let mut s1 = PgState::new(w1.clone());
    let mut s2 = PgState::new(w2.clone());
    s1.register_run(&run("r", "alice", 1)).unwrap();
    assert_eq!(w1.claim(1).unwrap().len(), 1);
    // While w1 holds it, its fenced writes land.
    s1.add_batch("r", 1, &[record(0)]).unwrap();
    s1.append_event("r", "progress", &json!({"done": 1}))
        .unwrap();
    let mut old_sink = w1.sink("r", ReplicaFile::Journal, 8).unwrap();
    old_sink
        .append(&["INSERT INTO t VALUES (1)".to_owned()])
        .unwrap();

    // w1 stops renewing; w2 takes the run over once the lease lapsed.
    let deadline = Instant::now() + Duration::from_secs(20);
    let claim = loop {
        if let Some(c) = w2.claim(1).unwrap().pop() {
            break c;
        }
        assert!(Instant::now() < deadline, "the lease never lapsed");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!((claim.epoch, claim.previous.as_deref()), (2, Some("w1")));

    // Every write of w1 for the run is refused now, and changes nothing.
    let refused = [
        ("add_batch", s1.add_batch("r", 2, &[record(1)]).err()),
        ("batch_landed", s1.batch_landed("r", 1, "stale-sig").err()),
        (
            "set_phase",
            s1.set_phase("r", Phase::Failed, Some("stale")).err(),
        ),
        (
            "append_event",
            s1.append_event("r", "notice", &json!({})).err(),
        ),
        ("set_report", s1.set_report("r", "ee").err()),
    ];
    for (what, error) in refused {
        let error = error.unwrap_or_else(|| panic!("{what} by the old owner was accepted"));
        assert!(error.to_string().contains("lease"), "{what}: {error}");
    }
    let appended = old_sink.append(&["INSERT INTO t VALUES (2)".to_owned()]);
    assert!(appended.unwrap_err().contains("lease"));
    assert_eq!(w1.hold("r"), Some(Hold::Lost));

    let r = s2.run("r").unwrap().unwrap();
    assert_eq!(
        (r.phase, r.detail, r.report_hash),
        (Phase::Executing, None, None)
    );
    let batches = s2.batches("r").unwrap();
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0].signature, None);
    assert_eq!(s2.events_after("r", 0).unwrap().len(), 1);
    assert_eq!(
        w2.replica_log("r", ReplicaFile::Journal, 8).unwrap(),
        vec![vec!["INSERT INTO t VALUES (1)".to_owned()]]
    );
    // The new owner's writes land, numbered on from the old ones.
    let mut new_sink = w2.sink("r", ReplicaFile::Journal, 8).unwrap();
    new_sink
        .append(&["INSERT INTO t VALUES (3)".to_owned()])
        .unwrap();
    s2.append_event("r", "notice", &json!({"n": 2})).unwrap();
    assert_eq!(
        s2.events_after("r", 0).unwrap().last().map(|e| e.seq),
        Some(2)
    );
    assert_eq!(
        w2.replica_log("r", ReplicaFile::Journal, 8).unwrap().len(),
        2
    );
    // A log written at another schema of the file is refused, never replayed.
    let other = w2.replica_log("r", ReplicaFile::Journal, 9).unwrap_err();
    assert!(other.to_string().contains("schema 8"), "{other}");
    // HTTP-side writes (no lease held) still work for the run.
    let mut s3 = PgState::new(worker(&conninfo, "w3", lease));
    s3.append_event("r", "notice", &json!({"from": "http"}))
        .unwrap();
}

#[test]
fn workers_starting_together_migrate_once_and_a_newer_schema_is_refused() {
    let conninfo = database("migrations");
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let conninfo = conninfo.clone();
            std::thread::spawn(move || {
                let mut options = PgOptions::new(&conninfo);
                options.worker = format!("w{i}");
                Pg::connect(&options).map(drop)
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap().unwrap();
    }
    let applied = cluster()
        .psql("migrations", "SELECT count(*) FROM runner_schema")
        .unwrap();
    assert_eq!(applied.trim(), "1", "{applied}");
    cluster()
        .psql(
            "migrations",
            "INSERT INTO runner_schema (version) VALUES (99)",
        )
        .unwrap();
    let refused = Pg::connect(&PgOptions::new(&conninfo)).unwrap_err();
    assert!(
        refused.contains("schema 99") && refused.contains("newer"),
        "{refused}"
    );
    assert!(!refused.contains("password"), "{refused}");
}

#[test]
fn an_event_appended_through_one_worker_is_hinted_to_another() {
    let conninfo = database("hints");
    let w1 = worker(&conninfo, "w1", Duration::from_secs(30));
    let w2 = worker(&conninfo, "w2", Duration::from_secs(30));
    let hints = w2.listen();
    let mut rx = hints.subscribe();
    let mut s1 = PgState::new(w1);
    s1.register_run(&run("far", "alice", 1)).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The listener says `*` once it listens; then every event is hinted by its run.
    let got = runtime.block_on(async {
        let mut got = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let mut appended = false;
        while tokio::time::Instant::now() < deadline {
            match tokio::time::timeout(Duration::from_millis(200), rx.recv()).await {
                Ok(Ok(hint)) => {
                    if hint == "*" && !appended {
                        s1.append_event("far", "progress", &json!({"done": 1}))
                            .unwrap();
                        appended = true;
                    }
                    got.push(hint);
                    if got.iter().any(|h| h == "far") {
                        break;
                    }
                }
                Ok(Err(e)) => panic!("hints: {e}"),
                Err(_) => {}
            }
        }
        got
    });
    assert!(got.iter().any(|h| h == "far"), "hints seen: {got:?}");
}

#[test]
fn blobs_and_run_files_are_content_addressed_and_fenced() {
    let conninfo = database("blobs");
    let w1 = worker(&conninfo, "w1", Duration::from_secs(30));
    let mut s1 = PgState::new(w1.clone());
    s1.register_run(&run("r", "alice", 1)).unwrap();
    let bytes = b"{\"report\": true}\n".to_vec();
    let digest = skilltrial_core::digest::Sha256Digest::of(&bytes).hex();
    w1.put_blob(&digest, bytes.clone()).unwrap();
    w1.put_blob(&digest, bytes.clone()).unwrap();
    assert_eq!(w1.blob(&digest).unwrap(), Some(bytes));
    assert_eq!(w1.blob(&"0".repeat(64)).unwrap(), None);
    let bad = w1.put_blob("not-a-digest", vec![1]).unwrap_err();
    assert!(bad.to_string().contains("blobs"), "{bad}");
    w1.claim(1).unwrap();
    w1.set_run_file("r", "report.json", &digest).unwrap();
    assert_eq!(w1.run_file("r", "report.json").unwrap(), Some(digest));
    assert_eq!(w1.run_file("r", "report.html").unwrap(), None);
}

#[test]
fn every_worker_on_one_database_signs_in_with_the_same_key() {
    let conninfo = database("keys");
    let w1 = worker(&conninfo, "w1", Duration::from_secs(30));
    let w2 = worker(&conninfo, "w2", Duration::from_secs(30));
    let k1 = w1.shared_key("challenges").unwrap();
    assert_eq!(w2.shared_key("challenges").unwrap(), k1);
    assert_ne!(k1, [0; 32]);
    assert_ne!(w1.shared_key("other").unwrap(), k1, "a key per name");
}

#[test]
fn a_run_given_back_is_claimed_again_fresh_once_its_wait_has_passed() {
    let conninfo = database("release");
    let w1 = worker(&conninfo, "w1", Duration::from_secs(30));
    let w2 = worker(&conninfo, "w2", Duration::from_secs(30));
    let mut s1 = PgState::new(w1.clone());
    s1.register_run(&run("r", "alice", 1)).unwrap();
    assert_eq!(w1.claim(1).unwrap().len(), 1);
    w1.release("r", Some(Duration::from_secs(2))).unwrap();
    assert_eq!(w1.hold("r"), None);
    // Given back with a wait: nobody claims it before the wait has passed.
    assert!(w2.claim(1).unwrap().is_empty(), "claimed during its wait");
    let deadline = Instant::now() + Duration::from_secs(20);
    let claim = loop {
        if let Some(c) = w2.claim(1).unwrap().pop() {
            break c;
        }
        assert!(Instant::now() < deadline, "never claimable again");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        (claim.epoch, claim.previous),
        (2, None),
        "a fresh claim, not a takeover"
    );
    // Given back without a wait: claimable at once; the old epoch's release changes nothing.
    w1.release("r", None).unwrap();
    assert_eq!(w2.hold("r"), Some(Hold::Held(2)));
    w2.release("r", None).unwrap();
    let again = w1.claim(1).unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].epoch, again[0].previous.as_deref()), (3, None));
}

#[test]
fn a_connection_the_server_refuses_says_why_in_the_servers_words() {
    let conninfo = database("refusal").replace("user=skilltrial", "user=nobody");
    let mut options = PgOptions::new(&conninfo);
    options.worker = "w".to_owned();
    let refused = Pg::connect(&options).unwrap_err();
    assert!(
        refused.contains("role \"nobody\" does not exist"),
        "{refused}"
    );
}
