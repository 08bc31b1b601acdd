//! Sending a transaction so that it lands once or not at all, and saying which.
//!
//! 1. Price: `--with-compute-unit-price`, else the 75th percentile of the non-zero
//!    `getRecentPrioritizationFees` over the transaction's writable accounts, clamped to a
//!    ceiling.
//! 2. Simulate (signatures unchecked, blockhash replaced) with the same compute-budget
//!    instructions the transaction will carry (so instruction indexes are the ones sent): a
//!    refusal is reported with the program's own error name before anything is signed; the
//!    units consumed size the compute-unit limit (`units × 1.2 + 1,000`).
//! 3. Claim the intent in the outbox: if a transaction for it is pending, resume that one and
//!    sign nothing; else fetch a blockhash, sign, and **record signature, blockhash, last valid
//!    block height and wire bytes before sending**.
//! 4. Send once with preflight, then rebroadcast the same bytes every two seconds while polling
//!    the signature's status, until it reaches the commitment (done), fails (reported), or the
//!    block height passes its last valid height.
//! 5. Only when it expired **and** a history search still does not find it is a new transaction
//!    signed (back to 1, at most `MAX_SIGNINGS` times). A transaction that may still land is
//!    never signed twice; a command killed anywhere is resumed by running it again.
//!
//! A transaction built from someone else's instructions (a buyback's swap route) is sent with a
//! [`Vet`]: the message is compiled, every account key resolved through the lookup tables as
//! the runtime resolves them ([`Resolved`]), and the check runs on that, at simulation and again
//! on the very message about to be signed. Lookup tables named by someone else are read from the
//! chain ([`fetch_tables`]), never taken on their word.

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::json;
use solana_compute_budget_interface::ComputeBudgetInstruction;
use solana_keypair::Keypair;
use solana_message::{AddressLookupTableAccount, Hash, Message, v0};
use solana_rpc_client_api::request::RpcRequest;
use solana_signature::Signature;
use solana_signer::Signer;

use crate::cli_config::Commitment;
use crate::error::describe_failure;
use crate::outbox::{Claim, Entry, EntryState, Outbox, OutboxError, Signed};
use crate::rpc::{Chain, RpcFailure, commitment_config};
use crate::{Instruction, Pubkey};

/// The largest transaction the cluster accepts, in bytes.
pub const MAX_TRANSACTION_BYTES: usize = 1232;
/// The most compute units one transaction may request.
pub const MAX_COMPUTE_UNITS: u32 = 1_400_000;
/// How many transactions one intent may sign in one call, each only after the previous one
/// expired unseen.
const MAX_SIGNINGS: usize = 3;
/// How often the same bytes are rebroadcast while waiting.
const REBROADCAST_EVERY: Duration = Duration::from_secs(2);
/// How often the status is polled.
const POLL_EVERY: Duration = Duration::from_millis(400);
/// How long the cluster's block height may stand still while a transaction is watched before
/// the wait gives up (a stalled or stopped validator would otherwise be waited on for ever, the
/// expiry never coming). The transaction stays pending in the outbox for the next command.
pub const STALL_AFTER: Duration = Duration::from_secs(60);
/// The default ceiling on the compute-unit price taken from the market (one value, in `core`).
pub use skilltrial_core::hosted::DEFAULT_PRICE_CEILING;

/// How the compute-unit price is chosen.
#[derive(Debug, Clone, Copy)]
pub struct Fees {
    /// `--with-compute-unit-price`: this price, whatever the market says.
    pub price: Option<u64>,
    /// The most a market-derived price may be.
    pub ceiling: u64,
}

impl Default for Fees {
    fn default() -> Self {
        Self {
            price: None,
            ceiling: DEFAULT_PRICE_CEILING,
        }
    }
}

/// A check of a message about to be simulated or signed: its instructions after the
/// compute-budget ones the sender puts first, every account key resolved through the lookup
/// tables, with the message's own signer and writable flags. An `Err` names why it must not be
/// signed; nothing is then simulated, signed or sent.
pub type Vet<'v> = &'v dyn Fn(&[Instruction]) -> Result<(), String>;

/// Why the lookup tables a transaction would load cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The node could not be read.
    #[error(transparent)]
    Rpc(#[from] RpcFailure),
    /// The table is not on the chain as claimed.
    #[error("the lookup table {table}: {why}")]
    Refused { table: Pubkey, why: String },
}

