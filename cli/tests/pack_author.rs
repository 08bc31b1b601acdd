//! `skilltrial pack new | add-task | build` end to end, against a loopback JSON-RPC server that
//! answers with the real mainnet bytes the embedded pack holds (no public endpoint is ever
//! reached): tasks made from the same data get the embedded pack's golden records, the pack
//! verifies and seals, a run plans and executes on it exactly as on the embedded pack, and every
//! bad input is refused by name with the pack left as it was.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;
use std::process::Output;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};
use skilltrial_core::pack;
use skilltrial_engine::scripted::{Reply, ScriptedServer, ServerRequest};

const USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const TOKEN: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const FZY: &str = "FZYEgCWzzedxcmxYvGXSkMrj7TaA3bXoaEv6XMnwtLKh";
const TOKEN_2022: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
const SIG: &str =
    "2aoWC4uMT9zznC5m3ALE45Rb9YtmD6sNCabSgz4vACC9fKmwjaTooKVsn7mgoJ2Er3pa2xi8rbLcPzogNVwV5KSv";
const SECRET: &str = "rpc-secret-token-do-not-store-77";

/// A JSON-RPC server on loopback that speaks as mainnet: its genesis hash, slot 250000000,
/// epoch 612, the USDC and FZYEg mints' real bytes, one real transaction, and nothing else.
fn mainnet_like() -> ScriptedServer {
    let base = Arc::new(pack::open("solana-core@1.0.3").unwrap());
    ScriptedServer::start(move |r: &ServerRequest| {
        let call = r.json().unwrap_or(Value::Null);
        let method = call["method"].as_str().unwrap_or("");
        let param = call["params"][0].as_str().unwrap_or("").to_owned();
        let account = |owner: &str, data: &[u8]| {
            json!({
                "context": { "slot": 250_000_000u64 },
                "value": {
                    "data": [base64::engine::general_purpose::STANDARD.encode(data), "base64"],
                    "owner": owner, "lamports": 5_000_000u64, "executable": false,
                    "rentEpoch": 0, "space": data.len(),
                }
            })
        };
        let result = match (method, param.as_str()) {
            ("getGenesisHash", _) => json!("5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"),
            ("getEpochInfo", _) => json!({ "epoch": 612, "slotIndex": 1, "slotsInEpoch": 432000, "absoluteSlot": 250_000_000u64 }),
            ("getAccountInfo", USDC) => account(TOKEN, &base.task("acct-usdc-mint").unwrap().input),
            ("getAccountInfo", FZY) => {
                account(TOKEN_2022, &base.task("acct-t22-fzyeg-mint").unwrap().input)
            }
            // A plain wallet: a system account, no token data.
            ("getAccountInfo", "9RvNi4pPm8euMuPGPNQVjR8wWTPawZMvqfqA2QQmwVHC") => {
                account("11111111111111111111111111111111", &[])
            }
            ("getAccountInfo", _) => json!({ "context": { "slot": 250_000_000u64 }, "value": null }),
            ("getTransaction", SIG) => {
                serde_json::from_slice(&base.task("tx-v0-alt-usdc").unwrap().input).unwrap()
            }
            ("getTransaction", _) => Value::Null,
            _ => return Reply::Status(404),
        };
        Reply::Verbatim {
            status: 200,
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body: json!({ "jsonrpc": "2.0", "id": call["id"], "result": result }).to_string(),
        }
    })
    .unwrap()
}

fn skilltrial(home: &Path, args: &[&str]) -> Output {
    support::offline_command(home, args).output().unwrap()
}

fn ok_json(home: &Path, args: &[&str]) -> Value {
    support::success_json(args, &skilltrial(home, args))
}

fn hash_of(dir: &Path) -> String {
    pack::open_folder(dir).unwrap().hash.to_string()
}

