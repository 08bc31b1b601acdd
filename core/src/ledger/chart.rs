//! The ledger's success-over-runs charts: one SVG per [`RunGroup`], so runs measured
//! differently never share an axis.
//!
//! Each run is a row (grouped under its model, oldest first), each arm a dot at its success
//! with a bar across its Wilson 95% interval. The horizontal scale is [`X`]: a rate `v` (the
//! report's six-decimal string, parsed) is drawn at `x = 150 + v × 180` in the chart's own units,
//! written with one decimal — so a mark's position is the report's value to ±0.05 unit. Every
//! text from a run (model names) is escaped for XML and shown with control characters visible.

use super::{RunGroup, RunPoint, arm_words, percent};
use crate::bundle::display_safe;
use crate::svg::{Linear, Px, Svg, arm_class, fit};

/// The chart's width in its own units (its `viewBox`); the page scales it to the column.
pub const WIDTH: f64 = 340.0;
/// Where 0% and 100% fall, in the chart's units.
pub const X: (f64, f64) = (150.0, 330.0);
/// The height of a model's heading line and of one run's row.
const MODEL_LINE: f64 = 18.0;
const RUN_ROW: f64 = 32.0;
/// The space above the first model: the legend and the axis labels.
const TOP: f64 = 40.0;

/// The horizontal scale: a rate in [0, 1] onto [`X`].
pub fn x_scale() -> Linear {
    Linear::new((0.0, 1.0), X)
}

/// A rate's x position as written: [`x_scale`] by the pixel rule of [`crate::svg`]. A value
/// that does not parse (never from a report) is drawn at 0.
pub fn x_of(value: &str) -> Px {
    x_scale().px(value.parse::<f64>().unwrap_or(0.0))
}

/// Shown with control and invisible characters as `\\u{..}` (a name cannot reorder the text).
fn shown(text: &str) -> String {
    display_safe(text)
}

/// The UTC day of a run's creation, `2026-12-04`.
pub fn day(created_at_ms: i64) -> String {
    let (y, m, d, ..) = crate::time::civil(created_at_ms.div_euclid(1000));
    format!("{y:04}-{m:02}-{d:02}")
}

/// What the group's runs share, in one line (the chart's title).
pub fn title(group: &RunGroup) -> String {
    let s = &group.shared;
    format!(
        "pack {} · checker {} · {} · {} tasks × {} repetition{} · temperature {}",
        s.pack.id,
        s.checker.version,
        s.arm_lines(false).join(" · "),
        s.tasks,
        s.repetitions,
        if s.repetitions == 1 { "" } else { "s" },
        s.sampling.temperature
    )
}

/// The models of a group, each with its runs, in the group's order.
pub fn by_model(group: &RunGroup) -> Vec<(&str, Vec<&RunPoint>)> {
    let mut out: Vec<(&str, Vec<&RunPoint>)> = Vec::new();
    for run in &group.runs {
        match out.last_mut() {
            Some((model, runs)) if *model == run.model => runs.push(run),
            _ => out.push((&run.model, vec![run])),
        }
    }
    out
}

