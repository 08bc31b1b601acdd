//! Reading the chain over JSON-RPC: the program's accounts decoded with its own types, balances,
//! signature statuses and transactions. This module and `send` are the only code that speaks
//! Solana RPC (the Agave 4.2.2 client of the pinned cohort).
//!
//! Errors name the endpoint and what was asked, and never carry a secret: a URL's credentials
//! (`https://user:key@host`, `?api-key=`) are cut from every message (`redact_url`).

use std::time::Duration;

use anchor_lang::AccountDeserialize;
use base64::Engine as _;
use serde_json::{Value, json};
use skilltrial::state::{BuybackLog, Config, FeeVault};
use solana_commitment_config::CommitmentConfig;
use solana_rpc_client::rpc_client::RpcClient;
use solana_rpc_client_api::client_error::{Error as ClientError, ErrorKind as ClientErrorKind};
use solana_rpc_client_api::request::{RpcError, RpcRequest};
use solana_signature::Signature;

use crate::account::{self, AccountError, RunAccount};
use crate::cli_config::Commitment;
use crate::{PROGRAM_ID, Pubkey, pda};

/// How long one RPC request may take before it is reported as unanswered.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a read or a send over RPC did not give an answer.
#[derive(Debug, thiserror::Error)]
pub enum RpcFailure {
    /// The endpoint did not answer, or answered something that is not JSON-RPC.
    #[error("{url}: {what}: {reason}")]
    Transport {
        url: String,
        what: String,
        reason: String,
    },
    /// The endpoint answered with a JSON-RPC error.
    #[error("{url}: {what}: the node answered {code}: {message}")]
    Node {
        url: String,
        what: String,
        code: i64,
        message: String,
    },
    /// An account exists but is not what the program writes there.
    #[error("{address}: {reason}")]
    NotTheProgramsAccount { address: String, reason: String },
}

/// A URL with its credentials cut: userinfo and the query string, which RPC providers use for
/// keys (`?api-key=…`). What is left names the host and the path.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            if parsed.query().is_some() {
                parsed.set_query(Some("…"));
            }
            parsed.to_string()
        }
        Err(_) => "<the RPC URL>".to_owned(),
    }
}

/// The parts of `url` that may be credentials: its user name and password, its query string
/// and each query value. Messages have every occurrence cut, wherever the text repeats the URL
/// (an HTTP client's error repeats it in its own spelling).
fn secrets_of(url: &str) -> Vec<String> {
    let Ok(parsed) = url::Url::parse(url) else {
        return vec![url.to_owned()];
    };
    let mut secrets = Vec::new();
    if !parsed.username().is_empty() {
        secrets.push(parsed.username().to_owned());
    }
    if let Some(password) = parsed.password() {
        secrets.push(password.to_owned());
    }
    if let Some(query) = parsed.query() {
        secrets.push(query.to_owned());
        secrets.extend(query.split('&').filter_map(|pair| {
            pair.split_once('=')
                .map(|(_, value)| value.to_owned())
                .filter(|v| !v.is_empty())
        }));
    }
    // A part of 3 characters or fewer is no credential worth the name, and cutting it would
    // mangle the rest of the message (a `?x=1` would cut every digit 1).
    secrets.retain(|s| s.len() > 3);
    // Longest first, so a query is cut whole before its values.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets
}

/// `text` with every secret cut.
fn scrub(text: &str, secrets: &[String]) -> String {
    secrets.iter().fold(text.to_owned(), |out, secret| {
        out.replace(secret.as_str(), "…")
    })
}

/// One endpoint at one commitment.
pub struct Chain {
    client: RpcClient,
    shown_url: String,
    secrets: Vec<String>,
    commitment: Commitment,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field("url", &self.shown_url)
            .field("commitment", &self.commitment)
            .finish()
    }
}

