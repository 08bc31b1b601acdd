//! The HTML report: one self-contained file, readable from `file://`, with no network reference.
//!
//! Everything from a run — model answers above all — is HTML-escaped text; links and scripts in
//! answers are inert. A strict Content-Security-Policy allows only this file's own inline style
//! and script, by hash: no other script, style, image, font, frame or connection can load.
//!
//! [`render`] reads the typed [`Report`] and writes the header and then one function per view:
//! summary and coverage, pair comparison, tasks and trials, evidence, cost, manifest.

use std::fmt::Write as _;

use base64::Engine as _;
use serde_json::Value;

use super::TrialOutcome;
use super::{Activation, ArmSummary, Attempt, Cost, Pair, Rate, Report, TaskRow, Trial, count_of};
use crate::manifest::BundleRef;
use crate::money::{Lamports, MicroUsd};
use crate::outcome::Outcome;
use crate::settlement::Settlement;
use sha2::{Digest, Sha256};

/// The report's stylesheet, shared with the ledger's page.
/// The charts' rules ([`crate::svg::STYLE`]) come last, in the same `<style>`, so the CSP hash
/// covers them.
pub(crate) const STYLE: &str = concat!(
    r#"
:root{--bg:#fbfbfa;--fg:#1c1d21;--muted:#5d6270;--card:#fff;--line:#e3e4e8;--accent:#3451b2;--onaccent:#fff;--good:#1f7a4d;--goodbg:#e3f4ea;--bad:#b42318;--badbg:#fdecea;--mid:#8a5a00;--midbg:#fff4d6;--warnbg:#fff4d6}
@media (prefers-color-scheme:dark){:root:not([data-theme=light]){--bg:#15161a;--fg:#e6e6ea;--muted:#a2a6b3;--card:#1d1f25;--line:#30333c;--accent:#8ea2ff;--onaccent:#15161a;--good:#5fd39b;--goodbg:#15392a;--bad:#ff8a80;--badbg:#43201d;--mid:#f0c060;--midbg:#3d3117;--warnbg:#3d3117}}
:root[data-theme=dark]{--bg:#15161a;--fg:#e6e6ea;--muted:#a2a6b3;--card:#1d1f25;--line:#30333c;--accent:#8ea2ff;--onaccent:#15161a;--good:#5fd39b;--goodbg:#15392a;--bad:#ff8a80;--badbg:#43201d;--mid:#f0c060;--midbg:#3d3117;--warnbg:#3d3117}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
header{padding:20px 28px 8px;border-bottom:1px solid var(--line);background:var(--card)}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:24px 0 8px}h3{font-size:15px;margin:18px 0 6px}
.sub{color:var(--muted);font-size:13px}.mono,code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
nav{display:flex;gap:4px;flex-wrap:wrap;margin-top:12px}nav a{padding:6px 12px;border-radius:6px;color:var(--fg);text-decoration:none;border:1px solid var(--line)}nav a.on{background:var(--accent);color:var(--onaccent);border-color:var(--accent)}
main{padding:8px 28px 40px;max-width:1200px}section{margin-top:8px}
.banner{margin:12px 0;padding:10px 14px;border-radius:8px;background:var(--warnbg);border:1px solid var(--mid)}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(220px,1fr));gap:12px}.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px}
.big{font-size:26px;font-weight:650}.k{color:var(--muted);font-size:12.5px}
table{border-collapse:collapse;width:100%;background:var(--card);border:1px solid var(--line);border-radius:8px;margin:6px 0 14px}
th,td{padding:6px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}th{font-size:12.5px;color:var(--muted);cursor:pointer;user-select:none;white-space:nowrap}th.num,td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{background:var(--goodbg);color:var(--good);font-weight:600}.fail{background:var(--badbg);color:var(--bad);font-weight:600}.mid{background:var(--midbg);color:var(--mid);font-weight:600}
.tag{display:inline-block;padding:1px 7px;border-radius:10px;font-size:12px;border:1px solid var(--line)}
pre{white-space:pre-wrap;word-break:break-word;background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:10px;max-height:420px;overflow:auto}
details{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:6px 12px;margin:6px 0}summary{cursor:pointer}
button{font:inherit;padding:4px 10px;border-radius:6px;border:1px solid var(--line);background:var(--card);color:var(--fg);cursor:pointer;float:right}
.js section.view{display:none}.js section.view.on{display:block}
a{color:var(--accent)}td a{color:inherit}.changes li{margin:2px 0}.filters{display:flex;gap:10px;flex-wrap:wrap;margin:8px 0}.filters label{font-size:12.5px;color:var(--muted)}select{font:inherit;color:var(--fg);background:var(--card);border:1px solid var(--line);border-radius:6px;padding:2px 6px}
.js details.hide{display:none}
@media (max-width:600px){header{padding:14px 12px 8px}main{padding:8px 12px 32px}table{display:block;overflow-x:auto}.sub,header .mono{overflow-wrap:anywhere}}
@media print{nav,button,.filters{display:none}.js section.view{display:block}header{border:0}}
"#,
    crate::svg::chart_style!()
);

const SCRIPT: &str = r#"
(function(){var d=document.documentElement;d.classList.add('js');
var views=[].slice.call(document.querySelectorAll('section.view')),links=[].slice.call(document.querySelectorAll('nav a'));
function show(id){views.forEach(function(v){v.classList.toggle('on',v.id===id)});links.forEach(function(a){a.classList.toggle('on',a.getAttribute('href')==='#'+id)})}
links.forEach(function(a){a.addEventListener('click',function(e){e.preventDefault();show(a.getAttribute('href').slice(1));history.replaceState(null,'',a.getAttribute('href'))})});
show((location.hash||'#summary').slice(1));window.scrollTo(0,0);
var t=document.getElementById('theme');if(t){t.addEventListener('click',function(){var cur=d.getAttribute('data-theme')||(window.matchMedia&&window.matchMedia('(prefers-color-scheme: dark)').matches?'dark':'light');d.setAttribute('data-theme',cur==='dark'?'light':'dark')})}
var f={task:document.getElementById('f-task'),arm:document.getElementById('f-arm'),outcome:document.getElementById('f-outcome')},ev=[].slice.call(document.querySelectorAll('#evidence details[data-task]'));
function filter(){var n=0;ev.forEach(function(e){var ok=['task','arm','outcome'].every(function(k){return !f[k]||!f[k].value||e.getAttribute('data-'+k)===f[k].value});e.classList.toggle('hide',!ok);if(ok){n++}});var c=document.getElementById('f-count');if(c){c.textContent=n+' of '+ev.length+' attempts'}return n}
['task','arm','outcome'].forEach(function(k){if(f[k]){f[k].addEventListener('change',filter)}});filter();
[].slice.call(document.querySelectorAll('a[data-task]')).forEach(function(a){a.addEventListener('click',function(e){e.preventDefault();['task','arm','outcome'].forEach(function(k){if(f[k]){f[k].value=a.getAttribute('data-'+k)||''}});filter();ev.forEach(function(x){if(!x.classList.contains('hide')){x.open=true}});show('evidence');history.replaceState(null,'','#evidence');window.scrollTo(0,0)})});
[].slice.call(document.querySelectorAll('table.sortable')).forEach(function(table){[].slice.call(table.tHead.rows[0].cells).forEach(function(th,i){th.addEventListener('click',function(){var asc=th.getAttribute('data-dir')!=='asc';th.setAttribute('data-dir',asc?'asc':'desc');var rows=[].slice.call(table.tBodies[0].rows);rows.sort(function(a,b){var x=a.cells[i].getAttribute('data-v')||a.cells[i].textContent,y=b.cells[i].getAttribute('data-v')||b.cells[i].textContent;var nx=parseFloat(x),ny=parseFloat(y);var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);return asc?c:-c});rows.forEach(function(r){table.tBodies[0].appendChild(r)})})})})})();
"#;

