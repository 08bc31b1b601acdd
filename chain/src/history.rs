//! A run's record in the cluster's transaction history: the program's events read from the logs
//! of the transactions that name the Run's address, so a report can be checked against the chain
//! after its Run account is closed, with nothing saved but the report.
//!
//! The finalize transaction carries everything the account held that a report is checked
//! against ([`RunFinalized`]: run id, user, manifest, digest, batches, trials, usage, report
//! hash). It is found with `getSignaturesForAddress` on the Run's address, newest first, and
//! read with `getTransaction`, both at the caller's commitment (the one it reads accounts at).
//!
//! **What makes an event the program's.** A log line `Program data: …` is written by whichever
//! program is executing; another program in the same transaction can write the same bytes. So
//! each line is attributed to the program on top of the invocation stack the runtime's own lines
//! (`Program <id> invoke [n]`, `Program <id> success|failed`) build, and only the program's own
//! count; a transaction that failed counts for nothing (its logs keep what it emitted before it
//! failed); logs the node cut short (`Log truncated`) are refused rather than read in part.

use anchor_lang::{AnchorDeserialize, Discriminator};
use base64::Engine as _;
use serde_json::{Value, json};
use solana_rpc_client_api::request::RpcRequest;
use solana_signature::Signature;

use crate::account::RunBooks;
use crate::cli_config::Commitment;
use crate::rpc::{Chain, RpcFailure};
use crate::{PROGRAM_ID, Pubkey};

pub use skilltrial::events::{RunClosed, RunFinalized, RunOpened, RunRefunded, TrialsSettled};

/// Why a transaction's logs cannot be read for the program's events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    #[error("the node cut its logs short (`Log truncated`): its events cannot all be read")]
    Truncated,
    #[error("its logs do not follow the runtime's invocation lines: {0}")]
    Unbalanced(String),
    #[error("a `Program data:` line is not base64: {0}")]
    NotBase64(String),
}

/// The payloads `program` itself wrote with `sol_log_data` (Anchor's `emit!`), in order, from a
/// transaction's log messages; each payload is the concatenation of the line's fields.
pub fn program_data(logs: &[String], program: &Pubkey) -> Result<Vec<Vec<u8>>, LogError> {
    let program = program.to_string();
    let mut stack: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for line in logs {
        if line == "Log truncated" {
            return Err(LogError::Truncated);
        }
        if let Some(payload) = line.strip_prefix("Program data: ") {
            if stack.last() == Some(&program.as_str()) {
                let mut bytes = Vec::new();
                for part in payload.split(' ') {
                    let decoded = base64::engine::general_purpose::STANDARD
                        .decode(part)
                        .map_err(|_| LogError::NotBase64(line.clone()))?;
                    bytes.extend(decoded);
                }
                out.push(bytes);
            }
            continue;
        }
        let Some(rest) = line.strip_prefix("Program ") else {
            continue;
        };
        let mut words = rest.split(' ');
        let (Some(id), Some(verb)) = (words.next(), words.next()) else {
            continue;
        };
        // Only the runtime writes `Program <base58 id> <verb>`: a program's own `msg!` lines
        // start `Program log:`, its data `Program data:`, its return `Program return:`.
        if id.parse::<Pubkey>().is_err() {
            continue;
        }
        match verb {
            "invoke" => stack.push(id),
            "success" | "failed:" => match stack.pop() {
                Some(top) if top == id => {}
                _ => return Err(LogError::Unbalanced(line.clone())),
            },
            _ => {}
        }
    }
    Ok(out)
}

/// The events of type `T` among `payloads` (those that start with its discriminator and decode).
pub fn events<T: Discriminator + AnchorDeserialize>(payloads: &[Vec<u8>]) -> Vec<T> {
    payloads
        .iter()
        .filter_map(|p| p.strip_prefix(T::DISCRIMINATOR))
        .filter_map(|body| T::deserialize(&mut &body[..]).ok())
        .collect()
}

/// One transaction that named an address, as `getSignaturesForAddress` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub signature: Signature,
    pub slot: u64,
    /// It failed on-chain (its logs then prove nothing).
    pub failed: bool,
}

/// How long a transaction the node listed may take to be returned by `getTransaction`.
pub const LISTED_WAIT: std::time::Duration = std::time::Duration::from_secs(90);

/// The most signatures one `getSignaturesForAddress` call returns.
const PAGE: usize = 1_000;

/// A run's finalization found in the history: the transaction, and the books and parties its
/// `RunFinalized` event carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finalization {
    pub signature: Signature,
    pub slot: u64,
    pub books: RunBooks,
    pub user: Pubkey,
    pub runner: Pubkey,
}

