//! `pack verify`: every claim a pack makes, re-checked from its bytes.

use serde::Serialize;

use super::{Pack, generate_expected, golden_file_bytes};
use crate::checker::{self, CHECK_LIMIT, CHECKER_VERSION};
use crate::digest::Sha256Digest;
use crate::outcome::Outcome;

/// Minimum known-wrong answers per task.
pub const MIN_KNOWN_WRONG: usize = 5;

/// One verified claim.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct VerifyItem {
    /// The task, or empty for pack-wide claims.
    pub task: String,
    /// Which claim: `pack_hash`, `checker_version`, `input_sha256`, `golden_regenerates`,
    /// `golden_passes`, `known_wrong_count`, `known_wrong:<name>`.
    pub check: String,
    pub ok: bool,
    pub message: String,
}

/// The whole verification.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct VerifyReport {
    pub pack: String,
    pub hash: String,
    pub checker_version: &'static str,
    pub checker_source_sha256: &'static str,
    pub ok: bool,
    pub items: Vec<VerifyItem>,
}

/// Verifies a pack: pinned hash, checker version, input hashes, golden regeneration, golden
/// answers passing, and every known-wrong answer getting exactly its stated outcome and reasons.
pub fn verify(pack: &Pack) -> VerifyReport {
    let mut items = Vec::new();
    let mut push = |task: &str, check: String, ok: bool, message: String| {
        items.push(VerifyItem {
            task: task.to_owned(),
            check,
            ok,
            message,
        });
    };
    match pack.pinned_hash() {
        Some(pinned) => push(
            "",
            "pack_hash".into(),
            pinned == pack.hash.to_string(),
            format!("computed {}, pinned {pinned}", pack.hash),
        ),
        None => push(
            "",
            "pack_hash".into(),
            true,
            format!("computed {} (not a pinned release)", pack.hash),
        ),
    }
    push(
        "",
        "checker_version".into(),
        checker::reads_packs_for(&pack.checker.version),
        format!(
            "pack was built for checker {} {}, this checker is {CHECKER_VERSION}{}",
            pack.checker.name,
            pack.checker.version,
            if checker::reads_packs_for(&pack.checker.version) {
                ", which reads it"
            } else {
                ", which cannot read it"
            }
        ),
    );
    for task in &pack.tasks {
        let actual = Sha256Digest::of(&task.input).hex();
        let size_ok = task.input_ref.size == task.input.len() as u64;
        push(
            &task.id,
            "input_sha256".into(),
            actual == task.input_ref.sha256 && size_ok,
            format!(
                "{} is {} bytes, sha256 {actual}",
                task.input_ref.file,
                task.input.len()
            ),
        );
        match generate_expected(task) {
            Err(e) => push(
                &task.id,
                "golden_regenerates".into(),
                false,
                format!("the decoder fails: {e}"),
            ),
            Ok(expected) => {
                let same = golden_file_bytes(&expected) == task.golden_bytes;
                push(
                    &task.id,
                    "golden_regenerates".into(),
                    same,
                    if same {
                        "golden.json regenerates byte for byte".into()
                    } else {
                        "golden.json differs from what the decoder produces".into()
                    },
                );
                if let checker::Expected::Golden(golden) = &expected {
                    let verdict = checker::check_with_limit(
                        task.family,
                        &expected,
                        &golden.to_string(),
                        CHECK_LIMIT,
                    );
                    push(
                        &task.id,
                        "golden_passes".into(),
                        verdict.outcome == Outcome::Pass,
                        format!(
                            "the golden answer gets {} {:?}",
                            verdict.outcome, verdict.reasons
                        ),
                    );
                }
            }
        }
        push(
            &task.id,
            "known_wrong_count".into(),
            task.known_wrong.len() >= MIN_KNOWN_WRONG,
            format!(
                "{} known-wrong answers (at least {MIN_KNOWN_WRONG})",
                task.known_wrong.len()
            ),
        );
        for wrong in &task.known_wrong {
            let verdict = task.check(&wrong.text());
            let mut want = wrong.reasons.clone();
            want.sort();
            want.dedup();
            let undeclared: Vec<&String> = want
                .iter()
                .filter(|r| !task.reason_codes.contains(r))
                .collect();
            let ok = verdict.outcome == wrong.outcome
                && verdict.reasons == want
                && undeclared.is_empty();
            push(
                &task.id,
                format!("known_wrong:{}", wrong.name),
                ok,
                if undeclared.is_empty() {
                    format!(
                        "got {} {:?}, must get {} {:?}",
                        verdict.outcome, verdict.reasons, wrong.outcome, want
                    )
                } else {
                    format!("reasons {undeclared:?} are not among the task's reason_codes")
                },
            );
        }
    }
    let ok = items.iter().all(|i| i.ok);
    VerifyReport {
        pack: pack.id(),
        hash: pack.hash.to_string(),
        checker_version: CHECKER_VERSION,
        checker_source_sha256: checker::source_sha256(),
        ok,
        items,
    }
}