/// HTML-escapes text for element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn csp_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The Content-Security-Policy of the report.
pub fn content_security_policy() -> String {
    format!(
        "default-src 'none'; style-src {}; script-src {}; img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; object-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'none'",
        csp_hash(STYLE),
        csp_hash(SCRIPT)
    )
}

/// The Content-Security-Policy of a page with the stylesheet `style` and no script at all (the
/// ledger's).
pub(crate) fn style_only_policy(style: &str) -> String {
    format!(
        "default-src 'none'; style-src {}; script-src 'none'; img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; object-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'none'",
        csp_hash(style)
    )
}

/// An optional value as the page shows it: the value, or a dash.
fn or_dash<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "—".to_owned(), |v| v.to_string())
}

/// A JSON value from the checker's details as the page shows it: text as itself, `null` as a dash.
fn json_text(v: &Value) -> String {
    match v {
        Value::String(t) => t.clone(),
        Value::Null => "—".to_owned(),
        other => other.to_string(),
    }
}

/// A six-place decimal string as a whole percentage.
fn pct_of(value: Option<&str>) -> String {
    value
        .and_then(|x| x.parse::<f64>().ok())
        .map_or_else(|| "—".to_owned(), |x| format!("{:.0}%", x * 100.0))
}

fn pct(rate: Option<&Rate>) -> String {
    pct_of(rate.map(|r| r.value.as_str()))
}

fn usd(micros: Option<u64>) -> String {
    or_dash(micros.map(MicroUsd))
}

/// A UTC date and time from Unix milliseconds ("2026-11-30 15:02 UTC").
pub fn utc(ms: i64) -> String {
    let (year, month, day, hour, minute, _) = crate::time::civil(ms.div_euclid(1000));
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}

/// An arm as people read it: A and B uppercase, as in the summary and the CLI; baseline keeps its
/// word. The JSON and the `data-arm` attributes the filters match keep the journal's ids.
fn arm_label(arm: &str) -> String {
    if arm == "baseline" {
        arm.to_owned()
    } else {
        arm.to_uppercase()
    }
}

/// A bundle's name and version ("solana-reader 1.4.2").
fn name_version(b: &BundleRef) -> String {
    format!("{} {}", b.name, or_dash(b.version.as_deref()))
}

/// The run's state in words, from the same numbers for the header and the partial-run banner,
/// so the two can never disagree.
fn coverage_words(report: &Report) -> (bool, String) {
    let summary = &report.summary;
    let (executed, planned) = (summary.executed, summary.planned);
    let words = if summary.complete {
        format!("complete: all {planned} planned trials have a model result")
    } else {
        format!("partial: {executed} of {planned} planned trials have a model result")
    };
    (summary.complete, words)
}

/// A link that opens the evidence view filtered to a task (and an arm, and an outcome).
fn evidence_link(text: &str, task: &str, arm: Option<&str>) -> String {
    format!(
        "<a href=\"#evidence\" data-task=\"{}\"{}>{}</a>",
        escape(task),
        arm.map(|a| format!(" data-arm=\"{}\"", escape(a)))
            .unwrap_or_default(),
        text
    )
}

fn cell_class(pass: u64, executed: u64) -> &'static str {
    if executed == 0 {
        ""
    } else if pass == executed {
        "pass"
    } else if pass == 0 {
        "fail"
    } else {
        "mid"
    }
}

/// The first screen's answer: which tasks B fixes or breaks against A, and each skill against the
/// baseline, every task linked to its attempts in the evidence view.
fn changes_html(report: &Report) -> String {
    // With no model result there is nothing to compare: say so rather than list "no task".
    if report.summary.executed == 0 {
        return "<ul class=\"changes\"><li>Nothing can be compared yet: no trial has a model result.</li></ul>".to_owned();
    }
    let compared = report.compared_tasks();
    let mut h = String::from("<ul class=\"changes\">");
    let mut any = false;
    for (key, x, y, lists) in report.summary.changes.each() {
        let Some(lists) = lists else {
            continue;
        };
        any = true;
        let (xn, yn) = (arm_label(x), arm_label(y));
        // No task has a result in both arms yet: empty lists would read as "fixes nothing".
        if compared.get(key) == Some(&0) {
            let _ = write!(
                h,
                "<li><strong>{xn} against {yn}</strong>: nothing to compare yet (no task has a model result in both arms).</li>"
            );
            continue;
        }
        for (kind, tasks, how) in [
            ("fixes", &lists.fixes, format!("{yn} fails, {xn} passes")),
            ("breaks", &lists.breaks, format!("{yn} passes, {xn} fails")),
        ] {
            let tasks: Vec<String> = tasks
                .iter()
                .map(|t| evidence_link(&escape(t), t, Some(x)))
                .collect();
            let list = if tasks.is_empty() {
                "no task".to_owned()
            } else {
                tasks.join(", ")
            };
            let _ = write!(
                h,
                "<li class=\"{kind}\"><strong>{xn} {kind}</strong> ({}): {list}</li>",
                escape(&how)
            );
        }
    }
    if !any {
        h.push_str("<li>No skill arm to compare.</li>");
    }
    h.push_str("</ul><p class=\"k\">A task counts as passed by an arm when it passes at least half of its executed repetitions. Each task opens its attempts.</p>");
    h
}