pub(crate) fn commitment_config(commitment: Commitment) -> CommitmentConfig {
    match commitment {
        Commitment::Processed => CommitmentConfig::processed(),
        Commitment::Confirmed => CommitmentConfig::confirmed(),
        Commitment::Finalized => CommitmentConfig::finalized(),
    }
}

/// A Run account read from the chain, with its lamports (escrow plus rent).
#[derive(Debug)]
pub struct LiveRun {
    pub account: RunAccount,
    pub lamports: u64,
}

/// An account as a node answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedAccount {
    pub owner: Pubkey,
    pub lamports: u64,
    pub data: Vec<u8>,
    /// The slot the node read it at, when it said.
    pub slot: Option<u64>,
}

impl Chain {
    pub fn new(url: &str, commitment: Commitment) -> Self {
        Self {
            client: RpcClient::new_with_timeout_and_commitment(
                url.to_owned(),
                REQUEST_TIMEOUT,
                commitment_config(commitment),
            ),
            shown_url: redact_url(url),
            secrets: secrets_of(url),
            commitment,
        }
    }

    /// The endpoint as messages show it (credentials cut).
    pub fn url(&self) -> &str {
        &self.shown_url
    }

    /// The endpoint as given, credentials and all: only for connecting to the same node again
    /// (the runner's own client, a swap venue), never for a message, a log or stored state.
    pub fn endpoint(&self) -> String {
        self.client.url()
    }

    pub fn commitment(&self) -> Commitment {
        self.commitment
    }

    pub(crate) fn client(&self) -> &RpcClient {
        &self.client
    }

    /// Maps a client error to a failure that says what was asked.
    pub(crate) fn failure(&self, what: &str, error: &ClientError) -> RpcFailure {
        match error.kind() {
            ClientErrorKind::RpcError(RpcError::RpcResponseError { code, message, .. }) => {
                RpcFailure::Node {
                    url: self.shown_url.clone(),
                    what: what.to_owned(),
                    code: *code,
                    message: scrub(message, &self.secrets),
                }
            }
            ClientErrorKind::Reqwest(e) => RpcFailure::Transport {
                url: self.shown_url.clone(),
                what: what.to_owned(),
                // The HTTP client's text repeats the URL, with its key: cut.
                reason: scrub(&format!("the node did not answer: {e}"), &self.secrets),
            },
            other => RpcFailure::Transport {
                url: self.shown_url.clone(),
                what: what.to_owned(),
                reason: scrub(&other.to_string(), &self.secrets),
            },
        }
    }

    /// A raw JSON-RPC call, for the requests whose answer we decode ourselves.
    pub(crate) fn call(
        &self,
        what: &str,
        request: RpcRequest,
        params: Value,
    ) -> Result<Value, RpcFailure> {
        self.client
            .send::<Value>(request, params)
            .map_err(|e| self.failure(what, &e))
    }

    /// A failure for an answer that is not the JSON-RPC result asked for (not a Solana node).
    pub(crate) fn not_json_rpc(&self, what: &str) -> RpcFailure {
        RpcFailure::Transport {
            url: self.shown_url.clone(),
            what: what.to_owned(),
            reason: "the answer is not a Solana JSON-RPC result (is this a Solana RPC endpoint?)"
                .to_owned(),
        }
    }

    /// The cluster's genesis hash: the name under which the outbox keeps this cluster's
    /// transactions apart from another's.
    pub fn genesis_hash(&self) -> Result<String, RpcFailure> {
        self.client
            .get_genesis_hash()
            .map(|h| h.to_string())
            .map_err(|e| self.failure("getGenesisHash", &e))
    }

    /// An account's owner, lamports and data, or `None` where there is no account. Read raw
    /// (base64) and checked here, so that a node that cannot be reached is never mistaken for an
    /// account that does not exist.
    pub fn account(&self, address: &Pubkey) -> Result<Option<(Pubkey, u64, Vec<u8>)>, RpcFailure> {
        Ok(self
            .account_at(address)?
            .map(|a| (a.owner, a.lamports, a.data)))
    }

