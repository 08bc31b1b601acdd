//! Reading a Run account off-chain and auditing a hosted report against it: the account as the
//! Solana CLI prints it (`solana account <RUN> --output json`), decoded with the program's own
//! type, and compared field by field with the report's settlement section and report hash.
//! Fetching it over RPC comes with the hosted client; anyone can already fetch it with the
//! Solana CLI and run `skilltrial verify --run-account`.

use anchor_lang::AccountDeserialize;
use anchor_lang::Discriminator as _;
use base64::Engine as _;
use serde_json::Value;
pub use skilltrial::constants::SETTLED_BITMAP_BYTES;
pub use skilltrial::state::{
    BuybackEntry, BuybackLog, Config, FeeVault, PendingChange, Run, RunStatus,
};
use skilltrial_core::settlement::{Settlement, SettlementCheck};

use crate::{PROGRAM_ID, Pubkey};

/// A Run account's space after its 8-byte discriminator.
pub const RUN_SPACE: usize = <Run as anchor_lang::Space>::INIT_SPACE;

/// Why an account file is not a SkillTrial Run account.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AccountError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not the Solana CLI's account JSON (`solana account <ADDRESS> --output json`): {0}")]
    Shape(&'static str),
    #[error("its data is not base64: {0}")]
    Base64(String),
    #[error("it is owned by {owner}, not by the SkillTrial program {program}")]
    WrongOwner { owner: String, program: String },
    #[error("its data is not a SkillTrial Run account: {0}")]
    NotARun(String),
    #[error("its data is not the program's {0} account")]
    WrongType(&'static str),
    #[error(
        "its address {address} is not the run address of its own user and manifest ({expected}): not a Run the program created"
    )]
    NotItsAddress { address: String, expected: String },
}

/// A Run account and its address.
#[derive(Debug)]
pub struct RunAccount {
    pub address: Pubkey,
    pub run: Run,
}

/// Parses `solana account <ADDRESS> --output json` (`{"pubkey", "account": {"owner", "data":
/// [base64, "base64"], …}}`) into a Run account; refuses another owner or another account type.
pub fn run_from_cli_json(text: &str) -> Result<RunAccount, AccountError> {
    let doc: Value =
        serde_json::from_str(text).map_err(|e| AccountError::NotJson(e.to_string()))?;
    let address = doc["pubkey"]
        .as_str()
        .ok_or(AccountError::Shape("no \"pubkey\" string"))?;
    let address: Pubkey = address
        .parse()
        .map_err(|_| AccountError::Shape("\"pubkey\" is not a base58 address"))?;
    let account = &doc["account"];
    let owner = account["owner"]
        .as_str()
        .ok_or(AccountError::Shape("no \"account.owner\" string"))?;
    if owner != PROGRAM_ID.to_string() {
        return Err(AccountError::WrongOwner {
            owner: owner.to_owned(),
            program: PROGRAM_ID.to_string(),
        });
    }
    let data = match &account["data"] {
        Value::Array(parts) if parts.get(1).and_then(Value::as_str) == Some("base64") => parts
            .first()
            .and_then(Value::as_str)
            .ok_or(AccountError::Shape("\"account.data[0]\" is not a string"))?,
        _ => {
            return Err(AccountError::Shape(
                "\"account.data\" is not [<base64>, \"base64\"]",
            ));
        }
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| AccountError::Base64(e.to_string()))?;
    run_from_bytes(&address, &PROGRAM_ID, &bytes)
}

/// A Run account from its address, owner and raw data (as RPC returns them): refuses another
/// owner, another size or type, and an address that is not the Run's own PDA.
pub fn run_from_bytes(
    address: &Pubkey,
    owner: &Pubkey,
    bytes: &[u8],
) -> Result<RunAccount, AccountError> {
    if *owner != PROGRAM_ID {
        return Err(AccountError::WrongOwner {
            owner: owner.to_string(),
            program: PROGRAM_ID.to_string(),
        });
    }
    // A Run account is exactly its discriminator plus its space: trailing bytes are not the
    // program's.
    let size = 8 + <Run as anchor_lang::Space>::INIT_SPACE;
    if bytes.len() != size {
        return Err(AccountError::NotARun(format!(
            "{} bytes of data, a Run account has {size}",
            bytes.len()
        )));
    }
    let run = Run::try_deserialize(&mut &bytes[..]).map_err(|_| {
        AccountError::NotARun("its discriminator or layout is not a Run's".to_owned())
    })?;
    // The program creates a Run only at the PDA of (user, manifest hash): an account elsewhere
    // (a copy, or a pubkey edited in the file) is not one the program could have written.
    let expected = crate::pda::run(&run.user, &run.manifest_hash);
    if *address != expected {
        return Err(AccountError::NotItsAddress {
            address: address.to_string(),
            expected: expected.to_string(),
        });
    }
    Ok(RunAccount {
        address: *address,
        run,
    })
}

