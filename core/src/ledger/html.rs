//! The ledger as one self-contained HTML page in the report's style: no script at all, the
//! report's stylesheet allowed by hash, nothing else loadable. Every value is escaped text.

use std::fmt::Write as _;

use super::{Ledger, LedgerArm, Reading, arm_words, chart, contrast_words, percent};
use crate::bundle::display_safe;
use crate::report::html::{STYLE, escape, style_only_policy};

/// The ledger's own rules, after the report's stylesheet (which holds the charts' colours,
/// [`crate::svg`]) and allowed by the same hash: the charts side by side, each a card about as
/// wide as a phone, so a chart's text stays near its size on any screen.
pub(crate) const LEDGER_STYLE: &str = r#"
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:12px}
.charts figure.chart{margin:0;background:var(--card);border:1px solid var(--line);border-radius:10px;padding:10px;min-width:0}
.charts figcaption{overflow-wrap:anywhere}svg.over-runs text.model{font-weight:600}
header .sub{overflow-wrap:anywhere}.charts .scroll{overflow-x:auto}.charts table{margin:4px 0}.charts th[scope=colgroup]{color:var(--fg);white-space:normal;overflow-wrap:anywhere}
"#;

/// The page's whole stylesheet: the report's, then the charts'.
pub(crate) fn stylesheet() -> String {
    format!("{STYLE}{LEDGER_STYLE}")
}

/// Escaped for HTML, with control and invisible characters (bidi overrides among them) shown as
/// `\\u{..}`: a name cannot restyle or reorder what the page says.
fn esc(text: &str) -> String {
    escape(&display_safe(text))
}

/// The page.
pub fn render(ledger: &Ledger) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" content=\"{}\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><meta name=\"referrer\" content=\"no-referrer\"><title>SkillTrial ledger · {}</title><style>{}</style></head><body>",
        escape(&style_only_policy(&stylesheet())),
        esc(&ledger.basis.pack.id),
        stylesheet()
    );
    let arms = ledger.basis.arm_lines(true);
    let _ = write!(
        h,
        "<header><h1>SkillTrial ledger across models</h1><div class=\"sub\">{} model{} · pack {} ({}) · {} tasks × {} repetitions · temperature {} · output limit {} tokens</div><div class=\"sub\">{}</div>",
        ledger.models.len(),
        if ledger.models.len() == 1 { "" } else { "s" },
        esc(&ledger.basis.pack.id),
        esc(&ledger.basis.pack.hash),
        ledger.basis.tasks,
        ledger.basis.repetitions,
        esc(&ledger.basis.sampling.temperature),
        ledger.basis.sampling.max_output_tokens,
        esc(&arms.join(" · "))
    );
    if ledger.models.iter().any(|m| m.scripted) {
        h.push_str("<div class=\"banner\"><strong>Scripted model.</strong> A column marked scripted shows SkillTrial's built-in scripted model, not a real one: it demonstrates the ledger and says nothing about any real model.</div>");
    }
    if ledger.models.iter().any(|m| !m.complete) {
        h.push_str("<div class=\"banner\"><strong>Partial runs:</strong> a column marked partial has trials without a result; its counts cover what was scored.</div>");
    }
    h.push_str("</header><main>");
    versions(&mut h, ledger);
    over_runs(&mut h, ledger);
    success(&mut h, ledger);
    tasks(&mut h, ledger);
    left_out(&mut h, ledger);
    h.push_str("</main></body></html>");
    h
}

fn model_head(h: &mut String, ledger: &Ledger, corner: &str) {
    let _ = write!(h, "<thead><tr><th scope=\"col\">{}</th>", esc(corner));
    for m in &ledger.models {
        let _ = write!(
            h,
            "<th scope=\"col\">{}<div class=\"k mono\">run {}{}</div></th>",
            esc(&m.model),
            esc(crate::state::short_id(&m.run)),
            if m.complete { "" } else { " · partial" }
        );
    }
    h.push_str("</tr></thead>");
}

/// Which models each version helps and breaks.
fn versions(h: &mut String, ledger: &Ledger) {
    h.push_str("<section><h2>What each version does, per model</h2>");
    if ledger.versions.is_empty() {
        h.push_str("<p>No run to compare.</p>");
    } else {
        h.push_str("<ul class=\"changes\">");
        for v in &ledger.versions {
            let parts: Vec<String> = v
                .phrases()
                .into_iter()
                .map(|(word, models)| format!("{word} {}", esc(&models.join(", "))))
                .collect();
            let _ = write!(
                h,
                "<li><strong>{}</strong>: {}</li>",
                esc(&contrast_words(&v.contrast)),
                parts.join("; ")
            );
        }
        h.push_str("</ul><p class=\"k\">Helps: fixes tasks and breaks none; breaks: breaks tasks and fixes none — by each run's per-task majority verdicts. The p beside each is that run's paired sign-flip test, Holm-adjusted over its three contrasts; the ledger adds no test of its own.</p>");
    }
    h.push_str("</section>");
}

