//! Inputs refused up front, each with an error naming the input and why: files that are too
//! large or not regular (a FIFO or a device is never read, so nothing blocks or reads without
//! end), a state directory that is a file, plans that could never run (a token cap below one
//! request, a base URL that does not parse, a money cap on an unpriced profile), a model name
//! with control characters, an unversioned pack, and a run compared with itself. All through the
//! real binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

fn st(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_skilltrial"));
    cmd.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("SKILLTRIAL_HOME", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("SKILLTRIAL_MODEL_NAME");
    cmd
}

/// Runs it and returns (exit code, stdout, stderr).
fn run(mut cmd: Command) -> (i32, String, String) {
    let out: Output = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const LOCAL: &[&str] = &[
    "plan",
    "--model",
    "openai-compatible-local",
    "--model-name",
    "foo",
    "--reps",
    "1",
    "--max-requests",
    "60",
    "--seed",
    "1",
];

fn local_plan(home: &Path, extra: &[&str]) -> Command {
    let mut args = LOCAL.to_vec();
    args.extend_from_slice(extra);
    let mut cmd = st(home, &args);
    cmd.env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1");
    cmd
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

#[test]
fn verify_refuses_a_fifo_and_a_device_without_reading_them() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("report.json");
    mkfifo(&fifo);
    // Nothing ever writes to the FIFO: reading it would block forever.
    let (code, _, err) = run(st(tmp.path(), &["verify", fifo.to_str().unwrap()]));
    assert_eq!(
        err,
        format!(
            "error: {} is not a regular file (a FIFO, socket or device): give a report.json file\n",
            fifo.display()
        )
    );
    assert_eq!(code, 2);
    // /dev/zero would otherwise be read without end.
    let (code, _, err) = run(st(tmp.path(), &["verify", "/dev/zero"]));
    assert_eq!(
        err,
        "error: /dev/zero is not a regular file (a FIFO, socket or device): give a report.json file\n"
    );
    assert_eq!(code, 2);
    let (code, _, err) = run(st(tmp.path(), &["verify", tmp.path().to_str().unwrap()]));
    assert_eq!(
        err,
        format!(
            "error: {} is a directory: give a report.json file\n",
            tmp.path().display()
        )
    );
    assert_eq!(code, 2);
}

#[test]
fn verify_refuses_a_report_over_the_size_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let big = tmp.path().join("big.json");
    // A sparse file one byte over the limit: its size is refused before it is read.
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(256 * 1024 * 1024 + 1).unwrap();
    let (code, _, err) = run(st(tmp.path(), &["verify", big.to_str().unwrap()]));
    assert_eq!(
        err,
        format!(
            "error: {} is larger than 256 MiB, more than any report holds: not a report\n",
            big.display()
        )
    );
    assert_eq!(code, 1);
}

#[test]
fn validate_and_check_refuse_a_fifo_instead_of_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("bundle");
    mkfifo(&fifo);
    let (code, out, err) = run(st(tmp.path(), &["validate", fifo.to_str().unwrap()]));
    assert_eq!(
        err,
        format!(
            "error: {} is not a regular file or a folder (a FIFO, socket or device): give a bundle folder or ZIP\n",
            fifo.display()
        ),
        "stdout: {out}"
    );
    assert_eq!(code, 2);
    let (code, _, err) = run(st(
        tmp.path(),
        &[
            "check",
            "--pack",
            "solana-core@1.0.3",
            "--task",
            "nope",
            fifo.to_str().unwrap(),
        ],
    ));
    // The answer file is looked at before the task, so a FIFO never blocks.
    assert_eq!(
        err,
        format!(
            "error: {} is not a regular file (a FIFO, socket or device): give an answer file, or `-` for standard input\n",
            fifo.display()
        )
    );
    assert_eq!(code, 2);
}

#[test]
fn plan_refuses_a_profiles_file_that_is_a_fifo() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("config/skilltrial")).unwrap();
    let fifo = tmp.path().join("config/skilltrial/profiles.toml");
    mkfifo(&fifo);
    let (code, _, err) = run(local_plan(tmp.path(), &["--max-tokens", "5000000"]));
    assert_eq!(
        err,
        format!(
            "error: cannot read profiles file {}: not a regular file (a FIFO, socket or device)\n",
            fifo.display()
        )
    );
    assert_eq!(code, 2);
}