/// An attempt's outcome as the evidence view and its filter show it.
fn outcome_text(a: &Attempt) -> String {
    or_dash(a.outcome.map(Outcome::as_str))
}

/// The evidence view's filters: task, arm and outcome, each listing only values present.
fn evidence_filters(report: &Report) -> String {
    let mut values: [std::collections::BTreeSet<String>; 3] = Default::default();
    for t in &report.trials {
        for a in &t.attempts {
            values[0].insert(t.task.clone());
            values[1].insert(t.arm.clone());
            values[2].insert(outcome_text(a));
        }
    }
    let mut h = String::from("<div class=\"filters\">");
    for ((id, label), options) in [("task", "task"), ("arm", "arm"), ("outcome", "outcome")]
        .iter()
        .zip(values.iter())
    {
        let _ = write!(
            h,
            "<label>{label} <select id=\"f-{id}\"><option value=\"\">all</option>"
        );
        for v in options {
            let _ = write!(h, "<option>{}</option>", escape(v));
        }
        h.push_str("</select></label>");
    }
    h.push_str("<span class=\"k\" id=\"f-count\"></span></div>");
    h
}

/// Renders the report as one HTML page: the header, then the six views.
pub fn render(report: &Report) -> String {
    let mut h = String::new();
    header(&mut h, report);
    summary_view(&mut h, report);
    pairs_view(&mut h, report);
    tasks_view(&mut h, report);
    evidence_view(&mut h, report);
    cost_view(&mut h, report);
    manifest_view(&mut h, report);
    let _ = write!(h, "</main><script>{SCRIPT}</script></body></html>");
    h
}

/// The document head, the run line, the scripted and partial-run banners, and the navigation.
fn header(h: &mut String, report: &Report) {
    let m = &report.manifest;
    let (complete, coverage) = coverage_words(report);
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" content=\"{}\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><meta name=\"referrer\" content=\"no-referrer\"><title>SkillTrial report {}</title><style>{STYLE}</style></head><body>",
        escape(&content_security_policy()),
        escape(&report.short_id())
    );
    let arms_line: Vec<String> = m
        .arms
        .iter()
        .map(|arm| match &arm.bundle {
            None => "baseline".to_owned(),
            Some(b) => format!("{} = {}", arm.arm.as_str().to_uppercase(), name_version(b)),
        })
        .collect();
    let started = report.run.started_at_ms.unwrap_or(report.run.created_at_ms);
    let _ = write!(
        h,
        "<header><button id=\"theme\" type=\"button\">Light / dark</button><h1>SkillTrial report</h1><div class=\"sub\">run <span class=\"mono\">{}</span> · {} · {} · {} · pack {} · model {} ({}) · {}</div>",
        escape(&report.run.id),
        escape(&format!("started {}", utc(started))),
        escape(report.run.status.as_str()),
        escape(&coverage),
        escape(&m.pack.id),
        escape(&m.model.profile),
        escape(&m.model.model),
        escape(&arms_line.join(" · "))
    );
    if report.comparability.model.scripted {
        h.push_str("<div class=\"banner\"><strong>Scripted model.</strong> These answers come from SkillTrial's built-in scripted model server, not a real model. The run demonstrates the pipeline; its results say nothing about any real model and can never be compared with one.</div>");
    }
    if !complete {
        let _ = write!(
            h,
            "<div class=\"banner\"><strong>Partial run:</strong> {}, so no winner is named.</div>",
            escape(coverage.strip_prefix("partial: ").unwrap_or(&coverage))
        );
    }
    h.push_str("<nav><a href=\"#summary\">Summary &amp; coverage</a><a href=\"#pairs\">Pair comparison</a><a href=\"#tasks\">Tasks &amp; trials</a><a href=\"#evidence\">Evidence &amp; reasons</a><a href=\"#cost\">Cost &amp; unknowns</a><a href=\"#manifest\">Manifest</a></nav></header><main>");
}

/// The first view, summary and coverage: the charts at a glance, what changed, one card per arm,
/// the leader, the coverage table.
fn summary_view(h: &mut String, report: &Report) {
    let summary = &report.summary;
    // The charts first, so that on any pack the first screen shows each arm's rate and where B
    // helps or breaks; the lists of tasks follow.
    h.push_str("<section class=\"view\" id=\"summary\"><h2 id=\"glance\">At a glance</h2>");
    h.push_str(&super::charts::success_rates(report));
    h.push_str(&super::charts::forests(report));
    h.push_str("<h2>What changed</h2>");
    h.push_str(&changes_html(report));
    h.push_str("<h2>Summary and coverage</h2><div class=\"cards\">");
    for arm in &summary.arms {
        arm_card(h, arm);
    }
    h.push_str("</div>");
    if summary.arms.iter().any(|a| a.consistency.is_some()) {
        let _ = write!(h, "<p class=\"sub\">{}</p>", escape(CONSISTENCY_MEANING));
    }
    let leader = if summary.complete {
        match &summary.leader {
            Some(l) => match &l.arm {
                Some(arm) => format!(
                    "Most passes: <strong>{}</strong> ({}).",
                    escape(&arm.to_uppercase()),
                    escape(&l.note)
                ),
                None => escape(&l.note),
            },
            None => "—".to_owned(),
        }
    } else {
        "Partial run: no winner named.".to_owned()
    };
    let _ = write!(
        h,
        "<p>Success rate = pass ÷ executed model trials. {leader}</p>"
    );
    if let Some(activation) = &report.activation {
        activation_section(h, activation);
    }
    h.push_str("<h3>Coverage</h3>");
    h.push_str(&super::charts::outcomes(report));
    h.push_str("<table class=\"sortable\"><thead><tr><th>arm</th><th>bundle</th><th>coverage</th><th class=\"num\">pass</th><th class=\"num\">fail</th><th class=\"num\">invalid output</th><th class=\"num\">unsupported</th></tr></thead><tbody>");
    for arm in &summary.arms {
        let (bundle, coverage) = match &arm.bundle {
            None => ("—".to_owned(), "—".to_owned()),
            Some(b) => (
                format!("{} {}", name_version(b), b.digest),
                b.coverage.clone(),
            ),
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&arm_label(&arm.arm)),
            escape(&bundle),
            escape(&coverage),
            arm.pass,
            arm.fail,
            arm.invalid_output,
            arm.unsupported_case
        );
    }
    h.push_str("</tbody></table></section>");
}