/// Success per arm over runs: one chart per group of runs measured alike, each with its data
/// table.
fn over_runs(h: &mut String, ledger: &Ledger) {
    if ledger.history.is_empty() {
        return;
    }
    h.push_str("<section><h2>Success over runs</h2><p class=\"k\">Each dot is an arm's passes over its scored trials in one run, the bar its Wilson 95% interval; rows are runs, oldest first under each model. Runs measured differently (another pack, checker, bundle, sampling, prompt or delivery) are in charts of their own: they never share an axis.</p><div class=\"charts\">");
    for (i, group) in ledger.history.iter().enumerate() {
        let id = format!("over-runs-{i}");
        let _ = write!(
            h,
            "<figure class=\"chart\" id=\"{id}\"><figcaption><strong>{}</strong> · {}{}</figcaption>{}",
            if group.basis {
                "The columns' basis"
            } else {
                "Measured differently"
            },
            esc(&chart::title(group)),
            if group.differs.is_empty() {
                String::new()
            } else {
                let whats: Vec<&str> = group.differs.iter().map(|d| d.what.as_str()).collect();
                format!(
                    "<div>differs from the basis in its {}</div>",
                    esc(&whats.join(", "))
                )
            },
            chart::svg(group, &id)
        );
        h.push_str("<details class=\"data\"><summary>The chart's values</summary><div class=\"scroll\"><table class=\"chart-data\"><thead><tr><th scope=\"col\">run</th>");
        for spec in &group.shared.arms {
            let _ = write!(
                h,
                "<th scope=\"col\" class=\"num\">{}</th>",
                esc(&arm_words(spec.arm.as_str()))
            );
        }
        h.push_str("</tr></thead>");
        for (model, runs) in chart::by_model(group) {
            let _ = write!(
                h,
                "<tbody><tr><th scope=\"colgroup\" colspan=\"{}\">{}</th></tr>",
                group.shared.arms.len() + 1,
                esc(model)
            );
            for run in runs {
                let _ = write!(
                    h,
                    "<tr><th scope=\"row\" class=\"mono\">{}<div class=\"k\">{}{}{}</div></th>",
                    esc(crate::state::short_id(&run.run)),
                    chart::day(run.created_at_ms),
                    if run.complete { "" } else { " · partial" },
                    if run.shown { " · shown" } else { "" }
                );
                for arm in &run.arms {
                    match &arm.success {
                        None => h.push_str("<td class=\"num\">—</td>"),
                        Some(rate) => {
                            let _ = write!(
                                h,
                                "<td class=\"num\">{}/{} · {}<div class=\"k\">{}–{}</div></td>",
                                rate.num,
                                rate.den,
                                esc(&percent(&rate.value)),
                                esc(&percent(&rate.wilson95[0])),
                                esc(&percent(&rate.wilson95[1]))
                            );
                        }
                    }
                }
                h.push_str("</tr>");
            }
            h.push_str("</tbody>");
        }
        h.push_str("</table></div></details></figure>");
    }
    h.push_str("</div></section>");
}

fn rate_cell(a: &LedgerArm) -> String {
    match &a.success {
        None => format!("<td class=\"num\">0/{} scored</td>", a.planned),
        Some(rate) => {
            let consistency = a
                .consistency
                .as_ref()
                .and_then(|c| Some((c.k, c.pass_hat_k.as_ref()?, c.pass_at_k.as_ref()?)))
                .map_or_else(String::new, |(k, every, any)| {
                    format!(
                        "<div class=\"k\">pass^{k} {}/{} · pass@{k} {}/{} tasks</div>",
                        every.num, every.den, any.num, any.den
                    )
                });
            format!(
                "<td class=\"num\">{}/{} · {}<div class=\"k\">Wilson 95% {}–{}</div>{consistency}</td>",
                rate.num,
                rate.den,
                esc(&percent(&rate.value)),
                esc(&percent(&rate.wilson95[0])),
                esc(&percent(&rate.wilson95[1]))
            )
        }
    }
}

