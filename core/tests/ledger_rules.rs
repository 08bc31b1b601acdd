//! The ledger's comparability and column rules (core::ledger), on variants of a committed report:
//! what must match, which run stands for a model, what is left out and why, and what the page
//! lets load.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use skilltrial_core::ledger::{self, Basis, LedgerError, Reading};
use skilltrial_core::report::Report;

const RICH: &str = include_str!("fixtures/report-v2-rich.json");

/// The rich fixture as a run `id` of `model`, created at `created`, complete or not, with B's
/// fixes and breaks against A, after `edit` on its JSON.
fn report(
    id: &str,
    model: &str,
    created: i64,
    complete: bool,
    edit: impl Fn(&mut Value),
) -> Report {
    let mut doc: Value = serde_json::from_str(RICH).unwrap();
    doc["run"]["id"] = json!(format!("{id:0<64}"));
    doc["run"]["created_at_ms"] = json!(created);
    doc["run"]["complete"] = json!(complete);
    doc["comparability"]["model"]["model"] = json!(model);
    doc["comparability"]["model"]["reported_models"] = json!([model]);
    edit(&mut doc);
    // The ledger reads reports as given; `skilltrial ledger` checks a file's hashes before.
    doc.as_object_mut().unwrap().remove("report_hash");
    Report::from_value(&doc).unwrap()
}

fn plain(id: &str, model: &str, created: i64) -> Report {
    report(id, model, created, true, |_| {})
}

fn b_vs_a(fixes: &[&str], breaks: &[&str]) -> impl Fn(&mut Value) {
    let (fixes, breaks) = (json!(fixes), json!(breaks));
    move |doc: &mut Value| {
        doc["summary"]["changes"]["b_vs_a"] = json!({ "fixes": fixes, "breaks": breaks });
    }
}

#[test]
fn two_models_of_one_measurement_stand_side_by_side_with_what_each_version_does() {
    // Given the same bundles and pack on two models, B fixing a task on one and breaking one on
    // the other ...
    let first = report("aa", "model-one", 2, true, b_vs_a(&["tx-v0-alt-usdc"], &[]));
    let second = report("bb", "model-two", 1, true, b_vs_a(&[], &["acct-usdc-mint"]));
    // ... when the ledger is built ...
    let l = ledger::build(&[first, second], Basis::First).unwrap();
    // ... then each model is a column in the order given, nothing is left out ...
    let models: Vec<&str> = l.models.iter().map(|m| m.model.as_str()).collect();
    assert_eq!(models, ["anthropic model-one", "anthropic model-two"]);
    assert!(l.left_out.is_empty(), "{:?}", l.left_out);
    assert_eq!(l.format, ledger::FORMAT);
    // ... per arm the report's counts and Wilson interval ...
    let a = l.models[0].arms.iter().find(|a| a.arm == "a").unwrap();
    assert_eq!((a.pass, a.executed), (5, 6));
    assert_eq!(a.success.as_ref().unwrap().wilson95.len(), 2);
    // ... and B against A helps on the first and breaks on the second.
    let v = l.versions.iter().find(|v| v.contrast == "b_vs_a").unwrap();
    assert_eq!(v.helps, ["anthropic model-one"]);
    assert_eq!(v.breaks, ["anthropic model-two"]);
    let cell = |m: usize| {
        l.models[m]
            .contrasts
            .iter()
            .find(|c| c.contrast == "b_vs_a")
            .unwrap()
            .clone()
    };
    assert_eq!(cell(0).reading, Reading::Helps);
    assert_eq!(cell(1).reading, Reading::Breaks);
    assert_eq!(cell(0).holm_p.as_deref(), Some("1"));
    // One task row per task of the basis, one cell per model.
    assert_eq!(l.tasks.len(), 6);
    assert!(l.tasks.iter().all(|t| t.cells.len() == 2));
    let text = l.text();
    assert!(
        text.contains("B vs A: helps on anthropic model-one; breaks on anthropic model-two"),
        "{text}"
    );
}

#[test]
fn a_run_that_measured_something_else_is_left_out_naming_each_difference_and_both_values() {
    let basis = plain("aa", "model-one", 5);
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "pack",
            Box::new(|d: &mut Value| {
                d["comparability"]["pack"]["hash"] = json!("sha256:other");
            }),
        ),
        (
            "repetitions",
            Box::new(|d: &mut Value| d["manifest"]["repetitions"] = json!(3)),
        ),
        (
            "arms and bundle digests",
            Box::new(|d: &mut Value| {
                d["manifest"]["arms"][2]["bundle"]["digest"] = json!("sha256:another-b");
            }),
        ),
        (
            "sampling and output limit",
            Box::new(|d: &mut Value| {
                d["comparability"]["sampling"]["temperature"] = json!("0.7");
            }),
        ),
        (
            "prompt template",
            Box::new(|d: &mut Value| {
                d["comparability"]["prompt_template_sha256"] = json!("sha256:other-prompt");
            }),
        ),
        (
            "checker source",
            Box::new(|d: &mut Value| {
                d["comparability"]["checker"]["source_sha256"] = json!("other");
            }),
        ),
        (
            "tasks",
            Box::new(|d: &mut Value| {
                d["manifest"]["tasks"].as_array_mut().unwrap().pop();
            }),
        ),
    ];
    for (what, edit) in cases {
        let other = report("bb", "model-two", 9, true, edit);
        let l = ledger::build(&[basis.clone(), other], Basis::First).unwrap();
        assert_eq!(l.models.len(), 1, "{what}");
        assert_eq!(l.left_out.len(), 1, "{what}");
        let out = &l.left_out[0];
        assert!(out.run.starts_with("bb"), "{what}");
        let whats: Vec<&str> = out.differs.iter().map(|d| d.what.as_str()).collect();
        assert!(whats.contains(&what), "{what}: {whats:?}");
        assert!(out.reason.contains(what), "{what}: {}", out.reason);
        let d = out.differs.iter().find(|d| d.what == what).unwrap();
        assert_ne!(d.this, d.other, "{what}: both values are shown");
    }
}

