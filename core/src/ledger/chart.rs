//! The ledger's success-over-runs charts: one SVG per [`RunGroup`], so runs measured
//! differently never share an axis.
//!
//! Each run is a row (grouped under its model, oldest first), each arm a dot at its success
//! with a bar across its Wilson 95% interval. The horizontal scale is [`X`]: a rate `v` (the
//! report's six-decimal string, parsed) is drawn at `x = 150 + v × 180` in the chart's own units,
//! written with one decimal — so a mark's position is the report's value to ±0.05 unit. Every
//! text from a run (model names) is escaped for XML and shown with control characters visible.

use std::fmt::Write as _;

use super::{RunGroup, RunPoint, arm_words, percent};
use crate::bundle::display_safe;
use crate::report::html::escape;

/// The chart's width in its own units (its `viewBox`); the page scales it to the column.
pub const WIDTH: u32 = 340;
/// Where 0% and 100% fall, in the chart's units.
pub const X: (f64, f64) = (150.0, 330.0);
/// The height of a model's heading line and of one run's row.
const MODEL_LINE: u32 = 18;
const RUN_ROW: u32 = 32;
/// The space above the first model: the legend and the axis labels.
const TOP: u32 = 40;
/// The longest model name drawn in full; a longer one ends in `…` (its full name is in the
/// row's `<title>` and in the table).
const NAME_CHARS: usize = 48;

/// A rate's x position: [`X`]'s linear rule, one decimal. A value that does not parse (never
/// from a report) is drawn at 0.
pub fn x_of(value: &str) -> String {
    let v = value.parse::<f64>().unwrap_or(0.0).clamp(0.0, 1.0);
    format!("{:.1}", X.0 + v * (X.1 - X.0))
}

fn esc(text: &str) -> String {
    escape(&display_safe(text))
}

