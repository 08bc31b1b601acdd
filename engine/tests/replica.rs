//! A replicated journal, through a real run against a loopback model: its log restores the
//! journal row for row, and every prefix of it (a worker that died after any commit) restores a
//! journal whose recovery leaves nothing in flight and whose resumed run sends nothing twice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::types::Value;
use skilltrial_core::concurrency::Concurrency;
use skilltrial_core::manifest::{self, Manifest, PlanOptions};
use skilltrial_core::money::{MicroUsd, PerMtok};
use skilltrial_core::pack::{self, Pack};
use skilltrial_core::profile::{Price, Profile, ProviderKind};
use skilltrial_core::{bundle, state::AttemptState};
use skilltrial_engine::engine::{self, Inputs, RunOptions, RunSummary};
use skilltrial_engine::home::Layout;
use skilltrial_engine::journal::{Journal, JournalError};
use skilltrial_engine::provider::Anthropic;
use skilltrial_engine::scripted::{Reply, ScriptedServer, ServerRequest};
use skilltrial_engine::store::Store;
use skilltrial_sqlite::replica::ChangeSink;

/// A replica that keeps the log in memory, shared with the test.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Vec<String>>>>);

impl ChangeSink for Log {
    fn append(&mut self, statements: &[String]) -> Result<(), String> {
        self.0.lock().unwrap().push(statements.to_vec());
        Ok(())
    }
}

impl Log {
    fn transactions(&self) -> Vec<Vec<String>> {
        self.0.lock().unwrap().clone()
    }
}

