//! The daemon's HTTP API over a real loopback socket, without a cluster: sign-in (and each way
//! it is refused), bearer and cookie sessions (a cookie POST from another origin refused),
//! uploads validated as `validate` validates, and every private endpoint closed to a request
//! without a session. The chain-authorised half (registration, execution, settlement) is
//! tested against a real local validator in `tests/hosted/daemon.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use skilltrial_chain::cli_config::Commitment;
use skilltrial_core::bundle::Bundle;
use skilltrial_core::concurrency::Concurrency;
use skilltrial_core::manifest::{self, Manifest, PlanOptions, SolUsd};
use skilltrial_core::money::MicroUsd;
use skilltrial_core::pack::Pack;
use skilltrial_runner::client::{Client, ClientError};
use skilltrial_runner::http::connections::{ConnectionLimits, serve_connections};
use skilltrial_runner::http::intake::BodyBounds;
use skilltrial_runner::profiles::Profiles;
use skilltrial_runner::rate::OperatorRate;
use skilltrial_runner::state::{HostedRun, Phase, RunnerState, SqliteState};
use skilltrial_runner::tree::TreeLimits;
use skilltrial_runner::{App, Config, http};
use solana_keypair::Keypair;
use solana_signer::Signer;

struct Served {
    base: url::Url,
    _dir: tempfile::TempDir,
}

fn serve() -> Served {
    serve_with(|_| {})
}

/// A daemon whose state directory `prepare` fills first (runs already registered, as a
/// restarted daemon finds them).
fn serve_with(prepare: impl FnOnce(&Path)) -> Served {
    serve_full(prepare, BodyBounds::default())
}

/// A daemon reading bodies within `bounds`.
fn serve_bounded(bounds: BodyBounds) -> Served {
    serve_full(|_| {}, bounds)
}

fn serve_full(prepare: impl FnOnce(&Path), bounds: BodyBounds) -> Served {
    serve_within(prepare, bounds, ConnectionLimits::default(), NO_CLUSTER)
}

/// A daemon serving connections within `limits`.
fn serve_limited(limits: ConnectionLimits) -> Served {
    serve_within(|_| {}, BodyBounds::default(), limits, NO_CLUSTER)
}

/// A daemon reading the cluster at `rpc_url`.
fn serve_on_cluster(rpc_url: &str) -> Served {
    serve_within(
        |_| {},
        BodyBounds::default(),
        ConnectionLimits::default(),
        rpc_url,
    )
}

/// Nothing listens there: the chain is unreachable.
const NO_CLUSTER: &str = "http://127.0.0.1:9";

/// A daemon as `skilltrial runner serve` runs it (its accept loop and router), with its bounds
/// given, the state directory `prepare` filled first, and its cluster at `rpc_url`.
fn serve_within(
    prepare: impl FnOnce(&Path),
    bounds: BodyBounds,
    limits: ConnectionLimits,
    rpc_url: &str,
) -> Served {
    serve_as(prepare, bounds, limits, rpc_url, Keypair::new(), 1)
}

/// [`serve_within`] with `runner` as the daemon's key, executing at most `max_runs` at once.
fn serve_as(
    prepare: impl FnOnce(&Path),
    bounds: BodyBounds,
    limits: ConnectionLimits,
    rpc_url: &str,
    runner: Keypair,
    max_runs: usize,
) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("state");
    std::fs::create_dir_all(&state_dir).unwrap();
    prepare(&state_dir);
    let profiles = dir.path().join("profiles.toml");
    std::fs::write(&profiles, PROFILES).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let origin: url::Url = format!("http://127.0.0.1:{port}").parse().unwrap();
    let config = Config {
        origin: origin.clone(),
        bind: listener.local_addr().unwrap(),
        state_dir,
        rpc_url: rpc_url.to_owned(),
        commitment: Commitment::Confirmed,
        chain_id: "localnet".to_owned(),
        profiles: Some(profiles.clone()),
        max_runs,
        max_concurrency: Concurrency::new(4).unwrap(),
        batch: 10,
        fees: skilltrial_chain::send::Fees::default(),
        rate: operator_rate(),
        buyback: None,
        database: None,
    };
    let second = Config {
        origin: config.origin.clone(),
        state_dir: config.state_dir.clone(),
        rpc_url: config.rpc_url.clone(),
        chain_id: config.chain_id.clone(),
        ..config_defaults()
    };
    // The operator holds the loopback profile's key (none is put in this process's
    // environment); every other check of what the daemon serves is the real one.
    let served = Profiles::load_with(Some(&profiles), |_| true).unwrap();
    assert!(served.find("loopback").is_ok(), "{:?}", served.skipped);
    let app = App::open_with(config, runner, served).unwrap();
    // One daemon per state directory.
    let refused = App::open(second, Keypair::new()).unwrap_err();
    assert!(refused.contains("another runner daemon"), "{refused}");
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            serve_connections(
                listener,
                http::router_with(Arc::clone(&app), bounds),
                limits,
                std::future::pending(),
            )
            .await;
        });
    });
    Served {
        base: origin,
        _dir: dir,
    }
}

fn config_defaults() -> Config {
    Config {
        origin: "http://127.0.0.1:1".parse().unwrap(),
        bind: "127.0.0.1:0".parse().unwrap(),
        state_dir: std::path::PathBuf::new(),
        rpc_url: String::new(),
        commitment: Commitment::Confirmed,
        chain_id: "localnet".to_owned(),
        profiles: None,
        max_runs: 1,
        max_concurrency: Concurrency::new(4).unwrap(),
        batch: 10,
        fees: skilltrial_chain::send::Fees::default(),
        rate: operator_rate(),
        buyback: None,
        database: None,
    }
}

/// The operator's profile: priced, at a loopback address nothing listens on.
const PROFILES: &str = "[[profile]]\nid = \"loopback\"\nprovider = \"anthropic\"\nmodel = \"loopback-model\"\nbase_url = \"http://127.0.0.1:9\"\ncontext_tokens = 200000\nmax_output_tokens = 1024\ninput_usd_per_mtok = \"3\"\noutput_usd_per_mtok = \"15\"\nprice_source = \"test\"\nprice_as_of = \"2026-11-30\"\n";

/// $150 per SOL, ± 2 %, pinned within the hour.
fn operator_rate() -> OperatorRate {
    OperatorRate::new(150_000_000, 200, 3600).unwrap()
}

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::new()
}

/// An answer with HTTP `status` whose error says `words`.
fn refused_with(got: u16, body: &Value, status: u16, words: &str) {
    assert_eq!(got, status, "{body}");
    assert!(
        body["error"].as_str().is_some_and(|e| e.contains(words)),
        "{body}"
    );
}

