//! The report's charts (docs/reports.md, "Charts"): inline SVG drawn from the typed [`Report`],
//! each in a `<figure>` with a caption, a legend, and the numbers it draws in a data table
//! (`<details class="data">`), so a screen reader, a printer and a reader who wants the exact
//! values all get them.
//!
//! **Invariant:** a chart draws the report's own values — the six-place strings of a [`Rate`],
//! the counts of an [`ArmSummary`], a [`Pair`]'s per-task passes — and computes no statistic of
//! its own: a position is a value through a [`Linear`] scale, a per-task difference is that
//! task's `x_minus_y_passes ÷ pairs`. Where a view needs a sum the JSON does not hold (model time
//! per arm), it adds the same attempt values the JSON's total adds, so the parts add up to it.
//! Every position follows the pixel rule of [`crate::svg`] (0.1 px).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{Activation, ArmSummary, Pair, Rate, Report, TaskArm, TrialOutcome, count_of};
use crate::money::MicroUsd;
use crate::outcome::Outcome;
use crate::state::AttemptState;
use crate::svg::{
    DataTable, Linear, Px, Svg, Value, arm_class, figure, fit, outcome_class, verdict_class,
};

/// Every chart's user-space width; the stylesheet caps its drawn width at 520 px, so 12-unit
/// text reads at 11 px on a 390 px phone and at most 15.6 px on a desktop.
const WIDTH: f64 = 400.0;

/// The charts' font size in user units (the stylesheet's 12px); labels are cut to fit by it.
const FONT: f64 = 12.0;

/// Where an arm's name ends (right-aligned) in the arm charts.
const ARM_LABEL_END: f64 = 70.0;
/// Where a task's name ends (right-aligned) in the task charts.
const TASK_LABEL_END: f64 = 136.0;
/// The plot of the rate charts (success, activation): 0 % to 100 %.
pub(super) const RATE_X: (f64, f64) = (78.0, 296.0);
/// The plot of the forests: −100 % to +100 %.
pub(super) const FOREST_X: (f64, f64) = (144.0, 328.0);
/// Where the numbers beside a bar or a dot start (a forest's leave room for `+4600/4600`).
const RATE_TEXT: f64 = 302.0;
const FOREST_TEXT: f64 = 334.0;

/// An arm as people read it: A and B uppercase, baseline as itself.
fn arm_label(arm: &str) -> String {
    if arm == "baseline" {
        arm.to_owned()
    } else {
        arm.to_uppercase()
    }
}

/// A six-place decimal from the report as a number; `None` if it is not one.
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A six-place decimal as a whole percentage, as the cards show it.
fn pct(text: &str) -> String {
    number(text).map_or_else(|| "—".to_owned(), |v| format!("{:.0}%", v * 100.0))
}

/// A rate as a sentence: `4 of 6 (67%, 95% CI 30%–90%)`.
fn rate_words(rate: &Rate) -> String {
    format!(
        "{} of {} ({}, 95% CI {}–{})",
        rate.num,
        rate.den,
        pct(&rate.value),
        pct(&rate.wilson95[0]),
        pct(&rate.wilson95[1])
    )
}

/// The percentage axis along the top of a chart: ticks at 0, 25, 50, 75 and 100 %.
fn percent_axis(svg: &mut Svg, x: &Linear, top: f64, bottom: f64) {
    for tick in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let at = x.px(tick);
        svg.leaf(
            "line",
            &[
                ("class", "grid".into()),
                ("x1", at.into()),
                ("x2", at.into()),
                ("y1", top.into()),
                ("y2", bottom.into()),
            ],
        );
        svg.text(
            "text",
            &[
                ("class", "k".into()),
                ("x", at.into()),
                ("y", (top - 4.0).into()),
                ("text-anchor", "middle".into()),
            ],
            &format!("{:.0}%", tick * 100.0),
        );
    }
}

/// One row of a rate chart: a bar to the rate and its Wilson interval as an error bar.
struct RateRow<'a> {
    arm: &'a str,
    /// What the row is a rate of, for its hover text ("passed", "loaded the skill").
    what: &'a str,
    rate: Option<&'a Rate>,
}

/// Horizontal bars with 95 % Wilson error bars, one per arm: the bar ends at `rate.value`, the
/// whisker spans `rate.wilson95`, both through one [`Linear`] scale (0 → 100 %).
fn rate_chart(id: &str, title: &str, rows: &[RateRow<'_>]) -> String {
    const ROW: f64 = 30.0;
    const TOP: f64 = 22.0;
    let height = TOP + ROW * rows.len() as f64 + 6.0;
    let x = Linear::new((0.0, 1.0), RATE_X);
    let desc: Vec<String> = rows
        .iter()
        .map(|r| match r.rate {
            Some(rate) => format!("{}: {} {}", arm_label(r.arm), r.what, rate_words(rate)),
            None => format!("{}: no result yet", arm_label(r.arm)),
        })
        .collect();
    let mut svg = Svg::chart(id, "rates", (WIDTH, height), title, &desc.join("; "));
    percent_axis(&mut svg, &x, TOP, height - 6.0);
    for (i, row) in rows.iter().enumerate() {
        let mid = TOP + ROW * i as f64 + ROW / 2.0;
        svg.text(
            "text",
            &[
                ("x", ARM_LABEL_END.into()),
                ("y", (mid + 4.0).into()),
                ("text-anchor", "end".into()),
            ],
            &arm_label(row.arm),
        );
        let Some(rate) = row.rate else {
            svg.text(
                "text",
                &[
                    ("class", "k".into()),
                    ("x", x.px(0.0).into()),
                    ("y", (mid + 4.0).into()),
                    ("dx", 4.0.into()),
                ],
                "no result yet",
            );
            continue;
        };
        let value = number(&rate.value).unwrap_or(0.0);
        let (lo, hi) = (
            number(&rate.wilson95[0]).unwrap_or(0.0),
            number(&rate.wilson95[1]).unwrap_or(0.0),
        );
        let hover = format!("{}: {} {}", arm_label(row.arm), row.what, rate_words(rate));
        svg.open(
            "g",
            &[
                ("class", "rate".into()),
                ("data-arm", row.arm.into()),
                ("data-value", rate.value.as_str().into()),
            ],
        );
        let x0 = x.px(0.0);
        svg.mark(
            "rect",
            &[
                ("class", format!("bar {}", arm_class(row.arm)).into()),
                ("x", x0.into()),
                ("y", (mid - 8.0).into()),
                ("width", (x.px(value).get() - x0.get()).into()),
                ("height", 16.0.into()),
            ],
            &hover,
        );
        let (xl, xh) = (x.px(lo), x.px(hi));
        svg.mark(
            "line",
            &[
                ("class", "whisker ci".into()),
                ("x1", xl.into()),
                ("x2", xh.into()),
                ("y1", mid.into()),
                ("y2", mid.into()),
            ],
            &format!(
                "95% Wilson interval {}–{}",
                pct(&rate.wilson95[0]),
                pct(&rate.wilson95[1])
            ),
        );
        for (class, at) in [("whisker ci-lo", xl), ("whisker ci-hi", xh)] {
            svg.leaf(
                "line",
                &[
                    ("class", class.into()),
                    ("x1", at.into()),
                    ("x2", at.into()),
                    ("y1", (mid - 6.0).into()),
                    ("y2", (mid + 6.0).into()),
                ],
            );
        }
        svg.text(
            "text",
            &[("x", RATE_TEXT.into()), ("y", (mid + 4.0).into())],
            &format!("{} · {}/{}", pct(&rate.value), rate.num, rate.den),
        );
        svg.close();
    }
    svg.finish()
}

fn rate_table(rows: &[RateRow<'_>], what: &str) -> DataTable {
    let mut table = DataTable::new(&["arm", what, "of", "rate", "95% CI low", "95% CI high"]);
    for row in rows {
        table.rows.push(match row.rate {
            Some(r) => vec![
                arm_label(row.arm),
                r.num.to_string(),
                r.den.to_string(),
                r.value.clone(),
                r.wilson95[0].clone(),
                r.wilson95[1].clone(),
            ],
            None => vec![
                arm_label(row.arm),
                "—".into(),
                "0".into(),
                "—".into(),
                "—".into(),
                "—".into(),
            ],
        });
    }
    table
}

/// Success rate per arm with its 95 % Wilson interval (`summary.arms[].success`).
pub(super) fn success_rates(report: &Report) -> String {
    let rows: Vec<RateRow<'_>> = report
        .summary
        .arms
        .iter()
        .map(|a| RateRow {
            arm: &a.arm,
            what: "passed",
            rate: a.success.as_ref(),
        })
        .collect();
    figure(
        rate_chart("chart-success", "Success rate per arm", &rows),
        "Success rate per arm (pass ÷ executed): the bar is the rate, the whisker its 95% Wilson interval. Overlapping whiskers alone do not decide a difference; the paired plots below do.",
        &[],
        &rate_table(&rows, "passed"),
    )
}

/// The contrasts in reading order: B − A first, then each skill against the baseline.
const CONTRAST_ORDER: [&str; 3] = ["b-a", "b-baseline", "a-baseline"];

/// The verdict member that labels a contrast's tasks (docs/reports.md, verdicts).
fn verdict_key(contrast: &str) -> &'static str {
    match contrast {
        "b-a" => "b_vs_a",
        "b-baseline" => "b",
        _ => "a",
    }
}

/// The verdict labels a contrast's dots can carry, for its legend.
fn verdict_legend(contrast: &str) -> &'static [(&'static str, &'static str)] {
    if contrast == "b-a" {
        &[
            ("v-improvement", "improvement"),
            ("v-regression", "regression"),
            ("v-same", "same"),
            ("v-none", "no verdict"),
        ]
    } else {
        &[
            ("v-skill-needed", "skill needed"),
            ("v-broken", "broken"),
            ("v-no-op", "no-op"),
            ("v-still-failing", "still failing"),
            ("v-none", "no verdict"),
        ]
    }
}

