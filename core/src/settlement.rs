//! Evidence records and the settlement digest (docs/program.md, "Evidence records and the
//! settlement digest"): what a hosted run's report carries so that anyone can recompute, from the
//! report alone, the digest the program keeps in the Run account.
//!
//! - An [`EvidenceRecord`] is one settled trial: its index in the plan, the journal's attempt id,
//!   the provider's request id, the usage charged (lamports) and the answer's SHA-256. Its hash is
//!   `sha256("skilltrial/evidence-record/v1\n" || canonical_json(record))` ([`crate::canonical`],
//!   RFC 8785).
//! - A batch (one `run_settle` instruction) carries `sha256("skilltrial/evidence-batch/v1\n" ||
//!   record_hash_1 || … || record_hash_n)` ([`batch_evidence_hash`]).
//! - The Run account folds every batch into a running digest, starting from [`INITIAL_DIGEST`]:
//!   `next = sha256(prev || evidence_hash || u16_le(n) || (u16_le(trial) || u64_le(usage))*)`
//!   ([`fold_digest`]).
//!
//! **Invariant:** the program computes [`fold_digest`] byte for byte; these definitions, the
//! domain strings and the byte order MUST NOT change without a new `v` in the domains and in the
//! program. The entries folded are derived from the evidence records (trial, usage), never stored
//! a second time, so a report cannot show one usage and settle another.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::canonical;
use crate::digest::Sha256Digest;

/// Prefixed to a record's canonical JSON before hashing it.
pub const RECORD_DOMAIN: &[u8] = b"skilltrial/evidence-record/v1\n";

/// Prefixed to a batch's record hashes before hashing them.
pub const BATCH_DOMAIN: &[u8] = b"skilltrial/evidence-batch/v1\n";

/// The Run account's digest before its first batch.
pub const INITIAL_DIGEST: [u8; 32] = [0u8; 32];

/// The most trials one `run_settle` accepts: mirrors the program's `MAX_SETTLE_BATCH`
/// (`programs/skilltrial/src/constants.rs`), which core cannot import. A report with a larger
/// batch describes a settlement the program never accepted.
pub const MAX_SETTLE_BATCH: usize = 60;

/// Why an evidence record is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceError {
    #[error("evidence of trial {trial}: attempt_id is empty")]
    EmptyAttemptId { trial: u16 },
    #[error(
        "evidence of trial {trial}: provider_request_id is empty; write null when the provider returned none"
    )]
    EmptyRequestId { trial: u16 },
    #[error("evidence of trial {trial}: answer_sha256 {found:?} is not 64 lowercase hex digits")]
    AnswerHash { trial: u16, found: String },
    /// The canonical JSON the record hash is taken over holds integers up to 2^53 − 1 only.
    #[error(
        "evidence of trial {trial}: usage_lamports {usage} is above 2^53 - 1, which canonical JSON cannot hold"
    )]
    Usage { trial: u16, usage: u64 },
}

/// The canonical record of one settled trial. Valid by construction: [`EvidenceRecord::new`] and
/// deserialization both validate, so every record has a canonical form and a hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RecordFields")]
pub struct EvidenceRecord {
    trial: u16,
    attempt_id: String,
    provider_request_id: Option<String>,
    usage_lamports: u64,
    answer_sha256: String,
}

/// The record's members as read, before validation.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordFields {
    trial: u16,
    attempt_id: String,
    provider_request_id: Option<String>,
    usage_lamports: u64,
    answer_sha256: String,
}

impl TryFrom<RecordFields> for EvidenceRecord {
    type Error = EvidenceError;
    fn try_from(f: RecordFields) -> Result<Self, EvidenceError> {
        Self::new(
            f.trial,
            f.attempt_id,
            f.provider_request_id,
            f.usage_lamports,
            f.answer_sha256,
        )
    }
}