#[test]
fn a_pack_from_chain_data_verifies_seals_and_runs_like_the_embedded_one() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let dir = tmp.path().join("my-pack");
    let d = dir.to_str().unwrap();
    let server = mainnet_like();
    // A credential in the URL, as hosted RPC providers issue them: never stored.
    let url = format!("{}?api-key={SECRET}", server.url());

    let created = ok_json(&home, &["pack", "new", d, "--name", "my-pack", "--json"]);
    assert_eq!(created["pack"], "my-pack@0.1.0");

    let account = ok_json(
        &home,
        &[
            "pack",
            "add-task",
            d,
            "--account",
            USDC,
            "--url",
            &url,
            "--json",
        ],
    );
    assert_eq!(account["task"], "acct-epjfwdd5");
    assert_eq!(account["network"], "mainnet", "from the genesis hash");
    assert!(account["known_wrong"].as_u64().unwrap() >= 5);
    let tx = ok_json(
        &home,
        &[
            "pack",
            "add-task",
            d,
            "--transaction",
            SIG,
            "--url",
            &url,
            "--id",
            "my-tx",
            "--json",
        ],
    );
    assert_eq!(tx["task"], "my-tx");
    let plan = ok_json(
        &home,
        &[
            "pack",
            "add-task",
            d,
            "--transfer",
            "--mint",
            FZY,
            "--from",
            "12VFrc1dFynPzs4HBRdRoMKNm1jca2S2uhaNKCkdffwy",
            "--to",
            "9RvNi4pPm8euMuPGPNQVjR8wWTPawZMvqfqA2QQmwVHC",
            "--amount",
            "1234.56",
            "--memo",
            "invoice 2026-117",
            "--url",
            &url,
            "--json",
        ],
    );
    assert_eq!(plan["task"], "plan-fzyegcwz");

    // The same data gives the embedded pack's golden records, byte for byte.
    let base = pack::open("solana-core@1.0.3").unwrap();
    let mine = pack::open_folder(&dir).unwrap();
    for (ours, theirs) in [
        ("acct-epjfwdd5", "acct-usdc-mint"),
        ("my-tx", "tx-v0-alt-usdc"),
        ("plan-fzyegcwz", "plan-t22-fee-memo"),
    ] {
        assert_eq!(
            mine.task(ours).unwrap().golden_bytes,
            base.task(theirs).unwrap().golden_bytes,
            "{ours}"
        );
    }
    let usdc = mine.task("acct-epjfwdd5").unwrap();
    assert_eq!(usdc.slot, Some(250_000_000));
    assert_eq!(usdc.provenance["commitment"], "finalized");
    // No credential reached the pack.
    for (path, bytes) in mine.files() {
        assert!(
            !String::from_utf8_lossy(bytes).contains(SECRET),
            "{path} holds the secret"
        );
    }

    // verify proves every claim; build seals and prints the hash.
    let verified = ok_json(&home, &["pack", "verify", d, "--json"]);
    assert_eq!(verified["ok"], true);
    let out = skilltrial(&home, &["pack", "build", d]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let hash = hash_of(&dir);
    assert!(
        text.contains(&format!("sealed my-pack@0.1.0: {hash}")),
        "{text}"
    );
    // `pack show` names where each task came from, without the credential.
    let shown = String::from_utf8(skilltrial(&home, &["pack", "show", d]).stdout).unwrap();
    assert!(
        shown.contains("fetched from") && !shown.contains(SECRET),
        "{shown}"
    );

    // A run on the pack: planned and executed like any, the manifest pinning the pack's hash.
    let model = ScriptedServer::start(|_| Reply::Answer("I cannot tell.".to_owned())).unwrap();
    let env = support::Env::new(&model);
    let mut args = env.plan_args(&["--pack", d, "--reps", "1", "--cap-usd", "1", "--json"]);
    args.retain(|a| !a.is_empty());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let planned = env.json(&args);
    let run = planned["run"].as_str().unwrap().to_owned();
    let done = env.json(&["run", "--manifest", &run, "--json"]);
    assert_eq!(done["status"], "finished", "{done}");
    let report = env.report(&run);
    assert_eq!(report["manifest"]["pack"]["hash"], hash.as_str());
    assert_eq!(report["manifest"]["tasks"].as_array().unwrap().len(), 3);
}

