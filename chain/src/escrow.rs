//! A hosted run's escrow from its user's side: cancel, refund after the deadline, close after
//! finalization. Each reads the Run first and refuses, in words, what the program would refuse
//! (no such run, not this wallet's, already ended, not yet), so a refusal costs no fee; the
//! program checks all of it again on-chain. Every transaction goes through the session's outbox.

use solana_keypair::Keypair;
use solana_signer::Signer;

use crate::account::{Run, RunStatus};
use crate::rpc::{LiveRun, RpcFailure};
use crate::session::{Session, SessionError};
use crate::{Pubkey, anchor_key, ix};

/// What stops an escrow operation. The refusals (every variant but `Session`) judge the address
/// or the moment given; `Session` is the session's own failure (a read, a send, the wallet).
#[derive(Debug, thiserror::Error)]
pub enum EscrowError {
    #[error(
        "{url}: no Run account at {address} (never opened here, or already refunded or closed)"
    )]
    NoRun { url: String, address: Pubkey },
    #[error(
        "run {address} belongs to {owner}; your wallet {wallet} cannot {action} it (--keypair names the wallet)"
    )]
    NotYours {
        address: Pubkey,
        owner: Pubkey,
        wallet: Pubkey,
        action: &'static str,
    },
    #[error("run {address} is already {word}: nothing to cancel")]
    AlreadyEnded { address: Pubkey, word: &'static str },
    #[error(
        "run {address} is finalized: its remainder is already booked to you; `skilltrial close {address}` takes it back"
    )]
    AlreadyFinalized { address: Pubkey },
    #[error(
        "run {address} can be refunded only after {} (cluster time is {}, {} s to go): until then the runner may still settle",
        when(*closes),
        when(*now),
        closes - now + 1
    )]
    NotYet {
        address: Pubkey,
        closes: i64,
        now: i64,
    },
    #[error(
        "run {address} is {word}, not finalized: the runner finalizes it, or after {} `skilltrial refund {address}` takes everything back",
        when(*closes)
    )]
    NotFinalized {
        address: Pubkey,
        word: &'static str,
        closes: i64,
    },
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl From<RpcFailure> for EscrowError {
    fn from(e: RpcFailure) -> Self {
        EscrowError::Session(SessionError::Rpc(e))
    }
}

/// A unix time as RFC 3339 UTC.
fn when(secs: i64) -> String {
    skilltrial_core::time::rfc3339(secs)
}

/// A Run's status in one word, and since when (none while open).
pub fn status_word(status: RunStatus) -> (&'static str, Option<i64>) {
    match status {
        RunStatus::Open => ("open", None),
        RunStatus::Cancelled { at } => ("cancelled", Some(at)),
        RunStatus::Finalized { at } => ("finalized", Some(at)),
    }
}

/// Lamports the escrow still holds for the user (escrow less what was settled).
pub fn remaining(run: &Run) -> u64 {
    run.escrowed
        .saturating_sub(run.settled_usage)
        .saturating_sub(run.settled_fees)
}

/// When the user may refund alone: the deadline, or the end of a cancel's settle window.
pub fn refundable_after(run: &Run) -> i64 {
    run.settle_closes_at().unwrap_or(run.deadline)
}

/// The Run at `address`, or a refusal saying there is none.
pub fn live_run(session: &Session, address: &Pubkey) -> Result<LiveRun, EscrowError> {
    session
        .chain
        .run(address)?
        .ok_or_else(|| EscrowError::NoRun {
            url: crate::rpc::redact_url(session.chain.url()),
            address: *address,
        })
}

/// The wallet (after the outbox's pending transactions are driven to their end) and the Run at
/// `address`, which must be the wallet's.
fn users_run(
    session: &Session,
    address: &Pubkey,
    action: &'static str,
) -> Result<(Keypair, LiveRun), EscrowError> {
    let wallet = session.signer()?;
    let live = live_run(session, address)?;
    let owner = live.account.run.user;
    if anchor_key(&wallet.pubkey()) != owner {
        return Err(EscrowError::NotYours {
            address: *address,
            owner,
            wallet: wallet.pubkey(),
            action,
        });
    }
    Ok((wallet, live))
}

/// A cancel that landed.
#[derive(Debug, Clone)]
pub struct Cancelled {
    pub signature: String,
    /// How long the runner may still settle what it ran (the program's window).
    pub settle_window_secs: i64,
}

/// Cancels the wallet's open Run at `address`: no new trial is dispatched.
pub fn cancel(session: &Session, address: &Pubkey) -> Result<Cancelled, EscrowError> {
    let (wallet, live) = users_run(session, address, "cancel")?;
    if let RunStatus::Cancelled { .. } | RunStatus::Finalized { .. } = live.account.run.status {
        let (word, _) = status_word(live.account.run.status);
        return Err(EscrowError::AlreadyEnded {
            address: *address,
            word,
        });
    }
    let sent = session.send(
        &format!("run_cancel:{address}"),
        &wallet,
        &[ix::run_cancel(&wallet.pubkey(), address)],
    )?;
    Ok(Cancelled {
        signature: sent.signature.to_string(),
        settle_window_secs: crate::constants::CANCEL_SETTLE_WINDOW_SECS,
    })
}