impl EvidenceRecord {
    /// A validated record: `trial` is the trial's index in the plan (the program's `index`),
    /// `attempt_id` the journal's attempt id, `provider_request_id` the provider's request id
    /// when it returned one, `usage_lamports` the usage charged, `answer_sha256` 64 lowercase hex
    /// of the answer's bytes.
    pub fn new(
        trial: u16,
        attempt_id: String,
        provider_request_id: Option<String>,
        usage_lamports: u64,
        answer_sha256: String,
    ) -> Result<Self, EvidenceError> {
        if attempt_id.is_empty() {
            return Err(EvidenceError::EmptyAttemptId { trial });
        }
        if provider_request_id.as_deref() == Some("") {
            return Err(EvidenceError::EmptyRequestId { trial });
        }
        if !is_lower_hex_sha256(&answer_sha256) {
            return Err(EvidenceError::AnswerHash {
                trial,
                found: answer_sha256,
            });
        }
        if usage_lamports > canonical::MAX_SAFE_INTEGER {
            return Err(EvidenceError::Usage {
                trial,
                usage: usage_lamports,
            });
        }
        Ok(Self {
            trial,
            attempt_id,
            provider_request_id,
            usage_lamports,
            answer_sha256,
        })
    }

    /// The trial's index in the run's plan.
    pub fn trial(&self) -> u16 {
        self.trial
    }
    /// The journal's attempt id.
    pub fn attempt_id(&self) -> &str {
        &self.attempt_id
    }
    /// The provider's request id, when it returned one.
    pub fn provider_request_id(&self) -> Option<&str> {
        self.provider_request_id.as_deref()
    }
    /// The usage charged for the trial, lamports.
    pub fn usage_lamports(&self) -> u64 {
        self.usage_lamports
    }
    /// SHA-256 of the answer's bytes, 64 lowercase hex.
    pub fn answer_sha256(&self) -> &str {
        &self.answer_sha256
    }

    /// The record's canonical JSON (RFC 8785): the text its hash is taken over.
    pub fn canonical(&self) -> String {
        // Cannot fail: the members are strings, null and integers that `new` kept within 2^53 − 1.
        serde_json::to_value(self)
            .ok()
            .and_then(|v| canonical::to_string(&v).ok())
            .unwrap_or_default()
    }

    /// `sha256(RECORD_DOMAIN || canonical_json(record))`.
    pub fn hash(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(RECORD_DOMAIN);
        h.update(self.canonical().as_bytes());
        h.finalize().into()
    }
}

fn is_lower_hex_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The 32 bytes one `run_settle` carries: `sha256(BATCH_DOMAIN || record_hash_1 || … ||
/// record_hash_n)`, records in batch order.
pub fn batch_evidence_hash(records: &[EvidenceRecord]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(BATCH_DOMAIN);
    for record in records {
        h.update(record.hash());
    }
    h.finalize().into()
}

/// The Run account's digest after one batch: `sha256(prev || evidence_hash || u16_le(n) ||
/// for each entry: u16_le(trial) || u64_le(usage))`, entries `(trial, usage lamports)` in batch
/// order. The program computes exactly this.
pub fn fold_digest(prev: &[u8; 32], evidence_hash: &[u8; 32], entries: &[(u16, u64)]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(evidence_hash);
    // A batch holds at most MAX_SETTLE_BATCH entries; a longer slice is no batch the program
    // accepts, and saturating keeps this total (verify refuses such a batch before folding).
    h.update(
        u16::try_from(entries.len())
            .unwrap_or(u16::MAX)
            .to_le_bytes(),
    );
    for (trial, usage) in entries {
        h.update(trial.to_le_bytes());
        h.update(usage.to_le_bytes());
    }
    h.finalize().into()
}

/// The report section of a hosted run: where it was settled and every batch, with its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settlement {
    /// The program's id, base58.
    pub program_id: String,
    /// The Run account's address, base58.
    pub run_address: String,
    /// The run's number in the program (its identity beside the address).
    pub run_id: u64,
    /// Every `run_settle` of the run, in the order they were executed.
    pub batches: Vec<SettledBatch>,
    /// The digest after the last batch (64 lowercase hex): what the Run account holds.
    pub digest_sha256: String,
}