/// What the activation rate means, in one sentence.
pub const ACTIVATION_MEANING: &str = "Activation: the share of an arm's progressive trials in which the model loaded the arm's own skill with load_skill (for the baseline, any skill: its catalog lists only other skills), with the Wilson 95% interval. Counted from the tool calls the runner served, never from the answer's text.";

/// Progressive runs: per arm the activation rate with its interval and what loading cost, the
/// per-task loaded/passed grid, the references no trial read and the skills loaded instead.
fn activation_section(h: &mut String, activation: &Activation) {
    h.push_str("<h2 id=\"activation\">Skill loading</h2><div class=\"cards\">");
    for arm in &activation.arms {
        let (label, what) = match &arm.skill {
            Some(skill) => (
                format!("{} loads {skill}", arm_label(&arm.arm)),
                "trials loaded the skill",
            ),
            None => (
                "baseline loads another skill".to_owned(),
                "trials loaded another skill",
            ),
        };
        let line = match &arm.rate {
            None => "no trial with evidence yet".to_owned(),
            Some(r) => format!(
                "{} of {} {what} · 95% CI {}–{}",
                r.num,
                r.den,
                pct_of(Some(&r.wilson95[0])),
                pct_of(Some(&r.wilson95[1]))
            ),
        };
        let turn = arm
            .median_load_turn
            .as_deref()
            .map_or_else(String::new, |t| format!("median load turn {t} · "));
        let errors: Vec<String> = arm
            .tool_errors
            .iter()
            .map(|e| format!("{} {}", e.error.as_str(), e.count))
            .collect();
        let errors = if errors.is_empty() {
            "no tool errors".to_owned()
        } else {
            format!("tool errors: {}", errors.join(", "))
        };
        let _ = write!(
            h,
            "<div class=\"card\"><div class=\"k\">{}</div><div class=\"big\">{}</div><div class=\"k\">{}</div><div class=\"k\">{}{} · turn limit reached {}</div><div class=\"k\">bytes sent: catalog {} · instructions {} · references {}</div></div>",
            escape(&label),
            pct(arm.rate.as_ref()),
            escape(&line),
            escape(&turn),
            escape(&errors),
            arm.turn_limit,
            arm.catalog_bytes,
            arm.instructions_bytes,
            arm.resources_bytes
        );
    }
    let _ = write!(
        h,
        "</div><p class=\"sub\">{}</p>",
        escape(ACTIVATION_MEANING)
    );
    h.push_str(&super::charts::activation(activation));
    // The per-task grid: loaded and passed / loaded and failed / not loaded, per arm.
    let arms: Vec<&str> = activation.arms.iter().map(|a| a.arm.as_str()).collect();
    h.push_str("<h3>Per task: loaded and passed · loaded and failed · not loaded</h3><table class=\"sortable\"><thead><tr><th>task</th>");
    for arm in &arms {
        let _ = write!(h, "<th class=\"num\">{}</th>", escape(&arm_label(arm)));
    }
    h.push_str("</tr></thead><tbody>");
    for task in &activation.tasks {
        let _ = write!(h, "<tr><td>{}</td>", escape(&task.task));
        for arm in &arms {
            match task.arms.get(*arm) {
                None => h.push_str("<td class=\"num\">—</td>"),
                Some(l) => {
                    let loaded = l.loaded_passed + l.loaded_failed + l.loaded_unscored;
                    let class = if loaded == 0 {
                        ""
                    } else {
                        cell_class(l.loaded_passed, loaded)
                    };
                    let unscored = match l.loaded_unscored {
                        0 => String::new(),
                        n => format!(" · {n} unscored"),
                    };
                    let _ = write!(
                        h,
                        "<td class=\"num {class}\" data-v=\"{loaded}\">{}</td>",
                        evidence_link(
                            &format!(
                                "{} ✓ · {} ✗ · {} not loaded{unscored}",
                                l.loaded_passed, l.loaded_failed, l.not_loaded
                            ),
                            &task.task,
                            Some(arm)
                        )
                    );
                }
            }
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table><h3>References never read</h3><ul class=\"changes\">");
    for arm in activation.arms.iter().filter(|a| a.skill.is_some()) {
        let name = arm_label(&arm.arm);
        let text = match (&arm.readable_files, &arm.never_read) {
            (Some(files), _) if files.is_empty() => {
                "the skill has no file to read besides SKILL.md".to_owned()
            }
            (Some(files), Some(never)) if never.is_empty() => format!(
                "every one of its {} was read by some trial",
                count_of(files.len() as u64, "readable file", "readable files")
            ),
            (Some(files), Some(never)) => format!(
                "{} of its {} no trial read: {}",
                never.len(),
                count_of(files.len() as u64, "readable file", "readable files"),
                never.join(", ")
            ),
            _ => "the run did not record the skill's file list".to_owned(),
        };
        let _ = write!(
            h,
            "<li><strong>{}</strong>: {}</li>",
            escape(&name),
            escape(&text)
        );
    }
    h.push_str("</ul>");
    let instead: Vec<String> = activation
        .arms
        .iter()
        .filter(|a| !a.others_instead.is_empty())
        .map(|a| {
            let names: Vec<String> = a
                .others_instead
                .iter()
                .map(|o| format!("{} in {}", o.skill, count_of(o.trials, "trial", "trials")))
                .collect();
            let whose = if a.skill.is_some() {
                " instead of its own"
            } else {
                ""
            };
            format!(
                "<li><strong>{}</strong> loaded{whose}: {}</li>",
                escape(&arm_label(&a.arm)),
                escape(&names.join(", "))
            )
        })
        .collect();
    if !instead.is_empty() {
        let _ = write!(
            h,
            "<h3>Other skills loaded</h3><ul class=\"changes\">{}</ul>",
            instead.join("")
        );
    }
}

/// What pass^k and pass@k mean, in one sentence each.
pub const CONSISTENCY_MEANING: &str = "pass^k: the share of tasks the arm passed in every one of its k repetitions (how reliably it gets a task right). pass@k: the share it passed in at least one (whether it can get the task right at all). Both count only tasks whose k repetitions all have a scored answer.";

/// One arm's card: success rate, its interval, and every count, adding up to planned.
fn arm_card(h: &mut String, arm: &ArmSummary) {
    let ci = arm.success.as_ref().map_or_else(String::new, |r| {
        format!(
            "95% CI {}–{}",
            pct_of(Some(&r.wilson95[0])),
            pct_of(Some(&r.wilson95[1]))
        )
    });
    let name = match &arm.bundle {
        None => "baseline (no skill)".to_owned(),
        Some(b) => format!("{} — {}", arm.arm.to_uppercase(), name_version(b)),
    };
    // An arm without a model result has no statistics to show, only that none exist yet.
    let rate_line = if arm.executed == 0 {
        "no model results yet".to_owned()
    } else {
        format!(
            "{} pass of {} executed · {}",
            arm.pass,
            arm.executed,
            escape(&ci)
        )
    };
    // Trials still waiting for a result are counted too, so the card adds up to planned.
    let waiting = match arm.pending {
        0 => String::new(),
        n => format!(" · no result yet {n}"),
    };
    // pass^k and pass@k, with what each means on hover and in the glossary below the cards.
    let consistency = arm
        .consistency
        .as_ref()
        .filter(|_| arm.executed > 0)
        .map_or_else(String::new, |c| {
            format!(
                "<div class=\"k\" title=\"{}\">{}</div>",
                escape(CONSISTENCY_MEANING),
                escape(&c.text())
            )
        });
    let _ = write!(
        h,
        "<div class=\"card\"><div class=\"k\">{}</div><div class=\"big\">{}</div><div class=\"k\">{rate_line}</div>{consistency}<div class=\"k\">planned {} · infrastructure errors {} · unknown {} · interrupted {} · not run {}{waiting}</div></div>",
        escape(&name),
        pct(arm.success.as_ref()),
        arm.planned,
        arm.infrastructure_error,
        arm.unknown,
        arm.interrupted,
        arm.not_run
    );
}

/// 2. Pair comparison: per contrast its cards, statement, per-task differences and exclusions.
fn pairs_view(h: &mut String, report: &Report) {
    h.push_str("<section class=\"view\" id=\"pairs\"><h2>Pair comparison</h2><p>Only (task, repetition) tuples where both compared arms have a model result count. Every excluded tuple is listed.</p>");
    let _ = write!(h, "<p>{}</p>", escape(&report.summary.caveat));
    for pair in &report.pairs {
        pair_section(h, pair);
    }
    h.push_str("</section>");
}

/// A p-value as a number to read, with its exact fraction beside it when they differ
/// (`2.8e-14 (1/35184372088832)`), as the JSON keeps it.
fn p_reading(p: &super::ExactFraction) -> String {
    let readable = p.readable();
    if readable == p.text {
        readable
    } else {
        format!("{readable} ({})", p.text)
    }
}

fn pair_section(h: &mut String, pair: &Pair) {
    let (xn, yn) = (pair.x.to_uppercase(), pair.y.to_uppercase());
    let _ = write!(
        h,
        "<h3>{} − {}</h3><div class=\"cards\"><div class=\"card\"><div class=\"k\">complete pairs</div><div class=\"big\">{}</div></div><div class=\"card\"><div class=\"k\">only {} passed</div><div class=\"big\">{}</div></div><div class=\"card\"><div class=\"k\">only {} passed</div><div class=\"big\">{}</div></div><div class=\"card\"><div class=\"k\">observed difference</div><div class=\"big\">{}</div><div class=\"k\">{}</div></div></div><p>{}</p>",
        escape(&xn),
        escape(&yn),
        pair.complete_pairs,
        escape(&xn),
        pair.x_only,
        escape(&yn),
        pair.y_only,
        pair.observed_difference
            .as_ref()
            .and_then(|d| d.value.parse::<f64>().ok())
            .map_or_else(|| "—".to_owned(), |v| format!("{:+.0} pts", v * 100.0)),
        escape(&format!(
            "p = {} · Holm-adjusted {}",
            or_dash(pair.test.p.as_ref().map(p_reading)),
            or_dash(pair.test.holm_p.as_ref().map(p_reading))
        )),
        escape(&pair.statement)
    );
    h.push_str("<table class=\"sortable\"><thead><tr><th>task</th><th class=\"num\">pairs</th><th class=\"num\">passes X − Y</th></tr></thead><tbody>");
    for t in &pair.per_task {
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&t.task),
            t.pairs,
            t.x_minus_y_passes
        );
    }
    h.push_str("</tbody></table>");
    if !pair.excluded.is_empty() {
        let _ = write!(
            h,
            "<details><summary>{}</summary><table><thead><tr><th>task</th><th>rep</th><th>why</th></tr></thead><tbody>",
            escape(&count_of(
                pair.excluded.len() as u64,
                "excluded tuple",
                "excluded tuples"
            ))
        );
        for e in &pair.excluded {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&e.task),
                e.repetition,
                escape(&e.reason)
            );
        }
        h.push_str("</tbody></table></details>");
    }
}