#[test]
fn a_model_is_shown_by_its_newest_complete_run_and_its_other_runs_are_left_out() {
    // Newest first, as the journal lists them: a partial run, then two complete ones.
    let partial = report("cc", "model-one", 30, false, |_| {});
    let newer = plain("bb", "model-one", 20);
    let older = plain("aa", "model-one", 10);
    let l = ledger::build(&[partial, newer, older], Basis::First).unwrap();
    assert_eq!(l.models.len(), 1);
    assert!(l.models[0].run.starts_with("bb"), "the newest complete run");
    let reasons: Vec<(&str, &str)> = l
        .left_out
        .iter()
        .map(|o| (&o.run[..2], o.reason.as_str()))
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|(r, why)| *r == "cc" && why.contains("(complete)")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|(r, why)| *r == "aa" && why.contains("(newer)")),
        "{reasons:?}"
    );

    // Without a complete run, the newest is shown, marked partial.
    let l = ledger::build(
        &[
            report("dd", "m", 2, false, |_| {}),
            report("ee", "m", 1, false, |_| {}),
        ],
        Basis::First,
    )
    .unwrap();
    assert!(l.models[0].run.starts_with("dd") && !l.models[0].complete);
    assert!(l.text().contains("(partial)"));
}

#[test]
fn over_a_whole_journal_the_basis_is_the_one_most_models_share() {
    // The newest run measured something else (another repetition count) on a third model; two
    // older runs share a basis on two models.
    let odd = report("cc", "model-three", 30, true, |d| {
        d["manifest"]["repetitions"] = json!(3);
    });
    let one = plain("bb", "model-one", 20);
    let two = plain("aa", "model-two", 10);
    let runs = [odd, one, two];
    let l = ledger::build(&runs, Basis::MostModels).unwrap();
    assert_eq!(l.models.len(), 2);
    assert_eq!(l.basis.repetitions, 1);
    assert_eq!(l.left_out.len(), 1);
    assert!(l.left_out[0].run.starts_with("cc"));
    // Named first, the odd run is the basis instead, and the other two are left out.
    let l = ledger::build(&runs, Basis::First).unwrap();
    assert_eq!(l.models.len(), 1);
    assert_eq!(l.basis.repetitions, 3);
    assert_eq!(l.left_out.len(), 2);
}

#[test]
fn runs_without_a_scored_trial_or_given_twice_are_left_out_and_none_is_an_error() {
    let nothing = report("bb", "model-two", 1, false, |d| {
        for arm in d["summary"]["arms"].as_array_mut().unwrap() {
            arm["executed"] = json!(0);
            arm["pass"] = json!(0);
        }
        // Nothing answered yet: no model reported, no checker behind a verdict — which
        // contradicts no basis.
        d["comparability"]["model"]["reported_models"] = json!([]);
        d["comparability"]["verdicts_by"] = json!([]);
    });
    let one = plain("aa", "model-one", 2);
    let l = ledger::build(&[one.clone(), nothing, one], Basis::First).unwrap();
    assert_eq!(l.models.len(), 1);
    let reasons: Vec<&str> = l.left_out.iter().map(|o| o.reason.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "given more than once: shown once",
            "has no scored trial yet"
        ]
    );
    assert_eq!(
        ledger::build(&[], Basis::MostModels).unwrap_err(),
        LedgerError::NoRuns
    );
    assert_eq!(
        ledger::build(&[], Basis::First).unwrap_err(),
        LedgerError::NoRuns
    );
}

#[test]
fn the_page_is_escaped_text_under_a_policy_that_loads_no_script() {
    let hostile = "<script>alert(1)</script>\"'&\u{1b}[2J\u{202e}";
    let l = ledger::build(
        &[
            plain("aa", hostile, 2),
            report("bb", "model-two", 1, true, b_vs_a(&[], &["acct-usdc-mint"])),
        ],
        Basis::First,
    )
    .unwrap();
    let page = ledger::html::render(&l);
    assert!(!page.contains("<script"), "no script element at all");
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;\\u{1b}[2J\\u{202e}")
    );
    // Neither the page nor the text carries a raw control or bidi character from a name.
    let text = l.text();
    for shown in [&page, &text] {
        assert!(!shown.contains('\u{1b}') && !shown.contains('\u{202e}'));
    }
    assert!(text.contains("\\u{1b}[2J"), "{text}");
    // The policy, as the attribute holds it (quotes escaped).
    assert!(page.contains("default-src &#39;none&#39;; style-src &#39;sha256-"));
    assert!(page.contains("script-src &#39;none&#39;"));
    assert!(page.contains("Wilson 95%"));
    assert!(page.contains("Tasks side by side"));
    assert!(page.contains("breaks on anthropic model-two"));
}