/// The lookup tables `claimed` names, as the chain holds them: each must exist, be owned by the
/// address lookup table program, be active (not deactivating: it could vanish before the
/// transaction lands) and hold every claimed address at the claimed index (a table only grows,
/// so the chain may hold more). What a claim says is never used: the transaction is compiled
/// with what this returns.
pub fn fetch_tables(
    chain: &Chain,
    claimed: &[AddressLookupTableAccount],
) -> Result<Vec<AddressLookupTableAccount>, TableError> {
    use solana_address_lookup_table_interface::{program, state::AddressLookupTable};
    let mut fetched = Vec::with_capacity(claimed.len());
    for claim in claimed {
        let refused = |why: String| TableError::Refused {
            table: claim.key,
            why,
        };
        let (owner, _, data) = chain
            .account(&claim.key)?
            .ok_or_else(|| refused("no such account on this cluster".to_owned()))?;
        if owner != program::ID {
            return Err(refused(format!(
                "it is owned by {owner}, not the address lookup table program"
            )));
        }
        let table = AddressLookupTable::deserialize(&data)
            .map_err(|e| refused(format!("it is not a lookup table ({e})")))?;
        if table.meta.deactivation_slot != u64::MAX {
            return Err(refused(format!(
                "it is deactivated (since slot {})",
                table.meta.deactivation_slot
            )));
        }
        if claim.addresses.len() > table.addresses.len() {
            return Err(refused(format!(
                "the answer claims {} addresses, the chain holds {}",
                claim.addresses.len(),
                table.addresses.len()
            )));
        }
        for (index, (said, held)) in claim
            .addresses
            .iter()
            .zip(table.addresses.iter())
            .enumerate()
        {
            if said != held {
                return Err(refused(format!(
                    "address {index} is {held} on the chain, not {said} as the answer claims"
                )));
            }
        }
        fetched.push(AddressLookupTableAccount {
            key: claim.key,
            addresses: table.addresses.to_vec(),
        });
    }
    Ok(fetched)
}

/// A transaction that landed.
#[derive(Debug, Clone)]
pub struct Sent {
    pub signature: Signature,
    pub slot: u64,
    /// The compute-unit limit and price it carried (0 when resumed from the outbox: unknown).
    pub compute_unit_limit: u32,
    pub compute_unit_price: u64,
    /// It was signed by an earlier command and found or resumed here.
    pub resumed: bool,
}

/// Why a transaction did not land.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The node failed before anything was signed: nothing was sent.
    #[error("{0}; nothing was signed or sent")]
    BeforeSigning(RpcFailure),
    /// The node failed while a recorded transaction was being sent or watched: it may land.
    #[error(transparent)]
    Rpc(#[from] RpcFailure),
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    /// Simulation or preflight refused it: nothing landed, and nothing will.
    #[error("refused before sending: {0}")]
    Refused(String),
    /// It was processed and failed: the fee was charged, nothing else changed.
    #[error("transaction {signature} failed on-chain: {reason}")]
    FailedOnChain { signature: String, reason: String },
    /// Every signing expired unseen (a congested or unreachable cluster).
    #[error(
        "{0} transactions expired without landing; nothing was changed on-chain. Try again later or with a higher --with-compute-unit-price"
    )]
    Expired(usize),
    #[error("cannot build the transaction: {0}")]
    Build(String),
}

impl SendError {
    /// Whether the outbox still holds a transaction that may land.
    pub fn may_still_land(&self) -> bool {
        matches!(self, SendError::Rpc(_))
    }

    /// A message for the person: what happened, and for a transaction that may still land,
    /// what to do.
    pub fn explain(&self) -> String {
        match self {
            SendError::Rpc(_) => format!(
                "{self}. A transaction was sent and may still land: run the same command again to resume it (it is never signed twice while it can land)"
            ),
            _ => self.to_string(),
        }
    }
}

/// A pending transaction resumed by `resume_all`, and how it ended: landed (`Some`), expired
/// unseen (`None`), or the error that stopped it.
pub type Resumed = (Entry, Result<Option<Sent>, SendError>);

/// Sends transactions for one cluster through one outbox.
pub struct Sender<'a> {
    chain: &'a Chain,
    outbox: &'a mut Outbox,
    cluster: String,
    progress: &'a dyn Fn(&str),
    stall_after: Duration,
}

impl std::fmt::Debug for Sender<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("chain", self.chain)
            .field("cluster", &self.cluster)
            .finish_non_exhaustive()
    }
}

impl<'a> Sender<'a> {
    /// A sender for `chain`'s cluster (named by its genesis hash in the outbox). `progress`
    /// receives one line per step worth telling a person (stderr in the CLI).
    pub fn new(
        chain: &'a Chain,
        outbox: &'a mut Outbox,
        progress: &'a dyn Fn(&str),
    ) -> Result<Self, SendError> {
        let cluster = chain.genesis_hash().map_err(SendError::BeforeSigning)?;
        Ok(Self {
            chain,
            outbox,
            cluster,
            progress,
            stall_after: STALL_AFTER,
        })
    }

    /// How long the block height may stand still before a watched transaction is given up
    /// (left pending): [`STALL_AFTER`] unless set.
    #[must_use]
    pub fn stall_after(mut self, wait: Duration) -> Self {
        self.stall_after = wait;
        self
    }

