//! One exit code per kind of error, whichever command meets it: an input judged and refused
//! exits 1; the environment (I/O, a state directory or journal that cannot be used) and usage
//! errors exit 2, values being checked by clap at the edge. The real binary, a real journal and
//! store under a temporary state directory, and the loopback server speaking the Anthropic wire
//! format.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Output;

use skilltrial_engine::scripted::{Reply, ScriptedServer};

mod support;

use support::{Env, scripted_answer};

/// (exit code, stdout, stderr).
fn outcome(out: Output) -> (Option<i32>, String, String) {
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn env() -> (ScriptedServer, Env) {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    (server, env)
}

#[test]
fn regression_a_stored_manifest_that_cannot_be_read_is_the_environment_not_a_refusal() {
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
fn regression_a_journal_failing_inside_the_report_is_the_environment_not_a_refusal() {
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
