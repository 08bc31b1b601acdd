//! A run's trials as they land, for the live page: the plan's shape (tasks × arms × repetitions)
//! and each trial's outcome so far, compact enough to ride on every progress event, and drawn as
//! an SVG grid (one cell per planned trial, its colour its outcome) with a legend and a text
//! alternative.
//!
//! **Invariant:** [`LiveTrials::outcomes`] holds exactly one code per planned trial, task by task
//! in the manifest's order, then arm in the manifest's order, then repetition 1..=k; a trial
//! without a final outcome yet (planned, in flight, answered and not yet scored) is `.`.
//! [`LiveTrials::check`] refuses anything else, naming what is wrong, since the page reads it
//! from the daemon.

use serde::{Deserialize, Serialize};

use crate::outcome::Outcome;
use crate::svg::{Svg, outcome_class, truncate};

/// A trial that has no final outcome yet.
pub const WAITING: char = '.';

/// The one-character code of an outcome in [`LiveTrials::outcomes`].
pub fn code(outcome: Outcome) -> char {
    match outcome {
        Outcome::Pass => 'p',
        Outcome::Fail => 'f',
        Outcome::InvalidOutput => 'i',
        Outcome::UnsupportedCase => 'u',
        Outcome::InfrastructureError => 'e',
        Outcome::Unknown => 'k',
        Outcome::Interrupted => 'c',
        Outcome::NotRun => 'n',
    }
}

/// The outcome a code stands for; `Ok(None)` for [`WAITING`]; an error for any other character.
pub fn outcome_of(code: char) -> Result<Option<Outcome>, LiveError> {
    if code == WAITING {
        return Ok(None);
    }
    Outcome::ALL
        .iter()
        .copied()
        .find(|o| self::code(*o) == code)
        .map(Some)
        .ok_or(LiveError::Code(code))
}

/// A run's trials as they stand: the shape of its plan and every trial's outcome so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LiveTrials {
    /// The tasks, in the manifest's order.
    pub tasks: Vec<String>,
    /// The arms (`baseline`, `a`, `b`), in the manifest's order.
    pub arms: Vec<String>,
    /// Repetitions per task and arm (k).
    pub repetitions: u32,
    /// One character per planned trial, task by task, then arm, then repetition: `p` pass, `f`
    /// fail, `i` invalid_output, `u` unsupported_case, `e` infrastructure_error, `k` unknown,
    /// `c` interrupted, `n` not_run, `.` no final outcome yet.
    pub outcomes: String,
}

/// One planned trial and its outcome so far: (task, arm, repetition, outcome).
pub type Cell<'a> = (&'a str, &'a str, u32, Option<Outcome>);

/// What makes a [`LiveTrials`] unreadable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    #[error(
        "the live trials hold {have} outcomes for {want} planned trials (tasks × arms × repetitions)"
    )]
    Count { have: usize, want: usize },
    #[error("the live trials hold {0:?}, which is no outcome's code")]
    Code(char),
    #[error("the live trial ({task}, {arm}, {repetition}) is not in the plan")]
    NotPlanned {
        task: String,
        arm: String,
        repetition: u32,
    },
}

impl LiveTrials {
    /// Every planned trial waiting.
    pub fn waiting(tasks: Vec<String>, arms: Vec<String>, repetitions: u32) -> Self {
        let n = Self::count(&tasks, &arms, repetitions);
        Self {
            tasks,
            arms,
            repetitions,
            outcomes: std::iter::repeat_n(WAITING, n).collect(),
        }
    }

    fn count(tasks: &[String], arms: &[String], repetitions: u32) -> usize {
        let k = usize::try_from(repetitions).unwrap_or(usize::MAX);
        tasks.len().saturating_mul(arms.len()).saturating_mul(k)
    }

    /// The position of (task, arm, repetition) in [`LiveTrials::outcomes`].
    fn position(&self, task: &str, arm: &str, repetition: u32) -> Result<usize, LiveError> {
        let not_planned = || LiveError::NotPlanned {
            task: task.to_owned(),
            arm: arm.to_owned(),
            repetition,
        };
        let t = self
            .tasks
            .iter()
            .position(|x| x == task)
            .ok_or_else(not_planned)?;
        let a = self
            .arms
            .iter()
            .position(|x| x == arm)
            .ok_or_else(not_planned)?;
        if repetition == 0 || repetition > self.repetitions {
            return Err(not_planned());
        }
        let k = usize::try_from(self.repetitions).map_err(|_| not_planned())?;
        let r = usize::try_from(repetition - 1).map_err(|_| not_planned())?;
        Ok((t * self.arms.len() + a) * k + r)
    }