fn shortened(text: &str) -> String {
    if text.chars().count() <= NAME_CHARS {
        text.to_owned()
    } else {
        let mut s: String = text.chars().take(NAME_CHARS - 1).collect();
        s.push('…');
        s
    }
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

/// The SVG of one group, `id` making its title's and description's ids unique on the page.
pub fn svg(group: &RunGroup, id: &str) -> String {
    let models = by_model(group);
    let rows: u32 = models
        .iter()
        .map(|(_, runs)| MODEL_LINE + RUN_ROW * u32::try_from(runs.len()).unwrap_or(u32::MAX))
        .fold(0, u32::saturating_add);
    let height = TOP.saturating_add(rows).saturating_add(6);
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart-svg\" viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" height=\"{height}\" role=\"img\" aria-labelledby=\"{id}-t {id}-d\"><title id=\"{id}-t\">Success per arm over runs: {}</title><desc id=\"{id}-d\">{}</desc>",
        esc(&title(group)),
        esc(&description(group))
    );
    // The legend: one swatch per arm.
    let mut lx = 4u32;
    for arm in group.shared.arms.iter().map(|a| a.arm.as_str()) {
        let _ = write!(
            s,
            "<circle class=\"dot arm-{arm}\" cx=\"{}\" cy=\"10\" r=\"4\"/><text class=\"legend\" x=\"{}\" y=\"14\">{}</text>",
            lx + 4,
            lx + 12,
            esc(&arm_words(arm))
        );
        lx += 70;
    }
    // The axis: 0, 50 and 100% with grid lines down the plot.
    for (v, label) in [("0", "0%"), ("0.5", "50%"), ("1", "100%")] {
        let x = x_of(v);
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"/><text class=\"tick\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{label}</text>",
            TOP - 8,
            height - 2,
            TOP - 12
        );
    }
    let mut y = TOP;
    for (model, runs) in &models {
        let _ = write!(
            s,
            "<text class=\"model\" x=\"4\" y=\"{}\"><title>{}</title>{}</text>",
            y + 13,
            esc(model),
            esc(&shortened(model))
        );
        y += MODEL_LINE;
        for run in runs {
            let _ = write!(
                s,
                "<g class=\"run\" data-run=\"{}\"><text class=\"runlabel\" x=\"10\" y=\"{}\">{}{}</text><text class=\"runlabel\" x=\"10\" y=\"{}\">{}</text>",
                esc(&run.run),
                y + 13,
                esc(crate::state::short_id(&run.run)),
                if run.complete { "" } else { " partial" },
                y + 26,
                day(run.created_at_ms),
            );
            for (i, arm) in (0u32..).zip(&run.arms) {
                let Some(rate) = &arm.success else { continue };
                let cy = y + 7 + i * 9;
                let (x, lo, hi) = (
                    x_of(&rate.value),
                    x_of(&rate.wilson95[0]),
                    x_of(&rate.wilson95[1]),
                );
                let name = arm.arm.as_str();
                let _ = write!(
                    s,
                    "<g class=\"mark\" data-arm=\"{name}\"><title>{}: {} · run {} · {} {}/{} {} (Wilson 95% {}–{})</title><line class=\"ci arm-{name}\" x1=\"{lo}\" x2=\"{hi}\" y1=\"{cy}\" y2=\"{cy}\"/><line class=\"ci arm-{name}\" x1=\"{lo}\" x2=\"{lo}\" y1=\"{}\" y2=\"{}\"/><line class=\"ci arm-{name}\" x1=\"{hi}\" x2=\"{hi}\" y1=\"{}\" y2=\"{}\"/><circle class=\"dot arm-{name}\" cx=\"{x}\" cy=\"{cy}\" r=\"3.5\"/></g>",
                    esc(&arm_words(name)),
                    esc(&run.model),
                    esc(crate::state::short_id(&run.run)),
                    day(run.created_at_ms),
                    rate.num,
                    rate.den,
                    esc(&percent(&rate.value)),
                    esc(&percent(&rate.wilson95[0])),
                    esc(&percent(&rate.wilson95[1])),
                    cy - 3,
                    cy + 3,
                    cy - 3,
                    cy + 3,
                );
            }
            s.push_str("</g>");
            y += RUN_ROW;
        }
    }
    s.push_str("</svg>");
    s
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
    use std::collections::BTreeMap;

    use super::*;
    use crate::ledger::{Basis, build};
    use crate::report::Report;
    use crate::report::testing::rich;

    /// One element of an SVG as written: its name, its attributes, and the `data-run` of the
    /// run row it is inside.
    #[derive(Debug)]
    pub(crate) struct Element {
        pub name: String,
        pub attrs: BTreeMap<String, String>,
        pub run: Option<String>,
    }

    /// The start tags of `svg`, in order (a parser for the SVG this module writes: elements,
    /// double-quoted attributes, escaped text). Panics on anything else, which is a failure.
    pub(crate) fn elements(svg: &str) -> Vec<Element> {
        let tag =
            regex::Regex::new(r#"<(/?)([a-zA-Z]+)((?:\s+[a-zA-Z0-9:-]+="[^"<>]*")*)\s*(/?)>"#)
                .unwrap();
        let attr = regex::Regex::new(r#"([a-zA-Z0-9:-]+)="([^"]*)""#).unwrap();
        let mut out = Vec::new();
        let mut open: Vec<Option<String>> = Vec::new();
        let mut end = 0;
        for c in tag.captures_iter(svg) {
            let whole = c.get(0).unwrap();
            assert!(
                !svg[end..whole.start()].contains(['<', '>']),
                "unparsed markup before {}: {}",
                whole.as_str(),
                &svg[end..whole.start()]
            );
            end = whole.end();
            let name = c[2].to_owned();
            if &c[1] == "/" {
                open.pop().unwrap();
                continue;
            }
            let attrs: BTreeMap<String, String> = attr
                .captures_iter(&c[3])
                .map(|a| (a[1].to_owned(), a[2].to_owned()))
                .collect();
            let run = attrs
                .get("data-run")
                .cloned()
                .or_else(|| open.iter().rev().find_map(Clone::clone));
            if &c[4] != "/" {
                open.push(attrs.get("data-run").cloned().or_else(|| run.clone()));
            }
            out.push(Element { name, attrs, run });
        }
        assert!(open.is_empty(), "unclosed elements in {svg}");
        out
    }

    fn as_run(mut report: Report, id: &str, model: &str, at: i64) -> Report {
        report.run.id = format!("{id:0<64}");
        report.comparability.model.model = model.to_owned();
        report.run.created_at_ms = at;
        report
    }

    fn class_has(e: &Element, class: &str) -> bool {
        e.attrs
            .get("class")
            .is_some_and(|c| c.split(' ').any(|x| x == class))
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
            let svg = svg(group, &format!("g{i}"));
            let els = elements(&svg);
            // Every run of the group has a row, and no other run has one.
            let rows: Vec<&str> = els
                .iter()
                .filter(|e| e.name == "g" && class_has(e, "run"))
                .map(|e| e.attrs["data-run"].as_str())
                .collect();
            let want: Vec<&str> = group.runs.iter().map(|r| r.run.as_str()).collect();
            assert_eq!(rows, want);
            let mut dots = 0;
            for run in &group.runs {
                for arm in &run.arms {
                    let class = format!("arm-{}", arm.arm);
                    let of = |name: &str| -> Vec<&Element> {
                        els.iter()
                            .filter(|e| {
                                e.name == name
                                    && e.run.as_deref() == Some(run.run.as_str())
                                    && class_has(e, &class)
                            })
                            .collect()
                    };
                    let rate = arm.success.as_ref().unwrap();
                    // The dot at the success, the interval's ends at the Wilson bounds.
                    let dot = of("circle");
                    assert_eq!(dot.len(), 1, "{} {}", run.run, arm.arm);
                    assert_eq!(dot[0].attrs["cx"], x_of(&rate.value));
                    let bar = of("line");
                    assert_eq!(bar[0].attrs["x1"], x_of(&rate.wilson95[0]));
                    assert_eq!(bar[0].attrs["x2"], x_of(&rate.wilson95[1]));
                    dots += 1;
                }
            }
            let drawn = els
                .iter()
                .filter(|e| e.name == "circle" && e.run.is_some())
                .count();
            assert_eq!(drawn, dots, "one dot per run and arm with a success");
            assert!(dots > 0);
        }
        // The pixel rule: 0 at 150, 1 at 330, one decimal.
        assert_eq!(
            (x_of("0.000000"), x_of("0.500000"), x_of("1.000000")),
            ("150.0".to_owned(), "240.0".to_owned(), "330.0".to_owned())
        );
        assert_eq!(x_of("0.333333"), "210.0");

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
        let svg = svg(&l.history[0], "h");
        // Parses as this module's elements only: no script, no link, no broken-out text.
        let names: std::collections::BTreeSet<String> =
            elements(&svg).into_iter().map(|e| e.name).collect();
        assert_eq!(
            names.into_iter().collect::<Vec<_>>(),
            ["circle", "desc", "g", "line", "svg", "text", "title"]
        );
        assert!(svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&#39;\\u{202e}gpt"));
        assert!(!svg.contains('\u{202e}'));
        let page = crate::ledger::html::render(&l);
        assert!(!page.contains("<script") && !page.contains("<a href"));
    }
}
