//! One exit code per kind of error, whichever command meets it: an input judged and refused
//! exits 1; the environment (I/O, a state directory or journal that cannot be used) and usage
//! errors exit 2, values being checked by clap at the edge (a negative number names its flag), a
//! run that does not exist being a usage error from every command. Each message says its cause
//! once and names what failed. The real binary, a real journal and
//! store under a temporary state directory, and the loopback server speaking the Anthropic wire
//! format.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Output;

use skilltrial_engine::scripted::{Reply, ScriptedServer};

mod support;

use support::{Env, outcome, plan_outcome, scripted_answer};

fn env() -> (ScriptedServer, Env) {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    (server, env)
}

#[test]
fn a_stored_manifest_that_cannot_be_read_is_the_environment_not_a_refusal() {
    let (server, env) = env();
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    // The manifest's blob replaced by a directory: the store is there, but reading it fails
    // with an I/O error (EISDIR, which stops root too), not with content judged wrong.
    let blob = env.home().join("store/sha256").join(&run[..2]).join(&run);
    std::fs::remove_file(&blob).unwrap();
    std::fs::create_dir(&blob).unwrap();
    let (code, _, stderr) = outcome(env.run(&["run", "--manifest", &run]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!("error: store {}: ", blob.display())),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 0, "nothing sent");
}