/// 3. Tasks and trials: the per-task matrix with its verdicts, then every trial.
fn tasks_view(h: &mut String, report: &Report) {
    let arms: Vec<&str> = report
        .manifest
        .arms
        .iter()
        .map(|a| a.arm.as_str())
        .collect();
    h.push_str("<section class=\"view\" id=\"tasks\"><h2>Tasks and trials</h2>");
    if let Some(grid) = super::charts::repetitions(report) {
        h.push_str("<h3>Repetitions</h3>");
        h.push_str(&grid);
    }
    h.push_str("<h3>Per-task matrix (pass / executed)</h3><table class=\"sortable\"><thead><tr><th>task</th><th>family</th>");
    for arm in &arms {
        let _ = write!(h, "<th class=\"num\">{}</th>", escape(&arm_label(arm)));
    }
    h.push_str("<th>verdict A</th><th>verdict B</th><th>B vs A</th></tr></thead><tbody>");
    for t in &report.tasks {
        task_row(h, t, &arms);
    }
    h.push_str("</tbody></table><h3>Trials</h3><table class=\"sortable\"><thead><tr><th class=\"num\">#</th><th>task</th><th>arm</th><th class=\"num\">rep</th><th>outcome</th><th>reasons</th><th class=\"num\">attempts</th></tr></thead><tbody>");
    for t in &report.trials {
        trial_row(h, t);
    }
    h.push_str("</tbody></table></section>");
}

fn task_row(h: &mut String, t: &TaskRow, arms: &[&str]) {
    let _ = write!(
        h,
        "<tr><td>{}</td><td>{}</td>",
        escape(&t.task),
        escape(&or_dash(t.family.as_deref()))
    );
    for arm in arms {
        let (p, n) = t.arms.get(*arm).map_or((0, 0), |c| (c.pass, c.executed));
        let _ = write!(
            h,
            "<td class=\"num {}\" data-v=\"{}\">{}</td>",
            cell_class(p, n),
            if n == 0 { 0.0 } else { p as f64 / n as f64 },
            evidence_link(&format!("{p} / {n}"), &t.task, Some(arm))
        );
    }
    let _ = write!(
        h,
        "<td>{}</td><td>{}</td><td>{}</td></tr>",
        escape(&or_dash(t.verdicts.get("a"))),
        escape(&or_dash(t.verdicts.get("b"))),
        escape(&or_dash(t.verdicts.get("b_vs_a")))
    );
}