/// One `run_settle`: its trials' evidence, in the order the instruction listed the trials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettledBatch {
    pub evidence: Vec<EvidenceRecord>,
    /// [`batch_evidence_hash`] of `evidence`, 64 lowercase hex: what the instruction carried.
    pub evidence_sha256: String,
    /// The settle transaction's signature (base58) when known.
    pub transaction: Option<String>,
}

impl SettledBatch {
    /// A batch with its evidence hash computed.
    pub fn new(evidence: Vec<EvidenceRecord>, transaction: Option<String>) -> Self {
        let evidence_sha256 = Sha256Digest(batch_evidence_hash(&evidence)).hex();
        Self {
            evidence,
            evidence_sha256,
            transaction,
        }
    }

    /// The `(trial, usage lamports)` entries the batch settled, in its order.
    pub fn entries(&self) -> Vec<(u16, u64)> {
        self.evidence
            .iter()
            .map(|r| (r.trial, r.usage_lamports))
            .collect()
    }
}

/// What [`Settlement::verify`] recomputed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettlementCheck {
    /// The digest folded over every batch.
    pub digest: Sha256Digest,
    pub records: usize,
    pub batches: usize,
    /// The usage of every record, lamports.
    pub usage_lamports: u64,
}

/// Why a settlement does not recompute. Batches are numbered from 1, in report order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettlementError {
    #[error("settlement: {field} {found:?} is not a base58 32-byte address")]
    Address { field: &'static str, found: String },
    #[error("settlement: batch {batch} settles no trial; the program refuses an empty batch")]
    EmptyBatch { batch: usize },
    #[error(
        "settlement: batch {batch} holds {records} evidence records, more than the {max} one run_settle accepts",
        max = MAX_SETTLE_BATCH
    )]
    BatchTooLarge { batch: usize, records: usize },
    #[error(
        "settlement: batch {batch}: trial {trial} was already settled in batch {first_batch}; the program settles a trial once"
    )]
    DuplicateTrial {
        batch: usize,
        trial: u16,
        first_batch: usize,
    },
    #[error(
        "settlement: batch {batch} (trials {trials}): evidence_sha256 is {found}, its evidence records hash to {expected}"
    )]
    EvidenceHash {
        batch: usize,
        trials: String,
        expected: String,
        found: String,
    },
    #[error("settlement: digest_sha256 is {found}, the {batches} batches fold to {expected}")]
    Digest {
        batches: usize,
        expected: String,
        found: String,
    },
    #[error("settlement: the usage of the evidence records overflows u64 lamports")]
    UsageOverflow,
    /// The record names a trial the report does not plan.
    #[error("settlement: batch {batch}: trial {trial} is not a trial of this report")]
    UnknownTrial { batch: usize, trial: u16 },
    /// The record names an attempt the report does not publish under that trial.
    #[error(
        "settlement: batch {batch}: trial {trial}: attempt {attempt:?} is not a published attempt of that trial"
    )]
    UnknownAttempt {
        batch: usize,
        trial: u16,
        attempt: String,
    },
    /// The record and the published attempt disagree on a member.
    #[error(
        "settlement: batch {batch}: trial {trial}: attempt {attempt:?}: {member} is {found} in the evidence record, {expected} in the published attempt"
    )]
    AttemptDiffers {
        batch: usize,
        trial: u16,
        attempt: String,
        member: &'static str,
        expected: String,
        found: String,
    },
}

impl Settlement {
    /// A settlement of `batches`, its digest folded from them.
    pub fn new(
        program_id: String,
        run_address: String,
        run_id: u64,
        batches: Vec<SettledBatch>,
    ) -> Self {
        let digest = batches.iter().fold(INITIAL_DIGEST, |prev, b| {
            fold_digest(&prev, &batch_evidence_hash(&b.evidence), &b.entries())
        });
        Self {
            program_id,
            run_address,
            run_id,
            batches,
            digest_sha256: Sha256Digest(digest).hex(),
        }
    }