    /// Lands `instructions` once, paid by `payer` and signed by it and `signers`, for `intent`
    /// (a name for what the transaction is for: `run_open:<run address>`). A pending
    /// transaction for the same intent, left by a killed command, is resumed instead.
    pub fn send(
        &mut self,
        intent: &str,
        payer: &Keypair,
        signers: &[&Keypair],
        instructions: &[Instruction],
        fees: Fees,
    ) -> Result<Sent, SendError> {
        self.send_with_tables(intent, payer, signers, instructions, &[], fees, &|_| Ok(()))
    }

    /// [`Sender::send`] as a version-0 transaction loading addresses from `tables` (a legacy
    /// one when `tables` is empty). The compute-budget instructions come first: the limit, then
    /// the price when it is not zero ([`budget_prefix`]). Nothing is simulated or signed unless
    /// `vet` accepts the compiled message: it runs on the message compiled for simulation and
    /// again on each message compiled for signing, after its keys are resolved through `tables`.
    #[allow(clippy::too_many_arguments)]
    pub fn send_with_tables(
        &mut self,
        intent: &str,
        payer: &Keypair,
        signers: &[&Keypair],
        instructions: &[Instruction],
        tables: &[AddressLookupTableAccount],
        fees: Fees,
        vet: Vet<'_>,
    ) -> Result<Sent, SendError> {
        for _ in 0..MAX_SIGNINGS {
            // A transaction left pending by an earlier command is driven to its end first.
            if let Some(entry) = self.outbox.pending(&self.cluster, intent)? {
                (self.progress)(&format!(
                    "resuming transaction {} (signed earlier, not yet known to have landed)",
                    entry.signature
                ));
                match self.drive(&entry, false)? {
                    Some(sent) => return Ok(sent),
                    None => continue,
                }
            }
            let price = self.compute_unit_price(instructions, fees)?;
            let units = self.simulate(payer, instructions, tables, price, vet)?;
            let limit = units
                .saturating_mul(6)
                .div_ceil(5)
                .saturating_add(1_000)
                .min(MAX_COMPUTE_UNITS);
            let all = with_budget(instructions, limit, price);
            let chain = self.chain;
            let claim = self.outbox.claim(&self.cluster, intent, || {
                sign(
                    chain,
                    payer,
                    signers,
                    &all,
                    tables,
                    budget_prefix(price),
                    vet,
                )
            })??;
            let (entry, fresh) = match claim {
                Claim::Existing(entry) => (entry, false),
                Claim::New(entry) => (entry, true),
            };
            if fresh {
                (self.progress)(&format!("sending transaction {}", entry.signature));
            }
            match self.drive(&entry, fresh)? {
                Some(mut sent) => {
                    if fresh {
                        sent.compute_unit_limit = limit;
                        sent.compute_unit_price = price;
                        sent.resumed = false;
                    }
                    return Ok(sent);
                }
                None => (self.progress)(&format!(
                    "transaction {} expired without landing; signing a new one",
                    entry.signature
                )),
            }
        }
        Err(SendError::Expired(MAX_SIGNINGS))
    }

    /// Resumes every transaction on this cluster that an earlier command left pending, whatever
    /// its intent: each ends landed, failed or expired. Returns how many were resumed.
    pub fn resume_all(&mut self) -> Result<Vec<Resumed>, SendError> {
        let pending = self.outbox.all_pending(&self.cluster)?;
        let mut out = Vec::with_capacity(pending.len());
        for entry in pending {
            let result = self.drive(&entry, false);
            out.push((entry, result));
        }
        Ok(out)
    }

    /// The compute-unit price `instructions` will be sent at under `fees`.
    pub fn compute_unit_price(
        &self,
        instructions: &[Instruction],
        fees: Fees,
    ) -> Result<u64, SendError> {
        Ok(match fees.price {
            Some(price) => price,
            None => self.market_price(instructions)?.min(fees.ceiling),
        })
    }

    /// Simulates `instructions` with the largest limit and `price`; the units they consumed,
    /// or the refusal with the program's own words.
    fn simulate(
        &self,
        payer: &Keypair,
        instructions: &[Instruction],
        tables: &[AddressLookupTableAccount],
        price: u64,
        vet: Vet<'_>,
    ) -> Result<u32, SendError> {
        let all = with_budget(instructions, MAX_COMPUTE_UNITS, price);
        let message = Compiled::new(&payer.pubkey(), &all, tables, Hash::default())?;
        message.vet(tables, budget_prefix(price), vet)?;
        let wire = wire_bytes(
            &message.serialize(),
            &vec![Signature::default(); message.signer_keys().len()],
        );
        let answer = self
            .chain
            .call(
                "simulateTransaction",
                RpcRequest::SimulateTransaction,
                json!([base64::engine::general_purpose::STANDARD.encode(&wire), {
                    "encoding": "base64",
                    "sigVerify": false,
                    "replaceRecentBlockhash": true,
                    "commitment": self.chain.commitment().as_str(),
                }]),
            )
            .map_err(SendError::BeforeSigning)?;
        let value = &answer["value"];
        if !value.is_object() {
            return Err(SendError::BeforeSigning(
                self.chain.not_json_rpc("simulateTransaction"),
            ));
        }
        if !value["err"].is_null() {
            return Err(SendError::Refused(describe_failure(
                &value["err"],
                value["logs"].as_array().map(Vec::as_slice).unwrap_or(&[]),
            )));
        }
        let units = value["unitsConsumed"]
            .as_u64()
            .unwrap_or(u64::from(MAX_COMPUTE_UNITS));
        Ok(u32::try_from(units).unwrap_or(MAX_COMPUTE_UNITS))
    }

