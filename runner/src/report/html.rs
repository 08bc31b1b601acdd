//! The HTML report: one self-contained file, readable from `file://`, with no network reference.
//!
//! Everything from a run — model answers above all — is HTML-escaped text; links and scripts in
//! answers are inert. A strict Content-Security-Policy allows only this file's own inline style
//! and script, by hash: no other script, style, image, font, frame or connection can load.

use std::fmt::Write as _;

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};

const STYLE: &str = r#"
:root{--bg:#fbfbfa;--fg:#1c1d21;--muted:#5d6270;--card:#fff;--line:#e3e4e8;--accent:#3451b2;--good:#1f7a4d;--goodbg:#e3f4ea;--bad:#b42318;--badbg:#fdecea;--mid:#8a5a00;--midbg:#fff4d6;--warnbg:#fff4d6}
@media (prefers-color-scheme:dark){:root:not([data-theme=light]){--bg:#15161a;--fg:#e6e6ea;--muted:#a2a6b3;--card:#1d1f25;--line:#30333c;--accent:#8ea2ff;--good:#5fd39b;--goodbg:#15392a;--bad:#ff8a80;--badbg:#43201d;--mid:#f0c060;--midbg:#3d3117;--warnbg:#3d3117}}
:root[data-theme=dark]{--bg:#15161a;--fg:#e6e6ea;--muted:#a2a6b3;--card:#1d1f25;--line:#30333c;--accent:#8ea2ff;--good:#5fd39b;--goodbg:#15392a;--bad:#ff8a80;--badbg:#43201d;--mid:#f0c060;--midbg:#3d3117;--warnbg:#3d3117}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
header{padding:20px 28px 8px;border-bottom:1px solid var(--line);background:var(--card)}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:24px 0 8px}h3{font-size:15px;margin:18px 0 6px}
.sub{color:var(--muted);font-size:13px}.mono,code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
nav{display:flex;gap:4px;flex-wrap:wrap;margin-top:12px}nav a{padding:6px 12px;border-radius:6px;color:var(--fg);text-decoration:none;border:1px solid var(--line)}nav a.on{background:var(--accent);color:#fff;border-color:var(--accent)}
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
"#;

const SCRIPT: &str = r#"
(function(){var d=document.documentElement;d.classList.add('js');
var views=[].slice.call(document.querySelectorAll('section.view')),links=[].slice.call(document.querySelectorAll('nav a'));
function show(id){views.forEach(function(v){v.classList.toggle('on',v.id===id)});links.forEach(function(a){a.classList.toggle('on',a.getAttribute('href')==='#'+id)})}
links.forEach(function(a){a.addEventListener('click',function(e){e.preventDefault();show(a.getAttribute('href').slice(1));history.replaceState(null,'',a.getAttribute('href'))})});
show((location.hash||'#summary').slice(1));window.scrollTo(0,0);
var t=document.getElementById('theme');if(t){t.addEventListener('click',function(){var cur=d.getAttribute('data-theme');d.setAttribute('data-theme',cur==='dark'?'light':'dark')})}
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

fn s(v: &Value) -> String {
    match v {
        Value::String(t) => t.clone(),
        Value::Null => "—".to_owned(),
        other => other.to_string(),
    }
}

fn pct(v: &Value) -> String {
    v.get("value")
        .and_then(Value::as_str)
        .and_then(|x| x.parse::<f64>().ok())
        .map_or_else(|| "—".to_owned(), |x| format!("{:.0}%", x * 100.0))
}

fn usd(micros: &Value) -> String {
    micros
        .as_u64()
        .map_or_else(|| "—".to_owned(), |m| crate::money::MicroUsd(m).to_string())
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

/// Renders the report document as one HTML page.
pub fn render(report: &Value) -> String {
    let m = &report["manifest"];
    let summary = &report["summary"];
    let scripted = report["comparability"]["model"]["scripted"]
        .as_bool()
        .unwrap_or(false);
    let complete = summary["complete"].as_bool().unwrap_or(false);
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" content=\"{}\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><meta name=\"referrer\" content=\"no-referrer\"><title>SkillTrial report {}</title><style>{STYLE}</style></head><body>",
        escape(&content_security_policy()),
        escape(&s(&report["run"]["id"]).chars().take(12).collect::<String>())
    );
    let arms_line: Vec<String> = m["arms"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|arm| match arm["bundle"].as_object() {
                    None => "baseline".to_owned(),
                    Some(b) => format!(
                        "{} = {} {}",
                        s(&arm["arm"]).to_uppercase(),
                        s(&b["name"]),
                        s(&b["version"])
                    ),
                })
                .collect()
        })
        .unwrap_or_default();
    let _ = write!(
        h,
        "<header><button id=\"theme\" type=\"button\">Light / dark</button><h1>SkillTrial report</h1><div class=\"sub\">run <span class=\"mono\">{}</span> · {} · pack {} · model {} ({}) · {}</div>",
        escape(&s(&report["run"]["id"])),
        escape(&s(&report["run"]["status"])),
        escape(&s(&m["pack"]["id"])),
        escape(&s(&m["model"]["profile"])),
        escape(&s(&m["model"]["model"])),
        escape(&arms_line.join(" · "))
    );
    if scripted {
        h.push_str("<div class=\"banner\"><strong>Scripted model.</strong> These answers come from SkillTrial's built-in scripted model server, not a real model. The run demonstrates the pipeline; its results say nothing about any real model and can never be compared with one.</div>");
    }
    if !complete {
        h.push_str("<div class=\"banner\"><strong>Partial run.</strong> Not every planned trial has a model result, so no winner is named.</div>");
    }
    h.push_str("<nav><a href=\"#summary\">Summary &amp; coverage</a><a href=\"#pairs\">Pair comparison</a><a href=\"#tasks\">Tasks &amp; trials</a><a href=\"#evidence\">Evidence &amp; reasons</a><a href=\"#cost\">Cost &amp; unknowns</a><a href=\"#manifest\">Manifest</a></nav></header><main>");

    // 1. Summary and coverage.
    h.push_str(
        "<section class=\"view\" id=\"summary\"><h2>Summary and coverage</h2><div class=\"cards\">",
    );
    for arm in summary["arms"].as_array().into_iter().flatten() {
        let success = &arm["success"];
        let ci = success["wilson95"]
            .as_array()
            .map(|w| {
                format!(
                    "95% CI {}–{}",
                    pct(&serde_json::json!({"value": w[0]})),
                    pct(&serde_json::json!({"value": w[1]}))
                )
            })
            .unwrap_or_default();
        let name = match arm["bundle"].as_object() {
            None => "baseline (no skill)".to_owned(),
            Some(b) => format!(
                "{} — {} {}",
                s(&arm["arm"]).to_uppercase(),
                s(&b["name"]),
                s(&b["version"])
            ),
        };
        let _ = write!(
            h,
            "<div class=\"card\"><div class=\"k\">{}</div><div class=\"big\">{}</div><div class=\"k\">{} pass of {} executed · {}</div><div class=\"k\">planned {} · infrastructure errors {} · unknown {} · interrupted {} · not run {}</div></div>",
            escape(&name),
            pct(success),
            s(&arm["pass"]),
            s(&arm["executed"]),
            escape(&ci),
            s(&arm["planned"]),
            s(&arm["infrastructure_error"]),
            s(&arm["unknown"]),
            s(&arm["interrupted"]),
            s(&arm["not_run"])
        );
    }
    h.push_str("</div>");
    let leader = &summary["leader"];
    let _ = write!(
        h,
        "<p>Success rate = pass ÷ executed model trials. {}</p>",
        if complete {
            match leader["arm"].as_str() {
                Some(arm) => format!(
                    "Most passes: <strong>{}</strong> ({}).",
                    escape(&arm.to_uppercase()),
                    escape(&s(&leader["note"]))
                ),
                None => escape(&s(&leader["note"])),
            }
        } else {
            "Partial run: no winner named.".to_owned()
        }
    );
    h.push_str("<h3>Coverage</h3><table class=\"sortable\"><thead><tr><th>arm</th><th>bundle</th><th>coverage</th><th class=\"num\">pass</th><th class=\"num\">fail</th><th class=\"num\">invalid output</th><th class=\"num\">unsupported</th></tr></thead><tbody>");
    for arm in summary["arms"].as_array().into_iter().flatten() {
        let (bundle, coverage) = match arm["bundle"].as_object() {
            None => ("—".to_owned(), "—".to_owned()),
            Some(b) => (
                format!("{} {} {}", s(&b["name"]), s(&b["version"]), s(&b["digest"])),
                s(&b["coverage"]),
            ),
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&s(&arm["arm"])),
            escape(&bundle),
            escape(&coverage),
            s(&arm["pass"]),
            s(&arm["fail"]),
            s(&arm["invalid_output"]),
            s(&arm["unsupported_case"])
        );
    }
    h.push_str("</tbody></table></section>");

    // 2. Pair comparison.
    h.push_str("<section class=\"view\" id=\"pairs\"><h2>Pair comparison</h2><p>Only (task, repetition) tuples where both compared arms have a model result count. Every excluded tuple is listed.</p>");
    for pair in report["pairs"].as_array().into_iter().flatten() {
        let _ = write!(
            h,
            "<h3>{} − {}</h3><div class=\"cards\"><div class=\"card\"><div class=\"k\">complete pairs</div><div class=\"big\">{}</div></div><div class=\"card\"><div class=\"k\">only {} passed</div><div class=\"big\">{}</div></div><div class=\"card\"><div class=\"k\">only {} passed</div><div class=\"big\">{}</div></div><div class=\"card\"><div class=\"k\">observed difference</div><div class=\"big\">{}</div><div class=\"k\">{}</div></div></div><p>{}</p>",
            escape(&s(&pair["x"]).to_uppercase()),
            escape(&s(&pair["y"]).to_uppercase()),
            s(&pair["complete_pairs"]),
            escape(&s(&pair["x"]).to_uppercase()),
            s(&pair["x_only"]),
            escape(&s(&pair["y"]).to_uppercase()),
            s(&pair["y_only"]),
            pair["observed_difference"]["value"]
                .as_str()
                .and_then(|v| v.parse::<f64>().ok())
                .map_or_else(|| "—".to_owned(), |v| format!("{:+.0} pts", v * 100.0)),
            escape(&format!(
                "p = {} · Holm {}",
                s(&pair["test"]["p"]["value"]),
                s(&pair["test"]["holm_p"])
            )),
            escape(&s(&pair["statement"]))
        );
        h.push_str("<table class=\"sortable\"><thead><tr><th>task</th><th class=\"num\">pairs</th><th class=\"num\">passes X − Y</th></tr></thead><tbody>");
        for t in pair["per_task"].as_array().into_iter().flatten() {
            let _ = write!(
                h,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                escape(&s(&t["task"])),
                s(&t["pairs"]),
                s(&t["x_minus_y_passes"])
            );
        }
        h.push_str("</tbody></table>");
        let excluded = pair["excluded"].as_array().map_or(0, Vec::len);
        if excluded > 0 {
            let _ = write!(
                h,
                "<details><summary>{excluded} excluded tuple(s)</summary><table><thead><tr><th>task</th><th>rep</th><th>why</th></tr></thead><tbody>"
            );
            for e in pair["excluded"].as_array().into_iter().flatten() {
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                    escape(&s(&e["task"])),
                    s(&e["repetition"]),
                    escape(&s(&e["reason"]))
                );
            }
            h.push_str("</tbody></table></details>");
        }
    }
    h.push_str("</section>");

    // 3. Tasks and trials.
    let arms: Vec<String> = m["arms"]
        .as_array()
        .map(|a| a.iter().map(|x| s(&x["arm"])).collect())
        .unwrap_or_default();
    h.push_str("<section class=\"view\" id=\"tasks\"><h2>Tasks and trials</h2><h3>Per-task matrix (pass / executed)</h3><table class=\"sortable\"><thead><tr><th>task</th><th>family</th>");
    for arm in &arms {
        let _ = write!(h, "<th class=\"num\">{}</th>", escape(arm));
    }
    h.push_str("<th>verdict A</th><th>verdict B</th><th>B vs A</th></tr></thead><tbody>");
    for t in report["tasks"].as_array().into_iter().flatten() {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td>",
            escape(&s(&t["task"])),
            escape(&s(&t["family"]))
        );
        for arm in &arms {
            let cell = &t["arms"][arm.as_str()];
            let (p, n) = (
                cell["pass"].as_u64().unwrap_or(0),
                cell["executed"].as_u64().unwrap_or(0),
            );
            let _ = write!(
                h,
                "<td class=\"num {}\" data-v=\"{}\">{p} / {n}</td>",
                cell_class(p, n),
                if n == 0 { 0.0 } else { p as f64 / n as f64 }
            );
        }
        let _ = write!(
            h,
            "<td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&s(&t["verdicts"]["a"])),
            escape(&s(&t["verdicts"]["b"])),
            escape(&s(&t["verdicts"]["b_vs_a"]))
        );
    }
    h.push_str("</tbody></table><h3>Trials</h3><table class=\"sortable\"><thead><tr><th class=\"num\">#</th><th>task</th><th>arm</th><th class=\"num\">rep</th><th>outcome</th><th>reasons</th><th class=\"num\">attempts</th></tr></thead><tbody>");
    for t in report["trials"].as_array().into_iter().flatten() {
        let outcome = s(&t["outcome"]);
        let class = match outcome.as_str() {
            "pass" => "pass",
            "fail" | "invalid_output" => "fail",
            _ => "mid",
        };
        let reasons: Vec<String> = t["reasons"]
            .as_array()
            .map(|r| r.iter().map(s).collect())
            .unwrap_or_default();
        let _ = write!(
            h,
            "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"{class}\">{}</td><td class=\"mono\">{}</td><td class=\"num\">{}</td></tr>",
            s(&t["index"]),
            escape(&s(&t["task"])),
            escape(&s(&t["arm"])),
            s(&t["repetition"]),
            escape(&outcome),
            escape(&reasons.join(", ")),
            t["attempts"].as_array().map_or(0, Vec::len)
        );
    }
    h.push_str("</tbody></table></section>");

    // 4. Evidence and reasons.
    h.push_str("<section class=\"view\" id=\"evidence\"><h2>Evidence and reasons</h2><p>Every attempt with the checker's reasons and the model's answer, shown as plain text: nothing in an answer is ever rendered, linked or run.</p>");
    let mut shown_open = 0;
    for t in report["trials"].as_array().into_iter().flatten() {
        for a in t["attempts"].as_array().into_iter().flatten() {
            // The first few attempts that did not pass start open: the evidence people look for.
            let open = if a["outcome"].as_str() != Some("pass") && shown_open < 3 {
                shown_open += 1;
                " open"
            } else {
                ""
            };
            let _ = write!(
                h,
                "<details{open}><summary>#{} {} · {} · rep {} · <span class=\"tag\">{}</span> <span class=\"mono\">{}</span></summary>",
                s(&t["index"]),
                escape(&s(&t["task"])),
                escape(&s(&t["arm"])),
                s(&t["repetition"]),
                escape(&s(&a["outcome"])),
                escape(&s(&a["id"]))
            );
            if let Some(reason) = a["retry_reason"].as_str() {
                let _ = write!(
                    h,
                    "<p>Retry of <span class=\"mono\">{}</span>: {}</p>",
                    escape(&s(&a["retry_of"])),
                    escape(reason)
                );
            }
            for d in a["details"].as_array().into_iter().flatten() {
                let _ = write!(
                    h,
                    "<div><span class=\"tag\">{}</span> <span class=\"mono\">{}</span> {} <span class=\"mono\">expected {} · got {}</span></div>",
                    escape(&s(&d["reason"])),
                    escape(&s(&d["field"])),
                    escape(&s(&d["message"])),
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
            if let Some(err) = a["error"].as_str() {
                let _ = write!(h, "<p class=\"k\">{}</p>", escape(err));
            }
            match a["answer"].as_str() {
                Some(answer) => {
                    let _ = write!(h, "<pre class=\"answer\">{}</pre>", escape(answer));
                }
                None if a["answer_purged"].as_bool().unwrap_or(false) => {
                    h.push_str("<p class=\"k\">answer purged</p>");
                }
                None => {}
            }
            h.push_str("</details>");
        }
    }
    h.push_str("</section>");

    // 5. Cost and unknowns.
    let cost = &report["cost"];
    let _ = write!(
        h,
        "<section class=\"view\" id=\"cost\"><h2>Cost and unknowns</h2><div class=\"cards\"><div class=\"card\"><div class=\"k\">spent (model usage at cost)</div><div class=\"big\">{}</div><div class=\"k\">cap {}</div></div><div class=\"card\"><div class=\"k\">still reserved</div><div class=\"big\">{}</div><div class=\"k\">held by unknown attempts</div></div><div class=\"card\"><div class=\"k\">tokens</div><div class=\"big\">{}</div><div class=\"k\">input {} · output {}</div></div><div class=\"card\"><div class=\"k\">time</div><div class=\"big\">{} ms</div><div class=\"k\">model latency (not the runner's) · runner's own time {} ms</div></div></div>",
        usd(&cost["spent_usd_micros"]),
        usd(&cost["cap_usd_micros"]),
        usd(&cost["reserved_usd_micros"]),
        cost["input_tokens"].as_u64().unwrap_or(0) + cost["output_tokens"].as_u64().unwrap_or(0),
        s(&cost["input_tokens"]),
        s(&cost["output_tokens"]),
        s(&cost["model_latency_ms"]),
        s(&cost["runner_time_ms"])
    );
    h.push_str("<table class=\"sortable\"><thead><tr><th>arm</th><th class=\"num\">spent</th></tr></thead><tbody>");
    if let Some(by_arm) = cost["spent_by_arm_usd_micros"].as_object() {
        for (arm, v) in by_arm {
            let _ = write!(
                h,
                "<tr><td>{}</td><td class=\"num\" data-v=\"{}\">{}</td></tr>",
                escape(arm),
                s(v),
                usd(v)
            );
        }
    }
    h.push_str("</tbody></table>");
    let unknown = cost["unknown_holding_reserve"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if unknown.is_empty() {
        h.push_str("<p>No unknown attempts.</p>");
    } else {
        h.push_str("<h3>Unknown attempts holding their reserve</h3><table><thead><tr><th>attempt</th><th class=\"num\">reserved</th></tr></thead><tbody>");
        for u in &unknown {
            let _ = write!(
                h,
                "<tr><td class=\"mono\">{}</td><td class=\"num\">{}</td></tr>",
                escape(&s(&u["attempt"])),
                usd(&u["reserved_usd_micros"])
            );
        }
        h.push_str("</tbody></table><p>Decide each with <code>skilltrial resolve &lt;attempt&gt; --retry --reason \"…\"</code> or <code>--release</code>.</p>");
    }
    h.push_str("</section>");

    // 6. Manifest.
    let pretty = serde_json::to_string_pretty(m).unwrap_or_default();
    let _ = write!(
        h,
        "<section class=\"view\" id=\"manifest\"><h2>Manifest</h2><p>manifest hash <span class=\"mono\">{}</span> · report hash <span class=\"mono\">{}</span></p><p>{}</p><pre>{}</pre></section>",
        escape(&s(&report["manifest_hash"])),
        escape(&s(&report["report_hash"])),
        escape(&s(&report["warning"])),
        escape(&pretty)
    );
    let _ = write!(h, "</main><script>{SCRIPT}</script></body></html>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"
        );
    }

    #[test]
    fn csp_allows_only_our_own_inline_code() {
        let csp = content_security_policy();
        assert!(csp.starts_with("default-src 'none'"));
        assert!(!csp.contains("unsafe"));
        assert_eq!(csp.matches("'sha256-").count(), 2);
    }
}