    /// Recomputes the settlement from its evidence: every batch holds 1 to [`MAX_SETTLE_BATCH`]
    /// records, no trial is settled twice, each batch's `evidence_sha256` and the final
    /// `digest_sha256` are what the records hash and fold to.
    pub fn verify(&self) -> Result<SettlementCheck, SettlementError> {
        for (field, found) in [
            ("program_id", &self.program_id),
            ("run_address", &self.run_address),
        ] {
            let decoded = bs58::decode(found).into_vec().ok();
            if decoded.is_none_or(|bytes| bytes.len() != 32) {
                return Err(SettlementError::Address {
                    field,
                    found: found.clone(),
                });
            }
        }
        let mut settled_in: BTreeMap<u16, usize> = BTreeMap::new();
        let mut digest = INITIAL_DIGEST;
        let mut records = 0usize;
        let mut usage: u64 = 0;
        for (i, batch) in self.batches.iter().enumerate() {
            let number = i + 1;
            match batch.evidence.len() {
                0 => return Err(SettlementError::EmptyBatch { batch: number }),
                n if n > MAX_SETTLE_BATCH => {
                    return Err(SettlementError::BatchTooLarge {
                        batch: number,
                        records: n,
                    });
                }
                _ => {}
            }
            for record in &batch.evidence {
                if let Some(&first_batch) = settled_in.get(&record.trial) {
                    return Err(SettlementError::DuplicateTrial {
                        batch: number,
                        trial: record.trial,
                        first_batch,
                    });
                }
                settled_in.insert(record.trial, number);
                usage = usage
                    .checked_add(record.usage_lamports)
                    .ok_or(SettlementError::UsageOverflow)?;
            }
            let evidence_hash = batch_evidence_hash(&batch.evidence);
            let expected = Sha256Digest(evidence_hash).hex();
            if batch.evidence_sha256 != expected {
                return Err(SettlementError::EvidenceHash {
                    batch: number,
                    trials: trial_list(&batch.evidence),
                    expected,
                    found: batch.evidence_sha256.clone(),
                });
            }
            digest = fold_digest(&digest, &evidence_hash, &batch.entries());
            records += batch.evidence.len();
        }
        let expected = Sha256Digest(digest).hex();
        if self.digest_sha256 != expected {
            return Err(SettlementError::Digest {
                batches: self.batches.len(),
                expected,
                found: self.digest_sha256.clone(),
            });
        }
        Ok(SettlementCheck {
            digest: Sha256Digest(digest),
            records,
            batches: self.batches.len(),
            usage_lamports: usage,
        })
    }
}

