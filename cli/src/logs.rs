//! The one log subscriber: `tracing` events on stderr, set up once by `main` for the commands
//! that log (`runner serve`). A line reads as text on a terminal and is one JSON object
//! elsewhere (a service manager, a file, a pipe), for a log collector. `RUST_LOG` filters as
//! usual; SkillTrial's own crates log at `info` unless it names them, so that `RUST_LOG=error`
//! (which quiets the Solana libraries, as `scripts/test.sh` sets it) keeps the daemon's lines.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

/// The prefix of every SkillTrial crate's targets (`skilltrial`, `skilltrial_runner`, …).
const OURS: &str = "skilltrial";

/// The filter: `RUST_LOG`'s directives (`warn` when it is unset), and ours at `info` unless it
/// names one of them.
fn directives(rust_log: Option<&str>) -> String {
    let given = rust_log.map(str::trim).filter(|d| !d.is_empty());
    let mut directives = given.unwrap_or("warn").to_owned();
    if !given.is_some_and(|d| d.contains(OURS)) {
        directives.push_str(",skilltrial=info");
    }
    directives
}

/// Installs the subscriber. Never fails the command: a directive it cannot read is skipped.
pub fn init() {
    let rust_log = std::env::var("RUST_LOG").ok();
    let filter = EnvFilter::builder().parse_lossy(directives(rust_log.as_deref()));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // Only `main` calls this, once: there is no earlier subscriber to keep.
    let _ = if std::io::stderr().is_terminal() {
        builder.try_init()
    } else {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .try_init()
    };
}

#[cfg(test)]
mod tests {
    use super::directives;

    #[test]
    fn our_crates_log_at_info_unless_rust_log_names_them() {
        assert_eq!(directives(None), "warn,skilltrial=info");
        assert_eq!(directives(Some("  ")), "warn,skilltrial=info");
        // The test suite's setting quiets the Solana libraries, not the daemon.
        assert_eq!(directives(Some("error")), "error,skilltrial=info");
        // Named, ours follow RUST_LOG alone.
        assert_eq!(
            directives(Some("warn,skilltrial_runner=debug")),
            "warn,skilltrial_runner=debug"
        );
    }
}