/// A p-value as the pair view reads it: the number, its exact fraction beside it.
fn p_words(p: Option<&super::ExactFraction>) -> String {
    p.map_or_else(
        || "—".to_owned(),
        |p| {
            let readable = p.readable();
            if readable == p.text {
                readable
            } else {
                format!("{readable} ({})", p.text)
            }
        },
    )
}

/// A proportion as the report writes it: its value and its Wilson 95 % bounds, read back from
/// the six-place strings, so an interval drawn from it is the JSON's to the digit.
fn rate_parts(rate: &Rate) -> Option<(f64, f64, f64)> {
    Some((
        number(&rate.value)?,
        number(&rate.wilson95[0])?,
        number(&rate.wilson95[1])?,
    ))
}

/// The 95 % interval of the difference x − y of two pass rates, from each rate's Wilson
/// interval (Newcombe's hybrid score method, his method 10): lower
/// `d − √((x − lₓ)² + (u_y − y)²)`, upper `d + √((uₓ − x)² + (y − l_y)²)`, cut to [−1, 1]. It
/// treats the two arms as independent samples, so for paired repetitions it is, if anything,
/// wider than it need be: a task's line says how little one task's few repetitions show, not
/// what the paired test over tasks concludes.
pub(super) fn difference_interval(x: (f64, f64, f64), y: (f64, f64, f64)) -> (f64, f64) {
    let ((px, lx, ux), (py, ly, uy)) = (x, y);
    let d = px - py;
    let lower = d - ((px - lx).powi(2) + (uy - py).powi(2)).sqrt();
    let upper = d + ((ux - px).powi(2) + (py - ly).powi(2)).sqrt();
    (lower.max(-1.0), upper.min(1.0))
}

/// A task's interval for `pair`: from its per-task counts in the report (`tasks[].arms`), as
/// [`Rate`]s, when both arms executed exactly its complete pairs (otherwise its rates and its
/// paired difference count different trials, and no interval is drawn).
fn task_interval(report: &Report, pair: &Pair, task: &str, pairs: u64) -> Option<(f64, f64)> {
    let row = report.tasks.iter().find(|t| t.task == task)?;
    let (x, y) = (row.arms.get(&pair.x)?, row.arms.get(&pair.y)?);
    if x.executed != pairs || y.executed != pairs {
        return None;
    }
    Some(difference_interval(
        rate_parts(&Rate::of(x.pass, x.executed)?)?,
        rate_parts(&Rate::of(y.pass, y.executed)?)?,
    ))
}

/// The interval of the contrast's difference over all its pairs, from the pair's own pass rates
/// when they count exactly those pairs.
fn overall_interval(pair: &Pair, pairs: u64) -> Option<(f64, f64)> {
    let (x, y) = (pair.x_pass_rate.as_ref()?, pair.y_pass_rate.as_ref()?);
    if x.den != pairs || y.den != pairs {
        return None;
    }
    Some(difference_interval(rate_parts(x)?, rate_parts(y)?))
}

/// A horizontal interval line across `lo`..`hi` at height `y`, under the mark it belongs to
/// (`task`'s dot, or the diamond of all pairs: `task` empty).
fn interval_line(svg: &mut Svg, x: &Linear, task: &str, (lo, hi): (f64, f64), y: f64) {
    svg.leaf(
        "line",
        &[
            ("class", "whisker interval".into()),
            ("data-task", task.into()),
            ("data-lo", Value::Text(format!("{lo:.6}").into())),
            ("data-hi", Value::Text(format!("{hi:.6}").into())),
            ("x1", x.px(lo).into()),
            ("x2", x.px(hi).into()),
            ("y1", y.into()),
            ("y2", y.into()),
        ],
    );
}

/// The forest plots: per contrast the report has, one dot per task with a complete pair at
/// `x_minus_y_passes ÷ pairs` (−100 % … +100 %), sorted from the largest gain down, coloured by
/// the task's verdict label and linked to its trials, with the contrast's exact and
/// Holm-adjusted p above and its observed difference over all pairs as the first row.
pub(super) fn forests(report: &Report) -> String {
    let mut h = String::new();
    for key in CONTRAST_ORDER {
        if let Some(pair) = report.pairs.iter().find(|p| p.contrast == key) {
            h.push_str(&forest(report, pair));
        }
    }
    h
}