    /// [`Chain::account`] with the slot the node read it at (the answer's `context.slot`, when
    /// the node gives one).
    pub fn account_at(&self, address: &Pubkey) -> Result<Option<FetchedAccount>, RpcFailure> {
        let what = format!("getAccountInfo {address}");
        let answer = self.call(
            &what,
            RpcRequest::GetAccountInfo,
            json!([address.to_string(), {
                "encoding": "base64",
                "commitment": self.commitment.as_str(),
            }]),
        )?;
        let value = match answer.get("value") {
            Some(Value::Null) => return Ok(None),
            Some(value @ Value::Object(_)) => value,
            _ => return Err(self.not_json_rpc(&what)),
        };
        let decoded = (|| {
            let owner: Pubkey = value["owner"].as_str()?.parse().ok()?;
            let lamports = value["lamports"].as_u64()?;
            let data = match &value["data"] {
                Value::Array(parts) if parts.get(1).and_then(Value::as_str) == Some("base64") => {
                    base64::engine::general_purpose::STANDARD
                        .decode(parts.first()?.as_str()?)
                        .ok()?
                }
                _ => return None,
            };
            let slot = answer
                .get("context")
                .and_then(|c| c.get("slot"))
                .and_then(Value::as_u64);
            Some(FetchedAccount {
                owner,
                lamports,
                data,
                slot,
            })
        })();
        decoded.map(Some).ok_or_else(|| self.not_json_rpc(&what))
    }

    /// The current epoch at this client's commitment.
    pub fn epoch(&self) -> Result<u64, RpcFailure> {
        let answer = self.call(
            "getEpochInfo",
            RpcRequest::GetEpochInfo,
            json!([{ "commitment": self.commitment.as_str() }]),
        )?;
        answer
            .get("epoch")
            .and_then(Value::as_u64)
            .ok_or_else(|| self.not_json_rpc("getEpochInfo"))
    }

    /// The balance of `address` in lamports (0 where there is no account).
    pub fn balance(&self, address: &Pubkey) -> Result<u64, RpcFailure> {
        self.client
            .get_balance_with_commitment(address, commitment_config(self.commitment))
            .map(|r| r.value)
            .map_err(|e| self.failure(&format!("getBalance {address}"), &e))
    }

    /// The lamports an account of `len` bytes must hold to be rent-exempt.
    pub fn rent_exempt_minimum(&self, len: usize) -> Result<u64, RpcFailure> {
        self.client
            .get_minimum_balance_for_rent_exemption(len)
            .map_err(|e| self.failure("getMinimumBalanceForRentExemption", &e))
    }

    /// The Run at `address`, decoded and checked (owner, size, its own PDA), or `None` where
    /// there is no account.
    pub fn run(&self, address: &Pubkey) -> Result<Option<LiveRun>, RpcFailure> {
        let Some((owner, lamports, data)) = self.account(address)? else {
            return Ok(None);
        };
        let account = account::run_from_bytes(address, &owner, &data).map_err(|e| {
            RpcFailure::NotTheProgramsAccount {
                address: address.to_string(),
                reason: e.to_string(),
            }
        })?;
        Ok(Some(LiveRun { account, lamports }))
    }

    /// One of the program's singleton accounts, decoded with its own type.
    fn singleton<T: AccountDeserialize>(
        &self,
        address: &Pubkey,
        name: &str,
    ) -> Result<Option<(T, u64)>, RpcFailure> {
        let Some((owner, lamports, data)) = self.account(address)? else {
            return Ok(None);
        };
        let refused = |reason: String| RpcFailure::NotTheProgramsAccount {
            address: address.to_string(),
            reason,
        };
        if owner != PROGRAM_ID {
            return Err(refused(
                AccountError::WrongOwner {
                    owner: owner.to_string(),
                    program: PROGRAM_ID.to_string(),
                }
                .to_string(),
            ));
        }
        let value = T::try_deserialize(&mut data.as_slice())
            .map_err(|_| refused(format!("its data is not the program's {name} account")))?;
        Ok(Some((value, lamports)))
    }

