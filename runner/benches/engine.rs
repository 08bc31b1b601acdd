//! The runner's own overhead per trial — everything except the model's latency — against an
//! instant loopback provider, printed beside this disk's fsync latency. Prints, asserts nothing.
//! Issue 4's target: < 5 ms per trial at p50.
//! Run: `cargo bench -p skilltrial-runner --bench engine`.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use skilltrial_runner::bundle;
use skilltrial_runner::engine::{self, RunOptions};
use skilltrial_runner::home::Layout;
use skilltrial_runner::journal::Journal;
use skilltrial_runner::manifest::{self, PlanOptions};
use skilltrial_runner::money::{MicroUsd, PerMtok};
use skilltrial_runner::pack;
use skilltrial_runner::profile::{Price, Profile, ProviderKind};
use skilltrial_runner::provider::{Anthropic, CallError, ModelRequest, ModelResponse, Provider};
use skilltrial_runner::scripted::{Reply, ScriptedServer};
use skilltrial_runner::store::Store;

/// Wraps the real provider and records how long each call took.
struct Timed {
    inner: Anthropic,
    calls: Mutex<Vec<Duration>>,
}

impl Provider for Timed {
    fn kind(&self) -> ProviderKind {
        self.inner.kind()
    }
    fn body(&self, request: &ModelRequest) -> Vec<u8> {
        self.inner.body(request)
    }
    fn call(&self, request: &ModelRequest) -> Result<ModelResponse, CallError> {
        let start = Instant::now();
        let result = self.inner.call(request);
        self.calls.lock().unwrap().push(start.elapsed());
        result
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn fsync_latency(dir: &Path) -> Vec<f64> {
    let mut samples = Vec::new();
    for i in 0..50 {
        let path = dir.join(format!("fsync-{i}"));
        let start = Instant::now();
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&[7u8; 4096]).unwrap();
        f.sync_all().unwrap();
        samples.push(start.elapsed().as_secs_f64() * 1e3);
    }
    samples.sort_by(f64::total_cmp);
    samples
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let work = tempfile::tempdir().unwrap();
    let fsync = fsync_latency(work.path());

    let pack = pack::open("solana-core@1.0.3").unwrap();
    let a = bundle::import(&root.join("fixtures/bundles/solana-reader-1.4.2")).unwrap();
    let b = bundle::import(&root.join("fixtures/bundles/solana-reader-1.5.0")).unwrap();
    let server =
        ScriptedServer::start(|_| Reply::Answer("{\"account_type\":\"mint\"}".into())).unwrap();
    let profile = Profile {
        id: "bench".into(),
        provider: ProviderKind::Anthropic,
        model: "bench-model".into(),
        revision: None,
        base_url: Some(server.url()),
        context_tokens: 200_000,
        max_output_tokens: 1024,
        price: Some(Price {
            input: PerMtok(3_000_000),
            output: PerMtok(15_000_000),
            source: "bench".into(),
            as_of: "2026-11-29".into(),
        }),
        origin: "bench".into(),
    };
    let options = PlanOptions {
        repetitions: 3,
        seed: 1,
        cap: Some(MicroUsd::parse_usd("100").unwrap()),
        max_requests: None,
        max_tokens: None,
        max_output_tokens: Some(1024),
        endpoint: server.url(),
        scripted: false,
    };
    let m = manifest::build(&pack, Some(&a), Some(&b), &profile, &options).unwrap();
    let layout = Layout::new(work.path());
    let store = Store::open(&layout.store).unwrap();
    let payloads = Store::open(&layout.payloads).unwrap();
    let hash = engine::save_inputs(&store, &m, &pack, Some(&a), Some(&b)).unwrap();
    let inputs = engine::load_inputs(&store, &hash.hex()).unwrap();
    let mut journal = Journal::open(&layout.journal).unwrap();
    let provider = Timed {
        inner: Anthropic::new(&server.url(), "bench-key".into(), Duration::from_secs(10)).unwrap(),
        calls: Mutex::new(Vec::new()),
    };

    let mut marks: Vec<Instant> = Vec::new();
    let mut last_done = 0;
    let start = Instant::now();
    let summary = engine::run(
        &mut journal,
        &payloads,
        &provider,
        &inputs,
        RunOptions {
            dispatch_limit: None,
        },
        &mut |p| {
            if p.done != last_done {
                last_done = p.done;
                marks.push(Instant::now());
            }
        },
    )
    .unwrap();
    let total = start.elapsed();
    let calls = provider.calls.lock().unwrap().clone();

    let mut per_trial = Vec::new();
    let mut previous = start;
    for (mark, call) in marks.iter().zip(&calls) {
        let wall = mark.duration_since(previous);
        per_trial.push((wall.saturating_sub(*call)).as_secs_f64() * 1e3);
        previous = *mark;
    }
    per_trial.sort_by(f64::total_cmp);
    let mut call_ms: Vec<f64> = calls.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    call_ms.sort_by(f64::total_cmp);

    println!(
        "engine overhead per trial: {} trials ({}), instant loopback provider",
        summary.planned, summary.status
    );
    println!("target: < 5 ms per trial at p50\n");
    println!(
        "{:<44} {:>10} {:>10} {:>10}",
        "measure", "p50 ms", "p90 ms", "max ms"
    );
    println!(
        "{:<44} {:>10.2} {:>10.2} {:>10.2}",
        "runner overhead per trial (wall - model call)",
        percentile(&per_trial, 0.5),
        percentile(&per_trial, 0.9),
        per_trial.last().unwrap()
    );
    println!(
        "{:<44} {:>10.2} {:>10.2} {:>10.2}",
        "model call on loopback (excluded)",
        percentile(&call_ms, 0.5),
        percentile(&call_ms, 0.9),
        call_ms.last().unwrap()
    );
    println!(
        "{:<44} {:>10.2} {:>10.2} {:>10.2}",
        "this disk: write 4 KiB + fsync",
        percentile(&fsync, 0.5),
        percentile(&fsync, 0.9),
        fsync.last().unwrap()
    );
    println!(
        "\nwhole run: {:.1} ms for {} trials",
        total.as_secs_f64() * 1e3,
        summary.planned
    );
}