fn forest(report: &Report, pair: &Pair) -> String {
    const ROW: f64 = 18.0;
    const TOP: f64 = 56.0;
    let (xn, yn) = (arm_label(&pair.x), arm_label(&pair.y));
    let verdicts: BTreeMap<&str, Option<&str>> = report
        .tasks
        .iter()
        .map(|t| (t.task.as_str(), t.verdicts.get(verdict_key(&pair.contrast))))
        .collect();
    let mut rows: Vec<(&str, i64, u64, f64)> = pair
        .per_task
        .iter()
        .filter(|t| t.pairs > 0)
        .map(|t| {
            (
                t.task.as_str(),
                t.x_minus_y_passes,
                t.pairs,
                t.x_minus_y_passes as f64 / t.pairs as f64,
            )
        })
        .collect();
    // Largest gain first; ties by name, so the order is the same on every render.
    rows.sort_by(|a, b| b.3.total_cmp(&a.3).then_with(|| a.0.cmp(b.0)));
    let p_line = format!(
        "p = {} · Holm-adjusted {}",
        p_words(pair.test.p.as_ref()),
        p_words(pair.test.holm_p.as_ref())
    );
    let id = format!("chart-forest-{}", pair.contrast);
    let title = format!("{xn} − {yn} per task");
    let overall = pair
        .observed_difference
        .as_ref()
        .and_then(|d| number(&d.value).map(|v| (d, v)));
    let desc = {
        let mut s = format!(
            "{} of {} tasks with a complete pair: {} gain, {} lose, {} equal. {}.",
            title,
            rows.len(),
            rows.iter().filter(|r| r.1 > 0).count(),
            rows.iter().filter(|r| r.1 < 0).count(),
            rows.iter().filter(|r| r.1 == 0).count(),
            p_line
        );
        if let Some((d, v)) = overall {
            let _ = write!(
                s,
                " Over all {} pairs {xn} minus {yn} is {:+.0} points.",
                d.pairs,
                v * 100.0
            );
        }
        s
    };
    let n_rows = rows.len() + usize::from(overall.is_some());
    let height = TOP + ROW * n_rows.max(1) as f64 + 8.0;
    let x = Linear::new((-1.0, 1.0), FOREST_X);
    let mut svg = Svg::chart(&id, "forest", (WIDTH, height), &title, &desc);
    // The contrast and its p on the first line, the Holm-adjusted p on the second, so two
    // 2^-45 fractions still fit a phone's width.
    svg.text(
        "text",
        &[("class", "p".into()), ("x", 0.0.into()), ("y", 13.0.into())],
        &format!("{xn} − {yn}: p = {}", p_words(pair.test.p.as_ref())),
    );
    svg.text(
        "text",
        &[("class", "p".into()), ("x", 0.0.into()), ("y", 28.0.into())],
        &format!("Holm-adjusted {}", p_words(pair.test.holm_p.as_ref())),
    );
    let axis_y = TOP - 6.0;
    for (tick, label, anchor) in [
        (-1.0, format!("{yn} better"), "start"),
        (0.0, "0".to_owned(), "middle"),
        (1.0, format!("{xn} better"), "end"),
    ] {
        svg.text(
            "text",
            &[
                ("class", "k".into()),
                ("x", x.px(tick).into()),
                ("y", (axis_y - 4.0).into()),
                ("text-anchor", anchor.into()),
            ],
            &label,
        );
    }
    for tick in [-1.0, -0.5, 0.5, 1.0] {
        let at = x.px(tick);
        svg.leaf(
            "line",
            &[
                ("class", "grid".into()),
                ("x1", at.into()),
                ("x2", at.into()),
                ("y1", axis_y.into()),
                ("y2", (height - 4.0).into()),
            ],
        );
    }
    let zero = x.px(0.0);
    svg.leaf(
        "line",
        &[
            ("class", "zero".into()),
            ("x1", zero.into()),
            ("x2", zero.into()),
            ("y1", axis_y.into()),
            ("y2", (height - 4.0).into()),
        ],
    );
    let mut y = TOP;
    if let Some((d, v)) = overall {
        let mid = y + ROW / 2.0;
        svg.text(
            "text",
            &[
                ("x", TASK_LABEL_END.into()),
                ("y", (mid + 4.0).into()),
                ("text-anchor", "end".into()),
            ],
            "all pairs",
        );
        if let Some(interval) = overall_interval(pair, d.pairs) {
            interval_line(&mut svg, &x, "", interval, mid);
        }
        let (cx, s) = (x.px(v).get(), 6.0);
        svg.mark(
            "path",
            &[
                ("class", "overall arm-other".into()),
                ("data-value", d.value.as_str().into()),
                (
                    "d",
                    format!(
                        "M{} {}L{} {}L{} {}L{} {}Z",
                        Px::new(cx - s),
                        Px::new(mid),
                        Px::new(cx),
                        Px::new(mid - s),
                        Px::new(cx + s),
                        Px::new(mid),
                        Px::new(cx),
                        Px::new(mid + s)
                    )
                    .into(),
                ),
            ],
            &format!(
                "All {} complete pairs: {xn} passed {} more than {yn} ({:+.0} points)",
                d.pairs,
                d.x_minus_y_passes,
                v * 100.0
            ),
        );
        svg.text(
            "text",
            &[("x", FOREST_TEXT.into()), ("y", (mid + 4.0).into())],
            &format!("{:+}/{}", d.x_minus_y_passes, d.pairs),
        );
        y += ROW;
    }
    let intervals: BTreeMap<&str, (f64, f64)> = rows
        .iter()
        .filter_map(|(task, _, pairs, _)| {
            task_interval(report, pair, task, *pairs).map(|i| (*task, i))
        })
        .collect();
    for (task, diff, pairs, value) in &rows {
        let mid = y + ROW / 2.0;
        let label = verdicts.get(task).copied().flatten();
        let interval = intervals.get(task).copied();
        let hover = format!(
            "{task}: {xn} − {yn} = {diff:+} of {}{} · verdict {} · open its trials",
            count_of(*pairs, "pair", "pairs"),
            interval.map_or_else(String::new, |(lo, hi)| format!(
                " · 95 % interval {:+.0} to {:+.0} points",
                lo * 100.0,
                hi * 100.0
            )),
            label.unwrap_or("none yet")
        );
        if let Some(interval) = interval {
            interval_line(&mut svg, &x, task, interval, mid);
        }
        svg.open(
            "a",
            &[
                ("href", "#evidence".into()),
                ("data-task", (*task).into()),
                ("data-arm", pair.x.as_str().into()),
            ],
        );
        svg.text(
            "text",
            &[
                ("x", TASK_LABEL_END.into()),
                ("y", (mid + 4.0).into()),
                ("text-anchor", "end".into()),
            ],
            &fit(task, TASK_LABEL_END - 4.0, FONT),
        );
        svg.mark(
            "circle",
            &[
                ("class", format!("dot {}", verdict_class(label)).into()),
                ("data-task", (*task).into()),
                ("data-diff", Value::Text(diff.to_string().into())),
                ("data-pairs", (*pairs).into()),
                ("cx", x.px(*value).into()),
                ("cy", mid.into()),
                ("r", 5.0.into()),
            ],
            &hover,
        );
        svg.close();
        svg.text(
            "text",
            &[
                ("class", "k".into()),
                ("x", FOREST_TEXT.into()),
                ("y", (mid + 4.0).into()),
            ],
            &format!("{diff:+}/{pairs}"),
        );
        y += ROW;
    }
    if rows.is_empty() {
        svg.text(
            "text",
            &[
                ("class", "k".into()),
                ("x", 4.0.into()),
                ("y", (TOP + 12.0).into()),
            ],
            "nothing to compare yet: no complete pair",
        );
    }
    let interval_text = |interval: Option<(f64, f64)>| {
        interval.map_or_else(
            || "—".to_owned(),
            |(lo, hi)| format!("{lo:+.6} to {hi:+.6}"),
        )
    };
    let mut table = DataTable::new(&[
        "task",
        "verdict",
        "pairs",
        "passes X − Y",
        "difference",
        "95 % interval",
    ]);
    for (task, diff, pairs, value) in &rows {
        table.rows.push(vec![
            (*task).to_owned(),
            verdicts
                .get(task)
                .copied()
                .flatten()
                .unwrap_or("—")
                .to_owned(),
            pairs.to_string(),
            format!("{diff:+}"),
            format!("{value:+.6}"),
            interval_text(intervals.get(task).copied()),
        ]);
    }
    if let Some((d, _)) = overall {
        table.rows.push(vec![
            "all pairs".to_owned(),
            "—".to_owned(),
            d.pairs.to_string(),
            format!("{:+}", d.x_minus_y_passes),
            d.value.clone(),
            interval_text(overall_interval(pair, d.pairs)),
        ]);
    }
    figure(
        svg.finish(),
        &format!(
            "{xn} − {yn} per task: each dot is a task's passes in {xn} minus passes in {yn} over its complete pairs, as a share of them (right of 0: {xn} better), coloured by the task's verdict; the diamond is all pairs together. The line through a dot is the 95 % interval of that difference of pass rates (Newcombe's method from the two Wilson intervals; with few repetitions it is wide: one task shows little on its own). Each task opens its trials. {p_line} ({}).",
            pair.test.name
        ),
        verdict_legend(&pair.contrast),
        &table,
    )
}

/// An arm's outcome counts in [`super::Summary`] order; they add up to `planned`.
fn composition(arm: &ArmSummary) -> [(Option<Outcome>, u64); 9] {
    [
        (Some(Outcome::Pass), arm.pass),
        (Some(Outcome::Fail), arm.fail),
        (Some(Outcome::InvalidOutput), arm.invalid_output),
        (Some(Outcome::UnsupportedCase), arm.unsupported_case),
        (Some(Outcome::InfrastructureError), arm.infrastructure_error),
        (Some(Outcome::Unknown), arm.unknown),
        (Some(Outcome::Interrupted), arm.interrupted),
        (Some(Outcome::NotRun), arm.not_run),
        (None, arm.pending),
    ]
}

fn outcome_name(outcome: Option<Outcome>) -> &'static str {
    outcome.map_or("no result yet", Outcome::as_str)
}

