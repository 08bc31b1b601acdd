//! The checker's verdicts on stored answers, and which checkers produced them.

use rusqlite::{Transaction, params};

use super::{AttemptState, Durability, Journal, JournalError, TxError, now_ms};

impl Journal {
    /// Records a checker verdict for an attempt (the first check, or a recheck).
    pub fn record_verdict(
        &mut self,
        attempt: &str,
        verdict: &skilltrial_core::checker::Verdict,
    ) -> Result<(), JournalError> {
        self.write(|tx| Self::record_verdict_tx(tx, attempt, verdict))
    }

    /// The verdict ([`Journal::record_verdict`]) and the runner's own time on the attempt
    /// ([`Journal::record_runner_time`]) in one commit: the last write of an answered attempt.
    pub fn record_scored(
        &mut self,
        attempt: &str,
        verdict: &skilltrial_core::checker::Verdict,
        runner_us: u64,
    ) -> Result<(), JournalError> {
        self.write_with(Durability::WithNextCommit, |tx| {
            Self::record_verdict_tx(tx, attempt, verdict)?;
            Self::record_runner_time_on(tx, attempt, runner_us)?;
            Ok(())
        })
    }

    pub(super) fn record_verdict_tx(
        tx: &Transaction<'_>,
        attempt: &str,
        verdict: &skilltrial_core::checker::Verdict,
    ) -> Result<(), TxError> {
        let reasons = serde_json::to_string(&verdict.reasons).unwrap_or_else(|_| "[]".to_owned());
        let details = serde_json::to_string(&verdict.details).unwrap_or_else(|_| "[]".to_owned());
        tx.prepare_cached(
            "INSERT INTO checks (attempt_id, checker_version, checker_source_sha256, outcome, reasons, details, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            attempt,
            skilltrial_core::checker::CHECKER_VERSION,
            skilltrial_core::checker::source_sha256(),
            verdict.outcome.as_str(),
            reasons,
            details,
            now_ms()
        ])?;
        tx.prepare_cached(
            "UPDATE attempts SET outcome = ?2, reasons = ?3, details = ?4 WHERE id = ?1 AND state = ?5",
        )?
        .execute(params![
            attempt,
            verdict.outcome.as_str(),
            reasons,
            details,
            AttemptState::Result.as_str()
        ])?;
        Ok(())
    }

    /// The checkers (version, source hash) behind the current verdict of each attempt of a run.
    pub fn verdict_checkers(&self, run_id: &str) -> Result<Vec<(String, String)>, JournalError> {
        self.sql(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT DISTINCT c.checker_version, c.checker_source_sha256 FROM checks c
                 JOIN attempts a ON a.id = c.attempt_id
                 WHERE a.run_id = ?1 AND c.id = (SELECT MAX(id) FROM checks WHERE attempt_id = a.id)
                 ORDER BY 1, 2",
            )?;
            stmt.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
    }
}
