//! The escrow of a stored manifest, as `skilltrial open` and `skilltrial submit` ask for it, in
//! three stages so that the caller asks the person between seeing and signing:
//!
//! 1. [`plan`]: the manifest's terms from its stored inputs (its pinned SOL/USD rate, its trials,
//!    the per-trial cap), no network;
//! 2. [`Plan::prepare`]: every check the program will make, against the cluster
//!    (`skilltrial_chain::escrow::prepare_open`), giving what would be signed or the Run already
//!    open;
//! 3. [`Ready::open`]: the transaction, signed and landed through the session's outbox.
//!
//! It lives in this crate because it needs both the store's inputs (`engine`) and the cluster
//! (`chain`), and those two crates must not depend on each other.

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_chain::Pubkey;
use skilltrial_chain::escrow::{self as chain_escrow, OpenError, ReadyToOpen};
use skilltrial_chain::session::{Session, SessionError};
use skilltrial_core::digest::Sha256Digest;
use skilltrial_core::hosted::{Terms, TermsError};
use skilltrial_core::manifest::{self, SolUsd, Totals};
use skilltrial_engine::engine::Inputs;
use solana_keypair::Keypair;
use solana_signer::Signer;

/// Why a stored manifest cannot be escrowed as asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EscrowPlanError {
    /// The manifest's plan cannot be rebuilt (the stored inputs do not make its trials).
    #[error(transparent)]
    Trials(#[from] manifest::PlanError),
    /// The manifest is not a hosted run's: no rate pinned, too many trials, nothing to escrow.
    #[error("manifest {manifest}: {source}")]
    Terms {
        manifest: String,
        #[source]
        source: TermsError,
    },
    /// The program would refuse the escrow, or the cluster could not be asked.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The wallet or the outbox (driven to its end before anything is signed).
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// A stored manifest's escrow, computed from its inputs: nothing asked of the cluster yet.
#[derive(Debug, Clone)]
pub struct Plan {
    pub manifest: Sha256Digest,
    /// The SOL/USD rate pinned in the manifest, which the cap is computed at.
    pub rate: SolUsd,
    pub terms: Terms,
    /// The plan's totals (its upper cost if every request used its whole bound).
    pub totals: Totals,
    /// The runner the person agrees to (the program's config must name it).
    pub runner: Pubkey,
    /// The deadline, in seconds from when the escrow lands.
    pub deadline_in: i64,
}

/// Refuses a deadline farther than the program allows: a bad flag costs no read of the store
/// and no RPC call.
pub fn deadline_within_limit(deadline_in: i64) -> Result<(), OpenError> {
    if deadline_in > skilltrial_core::hosted::MAX_DEADLINE_SECS {
        return Err(OpenError::DeadlineTooFar(deadline_in));
    }
    Ok(())
}

/// The escrow of `inputs` for `runner` with a deadline `deadline_in` seconds after it lands:
/// `planned trials × (per-request cap + fee)`, the cap being the largest trial's upper cost at
/// the pinned rate, rounded up to the lamport.
pub fn plan(inputs: &Inputs, runner: Pubkey, deadline_in: i64) -> Result<Plan, EscrowPlanError> {
    deadline_within_limit(deadline_in)?;
    let m = &inputs.manifest;
    let terms_error = |source| EscrowPlanError::Terms {
        manifest: inputs.hash.hex(),
        source,
    };
    // Said before the trials are rebuilt: a manifest planned without --sol-usd is the common
    // mistake, and its remedy is the first thing to read.
    let rate = m
        .sol_usd
        .clone()
        .ok_or_else(|| terms_error(TermsError::NoRate))?;
    let (trials, totals) = inputs.trials()?;
    let terms = Terms::of(m, &trials).map_err(terms_error)?;
    Ok(Plan {
        manifest: inputs.hash,
        rate,
        terms,
        totals,
        runner,
        deadline_in,
    })
}

impl Plan {
    /// Checks the escrow against the cluster, with the session's wallet (every transaction an
    /// earlier command left pending is first driven to its end): the Run already open for this
    /// wallet and manifest, or what would be signed.
    pub fn prepare(self, session: &Session) -> Result<Prepared, EscrowPlanError> {
        let wallet = session.signer()?;
        let request = chain_escrow::OpenRequest {
            manifest_hash: self.manifest.0,
            terms: self.terms,
            runner: self.runner,
            deadline_in: self.deadline_in,
        };
        Ok(
            match chain_escrow::prepare_open(session, &wallet.pubkey(), &request)? {
                chain_escrow::Prepared::AlreadyOpen {
                    address,
                    escrowed,
                    deadline,
                } => Prepared::AlreadyOpen(AlreadyOpen {
                    run: address.to_string(),
                    already_open: true,
                    signature: None,
                    escrow_lamports: escrowed,
                    deadline: skilltrial_core::time::rfc3339(deadline),
                }),
                chain_escrow::Prepared::Ready(ready) => Prepared::Ready(Box::new(Ready {
                    plan: self,
                    checked: ready,
                    wallet,
                    cluster: session.chain.url().to_owned(),
                })),
            },
        )
    }
}

/// What [`Plan::prepare`] found.
#[derive(Debug)]
pub enum Prepared {
    /// One Run per wallet and manifest: this one is open already (whichever process sent it);
    /// nothing is signed.
    AlreadyOpen(AlreadyOpen),
    /// Every check passed: what would be signed, for the person to approve.
    Ready(Box<Ready>),
}

/// An escrow checked against the cluster and not signed: what the person approves.
pub struct Ready {
    pub plan: Plan,
    /// The amounts, the deadline by the cluster's clock, the wallet's balance.
    pub checked: Box<ReadyToOpen>,
    wallet: Keypair,
    /// The cluster's RPC URL as the person gave it (shown to them, never logged).
    pub cluster: String,
}

impl std::fmt::Debug for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ready")
            .field("plan", &self.plan)
            .field("checked", &self.checked)
            .field("wallet", &self.wallet.pubkey())
            .finish_non_exhaustive()
    }
}

