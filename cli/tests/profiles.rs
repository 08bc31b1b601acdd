//! `plan` with the built-in profile for a server of one's own: it refuses to fall back to the
//! public OpenAI endpoint, and takes the server's model name from a flag or the environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

fn plan(home: &Path, env: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_skilltrial"));
    cmd.args([
        "--json",
        "plan",
        "--model",
        "openai-compatible-local",
        "--reps",
        "1",
        "--max-requests",
        "6",
        "--max-tokens",
        "100000",
        "--seed",
        "1",
        "--profiles",
    ])
    .arg(home.join("no-profiles.toml"))
    .args(extra)
    .current_dir(home)
    .env("SKILLTRIAL_HOME", home.join("state"))
    .env_remove("OPENAI_BASE_URL")
    .env_remove("OPENAI_API_KEY")
    .env_remove("SKILLTRIAL_MODEL_NAME");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {} stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn home() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    // An empty profiles file, so a user's own file on this machine cannot change the outcome.
    std::fs::write(tmp.path().join("no-profiles.toml"), "").unwrap();
    tmp
}

#[test]
fn local_profile_refuses_to_plan_without_openai_base_url() {
    // Given no OPENAI_BASE_URL
    let tmp = home();

    // When a run on the local-server profile is planned
    let out = plan(tmp.path(), &[], &[]);

    // Then it is refused, saying what to set, and nothing is planned
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        json(&out)["error"]["message"],
        "profile openai-compatible-local has no price, so it never calls a provider's public endpoint: set OPENAI_BASE_URL to your server (e.g. http://127.0.0.1:8000/v1), or give the profile a base_url"
    );
    assert!(
        !tmp.path().join("state").exists(),
        "a refused plan wrote state"
    );
}

#[test]
fn local_profile_takes_the_model_name_from_a_flag() {
    // Given a local server's address
    let tmp = home();
    let env = [("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")];

    // When the plan names the server's model with --model-name
    let out = plan(tmp.path(), &env, &["--model-name", "qwen3:8b"]);

    // Then the manifest pins that model at that endpoint
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let model = &json(&out)["manifest"]["model"];
    assert_eq!(model["profile"], "openai-compatible-local");
    assert_eq!(model["model"], "qwen3:8b");
    assert_eq!(model["endpoint"], "http://127.0.0.1:8000/v1");
}

#[test]
fn local_profile_takes_the_model_name_from_the_environment() {
    // Given SKILLTRIAL_MODEL_NAME, and no flag
    let tmp = home();
    let env = [
        ("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1"),
        ("SKILLTRIAL_MODEL_NAME", "llama3.2"),
    ];
    let out = plan(tmp.path(), &env, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json(&out)["manifest"]["model"]["model"], "llama3.2");

    // And a flag wins over the environment
    let out = plan(tmp.path(), &env, &["--model-name", "qwen3:8b"]);
    assert_eq!(json(&out)["manifest"]["model"]["model"], "qwen3:8b");
}

#[test]
fn a_priced_profile_refuses_a_model_name() {
    // Given a priced built-in profile
    let tmp = home();
    let out = Command::new(env!("CARGO_BIN_EXE_skilltrial"))
        .args([
            "--json",
            "plan",
            "--model",
            "gpt-4.1@2025-04-14",
            "--cap-usd",
            "1",
            "--model-name",
            "gpt-5",
            "--profiles",
        ])
        .arg(tmp.path().join("no-profiles.toml"))
        .current_dir(tmp.path())
        .env("SKILLTRIAL_HOME", tmp.path().join("state"))
        .env_remove("SKILLTRIAL_MODEL_NAME")
        .output()
        .unwrap();

    // Then the model name is refused: the price belongs to the profile's model
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        json(&out)["error"]["message"],
        "model name for profile gpt-4.1@2025-04-14: only a profile without a price (a server of your own) takes a model name; this one is priced for gpt-4.1-2025-04-14"
    );
}
