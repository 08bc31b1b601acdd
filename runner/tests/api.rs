//! The daemon's HTTP API over a real loopback socket, without a cluster: sign-in (and each way
//! it is refused), bearer and cookie sessions (a cookie POST from another origin refused),
//! uploads validated as `validate` validates, and every private endpoint closed to a request
//! without a session. The chain-authorised half (registration, execution, settlement) is
//! tested against a real local validator in `tests/hosted/daemon.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};
use skilltrial_chain::cli_config::Commitment;
use skilltrial_runner::client::{Client, ClientError};
use skilltrial_runner::{App, Config, server};
use solana_keypair::Keypair;
use solana_signer::Signer;

struct Served {
    base: url::Url,
    _dir: tempfile::TempDir,
}

fn serve() -> Served {
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let origin: url::Url = format!("http://127.0.0.1:{port}").parse().unwrap();
    let config = Config {
        origin: origin.clone(),
        bind: listener.local_addr().unwrap(),
        state_dir: dir.path().join("state"),
        // Nothing listens there: the chain is unreachable in these tests.
        rpc_url: "http://127.0.0.1:9".to_owned(),
        commitment: Commitment::Confirmed,
        chain_id: "localnet".to_owned(),
        profiles: None,
        max_runs: 1,
        batch: 10,
        fees: skilltrial_chain::send::Fees::default(),
        buyback: None,
    };
    let second = Config {
        origin: config.origin.clone(),
        state_dir: config.state_dir.clone(),
        rpc_url: config.rpc_url.clone(),
        chain_id: config.chain_id.clone(),
        ..config_defaults()
    };
    let app = App::open(config, Keypair::new()).unwrap();
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
            axum::serve(listener, server::router(Arc::clone(&app)))
                .await
                .unwrap();
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
        batch: 10,
        fees: skilltrial_chain::send::Fees::default(),
        buyback: None,
    }
}

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::new()
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
    // A manifest that is not one, and a run whose manifest was never uploaded.
    assert_eq!(status_of(client.upload_manifest("{\"format\": 1}")), 400);
    assert_eq!(status_of(client.register(&"ab".repeat(32))), 403);
    assert_eq!(status_of(client.register("not-a-hash")), 400);

    // Unknown endpoints say so.
    let none = http().get(base.join("v2/nothing").unwrap()).send().unwrap();
    assert_eq!(none.status().as_u16(), 404);
}