/// The SVG of one group, `id` unique on the page.
pub fn svg(group: &RunGroup, id: &str) -> String {
    let models = by_model(group);
    let rows: f64 = models
        .iter()
        .map(|(_, runs)| MODEL_LINE + RUN_ROW * runs.len() as f64)
        .sum();
    let height = TOP + rows + 6.0;
    let x = x_scale();
    let mut s = Svg::chart(
        id,
        "over-runs",
        (WIDTH, height),
        &shown(&format!("Success per arm over runs: {}", title(group))),
        &shown(&description(group)),
    );
    // The legend: one swatch per arm.
    let mut lx = 4.0;
    for arm in group.shared.arms.iter().map(|a| a.arm.as_str()) {
        s.leaf(
            "circle",
            &[
                ("class", format!("dot {}", arm_class(arm)).into()),
                ("cx", (lx + 4.0).into()),
                ("cy", 10.0.into()),
                ("r", 4.0.into()),
            ],
        )
        .text(
            "text",
            &[
                ("class", "legend".into()),
                ("x", (lx + 12.0).into()),
                ("y", 14.0.into()),
            ],
            &arm_words(arm),
        );
        lx += 70.0;
    }
    // The axis: 0, 50 and 100% with grid lines down the plot.
    // The end labels are anchored inside the plot, so that none runs past the chart's edge.
    for (v, label, anchor) in [
        (0.0, "0%", "start"),
        (0.5, "50%", "middle"),
        (1.0, "100%", "end"),
    ] {
        let at = x.px(v);
        s.leaf(
            "line",
            &[
                ("class", "grid".into()),
                ("x1", at.into()),
                ("x2", at.into()),
                ("y1", (TOP - 8.0).into()),
                ("y2", (height - 2.0).into()),
            ],
        )
        .text(
            "text",
            &[
                ("class", "k".into()),
                ("x", at.into()),
                ("y", (TOP - 12.0).into()),
                ("text-anchor", anchor.into()),
            ],
            label,
        );
    }
    let mut y = TOP;
    for (model, runs) in &models {
        s.open("g", &[("class", "model".into())])
            .text("title", &[], &shown(model))
            .text(
                "text",
                &[
                    ("class", "model".into()),
                    ("x", 4.0.into()),
                    ("y", (y + 13.0).into()),
                ],
                // Cut by width at a bold 12 px (about an eighth wider than regular).
                &fit(&shown(model), WIDTH - 12.0, 13.5),
            )
            .close();
        y += MODEL_LINE;
        for run in runs {
            s.open(
                "g",
                &[
                    ("class", "run".into()),
                    ("data-run", run.run.as_str().into()),
                ],
            )
            .text(
                "text",
                &[
                    ("class", "k mono".into()),
                    ("x", 10.0.into()),
                    ("y", (y + 13.0).into()),
                ],
                &format!(
                    "{}{}",
                    crate::state::short_id(&run.run),
                    if run.complete { "" } else { " partial" }
                ),
            )
            .text(
                "text",
                &[
                    ("class", "k mono".into()),
                    ("x", 10.0.into()),
                    ("y", (y + 26.0).into()),
                ],
                &day(run.created_at_ms),
            );
            for (i, arm) in run.arms.iter().enumerate() {
                let Some(rate) = &arm.success else { continue };
                let cy = y + 7.0 + 9.0 * i as f64;
                let (at, lo, hi) = (
                    x_of(&rate.value),
                    x_of(&rate.wilson95[0]),
                    x_of(&rate.wilson95[1]),
                );
                let name = arm.arm.as_str();
                let hover = format!(
                    "{}: {} · run {} · {} {}/{} {} (Wilson 95% {}–{})",
                    arm_words(name),
                    shown(&run.model),
                    crate::state::short_id(&run.run),
                    day(run.created_at_ms),
                    rate.num,
                    rate.den,
                    percent(&rate.value),
                    percent(&rate.wilson95[0]),
                    percent(&rate.wilson95[1])
                );
                let line = |x1: Px, x2: Px, y1: f64, y2: f64| -> [crate::svg::Attr<'static>; 5] {
                    [
                        ("class", "whisker".into()),
                        ("x1", x1.into()),
                        ("x2", x2.into()),
                        ("y1", y1.into()),
                        ("y2", y2.into()),
                    ]
                };
                s.open("g", &[("class", "mark".into()), ("data-arm", name.into())])
                    .text("title", &[], &hover)
                    .leaf("line", &line(lo, hi, cy, cy))
                    .leaf("line", &line(lo, lo, cy - 3.0, cy + 3.0))
                    .leaf("line", &line(hi, hi, cy - 3.0, cy + 3.0))
                    .leaf(
                        "circle",
                        &[
                            ("class", format!("dot {}", arm_class(name)).into()),
                            ("cx", at.into()),
                            ("cy", cy.into()),
                            ("r", 3.5.into()),
                        ],
                    )
                    .close();
            }
            s.close();
            y += RUN_ROW;
        }
    }
    s.finish()
}