fn status_of<T: std::fmt::Debug>(result: Result<T, ClientError>) -> u16 {
    match result {
        Err(ClientError::Refused { status, .. }) => status,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn bundle_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out
}

#[test]
fn sign_in_sessions_and_uploads_over_http() {
    let served = serve();
    let base = &served.base;
    let wallet = Keypair::new();

    // Info, for anyone.
    let info = Client::new(base).unwrap().info().unwrap();
    assert_eq!(info.chain_id, "localnet");
    assert_eq!(info.origin, base.as_str().trim_end_matches('/'));

    // Private endpoints need a session.
    let anonymous = Client::new(base).unwrap();
    assert_eq!(status_of(anonymous.runs()), 401);
    assert_eq!(
        status_of(anonymous.run("11111111111111111111111111111111")),
        401
    );
    assert_eq!(status_of(anonymous.upload_tree("bundle", None, &[])), 401);
    assert_eq!(status_of(anonymous.upload_manifest("{}")), 401);
    assert_eq!(status_of(anonymous.register(&"ab".repeat(32))), 401);
    assert_eq!(
        status_of(anonymous.report("11111111111111111111111111111111", "report.json")),
        401
    );

    // Sign in; the session reads this wallet's (empty) list.
    let mut client = Client::new(base).unwrap();
    let session = client.sign_in(&wallet).unwrap();
    assert_eq!(session.address, wallet.pubkey().to_string());
    assert!(client.runs().unwrap().is_empty());
    assert_eq!(
        status_of(client.run("11111111111111111111111111111111")),
        404
    );

    // A nonce is spent once; a message signed by another wallet, or altered, is refused.
    let challenge = |who: &Keypair| -> Value {
        http()
            .get(base.join("v1/auth/challenge").unwrap())
            .query(&[("address", who.pubkey().to_string())])
            .send()
            .unwrap()
            .json()
            .unwrap()
    };
    let verify = |message: &str, signer: &Keypair, address: &str| -> (u16, Value) {
        let response = http()
            .post(base.join("v1/auth/verify").unwrap())
            .json(&json!({
                "message": message,
                "signature": signer.sign_message(message.as_bytes()).to_string(),
                "address": address,
            }))
            .send()
            .unwrap();
        (response.status().as_u16(), response.json().unwrap())
    };
    let c = challenge(&wallet);
    let message = c["message"].as_str().unwrap();
    let me = wallet.pubkey().to_string();
    assert_eq!(verify(message, &wallet, &me).0, 200);
    let (status, body) = verify(message, &wallet, &me);
    assert_eq!(status, 401);
    assert!(
        body["error"].as_str().unwrap().contains("already used"),
        "{body}"
    );
    let other = Keypair::new();
    let c = challenge(&wallet);
    let (status, body) = verify(
        c["message"].as_str().unwrap(),
        &other,
        &other.pubkey().to_string(),
    );
    assert_eq!(status, 401, "{body}");
    let c = challenge(&wallet);
    let altered = c["message"]
        .as_str()
        .unwrap()
        .replace("localnet", "mainnet");
    let (status, body) = verify(&altered, &wallet, &me);
    assert_eq!(status, 401);
    assert!(body["error"].as_str().unwrap().contains("chain"), "{body}");
    let (status, _) = verify("not a sign-in", &wallet, &me);
    assert_eq!(status, 401);
    // A nonce this daemon never issued, or another wallet's, or one whose issue time was
    // moved, signed by a wallet in an otherwise perfect message: refused (nonces are
    // authenticated, not stored).
    let c = challenge(&wallet);
    let message = c["message"].as_str().unwrap();
    let nonce = c["nonce"].as_str().unwrap();
    let theirs = challenge(&other);
    for forged in [
        message.replace(nonce, "4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi"),
        message.replace(nonce, theirs["nonce"].as_str().unwrap()),
    ] {
        let (status, body) = verify(&forged, &wallet, &me);
        refused_with(status, &body, 401, "not issued by this runner");
    }
    // And asking for challenges stores nothing: a flood of them fills no table.
    let spent = || -> i64 {
        rusqlite::Connection::open(served._dir.path().join("state/runner.sqlite"))
            .unwrap()
            .query_row("SELECT COUNT(*) FROM nonces", [], |r| r.get(0))
            .unwrap()
    };
    let before = spent();
    for _ in 0..200 {
        challenge(&Keypair::new());
    }
    assert_eq!(spent(), before, "challenges are not stored");
    let response = http()
        .get(base.join("v1/auth/challenge").unwrap())
        .query(&[("address", "not-a-key")])
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);

    // The cookie: HttpOnly, SameSite=Strict; a POST by cookie needs this origin.
    let c = challenge(&wallet);
    let message = c["message"].as_str().unwrap();
    let response = http()
        .post(base.join("v1/auth/verify").unwrap())
        .json(&json!({
            "message": message,
            "signature": wallet.sign_message(message.as_bytes()).to_string(),
            "address": me,
        }))
        .send()
        .unwrap();
    let cookie = response
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    let runs = http()
        .get(base.join("v1/runs").unwrap())
        .header("cookie", &pair)
        .send()
        .unwrap();
    assert_eq!(runs.status().as_u16(), 200);
    let tree = json!({"files": []});
    let cross = http()
        .post(base.join("v1/trees?kind=bundle").unwrap())
        .header("cookie", &pair)
        .header("origin", "http://evil.example")
        .json(&tree)
        .send()
        .unwrap();
    assert_eq!(cross.status().as_u16(), 403);
    let same = http()
        .post(base.join("v1/trees?kind=bundle").unwrap())
        .header("cookie", &pair)
        .header("origin", base.as_str().trim_end_matches('/'))
        .json(&tree)
        .send()
        .unwrap();
    assert_eq!(
        same.status().as_u16(),
        422,
        "an empty bundle is rejected, after the origin check"
    );

    // Uploads: a real bundle stores under the digest `validate` prints; a hostile one is refused
    // with every rejection; a pack needs its id; junk is a 400.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let folder = root.join("fixtures/bundles/solana-reader-1.5.0");
    let expected = skilltrial_core::bundle::import(&folder).unwrap().digest;
    let stored = client
        .upload_tree("bundle", None, &bundle_files(&folder))
        .unwrap();
    assert_eq!(stored.digest, expected.hex());
    let hostile = vec![
        ("SKILL.md".to_owned(), b"no front matter".to_vec()),
        ("../escape.md".to_owned(), b"x".to_vec()),
    ];
    match client.upload_tree("bundle", None, &hostile) {
        Err(ClientError::Refused {
            status, message, ..
        }) => {
            assert_eq!(status, 422);
            assert!(message.contains("rejected"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(status_of(client.upload_tree("pack", None, &[])), 400);
    assert_eq!(status_of(client.upload_tree("zip", None, &[])), 400);
    let junk = http()
        .post(base.join("v1/trees?kind=bundle").unwrap())
        .bearer_auth(&session.token)
        .body("{\"files\": [{\"path\": \"a\", \"base64\": \"!!\"}]}")
        .send()
        .unwrap();
    assert_eq!(junk.status().as_u16(), 400);
    // Over the body limit: refused before it is read.
    let big = base64::engine::general_purpose::STANDARD.encode(vec![0u8; 2 * 1024 * 1024]);
    let too_big = http()
        .post(base.join("v1/manifests").unwrap())
        .bearer_auth(&session.token)
        .body(big)
        .send()
        .unwrap();
    assert_eq!(too_big.status().as_u16(), 413);
    let doc: Value = too_big.json().unwrap();
    assert_eq!(doc["code"], "too_large", "{doc}");
    // A manifest that is not one, and a run whose manifest was never uploaded.
    assert_eq!(status_of(client.upload_manifest("{\"format\": 1}")), 400);
    assert_eq!(status_of(client.register(&"ab".repeat(32))), 422);
    assert_eq!(status_of(client.register("not-a-hash")), 400);

    // Unknown endpoints say so.
    let none = http().get(base.join("v2/nothing").unwrap()).send().unwrap();
    assert_eq!(none.status().as_u16(), 404);
}

/// A run of `wallet` for manifest `manifest_hex`, registered in the state under `state_dir` as
/// the daemon registers it once the chain has authorised it.
fn register_in_state(
    state_dir: &Path,
    wallet: &Keypair,
    manifest_hex: &str,
    phase: Phase,
) -> String {
    let hash = skilltrial_engine::store::parse_hex(manifest_hex).unwrap();
    let address = skilltrial_chain::pda::run(&wallet.pubkey(), &hash.0).to_string();
    let mut state = SqliteState::open(&state_dir.join("runner.sqlite")).unwrap();
    let run = HostedRun {
        address: address.clone(),
        user: wallet.pubkey().to_string(),
        manifest: manifest_hex.to_owned(),
        run_id: 1,
        deadline: i64::MAX,
        phase,
        detail: None,
        report_hash: None,
        finalize_signature: None,
        concurrency: Concurrency::SEQUENTIAL,
        created_at: 1,
        updated_at: 1,
    };
    assert!(state.register_run(&run).unwrap());
    address
}

/// Runs `f` on a thread and waits at most `secs` for its answer: a daemon that stops answering
/// fails the test instead of hanging it.
fn within<T: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("{what}: no answer in {secs} s (the daemon is stuck)"))
}

/// Regression: a second `POST /v1/runs` for a run already registered (a re-run `submit`) held the
/// state's lock while it built the answer, deadlocking every request that touches the state. It
/// must answer the existing run's view, and the daemon must keep answering.
#[test]
fn registering_a_registered_run_again_answers_its_view_and_the_daemon_stays_responsive() {
    // Given a daemon with a run of this wallet already registered.
    let wallet = Keypair::new();
    let manifest = "cd".repeat(32);
    let mut address = String::new();
    let served = serve_with(|state| {
        address = register_in_state(state, &wallet, &manifest, Phase::Executing);
    });
    let mut client = Client::new(&served.base).unwrap();
    client.sign_in(&wallet).unwrap();
    let client = Arc::new(client);

    // When the wallet registers the same manifest again.
    let again = {
        let (client, manifest) = (Arc::clone(&client), manifest.clone());
        within(20, "POST /v1/runs again", move || {
            client.register(&manifest)
        })
    };

    // Then it gets the existing run's view, and the daemon still answers everything else.
    let view = again.unwrap();
    assert_eq!(view.run, address);
    assert_eq!(view.phase, skilltrial_runner::api::Phase::Executing);
    assert_eq!(view.manifest, manifest);
    let runs = {
        let client = Arc::clone(&client);
        within(20, "GET /v1/runs after", move || client.runs())
    };
    assert_eq!(runs.unwrap().len(), 1);
    let base = served.base.clone();
    let other = Keypair::new();
    within(20, "a sign-in after", move || {
        Client::new(&base).unwrap().sign_in(&other).map(drop)
    })
    .unwrap();
}

fn unix_now() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

/// What `plan --model loopback --a solana-reader-1.5.0 --reps 1 --cap-usd 1 --sol-usd 150`
/// writes, with its inputs uploaded by `client`.
fn planned_and_uploaded(client: &Client, profiles: &Path) -> Manifest {
    let (m, pack, a) = planned(profiles);
    upload_inputs(client, &pack, &a);
    m
}

/// Uploads a plan's bundle and pack as `client`'s wallet.
fn upload_inputs(client: &Client, pack: &Pack, a: &Bundle) {
    let files: Vec<(String, Vec<u8>)> = a
        .files
        .iter()
        .map(|f| (f.path.clone(), f.bytes.clone()))
        .collect();
    client.upload_tree("bundle", None, &files).unwrap();
    let files: Vec<(String, Vec<u8>)> = pack
        .files()
        .iter()
        .map(|(p, b)| (p.clone(), b.clone()))
        .collect();
    client
        .upload_tree("pack", Some(&pack.id()), &files)
        .unwrap();
}

/// What `plan --model loopback --a solana-reader-1.5.0 --reps 1 --cap-usd 1 --sol-usd 150`
/// writes, and its pack and bundle.
fn planned(profiles: &Path) -> (Manifest, Pack, Bundle) {
    let profile = skilltrial_core::profile::find("loopback", Some(profiles)).unwrap();
    let pack = skilltrial_core::pack::open("solana-core@1.0.3").unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let a = skilltrial_core::bundle::import(&root.join("fixtures/bundles/solana-reader-1.5.0"))
        .unwrap();
    let options = PlanOptions {
        repetitions: 1,
        seed: 7,
        cap: Some(MicroUsd(1_000_000)),
        max_requests: None,
        max_tokens: None,
        max_output_tokens: None,
        endpoint: profile.endpoint().unwrap(),
        scripted: false,
    };
    let mut m = manifest::build(&pack, Some(&a), None, &profile, &options).unwrap();
    m.sol_usd = Some(SolUsd {
        usd_micros_per_sol: 150_000_000,
        source: "test".to_owned(),
        at: skilltrial_core::time::rfc3339(unix_now()),
    });
    (m, pack, a)
}

/// The daemon's answer to uploading `m`: its status and message.
fn upload(client: &Client, m: &Manifest) -> (u16, String) {
    match client.upload_manifest(&m.canonical().unwrap()) {
        Err(ClientError::Refused {
            status, message, ..
        }) => (status, message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Regression: the daemon took any pinned SOL/USD rate (the user chose what the operator is repaid)
/// and any bounds (`max_output_tokens` 1e9, a 0 cap, a 1e12 ms request timeout, …) in a manifest
/// `plan` would never write.
#[test]
fn a_manifest_is_admitted_only_at_the_operators_rate_and_within_plans_bounds() {
    // Given a daemon repaid at $150/SOL ± 2 %, and a wallet that uploaded a plan's inputs.
    let mut served_dir = std::path::PathBuf::new();
    let served = serve_with(|state| served_dir = state.parent().unwrap().to_path_buf());
    let mut client = Client::new(&served.base).unwrap();
    client.sign_in(&Keypair::new()).unwrap();
    let info = client.info().unwrap();
    assert_eq!(info.sol_usd.usd_micros_per_sol, 150_000_000);
    assert_eq!(info.sol_usd.tolerance_bps, 200);
    assert_eq!(info.sol_usd.max_age_secs, 3600);
    let good = planned_and_uploaded(&client, &served_dir.join("profiles.toml"));

    // When the plan itself is uploaded, it passes every check of the manifest: what stops it
    // is the chain (unreachable here), asked for the config's fee.
    let (status, message) = upload(&client, &good);
    assert_eq!(status, 503, "{message}");

    // Then a rate the operator did not agree to, or a stale pin, is refused naming both rates
    // and the fix.
    let mut dear = good.clone();
    dear.sol_usd.as_mut().unwrap().usd_micros_per_sol = 1_000_000_000_000_000;
    let (status, message) = upload(&client, &dear);
    assert_eq!(status, 422, "{message}");
    assert!(
        message.contains("pins SOL/USD at $1000000000.00 per SOL"),
        "{message}"
    );
    assert!(message.contains("repaid at $150.00 per SOL"), "{message}");
    assert!(
        message.contains("re-plan with --sol-usd 150.00"),
        "{message}"
    );
    let mut cheap = good.clone();
    cheap.sol_usd.as_mut().unwrap().usd_micros_per_sol = 146_000_000;
    assert_eq!(upload(&client, &cheap).0, 422);
    let mut stale = good.clone();
    stale.sol_usd.as_mut().unwrap().at = skilltrial_core::time::rfc3339(unix_now() - 7200);
    let (status, message) = upload(&client, &stale);
    assert_eq!(status, 422, "{message}");
    assert!(message.contains("at most 3600 s old"), "{message}");

    // And every bound `plan` applies is applied, naming the field.
    type Edit = Box<dyn Fn(&mut Manifest)>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "sampling.max_output_tokens",
            Box::new(|m| m.sampling.max_output_tokens = 1_000_000_000),
        ),
        (
            "sampling.temperature",
            Box::new(|m| m.sampling.temperature = "2".to_owned()),
        ),
        (
            "model.revision",
            Box::new(|m| m.model.revision = Some("x".to_owned())),
        ),
        (
            "budget.cap_usd_micros",
            Box::new(|m| m.budget.cap_usd_micros = Some(0)),
        ),
        (
            "budget.max_requests",
            Box::new(|m| m.budget.max_requests = 0),
        ),
        (
            "budget.max_tokens",
            Box::new(|m| m.budget.max_tokens = Some(1)),
        ),
        (
            "limits.request_timeout_ms",
            Box::new(|m| m.limits.request_timeout_ms = 1_000_000_000_000),
        ),
        (
            "limits.request_timeout_ms",
            Box::new(|m| m.limits.request_timeout_ms = 1),
        ),
        ("repetitions", Box::new(|m| m.repetitions = 0)),
    ];
    for (field, edit) in cases {
        let mut bad = good.clone();
        edit(&mut bad);
        let (status, message) = upload(&client, &bad);
        assert_eq!(status, 422, "{field}: {message}");
        assert!(message.contains(field), "{field}: {message}");
    }

    // A progressive plan of the same inputs passes the same checks; one whose tools or template
    // this runner would not send is refused.
    let mut progressive = good.clone();
    progressive.make_progressive(4).unwrap();
    let (status, message) = upload(&client, &progressive);
    assert_eq!(status, 503, "{message}");
    let mut tools = progressive.clone();
    if let Some(pin) = tools.delivery.as_mut() {
        pin.tools = pin.tools.replace("load_skill", "run_shell");
    }
    let (status, message) = upload(&client, &tools);
    assert_eq!(status, 422, "{message}");
    assert!(message.contains("plan again"), "{message}");
    let mut template = progressive.clone();
    template.prompt = good.prompt.clone();
    let (status, message) = upload(&client, &template);
    assert_eq!(status, 422, "{message}");
    assert!(message.contains("plan again"), "{message}");
}

/// Regression: bundles of 101 to 40 000 files and of 30 MB were stored (a 2 000 000-entry body
/// pinned a CPU for minutes), and a body over a route's limit got a plain-text 413. Trees are held
/// to `validate`'s limits before they are decoded or stored, and every refusal is the API's JSON.
#[test]
fn tree_uploads_are_held_to_validates_limits_and_refusals_are_json() {
    // Given a signed-in wallet.
    let served = serve();
    let mut client = Client::new(&served.base).unwrap();
    let session = client.sign_in(&Keypair::new()).unwrap();
    let post = |query: &str, body: String| {
        let response = http()
            .post(served.base.join(&format!("v1/trees?{query}")).unwrap())
            .bearer_auth(&session.token)
            .body(body)
            .send()
            .unwrap();
        let status = response.status().as_u16();
        let doc: Value = response.json().expect("a JSON error body");
        (status, doc)
    };
    let tree = |files: usize, bytes_each: usize| {
        let one = base64::engine::general_purpose::STANDARD.encode(vec![b'x'; bytes_each]);
        let entries: Vec<String> = (0..files)
            .map(|i| format!("{{\"path\": \"f{i}.md\", \"base64\": \"{one}\"}}"))
            .collect();
        format!("{{\"files\": [{}]}}", entries.join(","))
    };

    // When a bundle has one file more than `validate` accepts, then 413 naming the limit.
    let (status, doc) = post("kind=bundle", tree(101, 0));
    assert_eq!(status, 413, "{doc}");
    assert_eq!(doc["code"], "too_large");
    assert!(
        doc["error"]
            .as_str()
            .unwrap()
            .contains("more than 100 files"),
        "{doc}"
    );
    // A 6 MB file, and 40 000 empty files: refused at once, by size or by count. (The 6 MB
    // file's body is over any bundle's, so it is refused from its Content-Length and the
    // connection closed: written by hand, since a client still sending sees a broken pipe.)
    let six = tree(1, 6_000_000);
    let mut stream = sent(
        &served.base,
        &head(
            "/v1/trees?kind=bundle",
            &[
                format!("Authorization: Bearer {}", session.token),
                format!("Content-Length: {}", six.len()),
            ],
        ),
        &six.as_bytes()[..64 * 1024],
    );
    refused_and_closed(&mut stream, 413, "too_large");
    let started = std::time::Instant::now();
    let (status, doc) = post("kind=bundle", tree(40_000, 0));
    assert_eq!(status, 413, "{doc}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // A pack has its own, larger, limits.
    let (status, doc) = post("kind=pack&id=p@1", tree(1001, 0));
    assert_eq!(status, 413, "{doc}");
    assert!(
        doc["error"].as_str().unwrap().contains("1000 files"),
        "{doc}"
    );

    // A body over the route's limit is the API's JSON too, and so is a wrong method.
    let response = http()
        .post(served.base.join("v1/runs").unwrap())
        .bearer_auth(&session.token)
        .body(vec![b' '; 64 * 1024])
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 413);
    let doc: Value = response.json().unwrap();
    assert_eq!(doc["code"], "too_large", "{doc}");
    let response = http()
        .delete(served.base.join("v1/runs").unwrap())
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 405);
    let doc: Value = response.json().unwrap();
    assert_eq!(doc["code"], "invalid", "{doc}");

    // A bundle within the limits still gets `validate`'s verdict on its content.
    let (status, doc) = post("kind=bundle", tree(100, 10));
    assert_eq!(status, 422, "{doc}");
}

/// The answer to `POST /v1/runs/check`: its status and body.
fn check(base: &url::Url, token: &str, manifest: &str, deadline_secs: i64) -> (u16, Value) {
    let response = http()
        .post(base.join("v1/runs/check").unwrap())
        .bearer_auth(token)
        .json(&json!({"manifest": manifest, "deadline_secs": deadline_secs}))
        .send()
        .unwrap();
    (response.status().as_u16(), response.json().unwrap())
}

/// Regression: `submit` escrowed before the runner agreed, so a refusal (a deadline too short, a
/// run already finalized) left the money locked. The check it now asks first runs every check of a
/// registration but the Run account's.
#[test]
fn the_check_before_the_escrow_refuses_what_registration_would() {
    // Given a wallet with one run finalized and one executing on this runner.
    let wallet = Keypair::new();
    let (done, running) = ("d0".repeat(32), "e0".repeat(32));
    let mut served_dir = std::path::PathBuf::new();
    let served = serve_with(|state| {
        served_dir = state.parent().unwrap().to_path_buf();
        register_in_state(state, &wallet, &done, Phase::Finalized);
        register_in_state(state, &wallet, &running, Phase::Executing);
    });
    let mut client = Client::new(&served.base).unwrap();
    let token = client.sign_in(&wallet).unwrap().token;
    let base = &served.base;

    // When it asks about the finalized run's manifest, then 409: do not escrow again.
    let (status, doc) = check(base, &token, &done, 3600);
    assert_eq!(status, 409, "{doc}");
    assert_eq!(doc["code"], "conflict");
    assert!(
        doc["error"].as_str().unwrap().contains("already finalized"),
        "{doc}"
    );
    // About the executing one: the run it already has.
    let checked = client.check(&running, 3600).unwrap();
    assert_eq!(
        checked.registered.unwrap().phase,
        skilltrial_runner::api::Phase::Executing
    );

    // A manifest never uploaded, or uploaded with a deadline too short to run it: refused
    // before anything is signed.
    let (status, doc) = check(base, &token, &"ab".repeat(32), 3600);
    assert_eq!(status, 422, "{doc}");
    let m = planned_and_uploaded(&client, &served_dir.join("profiles.toml"));
    let _ = client.upload_manifest(&m.canonical().unwrap());
    let hash = m.hash().unwrap().hex();
    let (status, doc) = check(base, &token, &hash, 120);
    assert_eq!(status, 422, "{doc}");
    assert!(
        doc["error"].as_str().unwrap().contains("--deadline 120s"),
        "{doc}"
    );
    // A stale rate is refused here too (the same admission as the upload's).
    let mut stale = m.clone();
    stale.sol_usd.as_mut().unwrap().at = skilltrial_core::time::rfc3339(unix_now() - 7200);
    let _ = client.upload_manifest(&stale.canonical().unwrap());
    let (status, doc) = check(base, &token, &stale.hash().unwrap().hex(), 3600);
    assert_eq!(status, 422, "{doc}");
    // Everything this daemon can check without a chain passes: the chain's config is next.
    let (status, doc) = check(base, &token, &hash, 3600);
    assert_eq!(status, 503, "{doc}");

    // Another wallet that knows the hash (it is public on-chain) but uploaded nothing cannot
    // check, register or upload the manifest: a hash alone never runs another wallet's skill.
    let mut other = Client::new(&served.base).unwrap();
    let other_token = other.sign_in(&Keypair::new()).unwrap().token;
    let (status, doc) = check(base, &other_token, &hash, 3600);
    refused_with(status, &doc, 403, "was not uploaded by this wallet");
    assert_eq!(status_of(other.register(&hash)), 403);
    let (status, message) = upload(&other, &m);
    assert_eq!(status, 403, "{message}");
    assert!(
        message.contains("solana-reader"),
        "names the bundle: {message}"
    );
    // Once it uploads the bundle itself (it has the skill), the manifest is its to run too.
    let _ = planned_and_uploaded(&other, &served_dir.join("profiles.toml"));
    let (status, _) = upload(&other, &m);
    assert_eq!(status, 503, "admitted; the chain's config is next");
    let (status, doc) = check(base, &other_token, &hash, 3600);
    assert_eq!(status, 503, "{doc}");
}

/// Regression: a `status --remote --follow` client kept the daemon from stopping on Ctrl-C or
/// SIGTERM (graceful shutdown waited for its open event stream, kept alive every 15 s). On a stop
/// every stream gets a last `notice` and ends.
#[test]
fn stopping_ends_the_event_streams_and_the_daemon_exits_with_a_follower_connected() {
    // Given a daemon serving a run of this wallet (nothing executes: max_runs 0), followed.
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().join("state");
    std::fs::create_dir_all(&state_dir).unwrap();
    let wallet = Keypair::new();
    let address = register_in_state(&state_dir, &wallet, &"f0".repeat(32), Phase::Executing);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let origin: url::Url = format!("http://127.0.0.1:{port}").parse().unwrap();
    let config = Config {
        origin: origin.clone(),
        bind: format!("127.0.0.1:{port}").parse().unwrap(),
        state_dir,
        rpc_url: "http://127.0.0.1:9".to_owned(),
        max_runs: 0,
        ..config_defaults()
    };
    let app = App::open(config, Keypair::new()).unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (ended_tx, ended_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let result = http::serve_until(app, |_| ready_tx.send(()).unwrap(), async move {
            let _ = stop_rx.await;
        });
        let _ = ended_tx.send(result);
    });
    ready_rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    let mut client = Client::new(&origin).unwrap();
    client.sign_in(&wallet).unwrap();
    let (events_tx, events_rx) = std::sync::mpsc::channel();
    let (followed_tx, followed_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let result = client.follow(&address, 0, &mut |event| {
            let _ = events_tx.send((event.event.kind().to_owned(), event.event.data()));
            true
        });
        let _ = followed_tx.send(result.is_ok());
    });
    // The stream is open (its headers came; nothing to replay).
    std::thread::sleep(std::time::Duration::from_millis(500));

    // When the daemon is told to stop.
    stop_tx.send(()).unwrap();

    // Then it returns, and the follower got a last notice and saw its stream end.
    let ended = ended_rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the daemon did not stop with a follower connected");
    ended.unwrap();
    assert!(
        followed_rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .unwrap()
    );
    let (kind, data) = events_rx.try_recv().unwrap();
    assert_eq!(kind, "notice");
    assert_eq!(data["stopping"], true, "{data}");
}