/// The log's entries, newest first (the ring keeps the newest `BUYBACK_LOG_LEN`).
pub fn buyback_entries(log: &BuybackLog) -> Vec<BuybackEntry> {
    let len = log.entries.len();
    let kept = usize::try_from(log.count).unwrap_or(usize::MAX).min(len);
    let next = usize::try_from(log.next).unwrap_or(0) % len.max(1);
    (1..=kept)
        .filter_map(|back| log.entries.get((next + len - back) % len).copied())
        .collect()
}

/// The buyback log from its owner and raw data: a zero-copy account, read in place after its
/// discriminator (copied out, so an unaligned buffer is fine).
pub fn buyback_log_from_bytes(owner: &Pubkey, bytes: &[u8]) -> Result<BuybackLog, AccountError> {
    if *owner != PROGRAM_ID {
        return Err(AccountError::WrongOwner {
            owner: owner.to_string(),
            program: PROGRAM_ID.to_string(),
        });
    }
    let size = 8 + BuybackLog::SPACE;
    if bytes.len() != size || bytes[..8] != *BuybackLog::DISCRIMINATOR {
        return Err(AccountError::WrongType("BuybackLog"));
    }
    Ok(bytemuck::pod_read_unaligned(&bytes[8..]))
}

/// `run` at `address` as `solana account <ADDRESS> --output json` prints it (its data written by
/// the program's own serializer): for fixtures and for saving an account beside a report.
pub fn to_cli_json(address: &Pubkey, run: &Run) -> Result<String, AccountError> {
    let mut data = Vec::new();
    anchor_lang::AccountSerialize::try_serialize(run, &mut data)
        .map_err(|e| AccountError::NotARun(e.to_string()))?;
    // The account is allocated at its largest size; a shorter encoding (an `Open` status has no
    // time) leaves zeros after it, as on-chain.
    data.resize(8 + <Run as anchor_lang::Space>::INIT_SPACE, 0);
    let encoded = base64::engine::general_purpose::STANDARD.encode(&data);
    Ok(serde_json::json!({
        "pubkey": address.to_string(),
        "account": {
            "data": [encoded, "base64"],
            "executable": false,
            "owner": PROGRAM_ID.to_string(),
            "space": data.len(),
        }
    })
    .to_string())
}

/// One field where the report and the account disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    pub field: &'static str,
    pub report: String,
    pub account: String,
}

/// What a report is checked against on-chain: the Run account's books, or, once the account is
/// closed, the same fields as its finalize transaction's `RunFinalized` event carries them
/// ([`crate::history`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunBooks {
    pub address: Pubkey,
    pub run_id: u64,
    pub manifest_hash: [u8; 32],
    pub settle_digest: [u8; 32],
    pub settle_batches: u16,
    pub settled_trials: u16,
    pub settled_usage: u64,
    /// The report hash the runner anchored; `None` while the run is not finalized.
    pub report_hash: Option<[u8; 32]>,
}

impl RunBooks {
    /// The books of a Run account.
    pub fn of_account(account: &RunAccount) -> Self {
        let run = &account.run;
        Self {
            address: account.address,
            run_id: run.run_id,
            manifest_hash: run.manifest_hash,
            settle_digest: run.settle_digest,
            settle_batches: run.settle_batches,
            settled_trials: run.settled_trials,
            settled_usage: run.settled_usage,
            report_hash: matches!(run.status, RunStatus::Finalized { .. })
                .then_some(run.report_hash),
        }
    }

    /// The books as the run's finalization recorded them (a finalized run's account can change
    /// no more until it is closed, so they are the account's last).
    pub fn of_finalized(event: &crate::history::RunFinalized) -> Self {
        Self {
            address: event.run,
            run_id: event.run_id,
            manifest_hash: event.manifest_hash,
            settle_digest: event.settle_digest,
            settle_batches: event.settle_batches,
            settled_trials: event.settled_trials,
            settled_usage: event.settled_usage,
            report_hash: Some(event.report_hash),
        }
    }
}