/// Success per arm and model, and each contrast's fixes and breaks.
fn success(h: &mut String, ledger: &Ledger) {
    if ledger.models.is_empty() {
        return;
    }
    h.push_str("<section><h2>Success per arm and model</h2><table>");
    model_head(h, ledger, "arm");
    h.push_str("<tbody>");
    for spec in &ledger.basis.arms {
        let name = spec.arm.as_str();
        let _ = write!(h, "<tr><th scope=\"row\">{}</th>", esc(&arm_words(name)));
        for m in &ledger.models {
            match m.arms.iter().find(|a| a.arm == name) {
                Some(a) => h.push_str(&rate_cell(a)),
                None => h.push_str("<td>—</td>"),
            }
        }
        h.push_str("</tr>");
    }
    // Progressive runs: each arm's activation, blank for a column without it.
    if ledger.has_activation() {
        for spec in &ledger.basis.arms {
            let name = spec.arm.as_str();
            let _ = write!(
                h,
                "<tr><th scope=\"row\">{} activation</th>",
                esc(&arm_words(name))
            );
            for m in &ledger.models {
                match m
                    .arms
                    .iter()
                    .find(|a| a.arm == name)
                    .and_then(|a| a.activation.as_ref())
                {
                    Some(rate) => {
                        let _ = write!(
                            h,
                            "<td class=\"num\">{}/{} · {}<div class=\"k\">Wilson 95% {}–{}</div></td>",
                            rate.num,
                            rate.den,
                            esc(&percent(&rate.value)),
                            esc(&percent(&rate.wilson95[0])),
                            esc(&percent(&rate.wilson95[1]))
                        );
                    }
                    None => h.push_str("<td></td>"),
                }
            }
            h.push_str("</tr>");
        }
    }
    for v in &ledger.versions {
        let _ = write!(
            h,
            "<tr><th scope=\"row\">{}</th>",
            esc(&contrast_words(&v.contrast))
        );
        for m in &ledger.models {
            match m.contrasts.iter().find(|c| c.contrast == v.contrast) {
                None => h.push_str("<td>—</td>"),
                Some(c) => {
                    let class = match c.reading {
                        Reading::Helps => "pass",
                        Reading::Breaks => "fail",
                        Reading::HelpsAndBreaks => "mid",
                        Reading::NoChange | Reading::NotCompared => "",
                    };
                    let list = |title: &str, tasks: &[String]| {
                        if tasks.is_empty() {
                            String::new()
                        } else {
                            format!("<div class=\"k\">{title}: {}</div>", esc(&tasks.join(", ")))
                        }
                    };
                    let _ = write!(
                        h,
                        "<td class=\"{class}\">{}<div class=\"k\">{} of {} tasks fixed, {} broken{}</div>{}{}</td>",
                        esc(c.reading.as_str()),
                        c.fixes.len(),
                        c.compared_tasks,
                        c.breaks.len(),
                        c.holm_p.as_ref().map_or_else(String::new, |p| format!(
                            " · p (Holm) {}",
                            esc(&crate::report::p_text_reading(p))
                        )),
                        list("fixes", &c.fixes),
                        list("breaks", &c.breaks)
                    );
                }
            }
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table><p class=\"k\">pass^k: the share of tasks passed in every one of the k repetitions (how reliably); pass@k: the share passed in at least one (whether it can at all), over the tasks with all k repetitions scored.</p></section>");
}

/// Every task, B against A per model, with each arm's passes.
fn tasks(h: &mut String, ledger: &Ledger) {
    if ledger.models.is_empty() {
        return;
    }
    h.push_str("<section><h2>Tasks side by side (B vs A)</h2><table>");
    model_head(h, ledger, "task");
    h.push_str("<tbody>");
    for t in &ledger.tasks {
        let _ = write!(
            h,
            "<tr><th scope=\"row\"><span class=\"mono\">{}</span>{}</th>",
            esc(&t.task),
            t.family.as_ref().map_or_else(String::new, |f| format!(
                "<div class=\"k\">{}</div>",
                esc(f)
            ))
        );
        for cell in &t.cells {
            let class = match cell.b_vs_a.as_deref() {
                Some("improvement") => "pass",
                Some("regression") => "fail",
                _ => "",
            };
            let counts: Vec<String> = ledger
                .basis
                .arms
                .iter()
                .filter_map(|spec| {
                    let name = spec.arm.as_str();
                    cell.arms
                        .get(name)
                        .map(|c| format!("{} {}/{}", arm_words(name), c.pass, c.executed))
                })
                .collect();
            let _ = write!(
                h,
                "<td class=\"{class}\">{}<div class=\"k\">{}</div></td>",
                esc(cell.b_vs_a.as_deref().unwrap_or("—")),
                esc(&counts.join(" · "))
            );
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table></section>");
}

/// The runs not shown, and why.
fn left_out(h: &mut String, ledger: &Ledger) {
    h.push_str("<section><h2>Left out</h2>");
    if ledger.left_out.is_empty() {
        h.push_str("<p>Every run given is shown.</p></section>");
        return;
    }
    h.push_str("<table><thead><tr><th scope=\"col\">run</th><th scope=\"col\">model</th><th scope=\"col\">why</th></tr></thead><tbody>");
    for l in &ledger.left_out {
        let differs: String = l
            .differs
            .iter()
            .map(|d| {
                format!(
                    "<div class=\"k\">{}: <span class=\"mono\">{}</span> here, <span class=\"mono\">{}</span> in the basis</div>",
                    esc(&d.what),
                    esc(&d.this.to_string()),
                    esc(&d.other.to_string())
                )
            })
            .collect();
        let _ = write!(
            h,
            "<tr><td class=\"mono\">{}</td><td>{}</td><td>{}{differs}</td></tr>",
            esc(crate::state::short_id(&l.run)),
            esc(&l.model),
            esc(&l.reason)
        );
    }
    h.push_str("</tbody></table></section>");
}