impl Ready {
    /// Signs and lands the escrow through the session's outbox, then reads the Run back (a
    /// resumed transaction carries the amounts it was signed with).
    pub fn open(self, session: &Session) -> Result<Opened, EscrowPlanError> {
        let opened = chain_escrow::open(session, &self.wallet, &self.checked)?;
        let run = &opened.live.account.run;
        Ok(Opened {
            run: self.checked.address.to_string(),
            already_open: false,
            signature: opened.signature,
            manifest_hash: self.plan.manifest.hex(),
            planned_trials: self.plan.terms.planned_trials,
            per_request_cap_lamports: run.per_request_cap,
            fee_per_trial_lamports: run.fee_per_trial,
            escrow_lamports: run.escrowed,
            deadline: skilltrial_core::time::rfc3339(run.deadline),
            deadline_unix: run.deadline,
            runner: self.plan.runner.to_string(),
            sol_usd: self.plan.rate,
        })
    }
}

/// An escrow as `open --json` prints it and `submit --json` nests it under `escrow`: opened now,
/// or found open.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Escrowed {
    Opened(Opened),
    AlreadyOpen(AlreadyOpen),
}

impl Escrowed {
    /// The Run account's address.
    pub fn run(&self) -> &str {
        match self {
            Self::Opened(o) => &o.run,
            Self::AlreadyOpen(a) => &a.run,
        }
    }
}

/// A Run this wallet had already opened for the manifest: nothing was signed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AlreadyOpen {
    /// The Run account's address.
    pub run: String,
    /// Always `true`.
    pub already_open: bool,
    /// Always `null`: no transaction was sent.
    pub signature: Option<String>,
    /// What the Run escrows.
    pub escrow_lamports: u64,
    /// Its deadline, RFC 3339 UTC.
    pub deadline: String,
}

/// An escrow opened now, as the Run account holds it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Opened {
    /// The Run account's address.
    pub run: String,
    /// Always `false`.
    pub already_open: bool,
    /// The `run_open` transaction.
    pub signature: String,
    pub manifest_hash: String,
    pub planned_trials: u16,
    pub per_request_cap_lamports: u64,
    pub fee_per_trial_lamports: u64,
    pub escrow_lamports: u64,
    /// The deadline, RFC 3339 UTC.
    pub deadline: String,
    /// The deadline, Unix seconds.
    pub deadline_unix: i64,
    /// The runner the program's config names, which alone may settle the Run.
    pub runner: String,
    /// The SOL/USD rate pinned in the manifest.
    pub sol_usd: SolUsd,
}