    /// The program's config, or `None` before `admin init`.
    pub fn config(&self) -> Result<Option<Config>, RpcFailure> {
        Ok(self
            .singleton::<Config>(&pda::config(), "Config")?
            .map(|(c, _)| c))
    }

    /// The fee vault's books and its lamports.
    pub fn fee_vault(&self) -> Result<Option<(FeeVault, u64)>, RpcFailure> {
        self.singleton::<FeeVault>(&pda::fee_vault(), "FeeVault")
    }

    /// The buyback log (zero-copy: read in place, as the program does).
    pub fn buyback_log(&self) -> Result<Option<BuybackLog>, RpcFailure> {
        let address = pda::buyback_log();
        let Some((owner, _, data)) = self.account(&address)? else {
            return Ok(None);
        };
        account::buyback_log_from_bytes(&owner, &data)
            .map(Some)
            .map_err(|e| RpcFailure::NotTheProgramsAccount {
                address: address.to_string(),
                reason: e.to_string(),
            })
    }

    /// The newest blockhash (confirmed) and the last block height a transaction using it can
    /// land at.
    pub fn latest_blockhash(&self) -> Result<(String, u64), RpcFailure> {
        self.client
            .get_latest_blockhash_with_commitment(CommitmentConfig::confirmed())
            .map(|(hash, height)| (hash.to_string(), height))
            .map_err(|e| self.failure("getLatestBlockhash", &e))
    }

    /// The current slot at the chain's commitment.
    pub fn slot(&self) -> Result<u64, RpcFailure> {
        self.client
            .get_slot_with_commitment(commitment_config(self.commitment))
            .map_err(|e| self.failure("getSlot", &e))
    }

    /// The current unix time on the cluster (the Clock sysvar), which deadlines are judged by.
    pub fn cluster_time(&self) -> Result<i64, RpcFailure> {
        let slot = self
            .client
            .get_slot_with_commitment(commitment_config(self.commitment))
            .map_err(|e| self.failure("getSlot", &e))?;
        self.client
            .get_block_time(slot)
            .or_else(|_| {
                // A just-produced slot may have no block time yet: the one before does.
                self.client.get_block_time(slot.saturating_sub(1))
            })
            .map_err(|e| self.failure("getBlockTime", &e))
    }

    /// `getTransaction` with base64 encoding at `commitment`, or `None` when the node does not
    /// have it (yet) at that commitment.
    pub fn transaction(
        &self,
        signature: &Signature,
        commitment: Commitment,
    ) -> Result<Option<Value>, RpcFailure> {
        let value = self.call(
            &format!("getTransaction {signature}"),
            RpcRequest::GetTransaction,
            json!([signature.to_string(), {
                "encoding": "base64",
                "commitment": commitment.as_str(),
                "maxSupportedTransactionVersion": 0,
            }]),
        )?;
        if value.is_null() {
            return Ok(None);
        }
        if !value["meta"].is_object() || value["transaction"].is_null() {
            return Err(self.not_json_rpc(&format!("getTransaction {signature}")));
        }
        Ok(Some(value))
    }