fn trial_row(h: &mut String, t: &Trial) {
    let class = match t.outcome {
        TrialOutcome::Done(Outcome::Pass) => "pass",
        TrialOutcome::Done(Outcome::Fail | Outcome::InvalidOutput) => "fail",
        _ => "mid",
    };
    let _ = write!(
        h,
        "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"{class}\">{}</td><td class=\"mono\">{}</td><td class=\"num\">{}</td></tr>",
        t.index,
        escape(&t.task),
        escape(&arm_label(&t.arm)),
        t.repetition,
        escape(t.outcome.as_str()),
        escape(&t.reasons.join(", ")),
        t.attempts.len()
    );
}

/// 4. Evidence and reasons: every attempt with its checker details and its answer as text.
fn evidence_view(h: &mut String, report: &Report) {
    h.push_str("<section class=\"view\" id=\"evidence\"><h2>Evidence and reasons</h2><p>Every attempt with the checker's reasons and the model's answer, shown as plain text: nothing in an answer is ever rendered, linked or run.</p>");
    h.push_str(&evidence_filters(report));
    let mut shown_open = 0;
    for t in &report.trials {
        for a in &t.attempts {
            // The first few attempts that did not pass start open: the evidence people look for.
            let open = a.outcome != Some(Outcome::Pass) && shown_open < 3;
            if open {
                shown_open += 1;
            }
            attempt_details(h, t, a, open);
        }
    }
    h.push_str("</section>");
}

fn attempt_details(h: &mut String, t: &Trial, a: &Attempt, open: bool) {
    let outcome = outcome_text(a);
    let _ = write!(
        h,
        "<details{} data-task=\"{}\" data-arm=\"{}\" data-outcome=\"{}\"><summary>#{} {} · {} · rep {} · <span class=\"tag\">{}</span> <span class=\"mono\">{}</span></summary>",
        if open { " open" } else { "" },
        escape(&t.task),
        escape(&t.arm),
        escape(&outcome),
        t.index,
        escape(&t.task),
        escape(&arm_label(&t.arm)),
        t.repetition,
        escape(&outcome),
        escape(&a.id)
    );
    if let Some(turn) = a.turn {
        let _ = write!(h, "<p class=\"k\">turn {turn}</p>");
    }
    // The trial's loading, once, with its last attempt (the one whose answer was scored).
    if let Some(e) = &t.evidence
        && t.attempts.last().is_some_and(|last| last.id == a.id)
    {
        let reads: Vec<String> = e
            .reads
            .iter()
            .map(|r| format!("{}/{}", r.skill, r.path))
            .collect();
        let _ = write!(
            h,
            "<p class=\"k\">{} turns · skills loaded: {} · files read, in order: {}</p>",
            e.turns,
            escape(&if e.skills_loaded.is_empty() {
                "none".to_owned()
            } else {
                e.skills_loaded.join(", ")
            }),
            escape(&if reads.is_empty() {
                "none".to_owned()
            } else {
                reads.join(", ")
            })
        );
    }
    if let Some(reason) = &a.retry_reason {
        let _ = write!(
            h,
            "<p>Retry of <span class=\"mono\">{}</span>: {}</p>",
            escape(&or_dash(a.retry_of.as_deref())),
            escape(reason)
        );
    }
    for d in a.details.as_array().into_iter().flatten() {
        let _ = write!(
            h,
            "<div><span class=\"tag\">{}</span> <span class=\"mono\">{}</span> {} <span class=\"mono\">expected {} · got {}</span></div>",
            escape(&json_text(&d["reason"])),
            escape(&json_text(&d["field"])),
            escape(&json_text(&d["message"])),
            escape(
                &d.get("expected")
                    .map_or_else(|| "—".to_owned(), Value::to_string)
            ),
            escape(
                &d.get("got")
                    .map_or_else(|| "—".to_owned(), Value::to_string)
            )
        );
    }
    if let Some(err) = &a.error {
        let _ = write!(h, "<p class=\"k\">{}</p>", escape(err));
    }
    match &a.answer {
        Some(answer) => {
            let _ = write!(h, "<pre class=\"answer\">{}</pre>", escape(answer));
        }
        None if a.answer_purged => h.push_str("<p class=\"k\">answer purged</p>"),
        None => {}
    }
    h.push_str("</details>");
}

/// 5. Cost and unknowns: money, tokens and time, spend per arm, and unknown attempts.
fn cost_view(h: &mut String, report: &Report) {
    let cost: &Cost = &report.cost;
    let _ = write!(
        h,
        "<section class=\"view\" id=\"cost\"><h2>Cost and unknowns</h2><div class=\"cards\"><div class=\"card\"><div class=\"k\">spent (model usage at cost)</div><div class=\"big\">{}</div><div class=\"k\">cap {}</div></div><div class=\"card\"><div class=\"k\">still reserved</div><div class=\"big\">{}</div><div class=\"k\">held by unknown attempts</div></div><div class=\"card\"><div class=\"k\">tokens</div><div class=\"big\">{}</div><div class=\"k\">input {} · output {}</div></div><div class=\"card\"><div class=\"k\">time</div><div class=\"big\">{} ms</div><div class=\"k\">model latency (not the runner's) · runner's own time {} ms{}{}</div></div></div>",
        usd(Some(cost.spent_usd_micros)),
        usd(cost.cap_usd_micros),
        usd(Some(cost.reserved_usd_micros)),
        cost.input_tokens + cost.output_tokens,
        cost.input_tokens,
        cost.output_tokens,
        cost.model_latency_ms,
        cost.runner_time_ms,
        match cost.runner_time_unmeasured_attempts {
            0 => String::new(),
            n => format!(" (not measured for {})", count_of(n, "attempt", "attempts")),
        },
        match report.run.concurrency {
            None | Some(1) => " · one request at a time".to_owned(),
            Some(n) => format!(" · up to {n} requests at a time"),
        }
    );
    h.push_str(&super::charts::cost_and_time(report));
    h.push_str("<table class=\"sortable\"><thead><tr><th>arm</th><th class=\"num\">spent</th></tr></thead><tbody>");
    for (arm, v) in &cost.spent_by_arm_usd_micros {
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"num\" data-v=\"{v}\">{}</td></tr>",
            escape(&arm_label(arm)),
            usd(Some(*v))
        );
    }
    h.push_str("</tbody></table>");
    if cost.unknown_holding_reserve.is_empty() {
        h.push_str("<p>No unknown attempts.</p>");
    } else {
        h.push_str("<h3>Unknown attempts holding their reserve</h3><table><thead><tr><th>attempt</th><th class=\"num\">reserved</th></tr></thead><tbody>");
        for u in &cost.unknown_holding_reserve {
            let _ = write!(
                h,
                "<tr><td class=\"mono\">{}</td><td class=\"num\">{}</td></tr>",
                escape(&u.attempt),
                usd(Some(u.reserved_usd_micros))
            );
        }
        h.push_str("</tbody></table><p>Decide each with <code>skilltrial resolve &lt;attempt&gt; --retry --reason \"…\"</code> or <code>--release</code>.</p>");
    }
    if let Some(s) = &report.settlement {
        settlement_block(h, s);
    }
    h.push_str("</section>");
}