/// A Run emptied and closed: what came back, and to whom.
#[derive(Debug, Clone)]
pub struct Emptied {
    pub signature: String,
    pub user: Pubkey,
    /// Everything the account held: the escrow's remainder and its rent.
    pub returned_lamports: u64,
    pub remaining_escrow_lamports: u64,
}

impl Emptied {
    /// The account's rent, returned with the remainder.
    pub fn rent_lamports(&self) -> u64 {
        self.returned_lamports
            .saturating_sub(self.remaining_escrow_lamports)
    }
}

fn empty(
    session: &Session,
    address: &Pubkey,
    wallet: &Keypair,
    live: &LiveRun,
    intent: &str,
    instruction: crate::Instruction,
) -> Result<Emptied, EscrowError> {
    let sent = session.send(&format!("{intent}:{address}"), wallet, &[instruction])?;
    Ok(Emptied {
        signature: sent.signature.to_string(),
        user: live.account.run.user,
        returned_lamports: live.lamports,
        remaining_escrow_lamports: remaining(&live.account.run),
    })
}

/// After the deadline (or a cancel's settle window), takes back everything the wallet's Run at
/// `address` holds, without the runner.
pub fn refund(session: &Session, address: &Pubkey) -> Result<Emptied, EscrowError> {
    let (wallet, live) = users_run(session, address, "refund")?;
    let run = &live.account.run;
    if let RunStatus::Finalized { .. } = run.status {
        return Err(EscrowError::AlreadyFinalized { address: *address });
    }
    let closes = refundable_after(run);
    let now = session.chain.cluster_time()?;
    if now <= closes {
        return Err(EscrowError::NotYet {
            address: *address,
            closes,
            now,
        });
    }
    let instruction = ix::run_refund_expired(&wallet.pubkey(), address);
    empty(
        session,
        address,
        &wallet,
        &live,
        "run_refund_expired",
        instruction,
    )
}

/// Closes the wallet's finalized Run at `address`: its remainder and its rent come back.
pub fn close(session: &Session, address: &Pubkey) -> Result<Emptied, EscrowError> {
    let (wallet, live) = users_run(session, address, "close")?;
    let run = &live.account.run;
    if !matches!(run.status, RunStatus::Finalized { .. }) {
        let (word, _) = status_word(run.status);
        return Err(EscrowError::NotFinalized {
            address: *address,
            word,
            closes: refundable_after(run),
        });
    }
    let instruction = ix::run_close(&wallet.pubkey(), address);
    empty(session, address, &wallet, &live, "run_close", instruction)
}

/// A Run account's size: its discriminator and its space.
const RUN_ACCOUNT_BYTES: usize = 8 + crate::account::RUN_SPACE;
/// The base fee of a transaction with one signature.
const SIGNATURE_FEE: u64 = 5_000;

/// What a wallet asks to escrow: a planned run's terms (`core::hosted::Terms`, from its
/// manifest), the runner it agrees to, and a deadline in seconds from when the escrow lands.
#[derive(Debug, Clone, Copy)]
pub struct OpenRequest {
    pub manifest_hash: [u8; 32],
    pub terms: skilltrial_core::hosted::Terms,
    pub runner: Pubkey,
    pub deadline_in: i64,
}

/// Why a Run cannot be opened as asked (besides the session failing).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("--deadline {0}s: at most 7d (the program's limit)")]
    DeadlineTooFar(i64),
    #[error(
        "{url}: the SkillTrial program has no config on this cluster (an operator runs `skilltrial admin init`; `skilltrial localnet` starts a cluster with one)"
    )]
    NoConfig { url: String },
    #[error(
        "--runner {given}: the program's config names runner {named}; open only with the runner it names"
    )]
    OtherRunner { given: Pubkey, named: Pubkey },
    #[error("the escrow overflows u64 lamports")]
    Overflow,
    #[error(
        "--deadline {given}s: the program's config requires at least {min} s from when the escrow lands; give at least {least}s (the minimum plus {allowance} s for the transaction to land)",
        allowance = skilltrial_core::hosted::LANDING_ALLOWANCE_SECS
    )]
    DeadlineTooSoon { given: i64, min: i64, least: i64 },
    #[error("--deadline overflows")]
    DeadlineOverflow,
    #[error(
        "your wallet {wallet} holds {}; opening this run needs {} (escrow {}, the Run account's rent {}, and the fee)",
        Lamports(*balance).counted(),
        Lamports(*needed).counted(),
        Lamports(*escrow).counted(),
        Lamports(*rent).counted()
    )]
    TooPoor {
        wallet: Pubkey,
        balance: u64,
        needed: u64,
        escrow: u64,
        rent: u64,
    },
    /// The transaction landed but the node shows no Run yet (the environment, not the input).
    #[error(
        "transaction {signature} landed but {url} shows no Run at {address} yet; check with `skilltrial chain-status {address}`"
    )]
    NotShownYet {
        signature: String,
        url: String,
        address: Pubkey,
    },
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl From<RpcFailure> for OpenError {
    fn from(e: RpcFailure) -> Self {
        OpenError::Session(SessionError::Rpc(e))
    }
}