    /// The market's compute-unit price for the writable accounts of `instructions`: the 75th
    /// percentile of the recent non-zero prices (0 on a quiet cluster).
    fn market_price(&self, instructions: &[Instruction]) -> Result<u64, SendError> {
        let mut writable: Vec<Pubkey> = instructions
            .iter()
            .flat_map(|ix| ix.accounts.iter())
            .filter(|m| m.is_writable)
            .map(|m| m.pubkey)
            .collect();
        writable.sort_unstable();
        writable.dedup();
        // The node accepts at most 128 addresses.
        writable.truncate(128);
        let fees = self
            .chain
            .client()
            .get_recent_prioritization_fees(&writable)
            .map_err(|e| {
                SendError::BeforeSigning(self.chain.failure("getRecentPrioritizationFees", &e))
            })?;
        Ok(percentile_75(fees.iter().map(|f| f.prioritization_fee)))
    }

    fn broadcast(&self, entry: &Entry, preflight: bool) -> Result<(), RpcFailure> {
        self.chain
            .call(
                "sendTransaction",
                RpcRequest::SendTransaction,
                json!([entry.wire_base64, {
                    "encoding": "base64",
                    "skipPreflight": !preflight,
                    "preflightCommitment": "confirmed",
                    "maxRetries": 0,
                }]),
            )
            .map(|_| ())
    }

    /// Drives `entry` to its end: `Some` when it landed, `None` when it expired unseen (the
    /// outbox says so), an error when it failed — or when the cluster stopped answering, in
    /// which case it stays pending for the next command.
    fn drive(&mut self, entry: &Entry, first_send: bool) -> Result<Option<Sent>, SendError> {
        let signature: Signature = entry.signature.parse().map_err(|_| {
            SendError::Build(format!(
                "the outbox holds a malformed signature {}",
                entry.signature
            ))
        })?;
        if first_send {
            crate::failpoint::hit("tx-signed", &entry.intent);
        }
        if first_send && let Err(e) = self.broadcast(entry, true) {
            if let RpcFailure::Node { message, .. } = &e {
                // Preflight refused it: the node did not forward it, so it cannot land.
                self.outbox
                    .conclude(entry.id, EntryState::Failed, Some(message))?;
                return Err(SendError::Refused(message.clone()));
            }
            // Unanswered: it may or may not have left; keep waiting and rebroadcasting.
            (self.progress)(&format!("the node did not answer the send ({e}); retrying"));
        }
        if first_send {
            crate::failpoint::hit("tx-sent", &format!("{} {}", entry.intent, entry.signature));
        }
        let wanted = self.chain.commitment();
        // A resumed transaction goes out again at once: it may never have left.
        let mut last_broadcast = first_send.then(Instant::now);
        let mut moved: Option<(u64, Instant)> = None;
        loop {
            if let Some(status) = self.chain.signature_status(&signature)? {
                if let Some(error) = &status.error {
                    // The program's own words are in the transaction's logs.
                    let logs = self
                        .chain
                        .transaction(&signature, Commitment::Confirmed)
                        .ok()
                        .flatten()
                        .and_then(|tx| tx["meta"]["logMessages"].as_array().cloned())
                        .unwrap_or_default();
                    let reason = describe_failure(error, &logs);
                    self.outbox
                        .conclude(entry.id, EntryState::Failed, Some(&reason))?;
                    return Err(SendError::FailedOnChain {
                        signature: entry.signature.clone(),
                        reason,
                    });
                }
                if status.level >= wanted {
                    self.outbox.conclude(entry.id, EntryState::Landed, None)?;
                    return Ok(Some(Sent {
                        signature,
                        slot: status.slot,
                        compute_unit_limit: 0,
                        compute_unit_price: 0,
                        resumed: true,
                    }));
                }
            }
            let height = self
                .chain
                .client()
                .get_block_height_with_commitment(commitment_config(Commitment::Confirmed))
                .map_err(|e| self.chain.failure("getBlockHeight", &e))?;
            match moved {
                Some((seen, since)) if seen == height => {
                    if since.elapsed() >= self.stall_after {
                        return Err(SendError::Rpc(RpcFailure::Transport {
                            url: self.chain.url().to_owned(),
                            what: "getBlockHeight".to_owned(),
                            reason: format!(
                                "the cluster's block height has stood at {height} for {} s: the validator is stalled or stopped",
                                self.stall_after.as_secs()
                            ),
                        }));
                    }
                }
                _ => moved = Some((height, Instant::now())),
            }
            if height > entry.last_valid_block_height {
                // Its blockhash expired: it can land no more. One last look through the whole
                // history decides between "landed meanwhile" and "never seen".
                match self.chain.signature_status(&signature)? {
                    None => {
                        self.outbox.conclude(
                            entry.id,
                            EntryState::Expired,
                            Some("blockhash expired; the cluster never saw it"),
                        )?;
                        return Ok(None);
                    }
                    Some(_) => {
                        // Seen: wait for it to reach the commitment (or fail) above.
                        std::thread::sleep(POLL_EVERY);
                        continue;
                    }
                }
            }
            if last_broadcast.is_none_or(|at| at.elapsed() >= REBROADCAST_EVERY) {
                // Best effort: the same bytes are the same transaction.
                let _ = self.broadcast(entry, false);
                last_broadcast = Some(Instant::now());
            }
            std::thread::sleep(POLL_EVERY);
        }
    }
}