/// Outcome composition per arm: one bar per arm as long as its planned trials, split into its
/// outcome counts (`summary.arms[]`), on one scale for every arm.
pub(super) fn outcomes(report: &Report) -> String {
    const ROW: f64 = 30.0;
    const TOP: f64 = 8.0;
    let arms = &report.summary.arms;
    let most = arms.iter().map(|a| a.planned).max().unwrap_or(0);
    let x = Linear::new((0.0, most as f64), (RATE_X.0, WIDTH - 8.0));
    let height = TOP + ROW * arms.len() as f64 + 4.0;
    let desc: Vec<String> = arms
        .iter()
        .map(|a| {
            let parts: Vec<String> = composition(a)
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(o, n)| format!("{n} {}", outcome_name(*o)))
                .collect();
            format!(
                "{}: {} of {} planned",
                arm_label(&a.arm),
                if parts.is_empty() {
                    "nothing".to_owned()
                } else {
                    parts.join(", ")
                },
                a.planned
            )
        })
        .collect();
    let mut svg = Svg::chart(
        "chart-outcomes",
        "outcomes",
        (WIDTH, height),
        "Outcomes per arm",
        &desc.join("; "),
    );
    let mut table = DataTable::new(&["arm", "outcome", "trials", "of planned"]);
    for (i, arm) in arms.iter().enumerate() {
        let mid = TOP + ROW * i as f64 + ROW / 2.0;
        svg.text(
            "text",
            &[
                ("x", ARM_LABEL_END.into()),
                ("y", (mid + 4.0).into()),
                ("text-anchor", "end".into()),
            ],
            &arm_label(&arm.arm),
        );
        svg.open(
            "g",
            &[
                ("class", "stack".into()),
                ("data-arm", arm.arm.as_str().into()),
                ("data-planned", arm.planned.into()),
            ],
        );
        let mut done = 0u64;
        for (outcome, n) in composition(arm) {
            if n == 0 {
                continue;
            }
            let (x0, x1) = (x.px(done as f64), x.px((done + n) as f64));
            done += n;
            svg.mark(
                "rect",
                &[
                    ("class", format!("seg {}", outcome_class(outcome)).into()),
                    ("data-count", n.into()),
                    ("x", x0.into()),
                    ("y", (mid - 9.0).into()),
                    ("width", (x1.get() - x0.get()).into()),
                    ("height", 18.0.into()),
                ],
                &format!(
                    "{}: {n} {} of {} planned",
                    arm_label(&arm.arm),
                    outcome_name(outcome),
                    arm.planned
                ),
            );
            table.rows.push(vec![
                arm_label(&arm.arm),
                outcome_name(outcome).to_owned(),
                n.to_string(),
                arm.planned.to_string(),
            ]);
        }
        svg.close();
    }
    let legend: Vec<(&str, &str)> = [
        Some(Outcome::Pass),
        Some(Outcome::Fail),
        Some(Outcome::InvalidOutput),
        Some(Outcome::UnsupportedCase),
        Some(Outcome::InfrastructureError),
        Some(Outcome::Unknown),
        Some(Outcome::Interrupted),
        Some(Outcome::NotRun),
        None,
    ]
    .into_iter()
    .filter(|o| {
        arms.iter()
            .any(|a| composition(a).iter().any(|(k, n)| k == o && *n > 0))
    })
    .map(|o| (outcome_class(o), outcome_name(o)))
    .collect();
    figure(
        svg.finish(),
        "What became of each arm's planned trials: only pass and fail and invalid output are the model's scored answers; the rest never reached a verdict.",
        &legend,
        &table,
    )
}

/// Model time per arm: the latency of the attempts with a result, summed per arm exactly as
/// `cost.model_latency_ms` sums them for the run (so the arms add up to it).
/// In the order of the summary's arms (baseline, A, B), as every other chart shows them.
fn model_ms_by_arm(report: &Report) -> Vec<(&str, u64)> {
    let mut by_arm: Vec<(&str, u64)> = report
        .summary
        .arms
        .iter()
        .map(|a| (a.arm.as_str(), 0))
        .collect();
    for trial in &report.trials {
        let ms: u64 = trial
            .attempts
            .iter()
            .filter(|a| a.state == AttemptState::Result)
            .filter_map(|a| a.latency_ms)
            .sum();
        match by_arm.iter_mut().find(|(arm, _)| *arm == trial.arm) {
            Some((_, total)) => *total += ms,
            None => by_arm.push((trial.arm.as_str(), ms)),
        }
    }
    by_arm
}

/// `cost.spent_by_arm_usd_micros` in the order of the summary's arms, then any other.
fn spent_by_arm(report: &Report) -> Vec<(&String, &u64)> {
    let spent = &report.cost.spent_by_arm_usd_micros;
    let position = |arm: &str| {
        report
            .summary
            .arms
            .iter()
            .position(|a| a.arm == arm)
            .unwrap_or(usize::MAX)
    };
    let mut out: Vec<(&String, &u64)> = spent.iter().collect();
    out.sort_by_key(|(arm, _)| position(arm));
    out
}

/// Horizontal bars of one quantity per row on one scale: (label, class, value, value text,
/// hover).
fn bars(id: &str, title: &str, desc: &str, rows: &[(String, &str, u64, String, String)]) -> String {
    const ROW: f64 = 26.0;
    let most = rows.iter().map(|r| r.2).max().unwrap_or(0).max(1);
    let x = Linear::new((0.0, most as f64), RATE_X);
    let height = ROW * rows.len() as f64 + 8.0;
    let mut svg = Svg::chart(id, "bars", (WIDTH, height), title, desc);
    for (i, (label, class, value, text, hover)) in rows.iter().enumerate() {
        let mid = 4.0 + ROW * i as f64 + ROW / 2.0;
        svg.text(
            "text",
            &[
                ("x", ARM_LABEL_END.into()),
                ("y", (mid + 4.0).into()),
                ("text-anchor", "end".into()),
            ],
            label,
        );
        let x0 = x.px(0.0);
        svg.leaf(
            "rect",
            &[
                ("class", "track".into()),
                ("x", x0.into()),
                ("y", (mid - 7.0).into()),
                ("width", (x.px(most as f64).get() - x0.get()).into()),
                ("height", 14.0.into()),
            ],
        );
        svg.mark(
            "rect",
            &[
                ("class", format!("bar {class}").into()),
                ("data-value", (*value).into()),
                ("x", x0.into()),
                ("y", (mid - 7.0).into()),
                ("width", (x.px(*value as f64).get() - x0.get()).into()),
                ("height", 14.0.into()),
            ],
            hover,
        );
        svg.text(
            "text",
            &[("x", RATE_TEXT.into()), ("y", (mid + 4.0).into())],
            text,
        );
    }
    svg.finish()
}

/// The run's money on one bar: each arm's spend, then what is still reserved, then what the cap
/// leaves (`cost.spent_by_arm_usd_micros`, `cost.reserved_usd_micros`, `cost.cap_usd_micros`).
fn budget(report: &Report) -> String {
    let cost = &report.cost;
    let usd = |m: u64| MicroUsd(m).to_string();
    let used = cost
        .spent_by_arm_usd_micros
        .values()
        .fold(0u64, |sum, m| sum.saturating_add(*m))
        .saturating_add(cost.reserved_usd_micros);
    let whole = cost.cap_usd_micros.unwrap_or(0).max(used).max(1);
    let x = Linear::new((0.0, whole as f64), (4.0, WIDTH - 4.0));
    let mut parts: Vec<(String, String, u64, String)> = spent_by_arm(report)
        .into_iter()
        .map(|(arm, m)| {
            (
                format!("{} spent", arm_label(arm)),
                format!("seg spent {}", arm_class(arm)),
                *m,
                format!("{} spent {}", arm_label(arm), usd(*m)),
            )
        })
        .collect();
    parts.push((
        "still reserved".to_owned(),
        "seg reserved".to_owned(),
        cost.reserved_usd_micros,
        format!(
            "{} still reserved by attempts with no known result",
            usd(cost.reserved_usd_micros)
        ),
    ));
    if let Some(cap) = cost.cap_usd_micros {
        parts.push((
            "left under the cap".to_owned(),
            "seg track".to_owned(),
            cap.saturating_sub(used),
            format!(
                "{} left under the {} cap",
                usd(cap.saturating_sub(used)),
                usd(cap)
            ),
        ));
    }
    let summary = format!(
        "{} spent ({}) and {} still reserved{}",
        usd(cost.spent_usd_micros),
        spent_by_arm(report)
            .into_iter()
            .map(|(a, m)| format!("{} {}", arm_label(a), usd(*m)))
            .collect::<Vec<_>>()
            .join(", "),
        usd(cost.reserved_usd_micros),
        cost.cap_usd_micros
            .map_or_else(String::new, |c| format!(", of a {} cap", usd(c)))
    );
    let mut svg = Svg::chart(
        "chart-budget",
        "stacks",
        (WIDTH, 30.0),
        "Spent and reserved against the cap",
        &summary,
    );
    let mut done = 0u64;
    let mut table = DataTable::new(&["what", "USD", "micro-USD"]);
    for (label, class, m, hover) in &parts {
        table.rows.push(vec![label.clone(), usd(*m), m.to_string()]);
        if *m == 0 {
            continue;
        }
        let (x0, x1) = (x.px(done as f64), x.px(done.saturating_add(*m) as f64));
        done = done.saturating_add(*m);
        svg.mark(
            "rect",
            &[
                ("class", class.as_str().into()),
                ("data-micros", (*m).into()),
                ("x", x0.into()),
                ("y", 4.0.into()),
                ("width", (x1.get() - x0.get()).into()),
                ("height", 22.0.into()),
            ],
            hover,
        );
    }
    figure(
        svg.finish(),
        &format!(
            "{summary}. The run's money on one bar: what each arm spent (model usage at cost), what attempts with no known result still hold in reserve, and what the cap leaves."
        ),
        &[
            ("arm-baseline", "baseline"),
            ("arm-a", "A"),
            ("arm-b", "B"),
            ("reserved", "still reserved"),
        ],
        &table,
    )
}