/// A loopback model answering by the task text (the same answer whatever the order), keeping
/// the attempt id of every request it receives.
fn model() -> (ScriptedServer, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = {
        let seen = Arc::clone(&seen);
        ScriptedServer::start(move |r: &ServerRequest| {
            seen.lock()
                .unwrap()
                .push(r.header("x-skilltrial-attempt").unwrap_or("").to_owned());
            let n = r
                .user_text()
                .bytes()
                .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
            match n % 3 {
                0 => Reply::Answer("{}".into()),
                1 => Reply::Answer("no JSON here".into()),
                _ => Reply::Answer(r#"{"answer": 1}"#.into()),
            }
        })
        .unwrap()
    };
    (server, seen)
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

/// A plan of 12 trials (six tasks, baseline and A, one repetition) against `url`.
fn plan(url: &str) -> Planned {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pack = pack::open("solana-core@1.0.3").unwrap();
    let a = bundle::import(&root.join("fixtures/bundles/solana-reader-1.4.2")).unwrap();
    let options = PlanOptions {
        repetitions: 1,
        seed: 7,
        cap: Some(MicroUsd::parse_usd("50").unwrap()),
        max_requests: None,
        max_tokens: None,
        max_output_tokens: Some(1024),
        endpoint: url.to_owned(),
        scripted: false,
    };
    let m = manifest::build(&pack, Some(&a), None, &profile(url), &options).unwrap();
    (pack, a, m)
}

/// A state directory holding the plan's inputs (and an empty payload store).
fn state_dir(dir: &Path, planned: &Planned) -> (Layout, Store, Inputs) {
    let (pack, a, m) = planned;
    let layout = Layout::new(dir);
    let store = Store::open(&layout.store).unwrap();
    let payloads = Store::open(&layout.payloads).unwrap();
    let hash = engine::save_inputs(&store, m, pack, Some(a), None).unwrap();
    let inputs = engine::load_inputs(&store, &hash.hex()).unwrap();
    (layout, payloads, inputs)
}

fn run(
    journal: &mut Journal,
    payloads: &Store,
    inputs: &Inputs,
    url: &str,
    concurrency: u32,
) -> RunSummary {
    let provider = Anthropic::new(url, "k".into(), Duration::from_secs(30)).unwrap();
    engine::run(
        journal,
        payloads,
        &provider,
        inputs,
        RunOptions {
            concurrency: Concurrency::new(concurrency).unwrap(),
            ..RunOptions::default()
        },
        &mut |_| {},
    )
    .unwrap()
}

/// Every row of every table of the journal at `path`, rowids included, and its AUTOINCREMENT
/// counters.
fn dump(path: &Path) -> Vec<(String, Vec<Vec<Value>>)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(tables.len() >= 7, "{tables:?}");
    tables
        .into_iter()
        .map(|table| {
            let sql = if table == "sqlite_sequence" {
                "SELECT name, seq FROM sqlite_sequence ORDER BY name".to_owned()
            } else {
                format!("SELECT rowid, * FROM \"{table}\" ORDER BY rowid")
            };
            let mut stmt = conn.prepare(&sql).unwrap();
            let n = stmt.column_count();
            let rows = stmt
                .query_map([], |r| (0..n).map(|i| r.get(i)).collect())
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            (table, rows)
        })
        .collect()
}

/// A plan: its pack, bundle A and manifest.
type Planned = (Pack, bundle::Bundle, Manifest);

/// A run of the plan on a replicated journal, four requests in flight: its state directory,
/// the plan, the run's summary, the log, and the attempts the model received.
fn replicated_run() -> (
    tempfile::TempDir,
    Planned,
    RunSummary,
    Vec<Vec<String>>,
    Vec<String>,
) {
    let (server, seen) = model();
    let planned = plan(&server.url());
    let work = tempfile::tempdir().unwrap();
    let (layout, payloads, inputs) = state_dir(work.path(), &planned);
    let log = Log::default();
    let mut journal = Journal::open(&layout.journal).unwrap();
    journal.replicate(Box::new(log.clone())).unwrap();
    let summary = run(&mut journal, &payloads, &inputs, &server.url(), 4);
    assert_eq!(summary.status, "finished");
    assert_eq!(summary.planned, 12);
    let sent = seen.lock().unwrap().clone();
    (work, planned, summary, log.transactions(), sent)
}

#[test]
fn a_replicated_runs_log_restores_its_journal_row_for_row() {
    // Given a run on a replicated journal
    let (work, _, summary, log, sent) = replicated_run();
    assert_eq!(sent.len(), 12);

    // When its log is restored into a new file
    let copy = work.path().join("copy/journal.sqlite3");
    let restored = Journal::restore(&copy, log.clone()).unwrap();

    // Then every table holds the same rows, rowids and counters included
    let original = dump(&Layout::new(work.path()).journal);
    assert_eq!(dump(&copy), original);
    assert_eq!(
        restored.find_run(&summary.run).unwrap().unwrap().status,
        skilltrial_core::state::RunStatus::Finished
    );
    // ... and a second restore onto it is refused, leaving it as it was
    drop(restored);
    let err = Journal::restore(&copy, log).unwrap_err();
    assert!(matches!(err, JournalError::Restore { .. }), "{err:?}");
    assert!(err.to_string().contains("exists"), "{err}");
    assert_eq!(dump(&copy), original);
}

#[test]
fn every_prefix_of_a_runs_log_recovers_with_nothing_in_flight_and_resumes_sending_nothing_twice() {
    // Given a run on a replicated journal and its log
    let (work, planned, summary, log, sent) = replicated_run();
    let run_id = summary.run;
    let (server, seen) = model();
    // (the windows this must cover: a request in flight, an answer not yet scored)
    let (mut in_flight, mut unscored) = (0, 0);

    for n in 0..=log.len() {
        // When a worker restores the log's first n transactions
        let dir = work.path().join(format!("prefix-{n}"));
        let (layout, payloads, inputs) = state_dir(&dir, &planned);
        let mut journal = Journal::restore(&layout.journal, log[..n].to_vec()).unwrap();
        let sent_before: BTreeSet<String> = journal
            .attempts(&run_id)
            .unwrap()
            .into_iter()
            .filter(|a| a.dispatched_at_ms.is_some())
            .map(|a| a.id)
            .collect();
        // (every request the log says was dispatched was one the first worker sent)
        assert!(sent_before.iter().all(|id| sent.contains(id)), "prefix {n}");

        // Then recovery leaves no attempt dispatched: those in flight are unknown
        let unknown = journal.recover(&run_id).unwrap();
        in_flight += usize::from(!unknown.is_empty());
        let attempts = journal.attempts(&run_id).unwrap();
        assert!(
            attempts.iter().all(|a| a.state != AttemptState::Dispatched),
            "prefix {n}"
        );
        for id in &unknown {
            let a = attempts.iter().find(|a| &a.id == id).unwrap();
            assert_eq!(a.state, AttemptState::Unknown, "prefix {n}");
        }
        // ... the trials still to send are those with no attempt answered, closed or unknown
        let ended: BTreeSet<u32> = attempts
            .iter()
            .filter(|a| {
                matches!(
                    a.state,
                    AttemptState::Result | AttemptState::Closed | AttemptState::Unknown
                )
            })
            .map(|a| a.trial_idx)
            .collect();
        let to_send = 12 - ended.len();
        unscored += usize::from(
            attempts
                .iter()
                .any(|a| a.state == AttemptState::Result && a.outcome.is_none()),
        );

        // ... and the resumed run sends exactly those, each once, none the log dispatched
        seen.lock().unwrap().clear();
        let resumed = run(&mut journal, &payloads, &inputs, &server.url(), 4);
        let again = seen.lock().unwrap().clone();
        assert_eq!(again.len(), to_send, "prefix {n}: {again:?}");
        let unique: BTreeSet<&String> = again.iter().collect();
        assert_eq!(
            unique.len(),
            again.len(),
            "prefix {n}: a request sent twice"
        );
        assert!(
            again.iter().all(|id| !sent_before.contains(id)),
            "prefix {n}: a dispatched request sent again"
        );
        assert_eq!(resumed.status, "finished", "prefix {n}");
        assert_eq!(
            resumed.counts.get("unknown").copied().unwrap_or(0) as usize,
            attempts
                .iter()
                .filter(|a| a.state == AttemptState::Unknown)
                .count(),
            "prefix {n}"
        );
        drop(journal);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    assert!(log.len() > 12, "a transaction per step: {}", log.len());
    assert!(
        in_flight > 0 && unscored > 0,
        "{in_flight} prefixes with a request in flight, {unscored} with an answer unscored"
    );
}