#[test]
fn a_journal_failing_inside_the_report_is_the_environment_not_a_refusal() {
    let (_server, env) = env();
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let other = env.plan_seeded("8", &["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    // The journal opens and finds both runs, then fails in SQLite while the report is built.
    let conn = rusqlite::Connection::open(env.home().join("journal.sqlite3")).unwrap();
    conn.execute_batch("DROP TABLE ledger;").unwrap();
    drop(conn);
    for args in [vec!["report", run.as_str()], vec!["compare", &run, &other]] {
        let (code, _, stderr) = outcome(env.run(&args));
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("ledger"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_state_directory_run_cannot_write_in_is_the_environment() {
    let (server, env) = env();
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    // Where `run` keeps its locks is a file: creating the lock directory fails (as root too).
    std::fs::write(env.home().join("locks"), b"not a directory").unwrap();
    let (code, _, stderr) = outcome(env.run(&["run", "--manifest", &run]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the state directory {} cannot be written",
            env.home().display()
        )),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 0, "nothing sent");
}

#[test]
fn values_are_checked_by_clap_naming_the_flag_the_value_and_why() {
    let (_server, env) = env();
    for (args, said) in [
        (
            vec!["purge", "--older-than", "soon"],
            "error: invalid value 'soon' for '--older-than <AGE>': `soon` is not an age such as 30d, 12h or 0d",
        ),
        (
            vec!["purge", "--older-than", "99999999999999999d"],
            "error: invalid value '99999999999999999d' for '--older-than <AGE>': `99999999999999999d` is not an age such as 30d, 12h or 0d",
        ),
        (
            vec!["key", "remove", "mistral"],
            "error: invalid value 'mistral' for '<PROVIDER>'",
        ),
        (
            vec!["demo", "--cap-usd", "four"],
            "error: invalid value 'four' for '--cap-usd <USD>': `four` is not a USD amount (digits, optionally a point and up to 6 decimals, e.g. 4 or 0.25)",
        ),
        (
            vec!["resolve", "0123456789ab-1"],
            "error: the following required arguments were not provided:",
        ),
        (
            vec![
                "resolve",
                "0123456789ab-1",
                "--retry",
                "--reason",
                "x",
                "--release",
            ],
            "error: the argument '--retry' cannot be used with '--release'",
        ),
        (
            vec!["resolve", "0123456789ab-1", "--retry", "--reason", "  "],
            "error: invalid value '  ' for '--reason <REASON>': it is empty: say why",
        ),
    ] {
        let (code, stdout, stderr) = outcome(env.run(&args));
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stdout, "", "{args:?}");
        assert_eq!(stderr.lines().next(), Some(said), "{args:?}: {stderr}");
    }
    // Nothing was opened or created for a usage error.
    assert!(!env.home().exists());
}

/// A JSON-RPC server on loopback answering every `getAccountInfo` with `owner`'s account of
/// `data`, and the few other reads a command makes with plausible values.
fn rpc_answering_account(owner: &'static str, data: Vec<u8>) -> ScriptedServer {
    use base64::Engine as _;
    ScriptedServer::start(move |r| {
        let call = r.json().unwrap_or(serde_json::Value::Null);
        let result = match call["method"].as_str().unwrap_or("") {
            "getAccountInfo" => serde_json::json!({
                "context": { "slot": 1 },
                "value": {
                    "data": [base64::engine::general_purpose::STANDARD.encode(&data), "base64"],
                    "owner": owner, "lamports": 5_000_000u64, "executable": false,
                    "rentEpoch": 0, "space": data.len(),
                }
            }),
            "getGenesisHash" => serde_json::json!("EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"),
            _ => return Reply::Status(404),
        };
        Reply::Verbatim {
            status: 200,
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body: serde_json::json!({ "jsonrpc": "2.0", "id": call["id"], "result": result })
                .to_string(),
        }
    })
    .unwrap()
}

/// A port on loopback where nothing listens (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The binary run offline with `home` as both its state directory and the user's home (where the
/// Solana CLI's config would be: there is none).
fn at_home(home: &std::path::Path, args: &[&str]) -> Output {
    support::offline_command(home, args)
        .env("HOME", home)
        .output()
        .unwrap()
}

const RUN_ADDRESS: &str = "9RvNi4pPm8euMuPGPNQVjR8wWTPawZMvqfqA2QQmwVHC";

#[test]
fn an_account_that_is_not_the_programs_is_a_judged_input() {
    // Given a node whose account at the address is a token account, not a Run,
    let server = rpc_answering_account("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", vec![0; 165]);
    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    // when chain-status reads it, the address given is refused (1), naming it.
    let out = at_home(home.path(), &["chain-status", RUN_ADDRESS, "--url", &url]);
    let (code, stdout, stderr) = outcome(out);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stdout, "");
    assert!(
        stderr.starts_with(&format!("error: {RUN_ADDRESS}: ")),
        "{stderr}"
    );
}

#[test]
fn a_node_that_is_down_is_the_environment() {
    // Given an RPC URL where nothing listens,
    let home = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", closed_port());
    // chain-status exits 2, in text and in JSON, naming the call that failed.
    for json in [false, true] {
        let mut args = vec!["chain-status", RUN_ADDRESS, "--url", &url];
        if json {
            args.push("--json");
        }
        let out = at_home(home.path(), &args);
        let (code, stdout, stderr) = outcome(out);
        assert_eq!(code, Some(2), "{stderr}");
        if json {
            let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(doc["error"]["kind"], "environment", "{doc}");
            assert!(
                doc["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("getAccountInfo {RUN_ADDRESS}")),
                "{doc}"
            );
        } else {
            assert!(
                stderr.contains(&format!("getAccountInfo {RUN_ADDRESS}")),
                "{stderr}"
            );
        }
    }
}

#[test]
fn a_runner_that_refuses_is_a_judged_input_and_one_that_fails_is_the_environment() {
    // Given a wallet, and a runner daemon answering every request with one API error,
    let home = tempfile::tempdir().unwrap();
    let wallet = home.path().join("id.json");
    let key = solana_keypair::Keypair::new();
    std::fs::write(
        &wallet,
        serde_json::to_string(&key.to_bytes().to_vec()).unwrap(),
    )
    .unwrap();
    for (status, code, exit) in [
        (403, "forbidden", 1),
        (400, "invalid", 1),
        (503, "unavailable", 2),
    ] {
        let server = ScriptedServer::start(move |_| Reply::Verbatim {
            status,
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body: serde_json::json!({ "error": "not today", "code": code }).to_string(),
        })
        .unwrap();
        let runner = server.url();
        let wallet = wallet.to_str().unwrap();
        // when `status --remote` signs in, a refusal (4xx) is a judged input (1) and a failing
        // runner (5xx) the environment (2), its message and code said.
        let out = at_home(
            home.path(),
            &[
                "status",
                "--remote",
                "--runner",
                &runner,
                "--keypair",
                wallet,
            ],
        );
        let (got, stdout, stderr) = outcome(out);
        assert_eq!(got, Some(exit), "{status}: {stderr}");
        assert_eq!(stdout, "");
        assert_eq!(
            stderr.lines().next(),
            Some(format!("error: the runner refused ({status} {code}): not today").as_str()),
            "{stderr}"
        );
    }
    // A server that is not a runner at all is the environment (2).
    let url = format!("http://127.0.0.1:{}", closed_port());
    let out = at_home(
        home.path(),
        &[
            "status",
            "--remote",
            "--runner",
            &url,
            "--keypair",
            wallet.to_str().unwrap(),
        ],
    );
    let (got, _, stderr) = outcome(out);
    assert_eq!(got, Some(2), "{stderr}");
    assert!(
        stderr.contains("is the runner daemon running at that URL?"),
        "{stderr}"
    );
}

#[test]
fn no_such_run_is_a_usage_error_from_every_command_and_short_prefixes_say_so() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    env.plan_doc(&["--reps", "1", "--seed", "7", "--cap-usd", "4"]);
    let journal = env.home().join("journal.sqlite3");
    let missing = format!(
        "error: no run `0123456789abcdef` in {}: give the manifest hash `skilltrial plan` printed, or a prefix of at least 8 characters\n",
        journal.display()
    );
    for args in [
        &["run", "--manifest", "0123456789abcdef"][..],
        &["status", "0123456789abcdef"],
        &["report", "0123456789abcdef"],
        &["cancel", "0123456789abcdef"],
        &["recheck", "0123456789abcdef"],
    ] {
        let (code, _, stderr) = outcome(env.run(args));
        assert_eq!(
            (code, stderr.as_str()),
            (Some(2), missing.as_str()),
            "{args:?}"
        );
    }
    let short = "error: run id prefix `08ed` is too short: give at least 8 characters of the manifest hash\n";
    for args in [
        &["run", "--manifest", "08ed"][..],
        &["status", "08ed"],
        &["compare", "08ed", "08ed"],
    ] {
        let (code, _, stderr) = outcome(env.run(args));
        assert_eq!((code, stderr.as_str()), (Some(2), short), "{args:?}");
    }
    let (code, _, stderr) = outcome(env.run(&["status", "not-a-run"]));
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "error: `not-a-run` is not a run id: give the manifest hash `skilltrial plan` printed (sha256:<64 hex>), or a prefix of at least 8 of its hex characters\n"
    );
    let (code, _, stderr) = outcome(env.run(&["resolve", "bogus-id", "--release"]));
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        format!(
            "error: no attempt `bogus-id` in {}: give an attempt id `skilltrial status` lists\n",
            journal.display()
        )
    );
}

