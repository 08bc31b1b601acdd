//! A state directory the process may not write is still read: by its permission bits or on a
//! read-only mount whose bits still say writable, `status`, `report` and `compare` work and
//! nothing (not even SQLite's -wal/-shm files) is written into it, while a command that writes
//! fails as the environment (exit 2), naming the journal. The real binary, a real journal under a
//! temporary state directory, and the loopback server speaking the Anthropic wire format.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use serde_json::Value;
use skilltrial_engine::journal::Journal;
use skilltrial_engine::scripted::{Reply, ScriptedServer};

mod support;

use support::{Env, outcome, scripted_answer};

/// Sets or clears every write bit under `dir` (`chmod -R a-w` / `u+w`).
fn set_read_only(dir: &Path, read_only: bool) {
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            set_read_only(&path, read_only);
        }
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        let mode = if read_only {
            mode & !0o222
        } else {
            mode | 0o200
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let mode = std::fs::metadata(dir).unwrap().permissions().mode();
    let mode = if read_only {
        mode & !0o222
    } else {
        mode | 0o200
    };
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Every path under `dir`, sorted.
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(listing(&path));
        }
        out.push(path);
    }
    out.sort();
    out
}

#[test]
fn a_read_only_state_directory_can_be_read() {
    // Tests often run as root, whom `chmod` does not stop: the CLI decides by the permission
    // bits, so this exercises the read-only open either way; the listing check below shows that
    // nothing (not even SQLite's -wal/-shm files) was written into the read-only copy.
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    let other = env.plan_seeded("8", &["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let copy = env.dir.path().join("ro-home");
    support::copy_tree(&env.home(), &copy);
    set_read_only(&copy, true);
    let before = listing(&copy);
    let json = |args: &[&str]| -> Value {
        let (code, stdout, stderr) = outcome(env.run_in(&copy, args));
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        serde_json::from_str(&stdout).unwrap()
    };
    let status = json(&["status", &run, "--json"]);
    assert_eq!(status["status"], "finished");
    let out_dir = env.dir.path().join("ro-report");
    let report = json(&["report", &run, "--out", out_dir.to_str().unwrap(), "--json"]);
    assert_eq!(report["manifest_hash"], format!("sha256:{run}"));
    assert_eq!(
        json(&["compare", &run, &other, "--json"])["comparable"],
        true
    );
    let after = listing(&copy);
    set_read_only(&copy, false);
    assert_eq!(
        before, after,
        "nothing is written into a read-only state directory"
    );

    // The read-only journal refuses writes, naming the file.
    let journal = Journal::open_read_only(&env.home().join("journal.sqlite3")).unwrap();
    assert_eq!(
        journal.find_run(&run).unwrap().unwrap().status.as_str(),
        "finished"
    );
    let err = journal.request_cancel(&run).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "journal {}: attempt to write a readonly database",
            env.home().join("journal.sqlite3").display()
        )
    );
}

/// A read-only bind mount of `dir` at `at`, unmounted when dropped.
struct ReadOnlyMount(PathBuf);

impl ReadOnlyMount {
    /// `None` where this process may not mount (not root, or no mount capability).
    fn new(dir: &Path, at: &Path) -> Option<Self> {
        std::fs::create_dir_all(at).unwrap();
        let mount = |args: &[&str]| {
            std::process::Command::new("mount")
                .args(args)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let (dir, at_s) = (dir.to_str().unwrap(), at.to_str().unwrap());
        if !mount(&["--bind", dir, at_s]) {
            return None;
        }
        let guard = Self(at.to_path_buf());
        mount(&["-o", "remount,bind,ro", at_s]).then_some(guard)
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_read_only_mount_can_be_read_although_its_permission_bits_allow_writing() {
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let at = env.dir.path().join("ro-mount");
    let Some(_mount) = ReadOnlyMount::new(&env.home(), &at) else {
        eprintln!("NOT RUN: this process cannot make a read-only bind mount (needs root)");
        return;
    };
    assert!(
        !std::fs::metadata(&at).unwrap().permissions().readonly(),
        "the bits still say writable"
    );
    let (code, stdout, stderr) = outcome(env.run_in(&at, &["status", &run, "--json"]));
    assert_eq!(code, Some(0), "{stderr}");
    let status: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status["status"], "finished");
    let out_dir = env.dir.path().join("ro-mount-report");
    let (code, _, stderr) = outcome(env.run_in(
        &at,
        &["report", &run, "--out", out_dir.to_str().unwrap(), "--json"],
    ));
    assert_eq!(code, Some(0), "{stderr}");
    // A command that writes still fails, as the environment (2), naming the journal.
    let (code, _, stderr) = outcome(env.run_in(&at, &["purge", "--older-than", "0d"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("journal.sqlite3"), "{stderr}");
}