    /// Records a trial's outcome (`None`: not final yet).
    pub fn set(
        &mut self,
        task: &str,
        arm: &str,
        repetition: u32,
        outcome: Option<Outcome>,
    ) -> Result<(), LiveError> {
        self.check()?;
        let at = self.position(task, arm, repetition)?;
        let code = outcome.map_or(WAITING, code);
        // Every code is ASCII (checked above), so character positions are byte positions.
        self.outcomes
            .replace_range(at..=at, code.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    /// Whether the outcomes match the shape, one known code per planned trial.
    pub fn check(&self) -> Result<(), LiveError> {
        let want = Self::count(&self.tasks, &self.arms, self.repetitions);
        let have = self.outcomes.chars().count();
        if have != want {
            return Err(LiveError::Count { have, want });
        }
        for c in self.outcomes.chars() {
            outcome_of(c)?;
        }
        Ok(())
    }

    /// Every planned trial with its outcome so far: (task, arm, repetition, outcome), in the
    /// order of [`LiveTrials::outcomes`].
    pub fn cells(&self) -> Result<Vec<Cell<'_>>, LiveError> {
        self.check()?;
        let mut codes = self.outcomes.chars();
        let mut out = Vec::with_capacity(self.outcomes.len());
        for task in &self.tasks {
            for arm in &self.arms {
                for repetition in 1..=self.repetitions {
                    let code = codes.next().unwrap_or(WAITING);
                    out.push((task.as_str(), arm.as_str(), repetition, outcome_of(code)?));
                }
            }
        }
        Ok(out)
    }

    /// The trials with a final outcome, per outcome in [`Outcome::ALL`]'s order (absent ones
    /// left out), and the trials still waiting.
    pub fn tally(&self) -> Result<(Vec<(Outcome, usize)>, usize), LiveError> {
        let cells = self.cells()?;
        let landed = Outcome::ALL
            .iter()
            .map(|o| (*o, cells.iter().filter(|c| c.3 == Some(*o)).count()))
            .filter(|(_, n)| *n > 0)
            .collect();
        let waiting = cells.iter().filter(|c| c.3.is_none()).count();
        Ok((landed, waiting))
    }
}

/// The grid's geometry, in the SVG's own units.
const CELL: f64 = 12.0;
const STEP: f64 = 14.0;
const STEP_UNITS: usize = 14;
const ARM_GAP: f64 = 10.0;
const ARM_GAP_UNITS: usize = 10;
const LABEL: f64 = 150.0;
const LABEL_UNITS: usize = 150;
/// An arm's block is at least this wide, so that its heading (`baseline`) fits.
const MIN_BLOCK: usize = 56;
const ROW: f64 = 16.0;
/// The legend's rows and the arms' heading above the first task.
const LEGEND_ROW: f64 = 16.0;
const HEAD: f64 = 18.0;
/// The longest task name drawn in full (the whole name is in each cell's `<title>`).
const TASK_CHARS: usize = 22;

/// An arm as people read it: `A`, `B`, `baseline`.
fn arm_words(arm: &str) -> String {
    if arm == "baseline" {
        arm.to_owned()
    } else {
        arm.to_uppercase()
    }
}

/// What a legend and a text alternative call an outcome.
fn outcome_words(outcome: Option<Outcome>) -> &'static str {
    outcome.map_or("waiting", Outcome::as_str)
}

