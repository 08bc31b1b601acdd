//! Progress of a run on stderr: an indicatif bar with rate and ETA when stderr is a terminal, a
//! plain line per finished trial otherwise (logs and CI keep a readable record), nothing with
//! `--json` (stdout carries the one JSON document and stderr stays quiet). A dumb terminal
//! (`TERM=dumb` or unset), where indicatif draws nothing, gets the plain lines too. Whatever
//! else must reach stderr while the bar is shown ([`notice`]) goes above it, never under it.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use skilltrial_engine::engine::Progress;

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
        .map(|(t, a, r)| match p.in_flight {
            0 | 1 => format!("  now {t}/{a}/rep {r}"),
            n => format!("  {n} in flight, latest {t}/{a}/rep {r}"),
        })
        .unwrap_or_default();
    format!(
        "{}  spent {} reserved {}{current}",
        counts.join(", "),
        p.spent,
        p.reserved
    )
}

/// The bar now shown, if any, so that [`notice`] can print above it from another thread.
static SHOWN: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Prints `text` as its own lines on stderr: with a bar shown, the bar is cleared first and
/// redrawn under the text (printed under it, the bar's next redraw would overwrite it).
pub fn notice(text: &str) {
    let shown = SHOWN.lock().ok().and_then(|s| s.clone());
    let print = || {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{text}");
        let _ = err.flush();
    };
    match shown {
        Some(bar) => bar.suspend(print),
        None => print(),
    }
}

/// Whether progress is drawn as a bar (else as plain lines, or not at all with `--json`): only
/// on a terminal indicatif draws on, which it does not when `TERM` is unset or `dumb`.
pub fn draws_bar(json: bool, stderr_is_terminal: bool, term: Option<&str>) -> bool {
    !json && stderr_is_terminal && term.is_some_and(|t| !t.is_empty() && t != "dumb")
}

/// The rate and time left for the trials done since this process started, `done_here` of them in
/// `elapsed`: trials an earlier invocation finished took no time here, so counting them would
/// show a resumed run at thousands per second.
pub fn rate_and_eta(done_here: u64, left: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    if done_here == 0 || secs < 0.05 {
        return "-/s · ETA -".to_owned();
    }
    let per_sec = done_here as f64 / secs;
    // In integer milliseconds: the time per trial so far times the trials left, rounded.
    let eta_ms = elapsed.as_millis().saturating_mul(u128::from(left)) / u128::from(done_here);
    let eta = u64::try_from(eta_ms.saturating_add(500) / 1000).unwrap_or(u64::MAX);
    format!(
        "{per_sec:.1}/s · ETA {}",
        if eta >= 3600 {
            format!("{}h{:02}m", eta / 3600, eta % 3600 / 60)
        } else if eta >= 60 {
            format!("{}m{:02}s", eta / 60, eta % 60)
        } else {
            format!("{eta}s")
        }
    )
}

/// The terminal bar; cleared when the printer is dropped, so what the command prints next
/// starts on a clean line whether or not the run reached its last trial.
struct Bar(Option<ProgressBar>);

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            if let Ok(mut shown) = SHOWN.lock() {
                *shown = None;
            }
            bar.finish_and_clear();
        }
    }
}

/// stderr as the bar draws on it, except that each drawn line ends with a newline instead of
/// indicatif's padding to the right edge. indicatif leaves the cursor at the right edge of the
/// bar's last row, so the `^C` the terminal echoes on a Ctrl-C wraps onto a new row that
/// indicatif does not know of: its next clear then starts one row low, leaving a stale bar row
/// above the stop notice. Here the cursor rests at the start of the row below the bar, where an
/// echo changes no row count, and the first cursor move or clear after a draw first steps back
/// up onto the bar's last row, where indicatif believes the cursor is.
#[derive(Debug)]
struct Stderr {
    term: console::Term,
    state: Mutex<Rows>,
}

#[derive(Debug, Default)]
struct Rows {
    /// The next `write_str` is the padding after a line's text (indicatif writes each line's
    /// text, then its padding).
    padding_next: bool,
    /// The cursor is on the row below the bar.
    below: bool,
}

impl Stderr {
    fn new() -> Self {
        Self {
            term: console::Term::stderr(),
            state: Mutex::new(Rows::default()),
        }
    }