/// What the history holds of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Its finalize transaction, finalized.
    Finalized(Box<Finalization>),
    /// It was opened (this transaction) and is not finalized in the history; `read` says what
    /// the newer transactions held (signature: how many of the program's payloads, and their
    /// first bytes), for the error.
    NotFinalized {
        opened: Signature,
        read: Vec<String>,
    },
    /// Nothing of this run in the `searched` transactions that name the address.
    Nothing { searched: usize },
}

/// Why the history could not be searched.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(transparent)]
    Rpc(#[from] RpcFailure),
    #[error("{url}: transaction {signature}: {reason}")]
    Transaction {
        url: String,
        signature: String,
        reason: String,
    },
}

/// The history calls take `confirmed` or `finalized`: `processed` reads as `confirmed`.
fn at_least_confirmed(commitment: Commitment) -> Commitment {
    match commitment {
        Commitment::Processed => Commitment::Confirmed,
        other => other,
    }
}

impl Chain {
    /// One page of the transactions that name `address` at `commitment` (`processed` reads as
    /// `confirmed`, the least this call takes), newest first, older than `before` when given.
    pub fn signatures_for(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        limit: usize,
        commitment: Commitment,
    ) -> Result<Vec<Listed>, RpcFailure> {
        let what = format!("getSignaturesForAddress {address}");
        let mut config = json!({
            "limit": limit.clamp(1, PAGE),
            "commitment": at_least_confirmed(commitment).as_str(),
        });
        if let Some(before) = before {
            config["before"] = Value::String(before.to_string());
        }
        let value = self.call(
            &what,
            RpcRequest::GetSignaturesForAddress,
            json!([address.to_string(), config]),
        )?;
        let Some(rows) = value.as_array() else {
            return Err(self.not_json_rpc(&what));
        };
        rows.iter()
            .map(|row| {
                let signature = row["signature"]
                    .as_str()
                    .and_then(|s| s.parse::<Signature>().ok());
                match (signature, row["slot"].as_u64()) {
                    (Some(signature), Some(slot)) => Ok(Listed {
                        signature,
                        slot,
                        failed: !row["err"].is_null(),
                    }),
                    _ => Err(self.not_json_rpc(&what)),
                }
            })
            .collect()
    }