/// Compares a report's settlement (already recomputed by `Settlement::verify`), its manifest
/// hash and its report hash with the Run account: the address, the run id, the manifest the run
/// escrowed for, the digest, the number of batches, the trials and usage settled, and — once
/// finalized — the report hash the runner anchored. Returns every disagreement (empty: the
/// report is the account's).
pub fn compare(
    settlement: &Settlement,
    check: &SettlementCheck,
    manifest_hash: &[u8; 32],
    report_hash: &[u8; 32],
    account: &RunAccount,
) -> Vec<Disagreement> {
    compare_books(
        settlement,
        check,
        manifest_hash,
        report_hash,
        &RunBooks::of_account(account),
    )
}

/// [`compare`] against a run's books, from its account or its finalization.
pub fn compare_books(
    settlement: &Settlement,
    check: &SettlementCheck,
    manifest_hash: &[u8; 32],
    report_hash: &[u8; 32],
    books: &RunBooks,
) -> Vec<Disagreement> {
    let hex = |b: &[u8; 32]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let status = match &books.report_hash {
        Some(anchored) => ("report hash", hex(report_hash), hex(anchored)),
        None => (
            "status",
            "finalized".to_owned(),
            "not finalized (no report hash anchored yet)".to_owned(),
        ),
    };
    let fields = [
        (
            "run address",
            settlement.run_address.clone(),
            books.address.to_string(),
        ),
        (
            "program",
            settlement.program_id.clone(),
            PROGRAM_ID.to_string(),
        ),
        (
            "run id",
            settlement.run_id.to_string(),
            books.run_id.to_string(),
        ),
        (
            "manifest hash",
            hex(manifest_hash),
            hex(&books.manifest_hash),
        ),
        (
            "settlement digest",
            hex(&check.digest.0),
            hex(&books.settle_digest),
        ),
        (
            "settle batches",
            check.batches.to_string(),
            books.settle_batches.to_string(),
        ),
        (
            "trials settled",
            check.records.to_string(),
            books.settled_trials.to_string(),
        ),
        (
            "usage settled, lamports",
            check.usage_lamports.to_string(),
            books.settled_usage.to_string(),
        ),
        status,
    ];
    fields
        .into_iter()
        .filter(|(_, report, account)| report != account)
        .map(|(field, report, account)| Disagreement {
            field,
            report,
            account,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use skilltrial_core::settlement::{EvidenceRecord, SettledBatch};

    use super::*;

    const MANIFEST: [u8; 32] = [3; 32];

    /// The address the program would give the test's run.
    fn address() -> Pubkey {
        crate::pda::run(&Pubkey::new_from_array([1; 32]), &MANIFEST)
    }

    fn settlement(run_address: &Pubkey) -> Settlement {
        let record = |trial, usage| {
            EvidenceRecord::new(
                trial,
                format!("r-{trial:03}-1"),
                None,
                usage,
                "ab".repeat(32),
            )
            .unwrap()
        };
        let batches = vec![
            SettledBatch::new(vec![record(0, 100), record(1, 200)], None),
            SettledBatch::new(vec![record(2, 300)], None),
        ];
        Settlement::new(PROGRAM_ID.to_string(), run_address.to_string(), 7, batches)
    }

    /// The Run the program would hold after settling `settlement` and finalizing with `report`.
    fn run_for(settlement: &Settlement, check: &SettlementCheck, report: [u8; 32]) -> Run {
        Run {
            version: 2,
            run_id: settlement.run_id,
            user: Pubkey::new_from_array([1; 32]),
            runner: Pubkey::new_from_array([2; 32]),
            manifest_hash: MANIFEST,
            planned_trials: 3,
            per_request_cap: 1_000,
            fee_per_trial: 10,
            escrowed: 3_030,
            settled_usage: check.usage_lamports,
            settled_fees: 30,
            settled_trials: 3,
            settle_batches: 2,
            settled_bitmap: [0; SETTLED_BITMAP_BYTES],
            settle_digest: check.digest.0,
            status: RunStatus::Finalized { at: 5 },
            opened_at: 1,
            deadline: 10,
            report_hash: report,
            bump: 255,
            reserved: [0; 32],
        }
    }

    /// The account as the Solana CLI prints it, under `owner`.
    fn cli_json(address: &Pubkey, owner: &Pubkey, run: &Run) -> String {
        let mut doc: Value = serde_json::from_str(&to_cli_json(address, run).unwrap()).unwrap();
        doc["account"]["owner"] = owner.to_string().into();
        doc.to_string()
    }

    #[test]
    fn a_report_agrees_with_its_run_account_field_by_field() {
        let address = address();
        let s = settlement(&address);
        let check = s.verify().unwrap();
        let report = [4u8; 32];
        let account = run_from_cli_json(&cli_json(
            &address,
            &PROGRAM_ID,
            &run_for(&s, &check, report),
        ))
        .unwrap();
        assert_eq!(compare(&s, &check, &MANIFEST, &report, &account), []);

        // Each field the account holds is compared: change one, that one is named.
        let mut run = run_for(&s, &check, report);
        run.settle_digest[0] ^= 1;
        run.settled_usage += 1;
        let account = run_from_cli_json(&cli_json(&address, &PROGRAM_ID, &run)).unwrap();
        let fields: Vec<&str> = compare(&s, &check, &MANIFEST, &report, &account)
            .iter()
            .map(|d| d.field)
            .collect();
        assert_eq!(fields, ["settlement digest", "usage settled, lamports"]);
        // Another user's run, at its own address, anchored with another report.
        let mut theirs = run_for(&s, &check, [5; 32]);
        theirs.user = Pubkey::new_from_array([8; 32]);
        let theirs_at = crate::pda::run(&theirs.user, &MANIFEST);
        let other = run_from_cli_json(&cli_json(&theirs_at, &PROGRAM_ID, &theirs)).unwrap();
        let fields: Vec<&str> = compare(&s, &check, &MANIFEST, &report, &other)
            .iter()
            .map(|d| d.field)
            .collect();
        assert_eq!(fields, ["run address", "report hash"]);
        // A report of another plan than the one the run escrowed for.
        let fields: Vec<&str> = compare(&s, &check, &[6; 32], &report, &account)
            .iter()
            .map(|d| d.field)
            .collect();
        assert_eq!(fields[0], "manifest hash");
        let mut open = run_for(&s, &check, report);
        open.status = RunStatus::Open;
        let open = run_from_cli_json(&cli_json(&address, &PROGRAM_ID, &open)).unwrap();
        assert_eq!(
            compare(&s, &check, &MANIFEST, &report, &open)[0].field,
            "status"
        );
    }

    #[test]
    fn anything_but_a_run_account_of_the_program_is_refused() {
        let address = address();
        let s = settlement(&address);
        let check = s.verify().unwrap();
        let run = run_for(&s, &check, [0; 32]);
        let stranger = Pubkey::new_from_array([7; 32]);
        assert!(matches!(
            run_from_cli_json(&cli_json(&address, &stranger, &run)),
            Err(AccountError::WrongOwner { .. })
        ));
        // Another of the program's accounts (a different discriminator), and truncated data.
        let json = cli_json(&address, &PROGRAM_ID, &run);
        let mut doc: Value = serde_json::from_str(&json).unwrap();
        let mut data = base64::engine::general_purpose::STANDARD
            .decode(doc["account"]["data"][0].as_str().unwrap())
            .unwrap();
        data[0] ^= 0xff;
        doc["account"]["data"][0] = base64::engine::general_purpose::STANDARD
            .encode(&data)
            .into();
        assert!(matches!(
            run_from_cli_json(&doc.to_string()),
            Err(AccountError::NotARun(_))
        ));
        data[0] ^= 0xff;
        data.truncate(40);
        doc["account"]["data"][0] = base64::engine::general_purpose::STANDARD
            .encode(&data)
            .into();
        assert!(matches!(
            run_from_cli_json(&doc.to_string()),
            Err(AccountError::NotARun(_))
        ));
        // Trailing bytes after a whole Run, and a pubkey edited to another address.
        data = base64::engine::general_purpose::STANDARD
            .decode(
                serde_json::from_str::<Value>(&json).unwrap()["account"]["data"][0]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
        data.extend_from_slice(&[0; 500]);
        doc["account"]["data"][0] = base64::engine::general_purpose::STANDARD
            .encode(&data)
            .into();
        assert!(matches!(
            run_from_cli_json(&doc.to_string()),
            Err(AccountError::NotARun(_))
        ));
        let mut moved: Value = serde_json::from_str(&json).unwrap();
        moved["pubkey"] = Pubkey::new_from_array([9; 32]).to_string().into();
        assert!(matches!(
            run_from_cli_json(&moved.to_string()),
            Err(AccountError::NotItsAddress { .. })
        ));
        for bad in ["[]", "{}", "{\"pubkey\":\"x\"}", "not json"] {
            assert!(run_from_cli_json(bad).is_err(), "{bad}");
        }
        doc["account"]["data"] = serde_json::json!("plain");
        assert!(matches!(
            run_from_cli_json(&doc.to_string()),
            Err(AccountError::Shape(_))
        ));
    }
}