    /// Steps back onto the bar's last row before a cursor move, a clear or a whole line.
    fn settle(&self) -> std::io::Result<()> {
        let mut rows = self.state.lock().map_err(|_| std::io::ErrorKind::Other)?;
        rows.padding_next = false;
        if std::mem::take(&mut rows.below) {
            self.term.move_cursor_up(1)?;
        }
        Ok(())
    }
}

impl indicatif::TermLike for Stderr {
    fn width(&self) -> u16 {
        self.term.size().1
    }

    fn height(&self) -> u16 {
        self.term.size().0
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.settle()?;
        self.term.move_cursor_up(n)
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.settle()?;
        self.term.move_cursor_down(n)
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.settle()?;
        self.term.move_cursor_right(n)
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.settle()?;
        self.term.move_cursor_left(n)
    }

    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.settle()?;
        self.term.write_line(s)
    }

    fn write_str(&self, s: &str) -> std::io::Result<()> {
        if s == "\r" {
            self.settle()?;
            return self.term.write_str(s);
        }
        let mut rows = self.state.lock().map_err(|_| std::io::ErrorKind::Other)?;
        if rows.padding_next {
            rows.padding_next = false;
            rows.below = true;
            self.term.write_str("\n")
        } else {
            rows.padding_next = true;
            rows.below = false;
            self.term.write_str(s)
        }
    }

    fn clear_line(&self) -> std::io::Result<()> {
        self.settle()?;
        self.term.clear_line()
    }

    fn flush(&self) -> std::io::Result<()> {
        self.term.flush()
    }
}

/// A progress printer for `engine::run`. Drop it before printing the result.
pub fn printer(json: bool) -> impl FnMut(&Progress) {
    let term = std::env::var("TERM").ok();
    let interactive = draws_bar(json, std::io::stderr().is_terminal(), term.as_deref());
    let mut bar = Bar(None);
    let mut last_done = u32::MAX;
    move |p: &Progress| {
        if json {
            return;
        }
        if interactive {
            let bar = bar.0.get_or_insert_with(|| {
                // Created at the first report, with the run's size and the trials already done:
                // the rate and ETA count only the trials done here, so a resumed run's earlier
                // work does not inflate the rate or shorten the ETA.
                let bar = ProgressBar::with_draw_target(
                    Some(u64::from(p.total)),
                    ProgressDrawTarget::term_like_with_hz(Box::new(Stderr::new()), 20),
                );
                let start = u64::from(p.done);
                bar.set_style(
                    ProgressStyle::with_template("[{pos}/{len}] {bar:40} {rate}\n{msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .with_key(
                            "rate",
                            move |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                                let len = s.len().unwrap_or(0);
                                let _ = w.write_str(&rate_and_eta(
                                    s.pos().saturating_sub(start),
                                    len.saturating_sub(s.pos()),
                                    s.elapsed(),
                                ));
                            },
                        ),
                );
                bar.set_position(start);
                bar.enable_steady_tick(Duration::from_millis(250));
                if let Ok(mut shown) = SHOWN.lock() {
                    *shown = Some(bar.clone());
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dumb_or_unknown_terminal_gets_plain_lines() {
        assert!(draws_bar(false, true, Some("xterm-256color")));
        assert!(!draws_bar(false, true, Some("dumb")));
        assert!(!draws_bar(false, true, None));
        assert!(!draws_bar(false, true, Some("")));
        assert!(!draws_bar(false, false, Some("xterm")));
        assert!(!draws_bar(true, true, Some("xterm")));
    }

    #[test]
    fn the_rate_counts_only_trials_done_here_with_one_decimal() {
        // A resumed run: nothing done here yet, however many trials were done before.
        assert_eq!(rate_and_eta(0, 6, Duration::from_millis(1)), "-/s · ETA -");
        assert_eq!(rate_and_eta(3, 6, Duration::from_secs(2)), "1.5/s · ETA 4s");
        assert_eq!(
            rate_and_eta(1, 90, Duration::from_secs(2)),
            "0.5/s · ETA 3m00s"
        );
        assert_eq!(
            rate_and_eta(1, 1, Duration::from_secs(4000)),
            "0.0/s · ETA 1h06m"
        );
    }
}