    /// Sends a transaction its signer signed elsewhere (the page's wallet), after the node's
    /// preflight simulation, and answers its signature. A refused preflight is said in the
    /// program's words ([`crate::error::describe_failure`]): the node's own, without its URL.
    pub fn send_signed(&self, transaction: &[u8]) -> Result<String, SignedSendError> {
        let what = "sendTransaction";
        let params = json!([
            base64::engine::general_purpose::STANDARD.encode(transaction),
            { "encoding": "base64", "preflightCommitment": "confirmed" },
        ]);
        match self.client.send::<Value>(RpcRequest::SendTransaction, params) {
            Ok(Value::String(signature)) => Ok(signature),
            Ok(_) => Err(SignedSendError::Unavailable(
                self.not_json_rpc(what).to_string(),
            )),
            Err(e) => Err(match e.kind() {
                ClientErrorKind::RpcError(RpcError::RpcResponseError {
                    data:
                        solana_rpc_client_api::request::RpcResponseErrorData::SendTransactionPreflightFailure(
                            simulated,
                        ),
                    ..
                }) => {
                    let error = serde_json::to_value(&simulated.err).unwrap_or(Value::Null);
                    let logs: Vec<Value> = simulated
                        .logs
                        .iter()
                        .flatten()
                        .map(|l| Value::String(l.clone()))
                        .collect();
                    SignedSendError::Refused(crate::error::describe_failure(&error, &logs))
                }
                ClientErrorKind::RpcError(RpcError::RpcResponseError { message, .. }) => {
                    SignedSendError::Refused(scrub(message, &self.secrets))
                }
                _ => SignedSendError::Unavailable(self.failure(what, &e).to_string()),
            }),
        }
    }

    /// The status of `signature`, searching the whole history: `None` when the cluster has
    /// never seen it.
    pub fn signature_status(&self, signature: &Signature) -> Result<Option<TxStatus>, RpcFailure> {
        let value = self.call(
            &format!("getSignatureStatuses {signature}"),
            RpcRequest::GetSignatureStatuses,
            json!([[signature.to_string()], { "searchTransactionHistory": true }]),
        )?;
        let Some(statuses) = value["value"].as_array() else {
            return Err(self.not_json_rpc("getSignatureStatuses"));
        };
        let Some(status) = statuses.first().filter(|s| !s.is_null()) else {
            return Ok(None);
        };
        let level = match status["confirmationStatus"].as_str() {
            Some("finalized") => Commitment::Finalized,
            Some("confirmed") => Commitment::Confirmed,
            _ => Commitment::Processed,
        };
        let error = (!status["err"].is_null()).then(|| status["err"].clone());
        Ok(Some(TxStatus {
            slot: status["slot"].as_u64().unwrap_or(0),
            level,
            error,
        }))
    }
}

/// Why [`Chain::send_signed`] sent nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignedSendError {
    /// The node refused it (its preflight, in the program's words where it names an error).
    #[error("{0}")]
    Refused(String),
    /// The node did not answer.
    #[error("{0}")]
    Unavailable(String),
}

/// Where a transaction stands on the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct TxStatus {
    pub slot: u64,
    /// The highest commitment it has reached.
    pub level: Commitment,
    /// The transaction error, when it was processed and failed.
    pub error: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_connects_with_its_key_and_shows_it_cut() {
        let given = "http://user:SECRETPASS@127.0.0.1:9399/rpc?api-key=SECRETKEY";
        let chain = Chain::new(given, Commitment::Confirmed);
        assert!(!chain.url().contains("SECRET"), "{}", chain.url());
        assert!(!format!("{chain:?}").contains("SECRET"));
        // A second client for the same node (the runner's, a swap venue) keeps the key.
        assert_eq!(chain.endpoint(), given);
    }

    #[test]
    fn urls_lose_their_credentials_in_messages() {
        assert_eq!(
            redact_url("https://user:secret@rpc.example.com/path?api-key=abc"),
            "https://rpc.example.com/path?%E2%80%A6"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:8899"),
            "http://127.0.0.1:8899/"
        );
        assert_eq!(redact_url("not a url"), "<the RPC URL>");
        let secrets = secrets_of("http://user:SECRETPASS@127.0.0.1:9399/?api-key=SECRETKEY&x=1");
        let said = scrub(
            "error sending request for url (http://127.0.0.1:9399/?api-key=SECRETKEY&x=1) as user:SECRETPASS; key SECRETKEY",
            &secrets,
        );
        assert!(!said.contains("SECRET"), "{said}");
        assert_eq!(
            said,
            "error sending request for url (http://127.0.0.1:9399/?…) as …:…; key …"
        );
    }
}
