//! The report format is pinned: committed `skilltrial-report-v2` files, written by the untyped
//! builder before the report was typed, read into the typed `Report` and written back give the same
//! canonical bytes and the same hashes. If this fails, the hash changed meaning: bump `FORMAT`
//! deliberately instead of accepting it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use skilltrial_core::canonical;
use skilltrial_core::outcome::Outcome;
use skilltrial_core::report::{FORMAT, Report, TrialOutcome, derivations, rederive};

/// (name, file text, its report hash as written by the untyped v2 builder).
const FIXTURES: [(&str, &str); 3] = [
    // 18 trials: unknown (one retried, one holding its reserve), infrastructure errors,
    // checker details, answers with markup and out-of-range numbers.
    ("rich", include_str!("fixtures/report-v2-rich.json")),
    // The 54-trial demo killed after a few answers: interrupted, a result not yet scored.
    ("partial", include_str!("fixtures/report-v2-partial.json")),
    // The demo killed after planning: no attempt has a result.
    ("noresult", include_str!("fixtures/report-v2-noresult.json")),
];

#[test]
fn a_v2_report_reads_into_the_type_and_writes_back_byte_for_byte() {
    for (name, text) in FIXTURES {
        // Given a report file written before the report was typed ...
        let document: Value = serde_json::from_str(text).unwrap();
        let stated = document["report_hash"].as_str().unwrap().to_owned();
        // ... when it is read into the type and written back ...
        let report = Report::from_json(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        // ... then the canonical bytes, the file's pretty text and both hashes are unchanged.
        assert_eq!(
            report.canonical().unwrap(),
            canonical::to_string(&document).unwrap(),
            "{name}"
        );
        let mut pretty = serde_json::to_string_pretty(&report.to_value().unwrap()).unwrap();
        pretty.push('\n');
        assert_eq!(pretty, text, "{name}: the report file's text");
        assert_eq!(report.hash().unwrap().to_string(), stated, "{name}");
        let (report_hash, manifest_hash) = report.verify().unwrap();
        assert_eq!(report_hash.to_string(), stated, "{name}");
        assert_eq!(manifest_hash.to_string(), report.manifest_hash, "{name}");
        assert_eq!(report.format, FORMAT);
        // And sealing again gives the same hash.
        let mut again = report.clone();
        assert_eq!(again.seal().unwrap().to_string(), stated, "{name}");
    }
}

#[test]
fn a_document_the_type_would_write_differently_is_not_a_report() {
    let text = FIXTURES[0].1;
    let document: Value = serde_json::from_str(text).unwrap();
    // An unknown member: it would escape the typed hash.
    let mut extra = document.clone();
    extra["cost"]["bonus"] = Value::from(1);
    let err = Report::from_value(&extra).unwrap_err().to_string();
    assert!(
        err.starts_with("not a skilltrial-report-v2 report: unknown field `bonus`"),
        "{err}"
    );
    // A member that is always written as `null` when empty, left out.
    let mut absent = document.clone();
    absent["run"]
        .as_object_mut()
        .unwrap()
        .remove("finished_at_ms");
    let err = Report::from_value(&absent).unwrap_err().to_string();
    assert_eq!(
        err,
        "not a skilltrial-report-v2 report: a member is not written as this format writes it"
    );
    // A verdict member is absent (no such arm), `null` (no verdict yet) or a word, and the type
    // keeps the three apart: each reads back as it was written.
    for verdict in [None, Some(Value::Null), Some(Value::from("same"))] {
        let mut doc = document.clone();
        let verdicts = doc["tasks"][0]["verdicts"].as_object_mut().unwrap();
        match &verdict {
            None => verdicts.remove("b_vs_a"),
            Some(v) => verdicts.insert("b_vs_a".to_owned(), v.clone()),
        };
        let report = Report::from_value(&doc).unwrap();
        assert_eq!(report.to_value().unwrap(), doc, "{verdict:?}");
    }
    // Not an object at all.
    assert!(Report::from_value(&Value::from(3)).is_err());
}

#[test]
fn a_rebuilt_report_from_the_same_facts_has_the_same_bytes() {
    // The builder is deterministic: each fixture rebuilt from the facts it shows (trials and
    // attempts) matches member for member, so `verify` can hold a report to its own trials.
    for (name, text) in FIXTURES {
        let report = Report::from_json(text).unwrap();
        assert_eq!(derivations(&report).unwrap(), [], "{name}");
        let rebuilt = rederive(&report);
        assert_eq!(
            rebuilt.canonical().unwrap(),
            report.canonical().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn a_summary_its_trials_do_not_give_is_named_however_it_was_sealed() {
    let report = Report::from_json(FIXTURES[0].1).unwrap();
    // A forged count, sealed again: both hashes recompute, and the summary is not the trials'.
    let mut forged = report.clone();
    forged.summary.arms[0].pass += 1;
    forged.seal().unwrap();
    assert!(forged.verify().is_ok());
    let found = derivations(&forged).unwrap();
    assert_eq!(
        found.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(),
        ["summary.arms[0].pass"]
    );
    assert_eq!(
        found[0].to_string(),
        format!(
            "summary.arms[0].pass: the report states {}, its trials give {}",
            report.summary.arms[0].pass + 1,
            report.summary.arms[0].pass
        )
    );
    // A trial's outcome that its latest attempt does not have.
    let mut flipped = report.clone();
    let trial = flipped
        .trials
        .iter_mut()
        .find(|t| t.outcome == TrialOutcome::Done(Outcome::InvalidOutput))
        .expect("the rich fixture has a trial with invalid output");
    let index = trial.index;
    trial.outcome = TrialOutcome::Done(Outcome::Pass);
    let paths: Vec<String> = derivations(&flipped)
        .unwrap()
        .into_iter()
        .map(|d| d.path)
        .collect();
    let position = report.trials.iter().position(|t| t.index == index).unwrap();
    assert_eq!(paths, [format!("trials[{position}].outcome")]);
    // A cost sum that is not the attempts'.
    let mut padded = report;
    padded.cost.input_tokens += 7;
    let paths: Vec<String> = derivations(&padded)
        .unwrap()
        .into_iter()
        .map(|d| d.path)
        .collect();
    assert_eq!(paths, ["cost.input_tokens"]);
}
