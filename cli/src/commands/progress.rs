//! Progress of a run on stderr: an indicatif bar with rate and ETA when stderr is a terminal, a
//! plain line per finished trial otherwise (logs and CI keep a readable record), nothing with
//! `--json` (stdout carries the one JSON document and stderr stays quiet).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use skilltrial_runner::engine::Progress;

/// The trial counts and money of a progress report, in one line.
fn line(p: &Progress) -> String {
    let counts: Vec<String> = p
        .counts
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "pending" | "in_flight"))
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let current = p
        .current
        .as_ref()
        .map(|(t, a, r)| format!("  now {t}/{a}/rep {r}"))
        .unwrap_or_default();
    format!(
        "{}  spent {} reserved {}{current}",
        counts.join(", "),
        p.spent,
        p.reserved
    )
}

/// The terminal bar; cleared when the printer is dropped, so what the command prints next
/// starts on a clean line whether or not the run reached its last trial.
struct Bar(Option<ProgressBar>);

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
        }
    }
}

/// A progress printer for `engine::run`. Drop it before printing the result.
pub fn printer(json: bool) -> impl FnMut(&Progress) {
    let interactive = std::io::stderr().is_terminal() && !json;
    let mut bar = Bar(None);
    let mut last_done = u32::MAX;
    move |p: &Progress| {
        if json {
            return;
        }
        if interactive {
            let bar = bar.0.get_or_insert_with(|| {
                // Created at the first report, with the run's size and the trials already done:
                // a resumed run's earlier work does not inflate the rate or shorten the ETA.
                let bar = ProgressBar::with_draw_target(
                    Some(u64::from(p.total)),
                    ProgressDrawTarget::stderr(),
                );
                bar.set_style(
                    ProgressStyle::with_template(
                        "[{pos}/{len}] {wide_bar} {per_sec} · ETA {eta}\n{msg}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                bar.set_position(u64::from(p.done));
                bar.reset_eta();
                bar.enable_steady_tick(Duration::from_millis(250));
                bar
            });
            bar.set_position(u64::from(p.done));
            bar.set_message(line(p));
        } else if p.done != last_done {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "[{}/{}] {}", p.done, p.total, line(p));
            let _ = err.flush();
        }
        last_done = p.done;
    }
}