use skilltrial_core::money::Lamports;

/// What `prepare_open` found.
#[derive(Debug)]
pub enum Prepared {
    /// One Run per wallet and manifest: this one is open already (whichever process sent it).
    AlreadyOpen {
        address: Pubkey,
        escrowed: u64,
        deadline: i64,
    },
    /// Every check passed: what would be signed, for the person to approve.
    Ready(Box<ReadyToOpen>),
}

/// A `run_open` checked against the cluster, not yet signed.
#[derive(Debug)]
pub struct ReadyToOpen {
    pub address: Pubkey,
    pub user: Pubkey,
    /// The fee per executed trial the config names (and the Run will keep).
    pub fee_per_trial: u64,
    pub escrow: u64,
    /// The deadline, unix seconds by the cluster's clock.
    pub deadline: i64,
    pub balance: u64,
    args: ix::RunOpenArgs,
}

/// Checks everything the program will check of `request` for `user`'s wallet, so that a
/// refusal costs nothing: the config exists and names the runner agreed to, the deadline is
/// within its bounds with room to land, no Run of this manifest is open for the wallet, and the
/// wallet holds the escrow, the account's rent and the fee.
pub fn prepare_open(
    session: &Session,
    user: &Pubkey,
    request: &OpenRequest,
) -> Result<Prepared, OpenError> {
    use skilltrial_core::hosted::{LANDING_ALLOWANCE_SECS, MAX_DEADLINE_SECS};
    let deadline_in = request.deadline_in;
    if deadline_in > MAX_DEADLINE_SECS {
        return Err(OpenError::DeadlineTooFar(deadline_in));
    }
    let config = session.chain.config()?.ok_or_else(|| OpenError::NoConfig {
        url: session.chain.url().to_owned(),
    })?;
    if config.runner != anchor_key(&request.runner) {
        return Err(OpenError::OtherRunner {
            given: request.runner,
            named: config.runner,
        });
    }
    let fee = config.fee_per_trial;
    let escrow = request.terms.escrow(fee).ok_or(OpenError::Overflow)?;
    // The program counts the deadline from when the transaction executes, a few seconds (or,
    // resumed after a kill, longer) after it is signed: exactly the minimum could never pass.
    let least = config
        .min_deadline_secs
        .saturating_add(LANDING_ALLOWANCE_SECS);
    if deadline_in < least {
        return Err(OpenError::DeadlineTooSoon {
            given: deadline_in,
            min: config.min_deadline_secs,
            least,
        });
    }
    let now = session.chain.cluster_time()?;
    let deadline = now
        .checked_add(deadline_in)
        .ok_or(OpenError::DeadlineOverflow)?;
    let address = crate::pda::run(user, &request.manifest_hash);
    if let Some(existing) = session.chain.run(&address)? {
        return Ok(Prepared::AlreadyOpen {
            address,
            escrowed: existing.account.run.escrowed,
            deadline: existing.account.run.deadline,
        });
    }
    let balance = session.chain.balance(user)?;
    let rent = session.chain.rent_exempt_minimum(RUN_ACCOUNT_BYTES)?;
    // The escrow, the Run account's rent (returned at refund or close) and one signature.
    let needed = escrow
        .checked_add(rent)
        .and_then(|n| n.checked_add(SIGNATURE_FEE))
        .ok_or(OpenError::Overflow)?;
    if balance < needed {
        return Err(OpenError::TooPoor {
            wallet: *user,
            balance,
            needed,
            escrow,
            rent,
        });
    }
    Ok(Prepared::Ready(Box::new(ReadyToOpen {
        address,
        user: *user,
        fee_per_trial: fee,
        escrow,
        deadline,
        balance,
        args: ix::RunOpenArgs {
            manifest_hash: request.manifest_hash,
            planned_trials: request.terms.planned_trials,
            per_request_cap: request.terms.per_request_cap.0,
            escrow,
            deadline,
            expected_fee_per_trial: fee,
            expected_runner: anchor_key(&request.runner),
        },
    })))
}

/// A `run_open` that landed, and the Run as the chain holds it (a resumed transaction carries
/// the amounts and deadline it was signed with, not this invocation's).
#[derive(Debug)]
pub struct OpenedRun {
    pub signature: String,
    pub live: LiveRun,
}

/// Signs and lands `ready` with `wallet` through the outbox, then reads the Run back.
pub fn open(
    session: &Session,
    wallet: &Keypair,
    ready: &ReadyToOpen,
) -> Result<OpenedRun, OpenError> {
    let address = ready.address;
    let instruction = ix::run_open(&wallet.pubkey(), ready.args.clone());
    let sent = session.send(&format!("run_open:{address}"), wallet, &[instruction])?;
    let live = session
        .chain
        .run(&address)?
        .ok_or_else(|| OpenError::NotShownYet {
            signature: sent.signature.to_string(),
            url: session.chain.url().to_owned(),
            address,
        })?;
    Ok(OpenedRun {
        signature: sent.signature.to_string(),
        live,
    })
}