/// The run's trials as an SVG grid: a row per task, per arm a block of k cells (one per
/// repetition), each cell coloured by its outcome's class ([`outcome_class`]) with its trial
/// and outcome in its `<title>`; above, a legend of the outcomes present and the waiting trials;
/// as its title and description, the counts in words. `id` must be unique on the page.
pub fn grid_svg(trials: &LiveTrials, id: &str) -> Result<String, LiveError> {
    let cells = trials.cells()?;
    let (landed, waiting) = trials.tally()?;
    // In whole units: a block per arm, wide enough for k cells and for its heading.
    let k = usize::try_from(trials.repetitions).unwrap_or(usize::MAX);
    let block_units = k.saturating_mul(STEP_UNITS).max(MIN_BLOCK);
    let width_units = block_units
        .saturating_mul(trials.arms.len())
        .saturating_add(
            trials
                .arms
                .len()
                .saturating_sub(1)
                .saturating_mul(ARM_GAP_UNITS),
        )
        .saturating_add(LABEL_UNITS + 4);
    let block = block_units as f64;
    let width = width_units as f64;
    // The legend: the outcomes present, then waiting, as many per row as fit.
    let mut legend: Vec<Option<Outcome>> = landed.iter().map(|(o, _)| Some(*o)).collect();
    if waiting > 0 || legend.is_empty() {
        legend.push(None);
    }
    // Legend entries are 120 units apart: as many as the grid is wide, at least one.
    let per_row = width_units / 120;
    let per_row = per_row.max(1);
    let legend_rows = legend.len().div_ceil(per_row) as f64;
    let top = legend_rows * LEGEND_ROW + HEAD;
    let height = top + trials.tasks.len() as f64 * ROW + 4.0;

    let total = cells.len();
    let landed_n = total - waiting;
    let counts: Vec<String> = landed
        .iter()
        .map(|(o, n)| format!("{n} {}", o.as_str()))
        .collect();
    let title = format!(
        "Trials of this run: {landed_n} of {total} landed{}",
        if counts.is_empty() {
            String::new()
        } else {
            format!(" ({})", counts.join(", "))
        }
    );
    let desc = format!(
        "{} tasks × {} arms ({}) × {} repetition{}; one cell per trial, coloured by its outcome; {waiting} waiting.",
        trials.tasks.len(),
        trials.arms.len(),
        trials
            .arms
            .iter()
            .map(|a| arm_words(a))
            .collect::<Vec<_>>()
            .join(", "),
        trials.repetitions,
        if trials.repetitions == 1 { "" } else { "s" },
    );
    // The page scales a chart to its container; `w{N}` (its width rounded up to 50 units) lets
    // the stylesheet keep the grid near its own size, so its text stays readable.
    let bucket = width_units.div_ceil(50).saturating_mul(50);
    let mut s = Svg::chart(
        id,
        &format!("live-grid w{bucket}"),
        (width, height),
        &title,
        &desc,
    );

    s.open("g", &[("class", "legend".into())]);
    for (i, o) in legend.iter().enumerate() {
        let (row, col) = ((i / per_row) as f64, (i % per_row) as f64);
        let (x, y) = (4.0 + col * 120.0, 2.0 + row * LEGEND_ROW);
        let n = o.map_or(waiting, |o| {
            landed.iter().find(|(l, _)| *l == o).map_or(0, |(_, n)| *n)
        });
        s.leaf(
            "rect",
            &[
                ("class", format!("key {}", outcome_class(*o)).into()),
                ("x", x.into()),
                ("y", y.into()),
                ("width", 10.0.into()),
                ("height", 10.0.into()),
            ],
        )
        .text(
            "text",
            &[("x", (x + 14.0).into()), ("y", (y + 9.5).into())],
            &format!("{} {n}", outcome_words(*o)),
        );
    }
    s.close();

    // The arms' heading, over their blocks.
    let block_x = |a: usize| LABEL + a as f64 * (block + ARM_GAP);
    for (a, arm) in trials.arms.iter().enumerate() {
        s.text(
            "text",
            &[
                ("class", "k".into()),
                ("x", block_x(a).into()),
                ("y", (top - 5.0).into()),
            ],
            // About 7 units a character at this size.
            &truncate(&arm_words(arm), (block_units + ARM_GAP_UNITS) / 7),
        );
    }
    let mut cells = cells.into_iter();
    for (t, task) in trials.tasks.iter().enumerate() {
        let y = top + t as f64 * ROW;
        s.open(
            "g",
            &[
                ("class", "task".into()),
                ("data-task", task.as_str().into()),
            ],
        )
        .text(
            "text",
            &[("x", 4.0.into()), ("y", (y + 10.5).into())],
            &truncate(task, TASK_CHARS),
        );
        for (a, arm) in trials.arms.iter().enumerate() {
            for r in 0..trials.repetitions {
                let Some((_, _, repetition, outcome)) = cells.next() else {
                    break;
                };
                s.mark(
                    "rect",
                    &[
                        ("class", format!("cell {}", outcome_class(outcome)).into()),
                        ("x", (block_x(a) + f64::from(r) * STEP).into()),
                        ("y", y.into()),
                        ("width", CELL.into()),
                        ("height", CELL.into()),
                        ("data-arm", arm.as_str().into()),
                        ("data-rep", u64::from(repetition).into()),
                    ],
                    &format!(
                        "{task} · {} · repetition {repetition}: {}",
                        arm_words(arm),
                        outcome_words(outcome)
                    ),
                );
            }
        }
        s.close();
    }
    Ok(s.finish())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::svg::xml::parse;

    fn plan() -> LiveTrials {
        LiveTrials::waiting(
            vec!["swap-sol-usdc".into(), "tx-legacy-nonce".into()],
            vec!["baseline".into(), "a".into(), "b".into()],
            3,
        )
    }

    #[test]
    fn the_grid_has_one_cell_per_planned_trial_coloured_by_its_outcome() {
        // Given a plan of 2 tasks × 3 arms × 3 repetitions and four trials landed ...
        let mut trials = plan();
        let landed = [
            ("swap-sol-usdc", "a", 2, Outcome::Pass),
            ("swap-sol-usdc", "baseline", 1, Outcome::Fail),
            ("tx-legacy-nonce", "b", 3, Outcome::InvalidOutput),
            ("tx-legacy-nonce", "a", 1, Outcome::NotRun),
        ];
        for (task, arm, rep, outcome) in landed {
            trials.set(task, arm, rep, Some(outcome)).unwrap();
        }
        assert_eq!(trials.outcomes, "f...p.......n....i");
        // ... when it is drawn ...
        let markup = grid_svg(&trials, "live").unwrap();
        let root = parse(&markup).unwrap_or_else(|e| panic!("{e}: {markup}"));
        // ... then there is one cell per planned (task, arm, repetition), each once ...
        let cells: Vec<_> = root
            .all("rect")
            .into_iter()
            .filter(|e| e.has_class("cell"))
            .collect();
        assert_eq!(cells.len(), 2 * 3 * 3);
        let mut seen = std::collections::BTreeSet::new();
        for task in root.all("g").into_iter().filter(|e| e.has_class("task")) {
            for cell in task.all("rect") {
                assert!(seen.insert((
                    task.attr("data-task").to_owned(),
                    cell.attr("data-arm").to_owned(),
                    cell.attr("data-rep").to_owned()
                )));
            }
        }
        assert_eq!(seen.len(), 18);
        // ... coloured by its outcome: the landed ones by theirs, the others waiting.
        for task in root.all("g").into_iter().filter(|e| e.has_class("task")) {
            for cell in task.all("rect") {
                let key = (
                    task.attr("data-task"),
                    cell.attr("data-arm"),
                    cell.attr("data-rep").parse::<u32>().unwrap(),
                );
                let want = landed
                    .iter()
                    .find(|(t, a, r, _)| (*t, *a, *r) == key)
                    .map(|l| l.3);
                assert!(
                    cell.has_class(outcome_class(want)),
                    "{key:?}: {:?}",
                    cell.attrs
                );
                assert!(cell.title().unwrap().ends_with(outcome_words(want)));
            }
        }
        let coloured = cells.iter().filter(|c| !c.has_class("o-pending")).count();
        assert_eq!(coloured, landed.len());
        // The legend names what is present, with counts; the title says it in words.
        let legend = root
            .all("g")
            .into_iter()
            .find(|e| e.has_class("legend"))
            .unwrap();
        let keys: Vec<String> = legend.all("text").iter().map(|t| t.text()).collect();
        assert_eq!(
            keys,
            [
                "pass 1",
                "fail 1",
                "invalid_output 1",
                "not_run 1",
                "waiting 14"
            ]
        );
        assert_eq!(
            root.all("title")[0].text(),
            "Trials of this run: 4 of 18 landed (1 pass, 1 fail, 1 invalid_output, 1 not_run)"
        );
        assert_eq!(root.attr("role"), "img");
    }

    #[test]
    fn hostile_task_names_stay_text_inside_the_grid() {
        let hostile = "<script>alert(1)</script>\"&'</text><a href=\"//x\">\u{1b}[31m";
        let mut trials = LiveTrials::waiting(vec![hostile.into()], vec!["a".into()], 1);
        trials.set(hostile, "a", 1, Some(Outcome::Pass)).unwrap();
        let markup = grid_svg(&trials, "g").unwrap();
        let root = parse(&markup).unwrap_or_else(|e| panic!("{e}: {markup}"));
        let names: std::collections::BTreeSet<&str> =
            root.descendants().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names.into_iter().collect::<Vec<_>>(),
            ["desc", "g", "rect", "svg", "text", "title"]
        );
        let task = root
            .all("g")
            .into_iter()
            .find(|e| e.has_class("task"))
            .unwrap();
        assert_eq!(
            task.attr("data-task"),
            hostile.replace('\u{1b}', "\u{FFFD}")
        );
        assert!(!markup.contains("<script") && !markup.contains("<a "));
    }

    #[test]
    fn unreadable_live_trials_are_refused_by_what_is_wrong() {
        let mut trials = plan();
        trials.outcomes.push('p');
        assert_eq!(
            grid_svg(&trials, "g"),
            Err(LiveError::Count { have: 19, want: 18 })
        );
        let mut trials = plan();
        trials.outcomes.replace_range(0..1, "z");
        assert_eq!(trials.check(), Err(LiveError::Code('z')));
        let mut trials = plan();
        assert!(matches!(
            trials.set("swap-sol-usdc", "a", 4, Some(Outcome::Pass)),
            Err(LiveError::NotPlanned { repetition: 4, .. })
        ));
        assert!(trials.set("nope", "a", 1, None).is_err());
        // A multi-byte character counts as one (wrong) code, never splits a byte.
        let mut trials = plan();
        trials.outcomes.replace_range(0..1, "é");
        assert_eq!(trials.check(), Err(LiveError::Code('é')));
        for o in Outcome::ALL {
            assert_eq!(outcome_of(code(*o)), Ok(Some(*o)));
        }
    }
}