#[test]
fn the_new_run_page_is_served_under_its_policy_and_its_chain_routes_need_a_session() {
    let served = serve();
    let base = &served.base;
    let http = http();

    // The page and its assets, for anyone, under the strict policy, never sniffed or framed.
    for (path, kind) in [
        ("", "text/html"),
        ("index.html", "text/html"),
        ("app.js", "text/javascript"),
        ("style.css", "text/css"),
        ("skilltrial_web_bg.wasm", "application/wasm"),
    ] {
        let answer = http.get(base.join(path).unwrap()).send().unwrap();
        assert_eq!(answer.status(), 200, "{path}");
        let header = |name: &str| {
            answer
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        assert!(header("content-type").starts_with(kind), "{path}");
        assert_eq!(
            header("content-security-policy"),
            skilltrial_runner::http::CSP
        );
        assert_eq!(header("x-content-type-options"), "nosniff");
        assert_eq!(header("x-frame-options"), "DENY");
        assert!(!answer.bytes().unwrap().is_empty(), "{path}");
    }

    // The offer needs the chain's config (unreachable here): said, as JSON.
    let offer = http.get(base.join("v1/offer").unwrap()).send().unwrap();
    assert_eq!(offer.status(), 503);
    let body: Value = offer.json().unwrap();
    assert_eq!(body["code"], "unavailable", "{body}");

    // Whether a sign-in holds, asked without a 401.
    let session_of = |token: Option<&str>| -> Value {
        let mut ask = http.get(base.join("v1/auth/session").unwrap());
        if let Some(token) = token {
            ask = ask.bearer_auth(token);
        }
        let answer = ask.send().unwrap();
        assert_eq!(answer.status(), 200);
        answer.json().unwrap()
    };
    assert_eq!(session_of(None)["address"], Value::Null);
    assert_eq!(session_of(Some("st1_forged"))["address"], Value::Null);

    // A blockhash and the relay need a session.
    let anonymous = http
        .get(base.join("v1/chain/blockhash").unwrap())
        .send()
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let anonymous = http
        .post(base.join("v1/chain/send").unwrap())
        .json(&serde_json::json!({"transaction": ""}))
        .send()
        .unwrap();
    assert_eq!(anonymous.status(), 401);

    // With one, the relay refuses what is not the wallet's own signed call, in words, before
    // anything reaches the chain.
    let wallet = Keypair::new();
    let mut client = Client::new(base).unwrap();
    let token = client.sign_in(&wallet).unwrap().token;
    assert_eq!(
        session_of(Some(&token))["address"],
        wallet.pubkey().to_string()
    );
    let send = |body: Value| -> (u16, Value) {
        let answer = http
            .post(base.join("v1/chain/send").unwrap())
            .bearer_auth(&token)
            .json(&body)
            .send()
            .unwrap();
        (answer.status().as_u16(), answer.json().unwrap())
    };
    let (status, body) = send(serde_json::json!({"transaction": "%%%"}));
    refused_with(status, &body, 400, "not base64");
    let (status, body) = send(serde_json::json!({"tx": "AA=="}));
    refused_with(status, &body, 400, "{\"transaction\": <base64>}");
    // A cancel of `who`'s run, signed by `who`.
    let cancel_by = |who: &Keypair| {
        skilltrial_chain::send::sign_with_blockhash(
            who,
            &[],
            &[skilltrial_chain::ix::run_cancel(
                &who.pubkey(),
                &skilltrial_chain::pda::run(&who.pubkey(), &[1; 32]),
            )],
            "11111111111111111111111111111111",
            1,
        )
        .unwrap()
    };
    let theirs = cancel_by(&Keypair::new());
    let (status, body) = send(serde_json::json!({"transaction": theirs.wire_base64}));
    refused_with(status, &body, 400, "not by the signed-in wallet");
    // The wallet's own: past the checks, the chain is next (unreachable here).
    let mine = cancel_by(&wallet);
    let (status, body) = send(serde_json::json!({"transaction": mine.wire_base64}));
    refused_with(status, &body, 503, "the cluster did not answer");
}

/// Regression: a pack upload's paths were never checked (`../../x`, an absolute path, a NUL, and a
/// newline that forged a line of the stored listing were all stored), and a wallet could run a
/// manifest on a pack another wallet uploaded. A pack's paths now follow a bundle's rules, and a
/// manifest runs only on a pack its wallet uploaded.
#[test]
fn a_pack_upload_follows_a_bundles_path_rules_and_belongs_to_its_uploader() {
    // Given a daemon and a wallet holding the released pack's files.
    let mut served_dir = std::path::PathBuf::new();
    let served = serve_with(|state| served_dir = state.parent().unwrap().to_path_buf());
    let mut owner = Client::new(&served.base).unwrap();
    owner.sign_in(&Keypair::new()).unwrap();
    let pack = skilltrial_core::pack::open("solana-core@1.0.3").unwrap();
    let released: Vec<(String, Vec<u8>)> = pack
        .files()
        .iter()
        .map(|(p, b)| (p.clone(), b.clone()))
        .collect();

    // When it uploads them with one hostile path added, then each is refused, naming the path
    // escaped (no newline or NUL reaches the answer).
    let forged = format!("tasks/x\n{} 1 tasks/x/golden.json", "0".repeat(64));
    for (path, shown) in [
        ("../../x", "../../x"),
        ("/etc/passwd", "/etc/passwd"),
        ("nul\0.json", "nul\\u{0}.json"),
        (forged.as_str(), "tasks/x\\u{a}0000"),
    ] {
        let mut files = released.clone();
        files.push((path.to_owned(), b"x".to_vec()));
        match owner.upload_tree("pack", Some(&pack.id()), &files) {
            Err(ClientError::Refused {
                status, message, ..
            }) => {
                assert_eq!(status, 422, "{path:?}: {message}");
                assert!(message.contains(shown), "{path:?}: {message}");
                assert!(!message.contains(['\n', '\0']), "{path:?}: {message}");
            }
            other => panic!("{path:?}: {other:?}"),
        }
    }

    // Given the owner's plan, its bundle and pack uploaded by the owner.
    let m = planned_and_uploaded(&owner, &served_dir.join("profiles.toml"));
    assert_eq!(
        upload(&owner, &m).0,
        503,
        "the owner's manifest reaches the chain"
    );

    // When another wallet uploads the bundle but not the pack, then its manifest is refused,
    // naming the pack.
    let mut other = Client::new(&served.base).unwrap();
    other.sign_in(&Keypair::new()).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    other
        .upload_tree(
            "bundle",
            None,
            &bundle_files(&root.join("fixtures/bundles/solana-reader-1.5.0")),
        )
        .unwrap();
    let (status, message) = upload(&other, &m);
    assert_eq!(status, 403, "{message}");
    assert!(
        message.contains("pack `solana-core@1.0.3`")
            && message.contains("not uploaded by this wallet"),
        "{message}"
    );

    // And once it uploads the pack itself, the same manifest passes that check.
    other
        .upload_tree("pack", Some(&pack.id()), &released)
        .unwrap();
    assert_eq!(upload(&other, &m).0, 503);
}

/// `POST target` with `headers` (each `Name: value`), as written by hand.
fn head(target: &str, headers: &[String]) -> String {
    let mut text = format!("POST {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for header in headers {
        text.push_str(header);
        text.push_str("\r\n");
    }
    text.push_str("\r\n");
    text
}

/// A connection on which `head` and `body` (perhaps only the start of what the head declares)
/// are written. Reading it gives up after 30 s: a daemon still waiting for the rest of a body
/// instead of answering fails there.
fn sent(base: &url::Url, head: &str, body: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect((base.host_str().unwrap(), base.port().unwrap())).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    stream
}

/// A raw answer: its status, its head (lowercase) and its JSON body.
struct Raw {
    status: u16,
    head: String,
    body: Value,
}

/// The first answer on `stream`: its head and its body, once both are in. Panics when the
/// daemon does not answer (still waiting for the rest of a body).
fn answer(stream: &mut TcpStream) -> Raw {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some((head, rest)) = text.split_once("\r\n\r\n") {
            let head = head.to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .unwrap_or_else(|| panic!("no content-length: {head}"))
                .parse()
                .unwrap();
            if rest.len() >= length {
                let status = head.split(' ').nth(1).unwrap().parse().unwrap();
                let body =
                    serde_json::from_str(&rest[..length]).unwrap_or_else(|e| panic!("{e}: {rest}"));
                return Raw { status, head, body };
            }
        }
        match stream.read(&mut buf) {
            Ok(n) if n > 0 => bytes.extend_from_slice(&buf[..n]),
            other => panic!("the daemon did not answer ({other:?}); it sent: {text:?}"),
        }
    }
}