/// The chart in words: per model and run, each arm's success.
pub fn description(group: &RunGroup) -> String {
    let mut out = Vec::new();
    for (model, runs) in by_model(group) {
        let mut parts = Vec::new();
        for run in runs {
            let arms: Vec<String> = run
                .arms
                .iter()
                .map(|a| match &a.success {
                    None => format!("{} nothing scored", arm_words(&a.arm)),
                    Some(r) => format!(
                        "{} {}/{} {} [{}–{}]",
                        arm_words(&a.arm),
                        r.num,
                        r.den,
                        percent(&r.value),
                        percent(&r.wilson95[0]),
                        percent(&r.wilson95[1])
                    ),
                })
                .collect();
            parts.push(format!(
                "run {} of {}{}: {}",
                crate::state::short_id(&run.run),
                day(run.created_at_ms),
                if run.complete { "" } else { " (partial)" },
                arms.join(", ")
            ));
        }
        out.push(format!("{model}: {}", parts.join("; ")));
    }
    out.join(". ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use crate::ledger::{Basis, build};
    use crate::report::Report;
    use crate::report::testing::rich;
    use crate::svg::xml::{Element, parse};

    fn as_run(mut report: Report, id: &str, model: &str, at: i64) -> Report {
        report.run.id = format!("{id:0<64}");
        report.comparability.model.model = model.to_owned();
        report.run.created_at_ms = at;
        report
    }

    #[test]
    fn every_mark_sits_at_its_ledger_value_and_incomparable_runs_never_share_a_chart() {
        // Given two models measured alike (one of them twice) and a run with one repetition
        // fewer ...
        let mut odd = as_run(rich(), "dd", "model-one", 4_000);
        odd.manifest.repetitions += 1;
        let l = build(
            &[
                as_run(rich(), "cc", "model-two", 3_000),
                as_run(rich(), "bb", "model-one", 2_000),
                as_run(rich(), "aa", "model-one", 1_000),
                odd,
            ],
            Basis::MostModels,
        )
        .unwrap();
        // ... then the history has two groups: the basis with three runs, the odd run alone.
        assert_eq!(l.history.len(), 2);
        assert!(l.history[0].basis && !l.history[1].basis);
        let ids = |g: &RunGroup| -> Vec<String> {
            g.runs.iter().map(|r| r.run[..2].to_owned()).collect()
        };
        assert_eq!(
            ids(&l.history[0]),
            ["cc", "aa", "bb"],
            "columns' model first, oldest first"
        );
        assert_eq!(ids(&l.history[1]), ["dd"]);
        assert_eq!(l.history[1].differs[0].what, "repetitions");

        for (i, group) in l.history.iter().enumerate() {
            let markup = svg(group, &format!("g{i}"));
            let root = parse(&markup).unwrap_or_else(|e| panic!("{e}: {markup}"));
            // Every run of the group has a row, and no other run has one.
            let rows: Vec<&Element> = root
                .all("g")
                .into_iter()
                .filter(|e| e.has_class("run"))
                .collect();
            let ids: Vec<&str> = rows.iter().map(|e| e.attr("data-run")).collect();
            let want: Vec<&str> = group.runs.iter().map(|r| r.run.as_str()).collect();
            assert_eq!(ids, want);
            let mut dots = 0;
            for (run, row) in group.runs.iter().zip(&rows) {
                let marks: Vec<&Element> = row
                    .all("g")
                    .into_iter()
                    .filter(|e| e.has_class("mark"))
                    .collect();
                assert_eq!(marks.len(), run.arms.len(), "{}", run.run);
                for (arm, mark) in run.arms.iter().zip(marks) {
                    assert_eq!(mark.attr("data-arm"), arm.arm);
                    let rate = arm.success.as_ref().unwrap();
                    // The dot at the success, in its arm's colour; the interval's ends at the
                    // Wilson bounds.
                    let dot = mark.all("circle");
                    assert_eq!(dot.len(), 1, "{} {}", run.run, arm.arm);
                    assert!(dot[0].has_class(crate::svg::arm_class(&arm.arm)));
                    assert_eq!(dot[0].attr("cx"), x_of(&rate.value).to_string());
                    let bar = mark.all("line");
                    assert_eq!(bar[0].attr("x1"), x_of(&rate.wilson95[0]).to_string());
                    assert_eq!(bar[0].attr("x2"), x_of(&rate.wilson95[1]).to_string());
                    assert!(
                        mark.title()
                            .unwrap()
                            .contains(&format!("{}/{}", rate.num, rate.den))
                    );
                    dots += 1;
                }
            }
            let drawn = rows.iter().map(|r| r.all("circle").len()).sum::<usize>();
            assert_eq!(drawn, dots, "one dot per run and arm with a success");
            assert!(dots > 0);
        }
        // The pixel rule: 0 at 150, 1 at 330, one decimal.
        let at = |v: &str| x_of(v).to_string();
        assert_eq!(
            (at("0.000000"), at("0.500000"), at("1.000000")),
            ("150.0".to_owned(), "240.0".to_owned(), "330.0".to_owned())
        );
        assert_eq!(at("0.333333"), "210.0");

        // The page: one figure and one SVG per group, each with its data table.
        let page = crate::ledger::html::render(&l);
        assert_eq!(page.matches("<figure class=\"chart\"").count(), 2);
        assert_eq!(page.matches("<svg ").count(), 2);
        assert_eq!(page.matches("<table class=\"chart-data\">").count(), 2);
        let second = &page[page.find("id=\"over-runs-1\"").unwrap()..];
        let second = &second[..second.find("</figure>").unwrap()];
        assert!(second.contains("differs from the basis in its repetitions"));
        assert!(second.contains("data-run=\"dd") && !second.contains("data-run=\"aa"));
    }

    #[test]
    fn hostile_model_names_stay_text_inside_the_svg() {
        let hostile = "<script>alert(1)</script>&\"'\u{202e}gpt</text><a href=\"x\">";
        let l = build(&[as_run(rich(), "aa", hostile, 1)], Basis::First).unwrap();
        let markup = svg(&l.history[0], "h");
        // It parses strictly, as this module's elements only: no script, no link.
        let root = parse(&markup).unwrap_or_else(|e| panic!("{e}: {markup}"));
        let names: std::collections::BTreeSet<&str> =
            root.descendants().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names.into_iter().collect::<Vec<_>>(),
            ["circle", "desc", "g", "line", "svg", "text", "title"]
        );
        // The name reads back as itself, its bidi override shown, not applied.
        let want = "anthropic <script>alert(1)</script>&\"'\\u{202e}gpt</text><a href=\"x\">";
        let model = root
            .all("g")
            .into_iter()
            .find(|e| e.has_class("model"))
            .unwrap();
        assert_eq!(model.title().unwrap(), want);
        assert!(!markup.contains('\u{202e}'));
        let page = crate::ledger::html::render(&l);
        assert!(!page.contains("<script") && !page.contains("<a href"));
    }
}
