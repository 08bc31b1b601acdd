//! A hosted run's settlement checked against the report that carries it: the digest recomputes
//! from the evidence ([`Settlement::verify`]), and every evidence record names an attempt the
//! report publishes, under the same trial, with the same answer hash and provider request id, so
//! every charged lamport traces to a published attempt.
//!
//! The usage itself cannot be tied: an attempt records its cost in micro-USD at the profile's
//! prices, the evidence in lamports at the runner's rate, and the report holds no rate.

use super::Report;
use crate::settlement::{EvidenceError, EvidenceRecord, SettlementCheck, SettlementError};

impl Report {
    /// The evidence record a runner settles for the trial at `position` in the report: its last
    /// attempt, charged `usage_lamports`. `None` when there is no such trial, or it has no
    /// attempt or no answer; an error when the attempt's ids or hash make no valid record.
    pub fn evidence_of(
        &self,
        position: usize,
        usage_lamports: u64,
    ) -> Option<Result<EvidenceRecord, EvidenceError>> {
        let trial = self.trials.get(position)?;
        let attempt = trial.attempts.last()?;
        let answer = attempt.answer_sha256.clone()?;
        let index = u16::try_from(trial.index).ok()?;
        Some(EvidenceRecord::new(
            index,
            attempt.id.clone(),
            attempt.provider_request_id.clone(),
            usage_lamports,
            answer,
        ))
    }

    /// `None` for a report without a settlement (a local run); otherwise the recomputed
    /// settlement, or the first thing that does not hold.
    pub fn verify_settlement(&self) -> Option<Result<SettlementCheck, SettlementError>> {
        let settlement = self.settlement.as_ref()?;
        Some(settlement.verify().and_then(|check| {
            for (i, batch) in settlement.batches.iter().enumerate() {
                for record in &batch.evidence {
                    self.published(i + 1, record)?;
                }
            }
            Ok(check)
        }))
    }