#[test]
fn negative_numbers_are_refused_naming_the_flag_and_a_zero_cap_is_refused() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    for (flag, value, said) in [
        (
            "--reps",
            "-1",
            "error: invalid value '-1' for '--reps <REPS>': -1 is not in 0..=4294967295",
        ),
        (
            "--max-requests",
            "-5",
            "error: invalid value '-5' for '--max-requests <MAX_REQUESTS>': -5 is not in 0..=4294967295",
        ),
        (
            "--seed",
            "-2",
            "error: invalid value '-2' for '--seed <SEED>': invalid digit found in string",
        ),
    ] {
        let (code, _, stderr) = plan_outcome(&env, &["--cap-usd", "4", flag, value]);
        assert_eq!(code, Some(2), "{flag}");
        assert_eq!(stderr.lines().next(), Some(said), "{stderr}");
    }
    // Parsed by clap, like the numbers above: its usage error names the flag, the value and why.
    let (code, _, stderr) = plan_outcome(&env, &["--cap-usd", "-1"]);
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr.lines().next(),
        Some(
            "error: invalid value '-1' for '--cap-usd <USD>': `-1` is not a USD amount (digits, optionally a point and up to 6 decimals, e.g. 4 or 0.25)"
        ),
        "{stderr}"
    );
    let (code, _, stderr) =
        outcome(env.run(&["run", "--manifest", "0123456789", "--max-dispatch", "-3"]));
    assert_eq!(code, Some(2));
    assert!(
        stderr.starts_with("error: invalid value '-3' for '--max-dispatch <N>'"),
        "{stderr}"
    );
    // A zero cap on a priced profile could send nothing: refused, not planned with a warning.
    let (code, _, stderr) = plan_outcome(&env, &["--cap-usd", "0"]);
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "error: cannot plan: --cap-usd must be more than 0: with a cap of $0 no trial can be sent\n"
    );
    // `demo --reps 0` says so before it validates a bundle or names a model.
    let (code, stdout, stderr) = outcome(env.run(&["demo", "--reps", "0"]));
    assert_eq!(code, Some(2));
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "error: cannot plan: --reps must be between 1 and 100, not 0\n"
    );
}

#[test]
fn errors_say_each_cause_once_and_name_the_report_file() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    // A journal that is not SQLite.
    let garbage = env.dir.path().join("garbage");
    std::fs::create_dir_all(&garbage).unwrap();
    std::fs::write(garbage.join("journal.sqlite3"), vec![b'x'; 4096]).unwrap();
    let (code, _, stderr) = outcome(env.run_in(&garbage, &["status"]));
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        format!(
            "error: cannot open the journal in {}: journal {}: file is not a database\n",
            garbage.display(),
            garbage.join("journal.sqlite3").display()
        )
    );
    // A report file path that is a directory.
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let dir = env.dir.path().join("q1");
    std::fs::create_dir_all(&dir).unwrap();
    let (code, _, stderr) =
        outcome(env.run(&["report", &run, "--out-json", dir.to_str().unwrap()]));
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        format!(
            "error: cannot write the report file {}: Is a directory (os error 21)\n",
            dir.display()
        )
    );
}
