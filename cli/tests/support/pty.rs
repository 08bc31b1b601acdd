//! A command on a real terminal: util-linux `script` gives it a pty, and what the test types is
//! written to that pty. Shared by the CLI's tests and the hosted end-to-end tests (which include
//! this file by path), for the prompts that ask only on a terminal.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs the shell command line `command` in `cwd` on a pty with `env` set, `answer` typed at
/// its prompt; `None` (said on stderr) where `script` is missing.
pub fn typed(command: &str, cwd: &Path, env: &[(&str, &str)], answer: &str) -> Option<Output> {
    if Command::new("script").arg("--version").output().is_err() {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("script(1) not found: the prompt was not tested");
        }
        return None;
    }
    let mut child = Command::new("script")
        .args(["-qfec", command, "/dev/null"])
        .current_dir(cwd)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(answer.as_bytes()).unwrap();
    // The pty keeps what was typed until the prompt reads it. Standard input stays open until
    // the command exits: its end would end the session before the command has answered.
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    Some(out)
}