    /// The record names an attempt of its trial that the report publishes, and agrees with it.
    fn published(&self, batch: usize, record: &EvidenceRecord) -> Result<(), SettlementError> {
        let trial = record.trial();
        let attempt = self
            .trials
            .iter()
            .find(|t| t.index == u32::from(trial))
            .ok_or(SettlementError::UnknownTrial { batch, trial })?
            .attempts
            .iter()
            .find(|a| a.id == record.attempt_id())
            .ok_or_else(|| SettlementError::UnknownAttempt {
                batch,
                trial,
                attempt: record.attempt_id().to_owned(),
            })?;
        for (member, published, evidence) in [
            (
                "answer_sha256",
                attempt.answer_sha256.as_deref(),
                Some(record.answer_sha256()),
            ),
            (
                "provider_request_id",
                attempt.provider_request_id.as_deref(),
                record.provider_request_id(),
            ),
        ] {
            if published != evidence {
                let shown = |v: Option<&str>| v.map_or_else(|| "null".to_owned(), str::to_owned);
                return Err(SettlementError::AttemptDiffers {
                    batch,
                    trial,
                    attempt: record.attempt_id().to_owned(),
                    member,
                    expected: shown(published),
                    found: shown(evidence),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settlement::{SettledBatch, Settlement};

    /// The committed 18-trial report (its attempts have ids, request ids and answer hashes).
    fn rich() -> Report {
        Report::from_json(include_str!("../../tests/fixtures/report-v2-rich.json"))
            .expect("the fixture is a v2 report")
    }

    /// Evidence for every trial whose latest attempt has an answer, charged `usage` each, in
    /// batches of `per_batch`.
    fn settle(report: &Report, per_batch: usize) -> Settlement {
        let records: Vec<EvidenceRecord> = report
            .trials
            .iter()
            .filter_map(|t| {
                let a = t.attempts.last()?;
                EvidenceRecord::new(
                    u16::try_from(t.index).ok()?,
                    a.id.clone(),
                    a.provider_request_id.clone(),
                    1_000 + u64::from(t.index),
                    a.answer_sha256.clone()?,
                )
                .ok()
            })
            .collect();
        let batches = records
            .chunks(per_batch)
            .map(|c| SettledBatch::new(c.to_vec(), None))
            .collect();
        let key = "11111111111111111111111111111111".to_owned();
        Settlement::new(key.clone(), key, 1, batches)
    }

    #[test]
    fn a_local_report_has_no_settlement_and_writes_no_member() {
        let report = rich();
        assert!(report.verify_settlement().is_none());
        assert!(report.to_value().unwrap().get("settlement").is_none());
    }

    #[test]
    fn a_settlement_of_published_attempts_verifies_and_is_sealed() {
        // Given the rich report with its answered trials settled in batches of 5 ...
        let mut report = rich();
        let unsealed_hash = report.hash().unwrap();
        report.settlement = Some(settle(&report, 5));
        // ... it recomputes, reads back as written, and the seal covers the section.
        let check = report.verify_settlement().unwrap().unwrap();
        assert!(check.records >= 10, "{check:?}");
        assert_eq!(check.batches, check.records.div_ceil(5));
        assert_ne!(report.hash().unwrap(), unsealed_hash);
        report.seal().unwrap();
        let text = serde_json::to_string_pretty(&report.to_value().unwrap()).unwrap();
        let back = Report::from_json(&text).unwrap();
        assert_eq!(back, report);
        back.verify().unwrap();
        let usage = text.replacen("\"usage_lamports\": 1000", "\"usage_lamports\": 1001", 1);
        assert_ne!(usage, text);
        assert!(Report::from_json(&usage).unwrap().verify().is_err());
    }

    #[test]
    fn the_html_view_shows_the_settlement_only_when_there_is_one() {
        let mut report = rich();
        assert!(!super::super::html::render(&report).contains("Settlement"));
        // Given a settlement of 1_000 + index lamports per answered trial, in batches of 5 ...
        let settlement = settle(&report, 5);
        let check = settlement.verify().unwrap();
        report.settlement = Some(settlement);
        // ... the cost view states its run, batches, trials, usage (lamports and SOL) and digest.
        let html = super::super::html::render(&report);
        let expected = format!(
            "<h3>Settlement</h3><p>run 1 · {} batches · {} trials settled · usage {} lamports (0.0000{} SOL) · digest <span class=\"mono\">{}</span>",
            check.batches,
            check.records,
            check.usage_lamports,
            check.usage_lamports,
            check.digest.hex()
        );
        assert!(check.usage_lamports > 10_000 && check.usage_lamports < 100_000);
        assert!(html.contains(&expected), "{expected}");
    }

    #[test]
    fn every_record_must_name_a_published_attempt_that_agrees() {
        let report = rich();
        let base = settle(&report, 60);
        let first = base.batches[0].evidence[0].clone();
        let with = |record: EvidenceRecord| {
            let mut r = report.clone();
            let mut evidence = base.batches[0].evidence.clone();
            evidence[0] = record;
            r.settlement = Some(Settlement::new(
                base.program_id.clone(),
                base.run_address.clone(),
                1,
                vec![SettledBatch::new(evidence, None)],
            ));
            r.verify_settlement().unwrap()
        };
        let remake = |trial: u16, id: &str, req: Option<&str>, answer: &str| {
            EvidenceRecord::new(
                trial,
                id.to_owned(),
                req.map(str::to_owned),
                first.usage_lamports(),
                answer.to_owned(),
            )
            .unwrap()
        };
        let (t, id, req, answer) = (
            first.trial(),
            first.attempt_id(),
            first.provider_request_id(),
            first.answer_sha256(),
        );
        // A trial the report does not plan.
        assert_eq!(
            with(remake(999, id, req, answer)),
            Err(SettlementError::UnknownTrial {
                batch: 1,
                trial: 999
            })
        );
        // An attempt that is not the trial's.
        assert_eq!(
            with(remake(t, "no-such-attempt", req, answer)),
            Err(SettlementError::UnknownAttempt {
                batch: 1,
                trial: t,
                attempt: "no-such-attempt".to_owned()
            })
        );
        // Another answer than the one published.
        let other = "ff".repeat(32);
        let err = with(remake(t, id, req, &other)).unwrap_err();
        assert_eq!(
            err,
            SettlementError::AttemptDiffers {
                batch: 1,
                trial: t,
                attempt: id.to_owned(),
                member: "answer_sha256",
                expected: answer.to_owned(),
                found: other.clone(),
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "settlement: batch 1: trial {t}: attempt {id:?}: answer_sha256 is {other} in the evidence record, {answer} in the published attempt"
            )
        );
        // Another provider request id (or none where the provider gave one).
        assert!(matches!(
            with(remake(t, id, None, answer)),
            Err(SettlementError::AttemptDiffers {
                member: "provider_request_id",
                ..
            })
        ));
    }
}