/// The answer on `stream` is the API's refusal `code`, and the daemon then closed the
/// connection (a reset counts: it closed with the unread body still queued).
fn refused_and_closed(stream: &mut TcpStream, status: u16, code: &str) -> Raw {
    let raw = answer(stream);
    assert_eq!(raw.status, status, "{}", raw.body);
    assert_eq!(raw.body["code"], code, "{}", raw.body);
    assert!(raw.head.contains("connection: close"), "{}", raw.head);
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Ok(_) => {}
            Err(e) => panic!("the daemon kept the connection open after refusing it: {e}"),
        }
    }
    raw
}

/// Regression: an unauthenticated 20 MiB body was read whole before its `401` (six at once took the
/// daemon from 118 to 207 MB), a chunked body was read to the route's largest limit, a slow body
/// was waited for without end, and any number of uploads were read at once. Each is refused from
/// its headers, or cut off, before the rest is read: the daemon answers while the client has sent
/// only the start, and closes the connection.
#[test]
fn hostile_bodies_are_refused_before_they_are_read() {
    // Given a daemon and a signed-in wallet.
    let served = serve();
    let base = &served.base;
    let mut client = Client::new(base).unwrap();
    let token = client.sign_in(&Keypair::new()).unwrap().token;
    let bearer = format!("Authorization: Bearer {token}");
    let start = vec![b'x'; 64 * 1024];

    // When a body of 20 MiB comes without a session, with or without a Content-Length, then
    // `401` after its first 64 KiB.
    for framing in ["Content-Length: 20971520", "Transfer-Encoding: chunked"] {
        let body = if framing.starts_with("Transfer") {
            [format!("{:x}\r\n", start.len()).as_bytes(), &start].concat()
        } else {
            start.clone()
        };
        let mut stream = sent(
            base,
            &head("/v1/trees?kind=pack&id=p@1", &[framing.to_owned()]),
            &body,
        );
        refused_and_closed(&mut stream, 401, "unauthenticated");
    }

    // When a signed-in wallet declares more than a bundle may hold, then `413` before the body.
    let bundle_limit = TreeLimits::bundle().max_body();
    let mut stream = sent(
        base,
        &head(
            "/v1/trees?kind=bundle",
            &[
                bearer.clone(),
                format!("Content-Length: {}", bundle_limit + 1),
            ],
        ),
        &start,
    );
    let raw = refused_and_closed(&mut stream, 413, "too_large");
    assert!(
        raw.body["error"]
            .as_str()
            .unwrap()
            .contains("nothing of it was read"),
        "{}",
        raw.body
    );

    // When it sends a bundle chunked, with no Content-Length, past the bundle's limit and then
    // stops (the body not ended), then `413` once the limit is passed, not when the body ends.
    let mut stream = sent(
        base,
        &head(
            "/v1/trees?kind=bundle",
            &[bearer.clone(), "Transfer-Encoding: chunked".to_owned()],
        ),
        b"",
    );
    let mut writer = stream.try_clone().unwrap();
    let total = bundle_limit + 1024 * 1024;
    let chunks = std::thread::spawn(move || {
        let chunk = vec![b'x'; 64 * 1024];
        let mut written = 0;
        while written < total {
            let frame = [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat();
            if writer.write_all(&frame).is_err() {
                break;
            }
            written += chunk.len();
        }
    });
    let raw = refused_and_closed(&mut stream, 413, "too_large");
    assert!(
        raw.body["error"].as_str().unwrap().contains("cut off"),
        "{}",
        raw.body
    );
    chunks.join().unwrap();

    // When a Content-Length says less than what follows, then the body is what it said (`{}`,
    // not a registration) and the rest is never read as part of it.
    let mut stream = sent(
        base,
        &head(
            "/v1/runs",
            &[bearer.clone(), "Content-Length: 2".to_owned()],
        ),
        &[b"{}".as_slice(), &start].concat(),
    );
    let raw = answer(&mut stream);
    assert_eq!(raw.status, 400, "{}", raw.body);
    assert!(
        raw.body["error"]
            .as_str()
            .unwrap()
            .contains("missing field `manifest`"),
        "{}",
        raw.body
    );

    // When a Content-Length says more than ever comes, then `408` at the body's deadline.
    let slow = serve_bounded(BodyBounds {
        large_within: Duration::from_secs(2),
        ..BodyBounds::default()
    });
    let mut slow_client = Client::new(&slow.base).unwrap();
    let slow_token = slow_client.sign_in(&Keypair::new()).unwrap().token;
    let mut stream = sent(
        &slow.base,
        &head(
            "/v1/trees?kind=pack&id=p@1",
            &[
                format!("Authorization: Bearer {slow_token}"),
                "Content-Length: 1048576".to_owned(),
            ],
        ),
        &start,
    );
    refused_and_closed(&mut stream, 408, "timeout");
}

/// Regression: any number of uploads were read at once, so N attackers could exhaust the daemon's
/// memory. Beyond the bound, an upload is refused from its headers (`503 busy`, `Retry-After`), and
/// admitted again once a slot frees.
#[test]
fn uploads_read_at_once_are_bounded() {
    // Given a daemon reading at most two uploads at once, and a signed-in wallet holding both
    // (each declared 1 MiB, 64 KiB sent). A holder sends its body once the daemon asks for it
    // (`Expect: 100-continue`): once the gate admitted it, holding its slot.
    let served = serve_bounded(BodyBounds {
        large_at_once: 2,
        ..BodyBounds::default()
    });
    let base = &served.base;
    let mut client = Client::new(base).unwrap();
    let token = client.sign_in(&Keypair::new()).unwrap().token;
    let upload = |more: &[&str]| {
        let mut headers = vec![
            format!("Authorization: Bearer {token}"),
            "Content-Length: 1048576".to_owned(),
        ];
        headers.extend(more.iter().map(|h| (*h).to_owned()));
        head("/v1/trees?kind=pack&id=p@1", &headers)
    };
    let start = vec![b'x'; 64 * 1024];
    let holders: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut holder = sent(base, &upload(&["Expect: 100-continue"]), b"");
            let mut asked = Vec::new();
            let mut byte = [0u8; 1];
            while !asked.ends_with(b"\r\n\r\n") {
                holder.read_exact(&mut byte).unwrap();
                asked.push(byte[0]);
            }
            assert!(
                asked.starts_with(b"HTTP/1.1 100 Continue"),
                "{}",
                String::from_utf8_lossy(&asked)
            );
            holder.write_all(&start).unwrap();
            holder
        })
        .collect();

    // When a third upload comes, then it is refused from its headers: `503 busy`, retry later.
    let busy = refused_and_closed(&mut sent(base, &upload(&[]), &start), 503, "busy");
    assert!(busy.head.contains("retry-after: 5"), "{}", busy.head);

    // And once the holders go, an upload is read again.
    drop(holders);
    let (again, tree) = (base.clone(), json!({"files": []}).to_string());
    let admitted = within(30, "an upload admitted again", move || {
        loop {
            let response = http()
                .post(again.join("v1/trees?kind=pack&id=p@1").unwrap())
                .bearer_auth(&token)
                .body(tree.clone())
                .send()
                .unwrap();
            if response.status().as_u16() != 503 {
                return response.status().as_u16();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    assert_eq!(admitted, 422, "an empty pack is judged on its content");
}

/// Everything `stream` receives until the daemon closes it (a reset counts). Panics when it is
/// still open after 60 s: the daemon kept a connection it should have closed.
fn until_closed(stream: &mut TcpStream) -> Vec<u8> {
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return bytes,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return bytes,
            Err(e) => panic!(
                "the daemon kept the connection open ({e}); it sent: {:?}",
                String::from_utf8_lossy(&bytes)
            ),
        }
    }
}

fn connect(base: &url::Url) -> TcpStream {
    TcpStream::connect((base.host_str().unwrap(), base.port().unwrap())).unwrap()
}

const GET_INFO: &str = "GET /v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/// Regression: axum's server set no deadline on a request's head, so a connection that sent half a
/// head, sent it a byte at a time, or stayed idle after an answer held a socket and its memory for
/// ever. Each is now closed at the head's deadline, a head over the bound is refused, and the
/// daemon goes on answering.
#[test]
fn a_head_sent_slowly_or_never_and_an_idle_connection_are_closed_at_the_heads_deadline() {
    // Given a daemon that waits 2 s for a request's head.
    let served = serve_limited(ConnectionLimits {
        head_within: Duration::from_secs(2),
        ..ConnectionLimits::default()
    });
    let base = &served.base;

    // When a connection sends half a head and nothing more, then the daemon closes it without
    // an answer.
    let mut half = connect(base);
    half.write_all(b"GET /v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    assert_eq!(until_closed(&mut half), b"", "half a head was answered");

    // When a head comes a byte every 200 ms (60 s for the whole), then the daemon closes the
    // connection before it is whole: the deadline is the head's, not each byte's.
    let mut drip = connect(base);
    let mut writer = drip.try_clone().unwrap();
    let slow_head = format!(
        "GET /v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: {}\r\n\r\n",
        "x".repeat(300)
    );
    let (finished_tx, finished_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for byte in slow_head.as_bytes() {
            if writer.write_all(std::slice::from_ref(byte)).is_err() {
                let _ = finished_tx.send(false);
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = finished_tx.send(true);
    });
    assert_eq!(
        until_closed(&mut drip),
        b"",
        "a head sent slowly was answered"
    );
    assert!(
        !finished_rx.recv().unwrap(),
        "the daemon waited for the whole of a head sent a byte at a time"
    );

    // When a connection is answered and then stays idle, then the daemon closes it at the
    // same deadline.
    let mut idle = sent(base, GET_INFO, b"");
    assert_eq!(answer(&mut idle).status, 200);
    assert_eq!(until_closed(&mut idle), b"", "an idle connection got more");

    // When a head is over the bound, then `431`, and the connection is closed.
    let mut large = connect(base);
    let too_large = format!(
        "GET /v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Large: {}\r\n\r\n",
        "x".repeat(skilltrial_runner::http::connections::MAX_HEAD_BYTES)
    );
    // The daemon may close before it has read all of it.
    let _ = large.write_all(too_large.as_bytes());
    let refused = String::from_utf8_lossy(&until_closed(&mut large)).into_owned();
    assert!(refused.starts_with("HTTP/1.1 431"), "{refused}");

    // Then the daemon still answers a request sent as clients send it.
    let info = {
        let base = base.clone();
        within(60, "GET /v1/info after", move || {
            Client::new(&base).unwrap().info()
        })
    };
    assert_eq!(info.unwrap().chain_id, "localnet");
}

/// Regression: axum's server accepted every connection, so connections held open took sockets and
/// memory without bound. Past the bound a connection waits, unread, and is served once another
/// ends; the daemon answers as before afterwards.
#[test]
fn connections_past_the_bound_wait_until_one_ends_and_are_then_served() {
    // Given a daemon serving two connections at once (each may idle for two minutes), and two
    // connections it answered and that stay open.
    let served = serve_limited(ConnectionLimits {
        at_once: 2,
        head_within: Duration::from_secs(120),
    });
    let base = &served.base;
    let mut holders: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut holder = sent(base, GET_INFO, b"");
            assert_eq!(answer(&mut holder).status, 200);
            holder
        })
        .collect();

    // When a third connection sends a whole request, then it is not answered while both are
    // open (its request waits in the listen queue, unread).
    let mut third = sent(base, GET_INFO, b"");
    third
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let mut buf = [0u8; 1];
    match third.read(&mut buf) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("a connection past the bound was served: {other:?}"),
    }

    // When one of the two ends, then the third is answered.
    drop(holders.pop());
    third
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    assert_eq!(answer(&mut third).status, 200);

    // And once it ends too, the daemon answers a request sent as clients send it.
    drop(third);
    let info = {
        let base = base.clone();
        within(60, "GET /v1/info after", move || {
            Client::new(&base).unwrap().info()
        })
    };
    assert_eq!(info.unwrap().chain_id, "localnet");
    drop(holders);
}

