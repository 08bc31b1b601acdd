//! Test reports for the report's readers (HTML, gate, ledger): the committed rich v2 report with
//! hand-made progressive evidence on its trials, built again by the real builder.

use std::collections::BTreeMap;

use super::{Report, build, build::facts_of};
use crate::delivery::{ErrorCount, ReadFile, ToolError, TrialEvidence};

/// The rich fixture: 18 trials, one repetition of 6 tasks in baseline, A and B (both
/// `solana-reader`), outcomes of every kind.
pub(crate) fn rich() -> Report {
    Report::from_json(include_str!("../../tests/fixtures/report-v2-rich.json"))
        .expect("the fixture is a v2 report")
}

/// A trial's evidence: `skills` loaded in order (the arm's own at `own_turn`), `reads` of the
/// arm's skill, `errors`, and whether it hit the turn limit.
pub(crate) fn evidence(
    own_turn: Option<u32>,
    skills: &[&str],
    reads: &[&str],
    errors: &[(ToolError, u32)],
    turn_limit: bool,
) -> TrialEvidence {
    TrialEvidence {
        turns: own_turn.map_or(1, |t| t + 1),
        loaded: own_turn.is_some(),
        loaded_at_turn: own_turn,
        skills_loaded: skills.iter().map(|s| (*s).to_owned()).collect(),
        reads: reads
            .iter()
            .map(|p| ReadFile {
                skill: "solana-reader".to_owned(),
                path: (*p).to_owned(),
            })
            .collect(),
        tool_errors: errors
            .iter()
            .map(|(error, count)| ErrorCount {
                error: *error,
                count: *count,
            })
            .collect(),
        turn_limit,
        catalog_bytes: 1_000,
        instructions_bytes: 500 * skills.len() as u64,
        resources_bytes: 200 * reads.len() as u64,
    }
}

/// The rich fixture as a progressive run, built by [`build`] from its facts with this evidence:
///
/// - A (trials 0 pass, 4 invalid output, 8, 11, 13, 17 pass): its own skill loaded in 0 and 8 at
///   turn 1, in 4 and 11 at turn 2 (4/6, median turn 1.5); 13 loaded `solana-other` instead; 17
///   loaded nothing and hit the turn limit. Reads `references/a.md` (0) and `references/b.md`
///   (4) of three readable files; tool errors: one `not_a_bundle_file` (4), two `extra_call` (11).
/// - B (1 pass, 3 unknown, 7, 9, 14, 15 pass): loaded in all six at turn 1; 7 also loaded
///   `solana-other` afterwards. No readable file list given.
/// - baseline (2, 6 infrastructure errors; 5, 10, 12, 16 invalid output): 5 loaded
///   `solana-other`.
pub(crate) fn progressive() -> Report {
    use ToolError::{ExtraCall, NotABundleFile};
    let own = "solana-reader";
    let other = "solana-other";
    let mut report = rich();
    for trial in &mut report.trials {
        trial.evidence = Some(match trial.index {
            0 => evidence(Some(1), &[own], &["references/a.md"], &[], false),
            4 => evidence(
                Some(2),
                &[own],
                &["references/b.md"],
                &[(NotABundleFile, 1)],
                false,
            ),
            8 => evidence(Some(1), &[own], &[], &[], false),
            11 => evidence(Some(2), &[own], &[], &[(ExtraCall, 2)], false),
            13 => evidence(None, &[other], &[], &[], false),
            17 => evidence(None, &[], &[], &[], true),
            7 => evidence(Some(1), &[own, other], &[], &[], false),
            1 | 3 | 9 | 14 | 15 => evidence(Some(1), &[own], &[], &[], false),
            5 => evidence(None, &[other], &[], &[], false),
            _ => evidence(None, &[], &[], &[], false),
        });
    }
    let mut facts = facts_of(&report);
    facts.readable_files = BTreeMap::from([(
        "a".to_owned(),
        vec![
            "references/a.md".to_owned(),
            "references/b.md".to_owned(),
            "references/c.md".to_owned(),
        ],
    )]);
    let mut built = build(facts);
    built.generated_by = report.generated_by;
    built
}