/// Signs `instructions` against a fresh blockhash, once `vet` accepts the compiled message
/// (its instructions from `prefix` on).
fn sign(
    chain: &Chain,
    payer: &Keypair,
    signers: &[&Keypair],
    instructions: &[Instruction],
    tables: &[AddressLookupTableAccount],
    prefix: usize,
    vet: Vet<'_>,
) -> Result<Signed, SendError> {
    let (blockhash, last_valid_block_height) =
        chain.latest_blockhash().map_err(SendError::BeforeSigning)?;
    sign_with_tables(
        payer,
        signers,
        instructions,
        tables,
        &blockhash,
        last_valid_block_height,
        (prefix, vet),
    )
}

/// Signs `instructions` (paid by `payer`) against `blockhash`, valid up to
/// `last_valid_block_height`: the wire bytes and signature the outbox records. Every signer the
/// message needs must be `payer` or among `signers`.
pub fn sign_with_blockhash(
    payer: &Keypair,
    signers: &[&Keypair],
    instructions: &[Instruction],
    blockhash: &str,
    last_valid_block_height: u64,
) -> Result<Signed, SendError> {
    sign_with_tables(
        payer,
        signers,
        instructions,
        &[],
        blockhash,
        last_valid_block_height,
        (0, &|_| Ok(())),
    )
}