#[test]
fn bad_inputs_are_refused_by_name_and_leave_the_pack_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let dir = tmp.path().join("p");
    let d = dir.to_str().unwrap();
    let server = mainnet_like();
    let url = server.url();

    // No pack yet.
    let out = skilltrial(
        &home,
        &["pack", "add-task", d, "--account", USDC, "--url", &url],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pack new"));
    ok_json(&home, &["pack", "new", d, "--name", "p", "--json"]);
    // Not again over a pack, and never a released id.
    assert_eq!(
        skilltrial(&home, &["pack", "new", d, "--name", "p"])
            .status
            .code(),
        Some(2)
    );
    let other = tmp.path().join("q");
    let out = skilltrial(
        &home,
        &[
            "pack",
            "new",
            other.to_str().unwrap(),
            "--name",
            "solana-core",
            "--pack-version",
            "1.0.3",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(!other.exists());

    ok_json(
        &home,
        &[
            "pack",
            "add-task",
            d,
            "--account",
            USDC,
            "--url",
            &url,
            "--json",
        ],
    );
    let before = hash_of(&dir);
    let refused = |args: &[&str], code: i32, words: &str| {
        let out = skilltrial(&home, args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(words), "{args:?}: {err}");
        assert_eq!(hash_of(&dir), before, "{args:?} changed the pack");
    };
    // The same task again: immutable.
    refused(
        &["pack", "add-task", d, "--account", USDC, "--url", &url],
        1,
        "already exists",
    );
    // An account the node does not have; a wallet that is no token account; a transaction it
    // does not have; a bad address; a bad signature.
    refused(
        &[
            "pack",
            "add-task",
            d,
            "--account",
            "So11111111111111111111111111111111111111112",
            "--url",
            &url,
        ],
        1,
        "no such account",
    );
    refused(
        &[
            "pack",
            "add-task",
            d,
            "--account",
            "9RvNi4pPm8euMuPGPNQVjR8wWTPawZMvqfqA2QQmwVHC",
            "--url",
            &url,
        ],
        1,
        "decoder",
    );
    refused(
        &[
            "pack",
            "add-task",
            d,
            "--transaction",
            "66iwZvSCQc1br36ddj7keyLtSXb3yuPzDdMSk3qpkYJUAiiy3thmpzut1WzEWjnubr8oQV19wkhvH3X9j45kPZzx",
            "--url",
            &url,
        ],
        1,
        "no such transaction",
    );
    refused(
        &[
            "pack",
            "add-task",
            d,
            "--account",
            "not-an-address",
            "--url",
            &url,
        ],
        2,
        "not a base58",
    );
    refused(
        &["pack", "add-task", d, "--transaction", "xyz", "--url", &url],
        2,
        "signature",
    );
    refused(
        &[
            "pack",
            "add-task",
            d,
            "--account",
            USDC,
            "--url",
            &url,
            "--id",
            "../../escape",
        ],
        1,
        "task id",
    );
    // A node that is not there.
    refused(
        &[
            "pack",
            "add-task",
            d,
            "--account",
            FZY,
            "--url",
            "http://127.0.0.1:9/",
        ],
        2,
        "127.0.0.1",
    );
    // --transfer without its parameters, and two sources at once: usage errors.
    refused(
        &[
            "pack",
            "add-task",
            d,
            "--transfer",
            "--mint",
            FZY,
            "--url",
            &url,
        ],
        2,
        "--from",
    );
    refused(
        &[
            "pack",
            "add-task",
            d,
            "--account",
            USDC,
            "--transaction",
            SIG,
            "--url",
            &url,
        ],
        2,
        "cannot be used with",
    );
    // No temporary folder is left behind.
    let names: Vec<String> = std::fs::read_dir(dir.join("tasks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["acct-epjfwdd5"]);
    // build of something that is no folder.
    refused(
        &["pack", "build", "solana-core@1.0.3"],
        2,
        "not a pack folder",
    );

    // Two add-tasks at once on one pack: both land, neither is lost.
    let spawn = |id: &str| {
        support::offline_command(
            &home,
            &[
                "pack",
                "add-task",
                d,
                "--account",
                USDC,
                "--url",
                &url,
                "--id",
                id,
            ],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
    };
    let racers = [spawn("c1"), spawn("c2")];
    for racer in racers {
        let out = racer.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let listed: Vec<String> = pack::open_folder(&dir)
        .unwrap()
        .tasks
        .iter()
        .map(|t| t.id.clone())
        .collect();
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert!(listed.contains(&"c1".to_owned()) && listed.contains(&"c2".to_owned()));
}
