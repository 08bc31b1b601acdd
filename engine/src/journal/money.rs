//! Money, from the ledger only: a run's totals, and the reserve taken before a dispatch.

use rusqlite::{Transaction, params};

use skilltrial_core::money::MicroUsd;

use super::{
    AttemptState, Durability, Journal, JournalError, LedgerKind, LedgerTotals, Money, TxError,
    now_ms, refuse, to_i64, to_u64,
};

impl Journal {
    /// The ledger's raw sums for a run.
    pub fn ledger_totals(&self, run_id: &str) -> Result<LedgerTotals, JournalError> {
        self.sql(|c| {
            c.prepare_cached(
                "SELECT COALESCE(SUM(CASE WHEN kind = ?2 THEN micros END), 0),
                        COALESCE(SUM(CASE WHEN kind = ?3 THEN micros END), 0),
                        COALESCE(SUM(CASE WHEN kind = ?4 THEN micros END), 0),
                        COALESCE(SUM(CASE WHEN kind = ?2 THEN tokens END), 0),
                        COALESCE(SUM(CASE WHEN kind = ?3 THEN tokens END), 0),
                        COALESCE(SUM(CASE WHEN kind = ?4 THEN tokens END), 0)
                 FROM ledger WHERE run_id = ?1",
            )?
            .query_row(
                params![
                    run_id,
                    LedgerKind::Reserve.as_str(),
                    LedgerKind::Release.as_str(),
                    LedgerKind::Spend.as_str()
                ],
                |r| {
                    Ok(LedgerTotals {
                        reserve_micros: to_u64(r.get(0)?),
                        release_micros: to_u64(r.get(1)?),
                        spend_micros: to_u64(r.get(2)?),
                        reserve_tokens: to_u64(r.get(3)?),
                        release_tokens: to_u64(r.get(4)?),
                        spend_tokens: to_u64(r.get(5)?),
                    })
                },
            )
        })
    }

    /// The run's money, from the ledger. Releasing more than was reserved (a double release) is
    /// a broken ledger, reported as an error rather than shown as "nothing reserved".
    pub fn money(&self, run_id: &str) -> Result<Money, JournalError> {
        let t = self.ledger_totals(run_id)?;
        let over = |kind, reserved, released| JournalError::OverRelease {
            path: self.path.clone(),
            run: run_id.to_owned(),
            kind,
            reserved,
            released,
        };
        let reserved = t
            .reserve_micros
            .checked_sub(t.release_micros)
            .ok_or_else(|| over("micro-USD", t.reserve_micros, t.release_micros))?;
        let reserved_tokens = t
            .reserve_tokens
            .checked_sub(t.release_tokens)
            .ok_or_else(|| over("tokens", t.reserve_tokens, t.release_tokens))?;
        Ok(Money {
            reserved: MicroUsd(reserved),
            spent: MicroUsd(t.spend_micros),
            reserved_tokens,
            used_tokens: t.spend_tokens,
        })
    }

    pub(super) fn ledger(
        tx: &Transaction<'_>,
        run_id: &str,
        attempt: &str,
        kind: LedgerKind,
        micros: u64,
        tokens: u64,
        note: &str,
    ) -> rusqlite::Result<()> {
        tx.prepare_cached(
            "INSERT INTO ledger (run_id, attempt_id, kind, micros, tokens, at_ms, note) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            run_id,
            attempt,
            kind.as_str(),
            to_i64(micros),
            to_i64(tokens),
            now_ms(),
            note
        ])?;
        Ok(())
    }

    /// Re-reserves a planned (retry) attempt right before dispatch.
    pub fn reserve_planned(
        &mut self,
        attempt: &str,
        reserve: MicroUsd,
        tokens: u64,
    ) -> Result<(), JournalError> {
        self.write(|tx| Self::reserve_planned_tx(tx, attempt, reserve, tokens))
    }

    /// [`Journal::reserve_planned`] and the run's clock in one commit, as
    /// [`Journal::plan_attempt_at`].
    pub fn reserve_planned_at(
        &mut self,
        attempt: &str,
        reserve: MicroUsd,
        tokens: u64,
        run_id: &str,
        executed_ms: u64,
    ) -> Result<(), JournalError> {
        self.write_with(Durability::WithNextCommit, |tx| {
            Self::set_executed_ms_on(tx, run_id, executed_ms)?;
            Self::reserve_planned_tx(tx, attempt, reserve, tokens)
        })
    }

    pub(super) fn reserve_planned_tx(
        tx: &Transaction<'_>,
        attempt: &str,
        reserve: MicroUsd,
        tokens: u64,
    ) -> Result<(), TxError> {
        let (run_id, _, _) = Self::run_of(tx, attempt)?;
        let updated = tx
            .prepare_cached(
                "UPDATE attempts SET reserved_micros = ?2, reserved_tokens = ?3 WHERE id = ?1 AND state = ?4 AND reserved_micros = 0 AND reserved_tokens = 0",
            )?
            .execute(params![
                attempt,
                to_i64(reserve.0),
                to_i64(tokens),
                AttemptState::Planned.as_str()
            ])?;
        if updated != 1 {
            return Err(refuse(format!(
                "attempt {attempt} is not a planned attempt without a reserve"
            )));
        }
        Self::ledger(
            tx,
            &run_id,
            attempt,
            LedgerKind::Reserve,
            reserve.0,
            tokens,
            "upper cost reserved before dispatch",
        )?;
        Ok(())
    }
}