/// [`sign_with_blockhash`] for a version-0 message loading addresses from `tables` (legacy when
/// `tables` is empty), once `vet` accepts the compiled message's instructions from `prefix` on.
pub fn sign_with_tables(
    payer: &Keypair,
    signers: &[&Keypair],
    instructions: &[Instruction],
    tables: &[AddressLookupTableAccount],
    blockhash: &str,
    last_valid_block_height: u64,
    (prefix, vet): (usize, Vet<'_>),
) -> Result<Signed, SendError> {
    let hash: Hash = blockhash
        .parse()
        .map_err(|_| SendError::Build(format!("{blockhash:?} is not a blockhash")))?;
    let message = Compiled::new(&payer.pubkey(), instructions, tables, hash)?;
    message.vet(tables, prefix, vet)?;
    let data = message.serialize();
    let keys = message.signer_keys();
    let mut signatures = Vec::with_capacity(keys.len());
    for key in keys {
        let keypair = std::iter::once(payer)
            .chain(signers.iter().copied())
            .find(|k| k.pubkey() == *key)
            .ok_or_else(|| SendError::Build(format!("no keypair for the signer {key}")))?;
        signatures.push(keypair.sign_message(&data));
    }
    let wire = wire_bytes(&data, &signatures);
    if wire.len() > MAX_TRANSACTION_BYTES {
        return Err(SendError::Build(format!(
            "the transaction is {} bytes, over the {MAX_TRANSACTION_BYTES}-byte limit",
            wire.len()
        )));
    }
    Ok(Signed {
        signature: signatures
            .first()
            .map(ToString::to_string)
            .ok_or_else(|| SendError::Build("no signer".to_owned()))?,
        blockhash: blockhash.to_owned(),
        last_valid_block_height,
        wire_base64: base64::engine::general_purpose::STANDARD.encode(&wire),
    })
}

/// The compute-budget instructions first, then `instructions`. A zero price adds no price
/// instruction.
fn with_budget(instructions: &[Instruction], limit: u32, price: u64) -> Vec<Instruction> {
    let mut all = Vec::with_capacity(instructions.len() + 2);
    all.push(ComputeBudgetInstruction::set_compute_unit_limit(limit));
    if price > 0 {
        all.push(ComputeBudgetInstruction::set_compute_unit_price(price));
    }
    all.extend_from_slice(instructions);
    all
}

/// How many compute-budget instructions [`Sender::send`] puts before the caller's at `price`:
/// the limit, and the price unless it is zero. An instruction that names another by its index
/// in the transaction (a buyback names its burn) counts from here.
pub fn budget_prefix(price: u64) -> usize {
    if price > 0 { 2 } else { 1 }
}

/// A message as it is signed: legacy, or version 0 when it loads addresses from lookup tables.
enum Compiled {
    Legacy(Message),
    V0(v0::Message),
}

impl Compiled {
    fn new(
        payer: &Pubkey,
        instructions: &[Instruction],
        tables: &[AddressLookupTableAccount],
        hash: Hash,
    ) -> Result<Self, SendError> {
        if tables.is_empty() {
            return Ok(Self::Legacy(Message::new_with_blockhash(
                instructions,
                Some(payer),
                &hash,
            )));
        }
        v0::Message::try_compile(payer, instructions, tables, hash)
            .map(Self::V0)
            .map_err(|e| SendError::Build(format!("cannot compile the version-0 message: {e}")))
    }

    /// The bytes each signer signs.
    fn serialize(&self) -> Vec<u8> {
        match self {
            Self::Legacy(message) => message.serialize(),
            Self::V0(message) => message.serialize(),
        }
    }

    /// Runs `vet` on the instructions from `prefix` on, as the runtime will see them.
    fn vet(
        &self,
        tables: &[AddressLookupTableAccount],
        prefix: usize,
        vet: Vet<'_>,
    ) -> Result<(), SendError> {
        let resolved = self.resolve(tables).map_err(SendError::Build)?;
        vet(resolved.get(prefix..).unwrap_or_default())
            .map_err(|why| SendError::Refused(format!("{why}; nothing was signed")))
    }

    /// Its instructions with every account key resolved: the static keys, then each lookup's
    /// writable entries, then each lookup's read-only entries (the runtime's order), read from
    /// `tables`; the signer and writable flags are the message's, not the instruction's.
    fn resolve(&self, tables: &[AddressLookupTableAccount]) -> Result<Vec<Instruction>, String> {
        let (header, statics, compiled, lookups) = match self {
            Self::Legacy(m) => (m.header, &m.account_keys, &m.instructions, &[][..]),
            Self::V0(m) => (
                m.header,
                &m.account_keys,
                &m.instructions,
                m.address_table_lookups.as_slice(),
            ),
        };
        let loaded = |writable: bool| -> Result<Vec<Pubkey>, String> {
            let mut out = Vec::new();
            for lookup in lookups {
                let table = tables
                    .iter()
                    .find(|t| t.key == lookup.account_key)
                    .ok_or_else(|| {
                        format!("the lookup table {} is not loaded", lookup.account_key)
                    })?;
                let indexes = if writable {
                    &lookup.writable_indexes
                } else {
                    &lookup.readonly_indexes
                };
                for index in indexes {
                    out.push(*table.addresses.get(usize::from(*index)).ok_or_else(|| {
                        format!("the lookup table {} has no entry {index}", table.key)
                    })?);
                }
            }
            Ok(out)
        };
        let (writable, readonly) = (loaded(true)?, loaded(false)?);
        let signed = usize::from(header.num_required_signatures);
        let signed_writable =
            signed.saturating_sub(usize::from(header.num_readonly_signed_accounts));
        let unsigned_writable = statics
            .len()
            .saturating_sub(usize::from(header.num_readonly_unsigned_accounts));
        let meta = |index: u8| -> Result<crate::AccountMeta, String> {
            let i = usize::from(index);
            let (pubkey, is_writable) = if let Some(key) = statics.get(i) {
                let writable = if i < signed {
                    i < signed_writable
                } else {
                    i < unsigned_writable
                };
                (*key, writable)
            } else if let Some(key) = writable.get(i - statics.len()) {
                (*key, true)
            } else {
                let key = readonly
                    .get(i - statics.len() - writable.len())
                    .ok_or_else(|| format!("account index {i} is past the message's keys"))?;
                (*key, false)
            };
            Ok(crate::AccountMeta {
                pubkey,
                is_signer: i < signed,
                is_writable,
            })
        };
        compiled
            .iter()
            .map(|ix| {
                Ok(Instruction {
                    program_id: meta(ix.program_id_index)?.pubkey,
                    accounts: ix
                        .accounts
                        .iter()
                        .map(|a| meta(*a))
                        .collect::<Result<_, _>>()?,
                    data: ix.data.clone(),
                })
            })
            .collect()
    }

    /// The keys that must sign, in order.
    fn signer_keys(&self) -> &[Pubkey] {
        let (header, keys) = match self {
            Self::Legacy(m) => (m.header, &m.account_keys),
            Self::V0(m) => (m.header, &m.account_keys),
        };
        let required = usize::from(header.num_required_signatures).min(keys.len());
        keys.get(..required).unwrap_or_default()
    }
}

/// A transaction's wire bytes: the compact-u16 signature count, the signatures, the message.
fn wire_bytes(data: &[u8], signatures: &[Signature]) -> Vec<u8> {
    let mut out = Vec::with_capacity(3 + 64 * signatures.len() + data.len());
    let mut count = u16::try_from(signatures.len()).unwrap_or(u16::MAX);
    loop {
        let mut byte = (count & 0x7f) as u8;
        count >>= 7;
        if count != 0 {
            byte |= 0x80;
        }
        out.push(byte);
        if count == 0 {
            break;
        }
    }
    for signature in signatures {
        out.extend_from_slice(signature.as_ref());
    }
    out.extend_from_slice(data);
    out
}

/// The 75th percentile of the non-zero values (0 when there are none).
fn percentile_75(values: impl Iterator<Item = u64>) -> u64 {
    let mut nonzero: Vec<u64> = values.filter(|v| *v > 0).collect();
    if nonzero.is_empty() {
        return 0;
    }
    nonzero.sort_unstable();
    let index = (nonzero.len() * 3).div_ceil(4).saturating_sub(1);
    nonzero[index.min(nonzero.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// A JSON-RPC node on loopback whose block height never moves and which has never seen the
    /// transaction: every request is answered by `answer(method)`.
    fn frozen_node() -> String {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut writer = stream;
                    loop {
                        let mut length = 0usize;
                        loop {
                            let mut line = String::new();
                            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                                return;
                            }
                            if line == "\r\n" {
                                break;
                            }
                            if let Some((name, value)) = line.split_once(':')
                                && name.eq_ignore_ascii_case("content-length")
                            {
                                length = value.trim().parse().unwrap();
                            }
                        }
                        let mut body = vec![0; length];
                        reader.read_exact(&mut body).unwrap();
                        let request: Value = serde_json::from_slice(&body).unwrap();
                        let result = match request["method"].as_str().unwrap() {
                            "getGenesisHash" => {
                                json!("FrozenGenesis1111111111111111111111111111111")
                            }
                            "getBlockHeight" => json!(100),
                            "getSignatureStatuses" => {
                                json!({"context": {"slot": 120}, "value": [null]})
                            }
                            "sendTransaction" => json!("sent"),
                            other => panic!("unexpected {other}"),
                        };
                        let answer =
                            json!({"jsonrpc": "2.0", "id": request["id"], "result": result})
                                .to_string();
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                            answer.len()
                        );
                        if writer.write_all(head.as_bytes()).is_err()
                            || writer.write_all(answer.as_bytes()).is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        url
    }

    #[test]
    fn a_transaction_watched_on_a_frozen_cluster_is_given_up_and_stays_pending() {
        // Given a transaction signed and recorded against a cluster whose block height is stuck
        // below its last valid height (the expiry never comes)
        let url = frozen_node();
        let chain = Chain::new(&url, Commitment::Confirmed);
        let dir = tempfile::tempdir().unwrap();
        let mut outbox = Outbox::open(&dir.path().join("outbox.sqlite")).unwrap();
        let cluster = chain.genesis_hash().unwrap();
        let payer = Keypair::new();
        let message = Message::new_with_blockhash(&[], Some(&payer.pubkey()), &Hash::new_unique());
        let signature = payer.sign_message(&message.serialize());
        let wire = wire_bytes(&message.serialize(), &[signature]);
        let claimed = outbox
            .claim(&cluster, "test:frozen", || {
                Ok::<_, ()>(Signed {
                    signature: signature.to_string(),
                    blockhash: Hash::new_unique().to_string(),
                    last_valid_block_height: 250,
                    wire_base64: base64::engine::general_purpose::STANDARD.encode(&wire),
                })
            })
            .unwrap()
            .unwrap();
        assert!(matches!(claimed, Claim::New(_)));

        // When a sender resumes it, giving up after half a second of a standing height
        let started = Instant::now();
        let quiet = |_: &str| {};
        let resumed = Sender::new(&chain, &mut outbox, &quiet)
            .unwrap()
            .stall_after(Duration::from_millis(500))
            .resume_all()
            .unwrap();

        // Then the wait ended with an error that names the stall, and the transaction is still
        // pending for the next command (it may yet land)
        assert!(started.elapsed() < Duration::from_secs(30));
        assert_eq!(resumed.len(), 1);
        let error = resumed[0].1.as_ref().unwrap_err();
        assert!(error.may_still_land(), "{error:?}");
        assert!(
            error.to_string().contains("block height has stood at 100"),
            "{error}"
        );
        let pending = outbox.pending(&cluster, "test:frozen").unwrap().unwrap();
        assert_eq!(pending.signature, signature.to_string());
    }

    #[test]
    fn the_wire_format_is_the_one_our_decoder_reads() {
        let payer = Keypair::new();
        let ix = Instruction {
            program_id: Pubkey::new_unique(),
            accounts: vec![crate::AccountMeta::new(payer.pubkey(), true)],
            data: vec![1, 2, 3],
        };
        let all = with_budget(&[ix], 12_345, 7);
        let message = Message::new_with_blockhash(&all, Some(&payer.pubkey()), &Hash::new_unique());
        let signature = payer.sign_message(&message.serialize());
        let wire = wire_bytes(&message.serialize(), &[signature]);
        let decoded = skilltrial_core::solana::transaction::decode_wire(&wire).unwrap();
        assert_eq!(decoded.signatures.len(), 1);
        assert_eq!(decoded.signatures[0].as_slice(), signature.as_ref());
        assert_eq!(decoded.instructions.len(), 3);
        assert_eq!(decoded.instructions[2].data, vec![1, 2, 3]);
    }

    #[test]
    fn a_version_0_transaction_loads_accounts_from_its_tables_and_signs_what_it_sends() {
        let payer = Keypair::new();
        let (far_a, far_b) = (Pubkey::new_unique(), Pubkey::new_unique());
        let ix = Instruction {
            program_id: Pubkey::new_unique(),
            accounts: vec![
                crate::AccountMeta::new(payer.pubkey(), true),
                crate::AccountMeta::new(far_a, false),
                crate::AccountMeta::new_readonly(far_b, false),
            ],
            data: vec![9],
        };
        let table = AddressLookupTableAccount {
            key: Pubkey::new_unique(),
            addresses: vec![Pubkey::new_unique(), far_b, far_a],
        };
        let all = with_budget(&[ix], 10_000, 1);
        let hash = Hash::new_unique().to_string();
        let signed = sign_with_tables(
            &payer,
            &[],
            &all,
            std::slice::from_ref(&table),
            &hash,
            99,
            (0, &|_| Ok(())),
        )
        .unwrap();
        let wire = base64::engine::general_purpose::STANDARD
            .decode(&signed.wire_base64)
            .unwrap();
        let decoded = skilltrial_core::solana::transaction::decode_wire(&wire).unwrap();
        assert_eq!(decoded.lookups.len(), 1);
        assert_eq!(decoded.lookups[0].table.0, table.key.to_bytes());
        assert_eq!(decoded.lookups[0].writable, vec![2]);
        assert_eq!(decoded.lookups[0].readonly, vec![1]);
        assert!(!decoded.static_keys.iter().any(|k| k.0 == far_a.to_bytes()));
        // The signature is over the version-0 message bytes (prefix 0x80).
        let message = &wire[1 + 64..];
        assert_eq!(message[0], 0x80);
        let signature: Signature = signed.signature.parse().unwrap();
        assert!(signature.verify(payer.pubkey().as_ref(), message));
        assert_eq!(budget_prefix(0), 1);
        assert_eq!(budget_prefix(1), 2);
        // Without tables, the same call signs a legacy message.
        let legacy = sign_with_tables(&payer, &[], &all, &[], &hash, 99, (0, &|_| Ok(()))).unwrap();
        let wire = base64::engine::general_purpose::STANDARD
            .decode(&legacy.wire_base64)
            .unwrap();
        assert_ne!(wire[1 + 64], 0x80);

        // A vet sees the message's accounts as the tables resolve them: through the table it was
        // compiled with, the instructions themselves; through a table holding another address at
        // the same index (as the runtime would load it from the chain), that address.
        let tables = std::slice::from_ref(&table);
        let message = Compiled::new(&payer.pubkey(), &all, tables, Hash::new_unique()).unwrap();
        assert_eq!(message.resolve(tables).unwrap(), all);
        let stranger = Pubkey::new_unique();
        let mut swapped = table.clone();
        swapped.addresses[2] = stranger;
        let resolved = message.resolve(&[swapped]).unwrap();
        let far = &resolved[2].accounts[1];
        assert_eq!(far.pubkey, stranger);
        assert!(far.is_writable && !far.is_signer);
        // It is shown what follows the compute-budget prefix, and its refusal signs nothing.
        let refused = sign_with_tables(
            &payer,
            &[],
            &all,
            tables,
            &hash,
            99,
            (2, &|rest| {
                assert_eq!(rest.len(), 1);
                Err("not this one".to_owned())
            }),
        )
        .unwrap_err();
        assert!(
            matches!(&refused, SendError::Refused(why) if why == "not this one; nothing was signed"),
            "{refused:?}"
        );
    }

    #[test]
    fn the_market_price_is_the_75th_percentile_of_nonzero_fees() {
        assert_eq!(percentile_75([0, 0, 0].into_iter()), 0);
        assert_eq!(percentile_75([0, 10].into_iter()), 10);
        assert_eq!(percentile_75([1, 2, 3, 4].into_iter()), 3);
        assert_eq!(percentile_75([5, 1, 4, 2, 3, 0, 0, 100].into_iter()), 5);
    }

    #[test]
    fn a_refusal_is_told_in_the_programs_words() {
        let logs = vec![
            json!("Program SkiLL invoke [1]"),
            json!(
                "Program log: AnchorError occurred. Error Code: DeadlineTooSoon. Error Number: 6005. Error Message: the deadline is too soon."
            ),
        ];
        assert_eq!(
            describe_failure(&json!({"InstructionError": [1, {"Custom": 6005}]}), &logs),
            "the program refused it: Error Code: DeadlineTooSoon. Error Number: 6005. Error Message: the deadline is too soon"
        );
        let logs = vec![json!(
            "Allocate: account Address { address: X, base: None } already in use"
        )];
        assert!(
            describe_failure(&json!({"InstructionError": [1, {"Custom": 0}]}), &logs)
                .contains("already in use")
        );
    }
}