// --- The client's `submit` workflow against this daemon and a loopback cluster: the refusals it
// makes before anything is signed.

/// Mainnet's genesis hash: a cluster the daemon (on `localnet`) does not settle on.
const MAINNET_GENESIS: &str = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d";

/// A JSON-RPC server on loopback standing for a cluster whose genesis hash is `genesis` and
/// whose program config charges `fee_per_trial`; every other account is absent. The methods
/// asked are recorded in the returned list.
fn cluster(
    genesis: &'static str,
    fee_per_trial: u64,
) -> (
    skilltrial_engine::scripted::ScriptedServer,
    Arc<std::sync::Mutex<Vec<String>>>,
) {
    cluster_of(
        genesis,
        fee_per_trial,
        Keypair::new().pubkey(),
        Accounts::default(),
    )
}

/// Accounts a [`cluster_of`] holds besides its config, by address: the data of each (owned by
/// the program).
type Accounts = Arc<std::sync::Mutex<std::collections::BTreeMap<String, Vec<u8>>>>;

/// [`cluster`] whose config names `runner` and which holds `accounts` as well; its clock (the
/// block time of its slot) is this machine's.
fn cluster_of(
    genesis: &'static str,
    fee_per_trial: u64,
    runner: skilltrial_chain::Pubkey,
    accounts: Accounts,
) -> (
    skilltrial_engine::scripted::ScriptedServer,
    Arc<std::sync::Mutex<Vec<String>>>,
) {
    use skilltrial_engine::scripted::{Reply, ScriptedServer};
    use skilltrial_program::state::{BuybackRate, SpendingLimit};
    let config = skilltrial_chain::account::Config {
        version: skilltrial_program::constants::ACCOUNT_VERSION,
        admin: Keypair::new().pubkey(),
        pending_admin: None,
        runner,
        runner_payout: Keypair::new().pubkey(),
        fee_per_trial,
        min_deadline_secs: 60,
        time_lock_secs: 0,
        usage_limit: SpendingLimit {
            amount: u64::MAX,
            period_secs: 86_400,
        },
        sktrial_mint: Keypair::new().pubkey(),
        buyback_interval_secs: 21_600,
        max_buyback_lamports: 1_000_000,
        buyback_rate: BuybackRate {
            tokens: 1,
            lamports: 1,
        },
        pending: None,
        bump: 255,
        fee_vault_bump: 255,
        reserved: [0; 64],
    };
    let mut data = Vec::new();
    anchor_lang::AccountSerialize::try_serialize(&config, &mut data).unwrap();
    let config_address = skilltrial_chain::pda::config().to_string();
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&asked);
    let server = ScriptedServer::start(move |r| {
        let call = r.json().unwrap_or(Value::Null);
        let method = call["method"].as_str().unwrap_or("").to_owned();
        log.lock().unwrap().push(method.clone());
        let held = |data: &[u8]| {
            json!({
                "context": { "slot": 1 },
                "value": {
                    "data": [base64::engine::general_purpose::STANDARD.encode(data), "base64"],
                    "owner": skilltrial_chain::PROGRAM_ID.to_string(),
                    "lamports": 5_000_000u64, "executable": false, "rentEpoch": 0,
                    "space": data.len(),
                }
            })
        };
        let address = call["params"][0].as_str().unwrap_or("").to_owned();
        let result = match method.as_str() {
            "getGenesisHash" => json!(genesis),
            "getAccountInfo" if address == config_address => held(&data),
            "getAccountInfo" => match accounts.lock().unwrap().get(&address) {
                Some(account) => held(account),
                None => json!({ "context": { "slot": 1 }, "value": null }),
            },
            "getSlot" => json!(1),
            "getBlockTime" => json!(unix_now()),
            _ => return Reply::Status(404),
        };
        Reply::Verbatim {
            status: 200,
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body: json!({ "jsonrpc": "2.0", "id": call["id"], "result": result }).to_string(),
        }
    })
    .unwrap();
    (server, asked)
}