/// Cost and time: the budget bar, spend per arm on its own scale, then model time per arm.
pub(super) fn cost_and_time(report: &Report) -> String {
    let cost = &report.cost;
    let usd = |m: u64| MicroUsd(m).to_string();
    let mut h = budget(report);
    let spent_rows: Vec<(String, &str, u64, String, String)> = spent_by_arm(report)
        .into_iter()
        .map(|(arm, m)| {
            (
                arm_label(arm),
                arm_class(arm),
                *m,
                usd(*m),
                format!("{} spent {}", arm_label(arm), usd(*m)),
            )
        })
        .collect();
    let mut spent_table = DataTable::new(&["arm", "spent (USD)", "micro-USD"]);
    for (arm, m) in spent_by_arm(report) {
        spent_table
            .rows
            .push(vec![arm_label(arm), usd(*m), m.to_string()]);
    }
    h.push_str(&figure(
        bars(
            "chart-spent",
            "Spent per arm",
            &format!(
                "Spent per arm: {}.",
                spent_rows
                    .iter()
                    .map(|r| format!("{} {}", r.0, r.3))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            &spent_rows,
        ),
        "Spent per arm, on a scale of its own: a skill's text makes every request longer, and this is what that cost.",
        &[],
        &spent_table,
    ));
    let by_arm = model_ms_by_arm(report);
    let time_rows: Vec<(String, &str, u64, String, String)> = by_arm
        .iter()
        .map(|(arm, ms)| {
            (
                arm_label(arm),
                arm_class(arm),
                *ms,
                format!("{ms} ms"),
                format!("{}: model latency {ms} ms", arm_label(arm)),
            )
        })
        .collect();
    let mut time_table = DataTable::new(&["arm", "model latency (ms)"]);
    for (arm, ms) in &by_arm {
        time_table.rows.push(vec![arm_label(arm), ms.to_string()]);
    }
    time_table.rows.push(vec![
        "all arms".to_owned(),
        cost.model_latency_ms.to_string(),
    ]);
    h.push_str(&figure(
        bars(
            "chart-time",
            "Model time per arm",
            &format!(
                "Model latency per arm: {}; {} ms in all.",
                by_arm
                    .iter()
                    .map(|(a, ms)| format!("{} {ms} ms", arm_label(a)))
                    .collect::<Vec<_>>()
                    .join(", "),
                cost.model_latency_ms
            ),
            &time_rows,
        ),
        "Model time per arm: the latency of every attempt with a result, summed per arm (the arms add up to the run's model latency). The runner's own time is not split by arm.",
        &[],
        &time_table,
    ));
    h
}

/// Repetitions per task (only with k > 1): a grid of one cell per trial, task by arm by
/// repetition, coloured by its outcome and linked to its trials, with each arm's passes beside
/// it; a ✓ marks a task the arm passed in every repetition (what pass^k counts).
pub(super) fn repetitions(report: &Report) -> Option<String> {
    let k = report.manifest.repetitions;
    if k < 2 {
        return None;
    }
    const ROW: f64 = 18.0;
    const TOP: f64 = 20.0;
    let arms: Vec<&str> = report
        .manifest
        .arms
        .iter()
        .map(|a| a.arm.as_str())
        .collect();
    let outcomes: BTreeMap<(&str, &str, u32), TrialOutcome> = report
        .trials
        .iter()
        .map(|t| ((t.task.as_str(), t.arm.as_str(), t.repetition), t.outcome))
        .collect();
    let cell = ((WIDTH - FOREST_X.0) / arms.len().max(1) as f64 - 26.0) / f64::from(k);
    // Squares shrink with k so every arm's group fits the width; a gap of one unit between them
    // while they are big enough to have one.
    let cell = cell.clamp(0.5, 14.0);
    let side = if cell >= 4.0 { cell - 1.0 } else { cell };
    let group = cell * f64::from(k) + 26.0;
    let height = TOP + ROW * report.tasks.len() as f64 + 6.0;
    let desc: Vec<String> = report
        .summary
        .arms
        .iter()
        .map(|a| match &a.consistency {
            Some(c) => format!("{}: {}", arm_label(&a.arm), c.text()),
            None => format!(
                "{}: {} of {} executed trials passed",
                arm_label(&a.arm),
                a.pass,
                a.executed
            ),
        })
        .collect();
    let mut svg = Svg::chart(
        "chart-repetitions",
        "grid",
        (WIDTH, height),
        &format!("Each task's {k} repetitions per arm"),
        &desc.join("; "),
    );
    for (j, arm) in arms.iter().enumerate() {
        svg.text(
            "text",
            &[
                ("class", "k".into()),
                ("x", (FOREST_X.0 + group * j as f64).into()),
                ("y", (TOP - 6.0).into()),
            ],
            &arm_label(arm),
        );
    }
    let mut table = DataTable::new(&[
        "task",
        "arm",
        "passes",
        "executed",
        "every repetition passed",
    ]);
    for (i, row) in report.tasks.iter().enumerate() {
        let mid = TOP + ROW * i as f64 + ROW / 2.0;
        svg.text(
            "text",
            &[
                ("x", TASK_LABEL_END.into()),
                ("y", (mid + 4.0).into()),
                ("text-anchor", "end".into()),
            ],
            &fit(&row.task, TASK_LABEL_END - 4.0, FONT),
        );
        for (j, arm) in arms.iter().enumerate() {
            let left = FOREST_X.0 + group * j as f64;
            let counts = row.arms.get(*arm).copied().unwrap_or(TaskArm {
                pass: 0,
                executed: 0,
            });
            let every = counts.executed == u64::from(k) && counts.pass == counts.executed;
            svg.open(
                "a",
                &[
                    ("href", "#evidence".into()),
                    ("data-task", row.task.as_str().into()),
                    ("data-arm", (*arm).into()),
                ],
            );
            for rep in 1..=k {
                let outcome = outcomes.get(&(row.task.as_str(), *arm, rep));
                let class = match outcome {
                    Some(TrialOutcome::Done(o)) => outcome_class(Some(*o)),
                    _ => outcome_class(None),
                };
                svg.mark(
                    "rect",
                    &[
                        ("class", format!("cell {class}").into()),
                        ("x", (left + cell * f64::from(rep - 1)).into()),
                        ("y", (mid - cell / 2.0).into()),
                        ("width", side.into()),
                        ("height", side.into()),
                    ],
                    &format!(
                        "{} · {} · repetition {rep}: {}",
                        row.task,
                        arm_label(arm),
                        outcome.map_or("not planned", |o| o.as_str())
                    ),
                );
            }
            svg.close();
            svg.text(
                "text",
                &[
                    ("class", "k".into()),
                    ("x", (left + cell * f64::from(k) + 3.0).into()),
                    ("y", (mid + 4.0).into()),
                ],
                &format!("{}{}", counts.pass, if every { "✓" } else { "" }),
            );
            table.rows.push(vec![
                row.task.clone(),
                arm_label(arm),
                counts.pass.to_string(),
                counts.executed.to_string(),
                if every { "yes" } else { "no" }.to_owned(),
            ]);
        }
    }
    Some(figure(
        svg.finish(),
        &format!(
            "Each task's {k} repetitions in each arm, one square per trial coloured by its outcome; the number is the passes, ✓ when all {k} passed (what pass^{k} counts). Each group opens its trials."
        ),
        &[
            (outcome_class(Some(Outcome::Pass)), "pass"),
            (outcome_class(Some(Outcome::Fail)), "fail"),
            (
                outcome_class(Some(Outcome::InvalidOutput)),
                "invalid output",
            ),
            (outcome_class(None), "no result yet"),
        ],
        &table,
    ))
}

/// Activation (progressive runs): the rate per arm with its Wilson interval, then per task and
/// arm the trials that loaded and passed, loaded and failed, loaded unscored, and did not load.
pub(super) fn activation(activation: &Activation) -> String {
    let rows: Vec<RateRow<'_>> = activation
        .arms
        .iter()
        .map(|a| RateRow {
            arm: &a.arm,
            what: if a.skill.is_some() {
                "loaded its skill"
            } else {
                "loaded another skill"
            },
            rate: a.rate.as_ref(),
        })
        .collect();
    let mut h = figure(
        rate_chart("chart-activation", "Activation per arm", &rows),
        "Activation per arm: the share of trials that loaded the arm's skill (the baseline: any skill), with its 95% Wilson interval.",
        &[],
        &rate_table(&rows, "loaded"),
    );
    // Per task: one stacked bar per arm, as long as the task's trials with evidence.
    const ROW: f64 = 14.0;
    const GAP: f64 = 8.0;
    let arms: Vec<&str> = activation.arms.iter().map(|a| a.arm.as_str()).collect();
    let most = activation
        .tasks
        .iter()
        .flat_map(|t| t.arms.values())
        .map(|l| l.loaded_passed + l.loaded_failed + l.loaded_unscored + l.not_loaded)
        .max()
        .unwrap_or(0);
    let x = Linear::new((0.0, most.max(1) as f64), (FOREST_X.0, WIDTH - 8.0));
    let band = ROW * arms.len() as f64 + GAP;
    let height = band * activation.tasks.len() as f64 + 6.0;
    let mut svg = Svg::chart(
        "chart-activation-tasks",
        "stacks",
        (WIDTH, height),
        "Loading per task and arm",
        "Per task and arm: trials that loaded the skill and passed, loaded and failed, loaded with no scored answer, and did not load; the data table lists every count.",
    );
    let mut table = DataTable::new(&[
        "task",
        "arm",
        "loaded, passed",
        "loaded, failed",
        "loaded, unscored",
        "not loaded",
    ]);
    for (i, task) in activation.tasks.iter().enumerate() {
        let top = 4.0 + band * i as f64;
        svg.text(
            "text",
            &[
                ("x", TASK_LABEL_END.into()),
                ("y", (top + ROW * arms.len() as f64 / 2.0 + 4.0).into()),
                ("text-anchor", "end".into()),
            ],
            &fit(&task.task, TASK_LABEL_END - 4.0, FONT),
        );
        for (j, arm) in arms.iter().enumerate() {
            let Some(l) = task.arms.get(*arm) else {
                continue;
            };
            let y = top + ROW * j as f64;
            svg.open(
                "a",
                &[
                    ("href", "#evidence".into()),
                    ("data-task", task.task.as_str().into()),
                    ("data-arm", (*arm).into()),
                ],
            );
            let mut done = 0u64;
            for (n, class, what) in [
                (l.loaded_passed, "o-pass", "loaded and passed"),
                (l.loaded_failed, "o-fail", "loaded and failed"),
                (l.loaded_unscored, "o-unknown", "loaded, no scored answer"),
                (l.not_loaded, "o-not_run", "did not load"),
            ] {
                if n == 0 {
                    continue;
                }
                let (x0, x1) = (x.px(done as f64), x.px((done + n) as f64));
                done += n;
                svg.mark(
                    "rect",
                    &[
                        ("class", format!("seg {class}").into()),
                        ("data-count", n.into()),
                        ("x", x0.into()),
                        ("y", (y + 1.0).into()),
                        ("width", (x1.get() - x0.get()).into()),
                        ("height", (ROW - 2.0).into()),
                    ],
                    &format!("{} · {}: {n} {what}", task.task, arm_label(arm)),
                );
            }
            svg.close();
            table.rows.push(vec![
                task.task.clone(),
                arm_label(arm),
                l.loaded_passed.to_string(),
                l.loaded_failed.to_string(),
                l.loaded_unscored.to_string(),
                l.not_loaded.to_string(),
            ]);
        }
    }
    h.push_str(&figure(
        svg.finish(),
        &format!(
            "Per task, one bar per arm ({}, top to bottom): its trials by loading and outcome. Each bar opens its trials.",
            arms.iter().map(|a| arm_label(a)).collect::<Vec<_>>().join(", ")
        ),
        &[
            ("o-pass", "loaded, passed"),
            ("o-fail", "loaded, failed"),
            ("o-unknown", "loaded, unscored"),
            ("o-not_run", "not loaded"),
        ],
        &table,
    ));
    h
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::testing::{progressive, rich};
    use super::super::{Report, html};
    use super::*;
    use crate::svg::xml::{Element, parse};

    /// Every chart in a rendered page, by id, each parsed strictly (so each proves its escaping).
    fn charts_of(page: &str) -> BTreeMap<String, Element> {
        let mut out = BTreeMap::new();
        let mut rest = page;
        while let Some(start) = rest.find("<svg") {
            let end = rest[start..].find("</svg>").expect("a closed svg") + start + 6;
            let svg = parse(&rest[start..end]).unwrap_or_else(|e| panic!("{e}"));
            out.insert(svg.attr("id").to_owned(), svg);
            rest = &rest[end..];
        }
        out
    }

    fn partial() -> Report {
        Report::from_json(include_str!("../../tests/fixtures/report-v2-partial.json"))
            .expect("the fixture is a v2 report")
    }

    /// Tasks where some repetition has a model result in both arms, counted from the trials.
    fn tasks_with_a_complete_pair(report: &Report, x: &str, y: &str) -> BTreeSet<String> {
        let executed = |arm: &str, task: &str, rep: u32| {
            report.trials.iter().any(|t| {
                t.arm == arm && t.task == task && t.repetition == rep && t.outcome.is_executed()
            })
        };
        report
            .trials
            .iter()
            .filter(|t| executed(x, &t.task, t.repetition) && executed(y, &t.task, t.repetition))
            .map(|t| t.task.clone())
            .collect()
    }

    #[test]
    fn a_forest_has_one_dot_per_task_with_a_complete_pair_where_its_difference_is() {
        for report in [rich(), partial(), progressive()] {
            let page = html::render(&report);
            let charts = charts_of(&page);
            for pair in &report.pairs {
                let svg = &charts[&format!("chart-forest-{}", pair.contrast)];
                let dots: Vec<&Element> = svg
                    .all("circle")
                    .into_iter()
                    .filter(|c| c.has_class("dot"))
                    .collect();
                // Then the dots are exactly the tasks with a complete pair ...
                let tasks: BTreeSet<String> = dots
                    .iter()
                    .map(|d| d.attr("data-task").to_owned())
                    .collect();
                assert_eq!(
                    dots.len(),
                    tasks.len(),
                    "{}: a task drawn twice",
                    pair.contrast
                );
                assert_eq!(
                    tasks,
                    tasks_with_a_complete_pair(&report, &pair.x, &pair.y),
                    "{}",
                    pair.contrast
                );
                let x = Linear::new((-1.0, 1.0), FOREST_X);
                let mut previous = f64::INFINITY;
                for dot in &dots {
                    let row = pair
                        .per_task
                        .iter()
                        .find(|t| t.task == dot.attr("data-task"))
                        .unwrap();
                    // ... each where its passes difference over its pairs puts it ...
                    let value = row.x_minus_y_passes as f64 / row.pairs as f64;
                    assert_eq!(dot.attr("cx"), x.px(value).to_string(), "{}", row.task);
                    // ... sorted from the largest gain down ...
                    assert!(value <= previous, "{}: not sorted", pair.contrast);
                    previous = value;
                    // ... coloured by the task's verdict for this contrast.
                    let verdict = report
                        .tasks
                        .iter()
                        .find(|t| t.task == row.task)
                        .and_then(|t| t.verdicts.get(verdict_key(&pair.contrast)));
                    assert!(dot.has_class(verdict_class(verdict)), "{}", row.task);
                }
                // The exact and Holm-adjusted p are written beside the contrast.
                let p_line: String = svg
                    .all("text")
                    .into_iter()
                    .filter(|t| t.has_class("p"))
                    .map(|t| t.text())
                    .collect::<Vec<_>>()
                    .join(" · ");
                if let (Some(p), Some(h)) = (&pair.test.p, &pair.test.holm_p) {
                    assert!(
                        p_line.contains(&format!("p = {}", p_words(Some(p)))),
                        "{p_line}"
                    );
                    assert!(p_line.contains(&format!("Holm-adjusted {}", p_words(Some(h)))));
                }
            }
        }
    }

    #[test]
    fn newcombes_interval_holds_the_difference_and_matches_known_values() {
        // 3/3 against 0/3 (Wilson 0.438503–1 and 0–0.561497): d = 1, from 1 − √(0.561² +
        // 0.561²) to 1.
        let x = rate_parts(&Rate::of(3, 3).unwrap()).unwrap();
        let y = rate_parts(&Rate::of(0, 3).unwrap()).unwrap();
        let (lo, hi) = difference_interval(x, y);
        assert!(
            (lo - (1.0 - (2.0 * 0.561_497_f64.powi(2)).sqrt())).abs() < 1e-9,
            "{lo}"
        );
        assert!((hi - 1.0).abs() < 1e-12, "{hi}");
        // Equal rates: symmetric around 0; every interval holds its difference.
        let half = rate_parts(&Rate::of(1, 2).unwrap()).unwrap();
        let (lo, hi) = difference_interval(half, half);
        assert!((lo + hi).abs() < 1e-12 && lo < 0.0);
        for (a, b, n) in [(0, 0, 1), (1, 0, 1), (2, 1, 3), (5, 9, 10), (0, 7, 7)] {
            let (x, y) = (
                rate_parts(&Rate::of(a, n).unwrap()).unwrap(),
                rate_parts(&Rate::of(b, n).unwrap()).unwrap(),
            );
            let (lo, hi) = difference_interval(x, y);
            let d = x.0 - y.0;
            assert!(
                (-1.0..=d).contains(&lo) && (d..=1.0).contains(&hi),
                "{a} {b} {n}"
            );
        }
    }

    #[test]
    fn each_task_line_spans_its_interval_from_the_reports_counts() {
        let mut drawn = 0;
        for report in [rich(), partial(), progressive()] {
            let charts = charts_of(&html::render(&report));
            let x = Linear::new((-1.0, 1.0), FOREST_X);
            for pair in &report.pairs {
                let svg = &charts[&format!("chart-forest-{}", pair.contrast)];
                let lines: BTreeMap<String, &Element> = svg
                    .all("line")
                    .into_iter()
                    .filter(|l| l.has_class("interval"))
                    .map(|l| (l.attr("data-task").to_owned(), l))
                    .collect();
                for row in pair.per_task.iter().filter(|t| t.pairs > 0) {
                    let counts = &report
                        .tasks
                        .iter()
                        .find(|t| t.task == row.task)
                        .unwrap()
                        .arms;
                    let (a, b) = (&counts[&pair.x], &counts[&pair.y]);
                    let line = lines.get(&row.task);
                    // A task whose arms executed exactly its pairs has its line, where the
                    // two arms' Wilson intervals put it; any other has none.
                    if a.executed != row.pairs || b.executed != row.pairs {
                        assert!(line.is_none(), "{}: {}", pair.contrast, row.task);
                        continue;
                    }
                    let line = line.unwrap_or_else(|| panic!("{}: no line", row.task));
                    let (lo, hi) = difference_interval(
                        rate_parts(&Rate::of(a.pass, a.executed).unwrap()).unwrap(),
                        rate_parts(&Rate::of(b.pass, b.executed).unwrap()).unwrap(),
                    );
                    assert_eq!(line.attr("x1"), x.px(lo).to_string(), "{}", row.task);
                    assert_eq!(line.attr("x2"), x.px(hi).to_string(), "{}", row.task);
                    let value = row.x_minus_y_passes as f64 / row.pairs as f64;
                    assert!(lo <= value + 1e-9 && value <= hi + 1e-9, "{}", row.task);
                    drawn += 1;
                }
                // The diamond's line is the pair's own pass rates' interval.
                if let (Some(d), Some(xr), Some(yr)) = (
                    &pair.observed_difference,
                    &pair.x_pass_rate,
                    &pair.y_pass_rate,
                ) && xr.den == d.pairs
                    && yr.den == d.pairs
                {
                    let (lo, hi) =
                        difference_interval(rate_parts(xr).unwrap(), rate_parts(yr).unwrap());
                    assert_eq!(lines[""].attr("x1"), x.px(lo).to_string());
                    assert_eq!(lines[""].attr("x2"), x.px(hi).to_string());
                }
            }
        }
        assert!(
            drawn > 10,
            "only {drawn} task lines drawn: the fixtures test nothing"
        );
    }

    #[test]
    fn each_task_dot_links_to_that_tasks_trials_in_the_evidence_view() {
        let report = rich();
        let charts = charts_of(&html::render(&report));
        let forest = &charts["chart-forest-b-a"];
        let links = forest.all("a");
        assert!(!links.is_empty());
        for link in links {
            assert_eq!(link.attr("href"), "#evidence");
            assert_eq!(link.attr("data-arm"), "b");
            let dot = link.all("circle")[0];
            assert_eq!(link.attr("data-task"), dot.attr("data-task"));
        }
    }

    #[test]
    fn success_bars_end_at_the_rate_and_whiskers_at_the_wilson_bounds() {
        for report in [rich(), partial(), progressive()] {
            let charts = charts_of(&html::render(&report));
            let svg = &charts["chart-success"];
            let x = Linear::new((0.0, 1.0), RATE_X);
            let groups: Vec<&Element> = svg
                .all("g")
                .into_iter()
                .filter(|g| g.has_class("rate"))
                .collect();
            let with_rate: Vec<&ArmSummary> = report
                .summary
                .arms
                .iter()
                .filter(|a| a.success.is_some())
                .collect();
            assert_eq!(groups.len(), with_rate.len());
            for (g, arm) in groups.iter().zip(with_rate) {
                let rate = arm.success.as_ref().unwrap();
                assert_eq!(g.attr("data-arm"), arm.arm);
                // The report's bounds are Wilson's for the arm's counts ...
                let (lo, hi) = crate::stats::wilson95(arm.pass, arm.executed).unwrap();
                let json = |i: usize| rate.wilson95[i].parse::<f64>().unwrap();
                assert!((json(0) - lo).abs() < 5e-7 && (json(1) - hi).abs() < 5e-7);
                // ... and the whisker's ends are those bounds through the pixel rule.
                let find = |class: &str| {
                    g.all("line")
                        .into_iter()
                        .find(|l| l.has_class(class))
                        .unwrap()
                };
                assert_eq!(find("ci-lo").attr("x1"), x.px(json(0)).to_string());
                assert_eq!(find("ci-hi").attr("x1"), x.px(json(1)).to_string());
                assert_eq!(find("ci").attr("x1"), x.px(json(0)).to_string());
                assert_eq!(find("ci").attr("x2"), x.px(json(1)).to_string());
                let bar = g.all("rect")[0];
                let end: f64 = bar.attr("x").parse::<f64>().unwrap()
                    + bar.attr("width").parse::<f64>().unwrap();
                let want = x.px(rate.value.parse().unwrap()).get();
                assert!((end - want).abs() < 0.051, "bar ends at {end}, not {want}");
                assert!(
                    bar.title()
                        .unwrap()
                        .contains(&format!("{} of {}", arm.pass, arm.executed))
                );
            }
        }
    }

    #[test]
    fn stacked_outcome_segments_add_up_to_each_arms_trials() {
        for report in [rich(), partial(), progressive()] {
            let charts = charts_of(&html::render(&report));
            let stacks: Vec<&Element> = charts["chart-outcomes"]
                .all("g")
                .into_iter()
                .filter(|g| g.has_class("stack"))
                .collect();
            assert_eq!(stacks.len(), report.summary.arms.len());
            for stack in stacks {
                let arm = stack.attr("data-arm");
                let trials: Vec<&super::super::Trial> =
                    report.trials.iter().filter(|t| t.arm == arm).collect();
                let mut sum = 0u64;
                for seg in stack.all("rect") {
                    let n: u64 = seg.attr("data-count").parse().unwrap();
                    sum += n;
                    // Each segment counts the trials with its outcome, read from the trials.
                    let class = seg
                        .attr("class")
                        .split_whitespace()
                        .find(|c| c.starts_with("o-"))
                        .unwrap()
                        .to_owned();
                    let counted = trials
                        .iter()
                        .filter(|t| {
                            let outcome = match t.outcome {
                                TrialOutcome::Done(o) => Some(o),
                                TrialOutcome::Pending => None,
                            };
                            outcome_class(outcome) == class
                        })
                        .count() as u64;
                    assert_eq!(n, counted, "{arm} {class}");
                }
                assert_eq!(sum, trials.len() as u64, "{arm}");
                assert_eq!(stack.attr("data-planned"), sum.to_string());
            }
        }
    }

    #[test]
    fn the_repetition_grid_has_a_cell_per_trial_and_appears_only_with_repetitions() {
        let report = partial();
        let charts = charts_of(&html::render(&report));
        let cells: Vec<&Element> = charts["chart-repetitions"]
            .all("rect")
            .into_iter()
            .filter(|r| r.has_class("cell"))
            .collect();
        assert_eq!(cells.len(), report.trials.len());
        let passes = cells.iter().filter(|c| c.has_class("o-pass")).count();
        let passed = report
            .trials
            .iter()
            .filter(|t| t.outcome == TrialOutcome::Done(Outcome::Pass))
            .count();
        assert_eq!(passes, passed);
        assert!(!charts_of(&html::render(&rich())).contains_key("chart-repetitions"));
    }

    #[test]
    fn the_repetition_grid_fits_the_width_however_many_repetitions() {
        for k in [2, 3, 10, 25, 60] {
            let mut report = partial();
            report.manifest.repetitions = k;
            let grid = parse(
                &repetitions(&report)
                    .unwrap()
                    .split("<figcaption>")
                    .next()
                    .unwrap()["<figure class=\"chart\">".len()..],
            )
            .unwrap();
            for cell in grid.all("rect") {
                let right = cell.attr("x").parse::<f64>().unwrap()
                    + cell.attr("width").parse::<f64>().unwrap();
                assert!(right <= WIDTH, "k = {k}: a square ends at {right}");
            }
        }
    }

    #[test]
    fn activation_charts_draw_the_reports_activation_numbers() {
        let report = progressive();
        let activation = report.activation.as_ref().unwrap();
        let charts = charts_of(&html::render(&report));
        let x = Linear::new((0.0, 1.0), RATE_X);
        for g in charts["chart-activation"]
            .all("g")
            .into_iter()
            .filter(|g| g.has_class("rate"))
        {
            let rate = activation
                .arm(g.attr("data-arm"))
                .unwrap()
                .rate
                .as_ref()
                .unwrap();
            let lo = g
                .all("line")
                .into_iter()
                .find(|l| l.has_class("ci-lo"))
                .unwrap();
            assert_eq!(
                lo.attr("x1"),
                x.px(rate.wilson95[0].parse().unwrap()).to_string()
            );
        }
        let bars = charts["chart-activation-tasks"].all("a");
        let expected: usize = activation.tasks.iter().map(|t| t.arms.len()).sum();
        assert_eq!(bars.len(), expected);
        for bar in bars {
            let task = activation
                .tasks
                .iter()
                .find(|t| t.task == bar.attr("data-task"))
                .unwrap();
            let l = task.arms[bar.attr("data-arm")];
            let sum: u64 = bar
                .all("rect")
                .iter()
                .map(|r| r.attr("data-count").parse::<u64>().unwrap())
                .sum();
            assert_eq!(
                sum,
                l.loaded_passed + l.loaded_failed + l.loaded_unscored + l.not_loaded
            );
        }
        assert!(!charts_of(&html::render(&rich())).contains_key("chart-activation"));
    }

    #[test]
    fn money_and_time_add_up_to_the_reports_totals() {
        let report = rich();
        let charts = charts_of(&html::render(&report));
        let budget: Vec<u64> = charts["chart-budget"]
            .all("rect")
            .iter()
            .map(|r| r.attr("data-micros").parse().unwrap())
            .collect();
        let cost = &report.cost;
        let cap = cost.cap_usd_micros.unwrap();
        assert_eq!(budget.iter().sum::<u64>(), cap);
        assert_eq!(
            budget[..budget.len() - 2].iter().sum::<u64>(),
            cost.spent_usd_micros
        );
        let time: u64 = charts["chart-time"]
            .all("rect")
            .iter()
            .filter(|r| r.has_class("bar"))
            .map(|r| r.attr("data-value").parse::<u64>().unwrap())
            .sum();
        assert_eq!(time, cost.model_latency_ms);
    }

    #[test]
    fn every_chart_is_an_image_with_a_text_alternative_and_a_data_table() {
        for report in [rich(), partial(), progressive()] {
            let page = html::render(&report);
            let charts = charts_of(&page);
            assert!(charts.len() >= 6, "{:?}", charts.keys());
            for (id, svg) in &charts {
                assert_eq!(svg.attr("role"), "img", "{id}");
                assert_eq!(svg.attr("width"), "100%", "{id}");
                assert_eq!(svg.attr("aria-labelledby"), format!("{id}-title {id}-desc"));
                assert!(!svg.all("desc")[0].text().is_empty(), "{id}");
                // Every mark with a colour has hover text.
                for mark in svg.descendants() {
                    if ["rect", "circle", "path"].contains(&mark.name.as_str())
                        && !mark.has_class("track")
                    {
                        assert!(
                            mark.title().is_some(),
                            "{id}: a {} without a title",
                            mark.name
                        );
                    }
                }
                // The figure goes on with its caption and its data table.
                let after = &page[page.find(&format!("id=\"{id}\"")).unwrap()..];
                let after = &after[after.find("</svg>").unwrap()..];
                assert!(
                    after.starts_with("</svg><figcaption>")
                        && after
                            .find("<details class=\"data\"><summary>Data table</summary><table>")
                            < after.find("</figure>"),
                    "{id}"
                );
            }
        }
    }

    #[test]
    fn hostile_task_names_stay_text_inside_the_charts() {
        // Given a report whose task names are markup, quotes, a CDATA end and control characters ...
        const HOSTILE: &str =
            "</text></svg><script>alert(1)</script><img src=x onerror=alert(2)>\"' ]]>\u{1}&amp;";
        let json = serde_json::to_string(&rich()).unwrap();
        let name = "plan-t22-fee-memo";
        let escaped = serde_json::to_string(HOSTILE).unwrap();
        let report = Report::from_json(&json.replace(&format!("\"{name}\""), &escaped)).unwrap();
        assert!(report.tasks.iter().any(|t| t.task == HOSTILE));
        // ... when the page is rendered, every chart still parses strictly (no element the name
        // tried to open or close) and the name reads back as text, control character replaced.
        let page = html::render(&report);
        let charts = charts_of(&page);
        let shown = HOSTILE.replace('\u{1}', "\u{FFFD}");
        let mut seen = 0;
        for svg in charts.values() {
            for e in svg.descendants() {
                assert!(!["script", "img", "foreignObject"].contains(&e.name.as_str()));
                if e.attr("data-task") == shown {
                    seen += 1;
                }
            }
        }
        assert!(
            seen >= 6,
            "the hostile task is drawn in all three forests, link and dot: {seen}"
        );
        assert!(!page.contains("<script>alert"));
        assert!(!page.contains("<img src=x"));
    }
}
