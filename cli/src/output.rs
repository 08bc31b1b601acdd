//! Writing to stdout: the only place the CLI's results reach the terminal.

use std::io::Write;

use anyhow::Context;
use serde::Serialize;

/// Writes `text` to stdout. A closed pipe (`skilltrial ... | head`) is not an error.
pub fn text(text: &str) -> anyhow::Result<()> {
    write_stdout(text.as_bytes())
}

/// Writes `value` as one pretty JSON document and a newline to stdout.
pub fn json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let mut body = serde_json::to_vec_pretty(value).context("cannot encode the JSON output")?;
    body.push(b'\n');
    write_stdout(&body)
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to stdout"),
    }
}