/// A user's side of `submit`: the plan's inputs in a store, a wallet file, and a session with
/// the cluster at `rpc_url`.
struct User {
    dir: tempfile::TempDir,
    store: skilltrial_engine::store::Store,
    manifest: Manifest,
    hash: String,
    /// How many files the plan's bundle holds.
    bundle_files: usize,
    session: skilltrial_chain::session::Session,
}

fn user(profiles: &Path, rpc_url: &str, wallet: Option<&Keypair>) -> User {
    let dir = tempfile::tempdir().unwrap();
    let store = skilltrial_engine::store::Store::open(&dir.path().join("store")).unwrap();
    let (manifest, pack, a) = planned(profiles);
    let hash =
        skilltrial_engine::engine::save_inputs(&store, &manifest, &pack, Some(&a), None).unwrap();
    let keypair = dir.path().join("id.json");
    if let Some(wallet) = wallet {
        std::fs::write(
            &keypair,
            serde_json::to_string(&wallet.to_bytes().to_vec()).unwrap(),
        )
        .unwrap();
    }
    let session = skilltrial_chain::session::Session::connect(
        skilltrial_chain::session::Flags {
            url: Some(rpc_url),
            keypair: Some(&keypair),
            ..Default::default()
        },
        None,
        Ok(dir.path().join("chain-outbox.sqlite")),
        |_| {},
    )
    .unwrap();
    User {
        dir,
        store,
        manifest,
        hash: hash.hex(),
        bundle_files: a.files.len(),
        session,
    }
}