#[test]
fn plan_refuses_a_token_cap_below_one_request() {
    let tmp = tempfile::tempdir().unwrap();
    for cap in ["10", "0"] {
        let (code, out, err) = run(local_plan(tmp.path(), &["--max-tokens", cap]));
        assert!(
            err.starts_with(&format!(
                "error: cannot plan: --max-tokens {cap} is below the "
            )),
            "{err}{out}"
        );
        assert!(
            err.ends_with(" tokens the smallest request of this plan may use (its prompt's input bound plus --max-output-tokens): no trial could ever be sent; give at least that\n"),
            "{err}"
        );
        assert_eq!(code, 2);
    }
    // Nothing was planned.
    assert!(!tmp.path().join("state/journal.sqlite").exists());
}

#[test]
fn plan_refuses_a_base_url_that_does_not_parse() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = local_plan(tmp.path(), &["--max-tokens", "5000000"]);
    cmd.env("OPENAI_BASE_URL", "http://[::1");
    let (code, _, err) = run(cmd);
    assert_eq!(
        err,
        "error: OPENAI_BASE_URL `http://[::1` is not a usable http(s) URL: invalid IPv6 address\n"
    );
    assert_eq!(code, 2);
    let mut cmd = local_plan(tmp.path(), &["--max-tokens", "5000000"]);
    cmd.env("OPENAI_BASE_URL", "ftp://127.0.0.1/v1");
    let (code, _, err) = run(cmd);
    assert_eq!(
        err,
        "error: OPENAI_BASE_URL `ftp://127.0.0.1/v1` is not a usable http(s) URL: the scheme is ftp\n"
    );
    assert_eq!(code, 2);
}

#[test]
fn plan_refuses_a_money_cap_on_an_unpriced_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, err) = run(local_plan(
        tmp.path(),
        &["--max-tokens", "5000000", "--cap-usd", "3"],
    ));
    assert_eq!(
        err,
        "error: --cap-usd: profile openai-compatible-local has no price, so a money cap cannot be kept: bound the run with --max-requests and --max-tokens\n"
    );
    assert_eq!(code, 2);
}

#[test]
fn a_home_that_is_a_file_is_an_error_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("passwd");
    std::fs::write(&file, "root:x:0:0\n").unwrap();
    let expected = format!(
        "error: state directory {} is not a directory: give --home or SKILLTRIAL_HOME a directory, or a path that does not exist yet\n",
        file.display()
    );
    for args in [
        &["info"][..],
        &["status"],
        &["cancel"],
        &["compare", "aaaaaaaa", "bbbbbbbb"],
    ] {
        let mut full = vec!["--home", file.to_str().unwrap()];
        full.extend_from_slice(args);
        let (code, _, err) = run(st(tmp.path(), &full));
        assert_eq!(err, expected, "{args:?}");
        assert_eq!(code, 2, "{args:?}");
    }
}

#[test]
fn a_model_name_with_control_characters_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = LOCAL.to_vec();
    args[4] = "a\n\u{1b}[31mRED";
    args.extend(["--max-tokens", "5000000"]);
    let mut cmd = st(tmp.path(), &args);
    cmd.env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1");
    let (code, out, err) = run(cmd);
    assert_eq!(
        err,
        "error: model name for profile openai-compatible-local: it contains a control character (a model name is an identifier)\n"
    );
    assert!(!out.contains('\u{1b}'));
    assert_eq!(code, 2);
}

#[test]
fn an_unversioned_pack_suggests_its_versions() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, err) = run(st(tmp.path(), &["pack", "show", "solana-core"]));
    assert_eq!(
        err,
        "error: no pack `solana-core`: give an embedded pack (see `skilltrial pack list`) or a pack folder; did you mean solana-core@1.0.3 or solana-core@2.0.0?\n"
    );
    assert_eq!(code, 2);
}

#[test]
fn compare_refuses_a_run_with_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = local_plan(tmp.path(), &["--max-tokens", "5000000"]);
    cmd.arg("--json");
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = plan["run"].as_str().unwrap().to_owned();
    let (code, _, err) = run(st(tmp.path(), &["compare", &id, &id[..12]]));
    assert_eq!(
        err,
        format!(
            "error: both arguments name run {}: comparing a run with itself says nothing; give two different runs\n",
            &id[..12]
        )
    );
    assert_eq!(code, 2);
}