    /// The program's event payloads in transaction `signature`, which `getSignaturesForAddress`
    /// listed at `commitment`; `None` when it failed on-chain (its logs prove nothing). A node
    /// can list a transaction before `getTransaction` returns it (its status store lags under
    /// load): it is asked again for up to [`LISTED_WAIT`], never skipped.
    pub fn program_payloads(
        &self,
        signature: &Signature,
        commitment: Commitment,
    ) -> Result<Option<Vec<Vec<u8>>>, HistoryError> {
        let refuse = |reason: String| HistoryError::Transaction {
            url: self.url().to_owned(),
            signature: signature.to_string(),
            reason,
        };
        let started = std::time::Instant::now();
        let tx = loop {
            if let Some(tx) = self.transaction(signature, at_least_confirmed(commitment))? {
                break tx;
            }
            if started.elapsed() >= LISTED_WAIT {
                return Err(refuse(format!(
                    "listed among the address's transactions, but getTransaction has not returned it after {} s: try again shortly",
                    LISTED_WAIT.as_secs()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        };
        if !tx["meta"]["err"].is_null() {
            return Ok(None);
        }
        let Some(lines) = tx["meta"]["logMessages"].as_array() else {
            return Err(refuse(
                "the node keeps no log messages for it (an RPC node without extended transaction metadata): use a node that serves them".to_owned(),
            ));
        };
        let lines: Vec<String> = lines
            .iter()
            .map(|l| l.as_str().unwrap_or_default().to_owned())
            .collect();
        program_data(&lines, &PROGRAM_ID)
            .map(Some)
            .map_err(|e| refuse(e.to_string()))
    }

    /// Searches the history of `run` at `commitment` (newest first, at most `limit`
    /// transactions) for the finalization of run `run_id`, telling `progress` how many it has
    /// read.
    pub fn find_finalization(
        &self,
        run: &Pubkey,
        run_id: u64,
        limit: usize,
        commitment: Commitment,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Found, HistoryError> {
        let mut before: Option<Signature> = None;
        let mut searched = 0usize;
        let mut read = Vec::new();
        while searched < limit {
            let page = self.signatures_for(
                run,
                before.as_ref(),
                (limit - searched).min(PAGE),
                commitment,
            )?;
            let Some(last) = page.last() else { break };
            before = Some(last.signature);
            for listed in &page {
                searched += 1;
                progress(searched);
                if listed.failed {
                    continue;
                }
                let Some(payloads) = self.program_payloads(&listed.signature, commitment)? else {
                    continue;
                };
                let mine = |r: &Pubkey, id: u64| *r == *run && id == run_id;
                if let Some(event) = events::<RunFinalized>(&payloads)
                    .into_iter()
                    .find(|e| mine(&e.run, e.run_id))
                {
                    return Ok(Found::Finalized(Box::new(Finalization {
                        signature: listed.signature,
                        slot: listed.slot,
                        books: RunBooks::of_finalized(&event),
                        user: event.user,
                        runner: event.runner,
                    })));
                }
                // Newest first: its opening is older than anything else of it.
                if events::<RunOpened>(&payloads)
                    .iter()
                    .any(|e| mine(&e.run, e.run_id))
                {
                    return Ok(Found::NotFinalized {
                        opened: listed.signature,
                        read,
                    });
                }
                read.push(format!(
                    "{}: {} payloads {:?}",
                    listed.signature,
                    payloads.len(),
                    payloads
                        .iter()
                        .map(|p| (p.len(), p.get(..8).map(<[u8]>::to_vec)))
                        .collect::<Vec<_>>()
                ));
            }
            if page.len() < PAGE.min(limit) {
                break;
            }
        }
        Ok(Found::Nothing { searched })
    }
}

#[cfg(test)]
mod tests {
    use anchor_lang::AnchorSerialize;

    use super::*;

    fn data_line(bytes: &[u8]) -> String {
        format!(
            "Program data: {}",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        )
    }

    fn finalized(run_id: u64) -> RunFinalized {
        RunFinalized {
            run: Pubkey::new_from_array([1; 32]),
            run_id,
            user: Pubkey::new_from_array([2; 32]),
            runner: Pubkey::new_from_array([3; 32]),
            manifest_hash: [4; 32],
            report_hash: [5; 32],
            settle_digest: [6; 32],
            settle_batches: 2,
            settled_trials: 9,
            planned_trials: 12,
            escrowed: 1_000_000,
            settled_usage: 4_000,
            settled_fees: 9_000,
            remainder: 987_000,
        }
    }

    fn payload(event: &RunFinalized) -> Vec<u8> {
        let mut bytes = RunFinalized::DISCRIMINATOR.to_vec();
        event.serialize(&mut bytes).unwrap();
        bytes
    }

    #[test]
    fn only_the_programs_own_data_lines_count() {
        let other = "Other111111111111111111111111111111111111111";
        let ours = payload(&finalized(7));
        let forged = payload(&finalized(8));
        let logs = vec![
            format!("Program {other} invoke [1]"),
            // Another program writes the event's bytes: not the program's.
            data_line(&forged),
            format!("Program {PROGRAM_ID} invoke [2]"),
            data_line(&ours),
            format!("Program {PROGRAM_ID} consumed 100 of 200 compute units"),
            format!("Program {PROGRAM_ID} success"),
            // Back in the caller: its data is its own again.
            data_line(&forged),
            "Program log: Program data: AAAA".to_owned(),
            format!("Program {other} success"),
        ];
        let payloads = program_data(&logs, &PROGRAM_ID).unwrap();
        assert_eq!(payloads, vec![ours]);
        let found = events::<RunFinalized>(&payloads);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].run_id, 7);
        assert_eq!(found[0].settled_trials, 9);
    }

    #[test]
    fn cut_or_unbalanced_logs_are_refused() {
        let truncated = vec![
            format!("Program {PROGRAM_ID} invoke [1]"),
            "Log truncated".to_owned(),
        ];
        assert_eq!(
            program_data(&truncated, &PROGRAM_ID),
            Err(LogError::Truncated)
        );
        let unbalanced = vec![format!("Program {PROGRAM_ID} success")];
        assert!(matches!(
            program_data(&unbalanced, &PROGRAM_ID),
            Err(LogError::Unbalanced(_))
        ));
        let not_base64 = vec![
            format!("Program {PROGRAM_ID} invoke [1]"),
            "Program data: !!!".to_owned(),
        ];
        assert!(matches!(
            program_data(&not_base64, &PROGRAM_ID),
            Err(LogError::NotBase64(_))
        ));
    }

    #[test]
    fn a_payload_of_another_event_or_a_short_body_is_not_a_finalization() {
        let mut short = payload(&finalized(1));
        short.truncate(40);
        let other = RunOpened::DISCRIMINATOR.to_vec();
        assert!(events::<RunFinalized>(&[short, other]).is_empty());
    }
}