/// Every step `submit` reported, in words (one request in flight).
fn submit_steps(
    user: &User,
    runner_url: &url::Url,
    deadline_secs: i64,
) -> (
    Result<
        skilltrial_runner::client::submit::Submission,
        skilltrial_runner::client::submit::SubmitError,
    >,
    Vec<String>,
) {
    submit_steps_at(user, runner_url, deadline_secs, Concurrency::SEQUENTIAL)
}

/// [`submit_steps`] asking for `concurrency` requests in flight.
fn submit_steps_at(
    user: &User,
    runner_url: &url::Url,
    deadline_secs: i64,
    concurrency: Concurrency,
) -> (
    Result<
        skilltrial_runner::client::submit::Submission,
        skilltrial_runner::client::submit::SubmitError,
    >,
    Vec<String>,
) {
    use skilltrial_runner::client::submit::{self, Step};
    let mut steps = Vec::new();
    let result = submit::prepare(
        &user.store,
        &user.session,
        submit::Request {
            manifest: &user.hash,
            runner_url,
            deadline_secs,
            concurrency,
        },
        &mut |step| {
            steps.push(match step {
                Step::SigningIn { wallet, .. } => format!("sign in {wallet}"),
                Step::UploadedBundle { name, files } => format!("bundle {name} {files}"),
                other => format!("{other:?}"),
            });
        },
    );
    (result, steps)
}

#[test]
fn submit_refuses_a_runner_on_another_cluster_before_it_signs_in() {
    use skilltrial_runner::client::submit::SubmitError;
    // Given a daemon settling on a local cluster, and a user whose --url is mainnet (and whose
    // wallet file does not exist: it must not even be read),
    let served = serve();
    let (rpc, asked) = cluster(MAINNET_GENESIS, 200_000);
    let user = user(&served._dir.path().join("profiles.toml"), &rpc.url(), None);
    // when the user submits,
    let (result, steps) = submit_steps(&user, &served.base, 3600);
    // then it is refused naming both clusters, before a sign-in, an upload or an escrow.
    let error = result.unwrap_err();
    match &error {
        SubmitError::OtherCluster {
            runner_chain, ours, ..
        } => assert_eq!((runner_chain.as_str(), *ours), ("localnet", "mainnet")),
        other => panic!("expected another cluster, got {other:?}"),
    }
    assert_eq!(
        error.to_string(),
        format!(
            "the runner at {} settles on localnet; your --url {}/ is mainnet: give the same cluster",
            served.base,
            rpc.url()
        )
    );
    assert!(steps.is_empty(), "{steps:?}");
    assert_eq!(*asked.lock().unwrap(), ["getGenesisHash"]);
    assert!(!user.dir.path().join("chain-outbox.sqlite").exists());
}

#[test]
fn submit_refuses_a_deadline_below_the_runners_minimum_before_the_escrow() {
    use skilltrial_runner::client::submit::SubmitError;
    // Given a daemon on a local cluster whose program config it can read, and a user of that
    // cluster with a wallet and a planned run,
    let (rpc, asked) = cluster("GH7ome3EiwEr7tu9JuTh2dpYWBJK3z69Xm1ZE3MEE6JC", 200_000);
    let served = serve_on_cluster(&rpc.url());
    let wallet = Keypair::new();
    let user = user(
        &served._dir.path().join("profiles.toml"),
        &rpc.url(),
        Some(&wallet),
    );
    let min = skilltrial_runner::worker::min_deadline_secs(&user.manifest);
    assert!(min > 60, "{min}");
    // when the user submits with a deadline one second short of what the runner needs,
    let (result, steps) = submit_steps(&user, &served.base, min - 1);
    // then the inputs were uploaded under the user's own sign-in, and the deadline is refused
    // with the runner's minimum, before the escrow is even prepared.
    let error = result.unwrap_err();
    assert!(
        matches!(error, SubmitError::DeadlineBelowRunner { given, min: m } if given == min - 1 && m == min),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "--deadline {}s: the runner needs at least {min}s for this manifest (its time limit, and time to settle)",
            min - 1
        )
    );
    assert_eq!(
        steps,
        [
            format!("sign in {}", wallet.pubkey()),
            format!("bundle solana-reader {}", user.bundle_files)
        ]
    );
    // Nothing was escrowed: the cluster was asked its genesis and the daemon its config, nothing
    // else (no balance, no Run account, no transaction), and the daemon registered no run.
    assert!(
        asked
            .lock()
            .unwrap()
            .iter()
            .all(|m| m == "getGenesisHash" || m == "getAccountInfo"),
        "{:?}",
        asked.lock().unwrap()
    );
    assert!(!user.dir.path().join("chain-outbox.sqlite").exists());
    let client = Client::signed_in(&served.base, &wallet).unwrap();
    assert!(client.runs().unwrap().is_empty());
    // And with the runner's minimum, the same submission reaches the runner's check.
    let (result, _) = submit_steps(&user, &served.base, min);
    assert!(
        !matches!(result, Err(SubmitError::DeadlineBelowRunner { .. })),
        "{result:?}"
    );
}

/// A local cluster's genesis hash (not a public cluster's): the daemon's `localnet`.
const LOCAL_GENESIS: &str = "GH7ome3EiwEr7tu9JuTh2dpYWBJK3z69Xm1ZE3MEE6JC";

/// The fee per trial of the clusters below.
const FEE_PER_TRIAL: u64 = 200_000;

/// The Run account `wallet` opens for `m` (planned from `pack` and `a`) naming `runner`: all the
/// manifest needs escrowed, open, its deadline an hour away. Returns its address and its data as
/// the program lays it out.
fn escrowed(
    wallet: &Keypair,
    runner: skilltrial_chain::Pubkey,
    (m, pack, a): (&Manifest, &Pack, &Bundle),
) -> (String, Vec<u8>) {
    use skilltrial_chain::account::{Run, RunStatus, SETTLED_BITMAP_BYTES};
    let (trials, _) = manifest::trials(m, pack, Some(a), None).unwrap();
    let terms = skilltrial_core::hosted::Terms::of(m, &trials).unwrap();
    let hash = m.hash().unwrap();
    let run = Run {
        version: skilltrial_program::constants::ACCOUNT_VERSION,
        run_id: 1,
        user: wallet.pubkey(),
        runner,
        manifest_hash: hash.0,
        planned_trials: terms.planned_trials,
        per_request_cap: terms.per_request_cap.0,
        fee_per_trial: FEE_PER_TRIAL,
        escrowed: terms.escrow(FEE_PER_TRIAL).unwrap(),
        settled_usage: 0,
        settled_fees: 0,
        settled_trials: 0,
        settle_batches: 0,
        settled_bitmap: [0; SETTLED_BITMAP_BYTES],
        settle_digest: [0; 32],
        status: RunStatus::Open,
        opened_at: unix_now(),
        deadline: unix_now() + 3600,
        report_hash: [0; 32],
        bump: 255,
        reserved: [0; 32],
    };
    let mut data = Vec::new();
    anchor_lang::AccountSerialize::try_serialize(&run, &mut data).unwrap();
    // The program allocates the largest layout; a shorter variant leaves zeros at the end.
    data.resize(8 + <Run as anchor_lang::Space>::INIT_SPACE, 0);
    let address = skilltrial_chain::pda::run(&wallet.pubkey(), &hash.0).to_string();
    (address, data)
}