/// A hosted run's settlement as the report states it; `skilltrial verify` recomputes it.
fn settlement_block(h: &mut String, s: &Settlement) {
    let records = s.batches.iter().flat_map(|b| &b.evidence);
    let usage = records
        .clone()
        .try_fold(0u64, |sum, r| sum.checked_add(r.usage_lamports()));
    let _ = write!(
        h,
        "<h3>Settlement</h3><p>run {} · {} · {} settled · usage {} · digest <span class=\"mono\">{}</span> (as stated; <code>skilltrial verify</code> recomputes it from the evidence)</p>",
        s.run_id,
        count_of(s.batches.len() as u64, "batch", "batches"),
        count_of(records.count() as u64, "trial", "trials"),
        usage.map_or_else(
            || "—".to_owned(),
            |u| format!("{u} lamports ({})", Lamports(u))
        ),
        escape(&s.digest_sha256)
    );
}

/// 6. Manifest: both hashes, the warning, and the manifest as JSON, members sorted as in the file.
fn manifest_view(h: &mut String, report: &Report) {
    let pretty = serde_json::to_value(&report.manifest)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_default();
    let _ = write!(
        h,
        "<section class=\"view\" id=\"manifest\"><h2>Manifest</h2><p>manifest hash <span class=\"mono\">{}</span> · report hash <span class=\"mono\">{}</span></p><p>{}</p><pre>{}</pre></section>",
        escape(&report.manifest_hash),
        escape(&or_dash(report.report_hash.as_deref())),
        escape(&report.warning),
        escape(&pretty)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A three-arm partial report: the committed report of a 54-trial demo stopped before its
    /// first answer, with `executed` trials per arm given a result (all passing), the rest of the
    /// 18 still waiting; only the members the first screen reads are changed.
    fn partial(executed: [u64; 3]) -> Report {
        let mut report =
            Report::from_json(include_str!("../../tests/fixtures/report-v2-noresult.json"))
                .expect("the fixture is a v2 report");
        for (arm, n) in report.summary.arms.iter_mut().zip(executed) {
            *arm = super::super::ArmSummary {
                planned: 18,
                executed: n,
                pass: n,
                fail: 0,
                invalid_output: 0,
                unsupported_case: 0,
                infrastructure_error: 0,
                unknown: 0,
                interrupted: 0,
                not_run: 0,
                pending: 18 - n,
                success: Rate::of(n, n),
                ..arm.clone()
            };
        }
        report.summary.complete = false;
        report.summary.executed = executed.iter().sum();
        report.summary.changes = super::super::Changes {
            b_vs_a: Some(super::super::FixesBreaks::default()),
            b_vs_baseline: None,
            a_vs_baseline: Some(super::super::FixesBreaks::default()),
        };
        let both = executed[0] > 0 && executed[1] > 0;
        report.tasks.truncate(1);
        report.tasks[0].verdicts = super::super::Verdicts {
            a: Some(both.then(|| "no-op".to_owned())),
            b: None,
            b_vs_a: Some(None),
        };
        report
    }

    #[test]
    fn a_partial_run_banner_is_one_sentence_and_cards_count_waiting_trials() {
        let h = render(&partial([1, 1, 0]));
        assert!(h.contains("<strong>Partial run:</strong> 2 of 54 planned trials have a model result, so no winner is named."), "{h}");
        assert!(!h.contains("Partial: "), "{h}");
        assert!(h.contains("1 pass of 1 executed"), "{h}");
        assert!(h.contains("not run 0 · no result yet 17</div>"), "{h}");
        // B has no result yet: no empty statistics, and B against A is not compared yet.
        assert!(h.contains("<div class=\"k\">no model results yet</div><div class=\"k\">planned 18 · infrastructure errors 0 · unknown 0 · interrupted 0 · not run 0 · no result yet 18</div>"), "{h}");
        assert!(h.contains("<li><strong>B against A</strong>: nothing to compare yet (no task has a model result in both arms).</li>"), "{h}");
        assert!(
            h.contains("<strong>A fixes</strong> (baseline fails, A passes): no task"),
            "{h}"
        );
        assert!(!h.contains("0 pass of 0 executed"), "{h}");
    }

    #[test]
    fn a_run_without_results_compares_nothing() {
        let h = render(&partial([0, 0, 0]));
        assert!(h.contains("<h2>What changed</h2><ul class=\"changes\"><li>Nothing can be compared yet: no trial has a model result.</li></ul>"), "{h}");
        assert!(!h.contains("no task"), "{h}");
        assert_eq!(h.matches("no model results yet").count(), 3, "{h}");
    }

    #[test]
    fn the_activation_section_is_on_the_first_screen_only_with_activation() {
        // Given an inline report, then no activation section.
        let inline = render(&super::super::testing::rich());
        assert!(!inline.contains("Skill loading"), "{inline}");
        // Given the same run as a progressive one ...
        let h = render(&super::super::testing::progressive());
        // ... then the summary view holds the section, before the coverage table and the
        // tasks view's long tables.
        let summary = h.find("id=\"summary\"").unwrap();
        let section = h
            .find("<h2 id=\"activation\">Skill loading</h2>")
            .expect("the section");
        assert!(summary < section && section < h.find("<h3>Coverage</h3>").unwrap());
        assert!(section < h.find("id=\"tasks\"").unwrap());
        // Per-arm rates with their intervals.
        assert!(h.contains("<div class=\"k\">A loads solana-reader</div><div class=\"big\">67%</div><div class=\"k\">4 of 6 trials loaded the skill · 95% CI 30%–90%</div>"), "{h}");
        assert!(h.contains("median load turn 1.5 · tool errors: not_a_bundle_file 1, extra_call 2 · turn limit reached 1"), "{h}");
        assert!(
            h.contains("baseline loads another skill</div><div class=\"big\">17%</div>"),
            "{h}"
        );
        // The per-task grid, each cell opening its attempts.
        assert!(h.contains("<a href=\"#evidence\" data-task=\"acct-t22-fzyeg-mint\" data-arm=\"b\">0 ✓ · 0 ✗ · 0 not loaded · 1 unscored</a>"), "{h}");
        // References never read, and what was loaded instead.
        assert!(h.contains("<li><strong>A</strong>: 1 of its 3 readable files no trial read: references/c.md</li>"), "{h}");
        assert!(
            h.contains(
                "<li><strong>B</strong>: the run did not record the skill&#39;s file list</li>"
            ),
            "{h}"
        );
        assert!(
            h.contains(
                "<li><strong>A</strong> loaded instead of its own: solana-other in 1 trial</li>"
            ),
            "{h}"
        );
        // Each trial's loading, with its scored attempt.
        assert!(
            h.contains(
                "skills loaded: solana-reader · files read, in order: solana-reader/references/a.md"
            ),
            "{h}"
        );
    }

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"
        );
    }

    /// The custom properties of the rule that starts with `selector` in [`STYLE`].
    fn variables(selector: &str) -> std::collections::BTreeMap<String, String> {
        variables_in(STYLE, selector)
    }

    /// The custom properties of the first rule that starts with `selector` in `style`.
    fn variables_in(style: &str, selector: &str) -> std::collections::BTreeMap<String, String> {
        let start = style.find(selector).expect("selector in the style") + selector.len();
        let body = &style[start..];
        let body = &body[..body.find('}').unwrap()];
        body.split(';')
            .filter_map(|d| d.trim().strip_prefix("--"))
            .filter_map(|d| d.split_once(':'))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// WCAG 2.x relative luminance of `#rgb` / `#rrggbb`.
    fn luminance(hex: &str) -> f64 {
        let hex = hex.trim_start_matches('#');
        let hex: String = if hex.len() == 3 {
            hex.chars().flat_map(|c| [c, c]).collect()
        } else {
            hex.to_owned()
        };
        let channel = |i: usize| {
            let c = f64::from(u8::from_str_radix(&hex[i..i + 2], 16).unwrap()) / 255.0;
            if c <= 0.039_28 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4)
    }

    fn contrast(a: &str, b: &str) -> f64 {
        let (x, y) = (luminance(a), luminance(b));
        (x.max(y) + 0.05) / (x.min(y) + 0.05)
    }

    /// A declaration's colour, `var(--x)` resolved against a theme.
    fn resolve(value: &str, theme: &std::collections::BTreeMap<String, String>) -> String {
        match value
            .strip_prefix("var(--")
            .and_then(|v| v.strip_suffix(')'))
        {
            Some(name) => theme
                .get(name)
                .cloned()
                .unwrap_or_else(|| panic!("--{name} undefined")),
            None => value.to_owned(),
        }
    }

    #[test]
    fn every_text_colour_pair_meets_wcag_aa_in_both_themes() {
        // Given the light theme and the dark theme (the media-query copy must equal the toggled
        // one, or the toggle and the system setting would show different colours) ...
        let light = variables(":root{");
        let dark = variables(":root[data-theme=dark]{");
        assert_eq!(variables(":root:not([data-theme=light]){"), dark);
        // ... and the active tab's colours as its rule declares them.
        let tab = {
            let start = STYLE.find("nav a.on{").unwrap() + "nav a.on{".len();
            let body = &STYLE[start..];
            let body = &body[..body.find('}').unwrap()];
            let get = |k: &str| {
                body.split(';')
                    .find_map(|d| d.strip_prefix(k))
                    .unwrap()
                    .to_owned()
            };
            (get("color:"), get("background:"))
        };
        let pairs = [
            ("fg", "bg"),
            ("fg", "card"),
            ("fg", "warnbg"),
            ("muted", "bg"),
            ("muted", "card"),
            ("accent", "card"),
            ("accent", "bg"),
            ("good", "goodbg"),
            ("bad", "badbg"),
            ("mid", "midbg"),
        ];
        for (name, theme) in [("light", &light), ("dark", &dark)] {
            for (fg, bg) in pairs {
                let ratio = contrast(&theme[fg], &theme[bg]);
                assert!(ratio >= 4.5, "{name}: --{fg} on --{bg} is {ratio:.2}:1");
            }
            // Then the active tab is readable too (it was 2.4:1 in the dark theme).
            let ratio = contrast(&resolve(&tab.0, theme), &resolve(&tab.1, theme));
            assert!(ratio >= 4.5, "{name}: the active tab is {ratio:.2}:1");
        }
    }

    #[test]
    fn every_chart_mark_colour_stands_out_from_the_page_in_both_themes() {
        // Given the page's backgrounds and the charts' colours, light and dark ...
        let light = variables(":root{");
        let dark = variables(":root[data-theme=dark]{");
        let chart_light = variables_in(crate::svg::STYLE, ":root{");
        let chart_dark = variables_in(crate::svg::STYLE, ":root[data-theme=dark]{");
        assert_eq!(
            chart_light.keys().collect::<Vec<_>>(),
            chart_dark.keys().collect::<Vec<_>>()
        );
        for (name, page, chart) in [
            ("light", &light, &chart_light),
            ("dark", &dark, &chart_dark),
        ] {
            for (mark, colour) in chart {
                // "Not run" and "no result yet" are absences: faint on purpose, and outlined.
                if ["o-notrun", "o-pending"].contains(&mark.as_str()) {
                    continue;
                }
                // ... then every mark meets WCAG's 3:1 for graphics on both page surfaces.
                for surface in ["bg", "card"] {
                    let ratio = contrast(colour, &page[surface]);
                    assert!(
                        ratio >= 3.0,
                        "{name}: --{mark} on --{surface} is {ratio:.2}:1"
                    );
                }
            }
        }
    }

    #[test]
    fn utc_dates_from_unix_milliseconds() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_796_050_933_000), "2026-11-30 15:02 UTC");
    }

    #[test]
    fn csp_allows_only_our_own_inline_code() {
        let csp = content_security_policy();
        assert!(csp.starts_with("default-src 'none'"));
        assert!(!csp.contains("unsafe"));
        assert_eq!(csp.matches("'sha256-").count(), 2);
    }
}