/// "0, 1, 2" — the batch's trials as listed, for a message.
fn trial_list(records: &[EvidenceRecord]) -> String {
    records
        .iter()
        .map(|r| r.trial.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex_of(bytes: &[u8]) -> String {
        Sha256Digest::of(bytes).hex()
    }

    fn record(trial: u16, usage: u64) -> EvidenceRecord {
        EvidenceRecord::new(
            trial,
            format!("run-{trial:03}-1"),
            Some(format!("req_{trial}")),
            usage,
            hex_of(&trial.to_le_bytes()),
        )
        .unwrap()
    }

    const PROGRAM: &str = "11111111111111111111111111111111";

    /// Two batches: trials 0, 1, 2 then 3, 4.
    fn settled() -> Settlement {
        Settlement::new(
            PROGRAM.to_owned(),
            PROGRAM.to_owned(),
            7,
            vec![
                SettledBatch::new(
                    vec![record(0, 1_000), record(1, 2_000), record(2, 3_000)],
                    None,
                ),
                SettledBatch::new(
                    vec![record(3, 4_000), record(4, 5_000)],
                    Some("sig".to_owned()),
                ),
            ],
        )
    }

    /// Re-derives the stored hashes after an edit, as a forger who knows the format would.
    fn reseal(s: &Settlement) -> Settlement {
        let batches = s
            .batches
            .iter()
            .map(|b| SettledBatch::new(b.evidence.clone(), b.transaction.clone()))
            .collect();
        Settlement::new(
            s.program_id.clone(),
            s.run_address.clone(),
            s.run_id,
            batches,
        )
    }

    /// `s` with its batch hashes recomputed but the digest of the untouched settlement (what the
    /// Run account holds): a forger's best attempt.
    fn forged(s: &Settlement) -> Settlement {
        Settlement {
            digest_sha256: settled().digest_sha256,
            ..reseal(s)
        }
    }

    fn sha(parts: &[&[u8]]) -> [u8; 32] {
        let mut h = Sha256::new();
        for p in parts {
            h.update(p);
        }
        h.finalize().into()
    }

    #[test]
    fn the_digest_is_the_documented_bytes() {
        // Given one record whose canonical JSON is written out by hand (keys sorted, no spaces,
        // a missing request id as null) ...
        let answer = "ab".repeat(32);
        let rec = EvidenceRecord::new(3, "r-003-1".to_owned(), None, 258, answer.clone()).unwrap();
        let json = format!(
            r#"{{"answer_sha256":"{answer}","attempt_id":"r-003-1","provider_request_id":null,"trial":3,"usage_lamports":258}}"#
        );
        assert_eq!(rec.canonical(), json);
        let rec2 = EvidenceRecord::new(
            0x0102,
            "r-258-1".to_owned(),
            Some("req_x".to_owned()),
            0x0807_0605_0403,
            "00".repeat(32),
        )
        .unwrap();
        let json2 = format!(
            r#"{{"answer_sha256":"{}","attempt_id":"r-258-1","provider_request_id":"req_x","trial":258,"usage_lamports":8826258785283}}"#,
            "00".repeat(32)
        );
        // ... the record, batch and digest hashes are these bytes, assembled here independently.
        let h1 = sha(&[b"skilltrial/evidence-record/v1\n", json.as_bytes()]);
        let h2 = sha(&[b"skilltrial/evidence-record/v1\n", json2.as_bytes()]);
        assert_eq!(rec.hash(), h1);
        assert_eq!(rec2.hash(), h2);
        let batch = sha(&[b"skilltrial/evidence-batch/v1\n", &h1, &h2]);
        assert_eq!(batch_evidence_hash(&[rec.clone(), rec2.clone()]), batch);
        let entries: &[u8] = &[
            2, 0, // n = 2, u16 little-endian
            3, 0, 2, 1, 0, 0, 0, 0, 0, 0, // trial 3, usage 258
            2, 1, 3, 4, 5, 6, 7, 8, 0, 0, // trial 0x0102, usage 0x0807_0605_0403
        ];
        let digest = sha(&[&[0u8; 32], &batch, entries]);
        assert_eq!(
            fold_digest(
                &INITIAL_DIGEST,
                &batch,
                &[(3, 258), (0x0102, 0x0807_0605_0403)]
            ),
            digest
        );
        // The same vector computed with Python's hashlib (docs/program.md prints it): a third
        // implementation, so a change here and in the assembly above together still fails.
        assert_eq!(
            (Sha256Digest(batch).hex(), Sha256Digest(digest).hex()),
            (
                "916db99c5a88e3a4798346f4b3596bc3c29c689d97a762c6c5e179536400d27c".to_owned(),
                "201b4f1af0492050c3bbcf0ba49f31cd7fd305b2c317adc59e3206e802a70719".to_owned()
            )
        );
        // And a settlement of that one batch verifies to it.
        let s = Settlement::new(
            PROGRAM.to_owned(),
            PROGRAM.to_owned(),
            1,
            vec![SettledBatch::new(vec![rec, rec2], None)],
        );
        assert_eq!(s.digest_sha256, Sha256Digest(digest).hex());
        assert_eq!(s.batches[0].evidence_sha256, Sha256Digest(batch).hex());
        let check = s.verify().unwrap();
        assert_eq!(check.digest, Sha256Digest(digest));
        assert_eq!(
            (check.records, check.batches, check.usage_lamports),
            (2, 1, 258 + 0x0807_0605_0403)
        );
    }

    #[test]
    fn the_digest_chains_batches() {
        let s = settled();
        let b1 = batch_evidence_hash(&s.batches[0].evidence);
        let b2 = batch_evidence_hash(&s.batches[1].evidence);
        let d1 = fold_digest(&INITIAL_DIGEST, &b1, &[(0, 1_000), (1, 2_000), (2, 3_000)]);
        let d2 = fold_digest(&d1, &b2, &[(3, 4_000), (4, 5_000)]);
        let check = s.verify().unwrap();
        assert_eq!(check.digest, Sha256Digest(d2));
        assert_eq!(
            (check.records, check.batches, check.usage_lamports),
            (5, 2, 15_000)
        );
    }

    #[test]
    fn a_record_reads_and_writes_the_documented_members() {
        let rec = record(5, 42);
        let text = serde_json::to_string(&rec).unwrap();
        assert_eq!(serde_json::from_str::<EvidenceRecord>(&text).unwrap(), rec);
        let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
        value["extra"] = 1.into();
        let err = serde_json::from_value::<EvidenceRecord>(value).unwrap_err();
        assert!(err.to_string().contains("unknown field `extra`"), "{err}");
        let upper = text.replace(&rec.answer_sha256, &rec.answer_sha256.to_uppercase());
        let err = serde_json::from_str::<EvidenceRecord>(&upper).unwrap_err();
        assert!(
            err.to_string().contains("is not 64 lowercase hex digits"),
            "{err}"
        );
    }

    #[test]
    fn an_invalid_record_is_refused_by_name() {
        let ok = "0a".repeat(32);
        let new = |id: &str, req: Option<&str>, usage: u64, answer: &str| {
            EvidenceRecord::new(
                9,
                id.to_owned(),
                req.map(str::to_owned),
                usage,
                answer.to_owned(),
            )
        };
        assert_eq!(
            new("", None, 1, &ok),
            Err(EvidenceError::EmptyAttemptId { trial: 9 })
        );
        assert_eq!(
            new("a", Some(""), 1, &ok),
            Err(EvidenceError::EmptyRequestId { trial: 9 })
        );
        assert_eq!(
            new("a", None, 1, &ok[1..]),
            Err(EvidenceError::AnswerHash {
                trial: 9,
                found: ok[1..].to_owned()
            })
        );
        assert_eq!(
            new("a", None, 1 << 53, &ok),
            Err(EvidenceError::Usage {
                trial: 9,
                usage: 1 << 53
            })
        );
        assert!(new("a", None, (1 << 53) - 1, &ok).is_ok());
        assert_eq!(
            EvidenceError::Usage {
                trial: 9,
                usage: 1 << 53
            }
            .to_string(),
            "evidence of trial 9: usage_lamports 9007199254740992 is above 2^53 - 1, which canonical JSON cannot hold"
        );
    }

    #[test]
    fn a_changed_usage_breaks_its_batch_hash_and_resealed_the_digest() {
        let mut s = settled();
        s.batches[1].evidence[0].usage_lamports = 4_001;
        let err = s.verify().unwrap_err();
        assert!(
            matches!(&err, SettlementError::EvidenceHash { batch: 2, trials, .. } if trials == "3, 4"),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "settlement: batch 2 (trials 3, 4): evidence_sha256 is {}, its evidence records hash to {}",
                settled().batches[1].evidence_sha256,
                Sha256Digest(batch_evidence_hash(&s.batches[1].evidence)).hex()
            )
        );
        // A forger who recomputes the batch hash still cannot match the digest the chain holds.
        assert!(
            matches!(forged(&s).verify(), Err(SettlementError::Digest { batches: 2, ref found, .. }) if *found == settled().digest_sha256)
        );
    }

    #[test]
    fn reordered_or_moved_records_change_the_hashes() {
        let reordered = |s: &mut Settlement| s.batches[0].evidence.swap(0, 1);
        let moved = |s: &mut Settlement| {
            let record = s.batches[0].evidence.pop().unwrap();
            s.batches[1].evidence.insert(0, record);
        };
        for edit in [&reordered as &dyn Fn(&mut Settlement), &moved] {
            let mut s = settled();
            edit(&mut s);
            // The first batch's evidence hash no longer matches ...
            assert!(matches!(
                s.verify(),
                Err(SettlementError::EvidenceHash { batch: 1, .. })
            ));
            // ... and with the batch hashes recomputed, the digest the chain holds does not.
            assert!(matches!(
                forged(&s).verify(),
                Err(SettlementError::Digest { .. })
            ));
        }
    }

    #[test]
    fn a_trial_settles_once_across_the_run() {
        let mut s = settled();
        s.batches[1].evidence[1] = record(1, 5_000);
        let s = reseal(&s);
        assert_eq!(
            s.verify(),
            Err(SettlementError::DuplicateTrial {
                batch: 2,
                trial: 1,
                first_batch: 1
            })
        );
        assert_eq!(
            s.verify().unwrap_err().to_string(),
            "settlement: batch 2: trial 1 was already settled in batch 1; the program settles a trial once"
        );
        // Within one batch too.
        let one = reseal(&Settlement {
            batches: vec![SettledBatch::new(vec![record(2, 1), record(2, 1)], None)],
            ..settled()
        });
        assert_eq!(
            one.verify(),
            Err(SettlementError::DuplicateTrial {
                batch: 1,
                trial: 2,
                first_batch: 1
            })
        );
    }

    #[test]
    fn stored_hashes_are_compared_as_written() {
        let mut s = settled();
        s.batches[0].evidence_sha256 = s.batches[0].evidence_sha256.to_uppercase();
        assert!(matches!(
            s.verify(),
            Err(SettlementError::EvidenceHash { batch: 1, .. })
        ));
        let mut s = settled();
        let right = s.digest_sha256.clone();
        s.digest_sha256 = "00".repeat(32);
        assert_eq!(
            s.verify(),
            Err(SettlementError::Digest {
                batches: 2,
                expected: right,
                found: "00".repeat(32)
            })
        );
    }

    #[test]
    fn batch_sizes_are_the_programs() {
        let empty = reseal(&Settlement {
            batches: vec![
                SettledBatch::new(vec![record(0, 1)], None),
                SettledBatch::new(vec![], None),
            ],
            ..settled()
        });
        assert_eq!(
            empty.verify(),
            Err(SettlementError::EmptyBatch { batch: 2 })
        );
        let of = |n: u16| {
            reseal(&Settlement {
                batches: vec![SettledBatch::new(
                    (0..n).map(|t| record(t, 1)).collect(),
                    None,
                )],
                ..settled()
            })
        };
        assert_eq!(of(60).verify().unwrap().records, 60);
        assert_eq!(
            of(61).verify(),
            Err(SettlementError::BatchTooLarge {
                batch: 1,
                records: 61
            })
        );
        // No batch at all is a settlement of nothing: the initial digest.
        let none = reseal(&Settlement {
            batches: vec![],
            ..settled()
        });
        assert_eq!(none.verify().unwrap().digest, Sha256Digest(INITIAL_DIGEST));
    }

    #[test]
    fn addresses_are_base58_keys_and_usage_sums_checked() {
        let mut s = settled();
        s.run_address = "0OIl".to_owned();
        assert_eq!(
            s.verify(),
            Err(SettlementError::Address {
                field: "run_address",
                found: "0OIl".to_owned()
            })
        );
        // 35 batches of 60 records of 2^53 − 1 lamports each: 2,100 × (2^53 − 1) > 2^64 − 1.
        let max = canonical::MAX_SAFE_INTEGER;
        let overflowing = reseal(&Settlement {
            batches: (0..35u16)
                .map(|b| {
                    SettledBatch::new(
                        (b * 60..b * 60 + 60).map(|t| record(t, max)).collect(),
                        None,
                    )
                })
                .collect(),
            ..settled()
        });
        assert_eq!(overflowing.verify(), Err(SettlementError::UsageOverflow));
    }
}