/// `POST /v1/runs` with `body` as `token`'s wallet: the status and the answer.
fn register_raw(base: &url::Url, token: &str, body: &Value) -> (u16, Value) {
    let response = http()
        .post(base.join("v1/runs").unwrap())
        .bearer_auth(token)
        .json(body)
        .send()
        .unwrap();
    (response.status().as_u16(), response.json().unwrap())
}

/// The runs the daemon's state holds, with the concurrency of each.
fn stored_runs(state: &Path) -> Vec<(String, i64)> {
    let conn = rusqlite::Connection::open(state.join("runner.sqlite")).unwrap();
    let mut stmt = conn
        .prepare("SELECT address, concurrency FROM runs ORDER BY address")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A run asks the daemon for its concurrency when it registers: up to the operator's
/// maximum, advertised in `GET /v1/info`; above it (or 0) it is refused in words naming the
/// field, the value and the maximum, before anything is stored; without the field (a client
/// from before concurrency) it is 1. What it was registered with is stored and shown.
#[test]
fn a_runs_concurrency_is_registered_within_the_operators_maximum_and_shown() {
    // Given a daemon whose operator allows 4 requests in flight per run, on a cluster whose
    // config names it, and two wallets that each uploaded the same plan and escrowed it.
    let runner = Keypair::new();
    let accounts = Accounts::default();
    let (rpc, _) = cluster_of(
        LOCAL_GENESIS,
        FEE_PER_TRIAL,
        runner.pubkey(),
        Arc::clone(&accounts),
    );
    let mut state = std::path::PathBuf::new();
    let served = serve_as(
        |dir| state = dir.to_path_buf(),
        BodyBounds::default(),
        ConnectionLimits::default(),
        &rpc.url(),
        runner.insecure_clone(),
        // Registered runs are not executed: this test is about what registration stores.
        0,
    );
    let base = &served.base;
    assert_eq!(
        Client::new(base).unwrap().info().unwrap().max_concurrency,
        4
    );
    let (m, pack, a) = planned(&state.parent().unwrap().join("profiles.toml"));
    let hash = m.hash().unwrap().hex();
    let (first, second) = (Keypair::new(), Keypair::new());
    let mut tokens = Vec::new();
    for wallet in [&first, &second] {
        let mut client = Client::new(base).unwrap();
        tokens.push(client.sign_in(wallet).unwrap().token);
        upload_inputs(&client, &pack, &a);
        client.upload_manifest(&m.canonical().unwrap()).unwrap();
        let (address, data) = escrowed(wallet, runner.pubkey(), (&m, &pack, &a));
        accounts.lock().unwrap().insert(address, data);
    }

    // When the first asks for 5, or 0, before its escrow and at registration,
    for asked in [5, 0] {
        // then each is refused naming the field, the value and the maximum,
        let (status, doc) = check(base, &tokens[0], &hash, 3600);
        assert_eq!(status, 200, "{doc}");
        let response = http()
            .post(base.join("v1/runs/check").unwrap())
            .bearer_auth(&tokens[0])
            .json(&json!({"manifest": hash, "deadline_secs": 3600, "concurrency": asked}))
            .send()
            .unwrap();
        let (status, doc): (u16, Value) = (response.status().as_u16(), response.json().unwrap());
        let words = format!(
            "`concurrency` {asked} is out of range: this runner runs 1 to 4 requests in flight per run"
        );
        refused_with(status, &doc, 422, &words);
        let (status, doc) = register_raw(
            base,
            &tokens[0],
            &json!({"manifest": hash, "concurrency": asked}),
        );
        refused_with(status, &doc, 422, &words);
        assert_eq!(doc["code"], "invalid", "{doc}");
    }
    // and nothing was stored.
    assert!(stored_runs(&state).is_empty());

    // When it asks for 3, then its run is registered with 3, stored so and shown in its view.
    let (status, view) = register_raw(
        base,
        &tokens[0],
        &json!({"manifest": hash, "concurrency": 3}),
    );
    assert_eq!(status, 201, "{view}");
    assert_eq!(view["concurrency"], 3, "{view}");
    let run = view["run"].as_str().unwrap().to_owned();
    let client = Client::signed_in(base, &first).unwrap();
    assert_eq!(client.run(&run).unwrap().concurrency, 3);
    // Registering it again with another concurrency answers the run as it was registered.
    let again = client
        .register_with(&hash, Some(Concurrency::new(2).unwrap()))
        .unwrap();
    assert_eq!((again.run.as_str(), again.concurrency), (run.as_str(), 3));

    // When the second wallet registers without the field (a client from before concurrency),
    // then its run is registered with 1.
    let (status, view) = register_raw(base, &tokens[1], &json!({"manifest": hash}));
    assert_eq!(status, 201, "{view}");
    assert_eq!(view["concurrency"], 1, "{view}");
    let other = view["run"].as_str().unwrap().to_owned();
    let mut want = vec![(run, 3), (other, 1)];
    want.sort();
    assert_eq!(stored_runs(&state), want);
}

#[test]
fn submit_refuses_a_concurrency_above_the_runners_maximum_before_it_signs_in() {
    use skilltrial_runner::client::submit::SubmitError;
    // Given a daemon allowing 4 requests in flight per run on a local cluster, and a user of
    // that cluster (whose wallet file does not exist: it must not even be read),
    let (rpc, asked) = cluster(LOCAL_GENESIS, FEE_PER_TRIAL);
    let served = serve_on_cluster(&rpc.url());
    let user = user(&served._dir.path().join("profiles.toml"), &rpc.url(), None);
    // when the user submits asking for 5,
    let five = Concurrency::new(5).unwrap();
    let (result, steps) = submit_steps_at(&user, &served.base, 3600, five);
    // then it is refused naming the value and the runner's maximum, before the cluster is
    // asked anything, a sign-in, an upload or an escrow.
    let error = result.unwrap_err();
    assert!(
        matches!(
            error,
            SubmitError::ConcurrencyAboveRunner {
                asked: 5,
                max: 4,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "--concurrency 5: the runner at {} runs at most 4 requests in flight per run (its max_concurrency): ask for 4 or fewer; nothing was signed in, uploaded or escrowed",
            served.base
        )
    );
    assert!(steps.is_empty(), "{steps:?}");
    assert!(
        asked.lock().unwrap().is_empty(),
        "{:?}",
        asked.lock().unwrap()
    );
    assert!(!user.dir.path().join("chain-outbox.sqlite").exists());
    // And at the maximum it goes on: to the cluster, then to the wallet it has not got.
    let four = Concurrency::new(4).unwrap();
    let (result, steps) = submit_steps_at(&user, &served.base, 3600, four);
    assert!(matches!(result, Err(SubmitError::Session(_))), "{result:?}");
    assert!(steps.is_empty(), "{steps:?}");
    assert_eq!(*asked.lock().unwrap(), ["getGenesisHash"]);
}

#[test]
fn health_readiness_and_metrics_answer_for_an_operators_infrastructure() {
    // A registered run, as a restarted daemon finds it: /metrics counts it by phase.
    let served = serve_with(|state| {
        register_in_state(state, &Keypair::new(), &"ab".repeat(32), Phase::Finalizing);
    });
    let client = http();
    let health = client
        .get(served.base.join("/healthz").unwrap())
        .send()
        .unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().unwrap(), "ok\n");
    let ready = client
        .get(served.base.join("/readyz").unwrap())
        .send()
        .unwrap();
    assert_eq!(ready.status(), 200);
    // A request the layer times, by its route's template and never its run.
    let _ = client
        .get(served.base.join("/v1/runs/SomeRunAddress").unwrap())
        .send()
        .unwrap();
    let metrics = client
        .get(served.base.join("/metrics").unwrap())
        .send()
        .unwrap();
    assert_eq!(metrics.status(), 200);
    assert!(
        metrics.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text"),
        "{:?}",
        metrics.headers()
    );
    let text = metrics.text().unwrap();
    for series in [
        "skilltrial_runner_runs{phase=\"finalizing\"} 1",
        "skilltrial_runner_settlement_batches_pending 0",
        "skilltrial_runner_claims_total{kind=\"takeover\"} 0",
        "skilltrial_runner_model_request_duration_seconds_count{outcome=\"error\"} 0",
        "skilltrial_runner_http_request_duration_seconds_count{route=\"/v1/runs/{run}\",method=\"GET\",status=\"4xx\"} 1",
        "# EOF",
    ] {
        assert!(text.contains(series), "{series} missing from:\n{text}");
    }
    assert!(
        !text.contains("SomeRunAddress"),
        "a run in a label:\n{text}"
    );
    // Once no run is in a phase, its series is gone at the next scrape, not kept at its last
    // count (an operator draining a daemon waits for `executing` and `finalizing` to go).
    let mut state = SqliteState::open(&served._dir.path().join("state/runner.sqlite")).unwrap();
    let run = state.runs_to_work().unwrap().pop().unwrap();
    state.set_finalized(&run.address, "sig").unwrap();
    let text = client
        .get(served.base.join("/metrics").unwrap())
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(
        text.contains("skilltrial_runner_runs{phase=\"finalized\"} 1")
            && !text.contains("phase=\"finalizing\""),
        "{text}"
    );
}
