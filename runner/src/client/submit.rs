//! `skilltrial submit`: a planned run handed to a runner daemon, in two stages so that the
//! caller asks the person between seeing the escrow and signing it.
//!
//! [`prepare`] loads the manifest's inputs from the store, checks that the runner settles on the
//! session's cluster, signs in with the wallet, uploads the bundles, the pack and the manifest
//! (each validated by the runner as `plan` validated them), checks the deadline against the
//! runner's terms and asks the runner whether it would register the run — all before anything is
//! signed, because a refusal after the escrow would leave the money locked until the deadline.
//! Then it checks the escrow against the cluster ([`escrow::Plan::prepare`]). [`Pending::finish`]
//! opens the escrow the person approved (none when it was open already) and registers the run.

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_chain::Pubkey;
use skilltrial_chain::rpc::RpcFailure;
use skilltrial_chain::session::{Session, SessionError};
use skilltrial_core::concurrency::Concurrency;
use skilltrial_engine::engine::{self, EngineError};
use skilltrial_engine::store::{self, Store, StoreError};
use solana_signer::Signer;

use super::escrow::{self, EscrowPlanError, Escrowed};
use super::{Client, ClientError};

/// Why a run was not submitted. The refusals name the input; nothing was escrowed unless the
/// error says so.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubmitError {
    /// The manifest's inputs could not be loaded from the store.
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The runner could not be reached, or refused.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The cluster could not be read, or the wallet or the outbox could not be used.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The escrow: its terms, the program's checks, the transaction.
    #[error(transparent)]
    Escrow(#[from] EscrowPlanError),
    #[error(
        "the runner at {runner_url} settles on {runner_chain}; your --url {cluster} is {ours}: give the same cluster"
    )]
    OtherCluster {
        runner_url: String,
        runner_chain: String,
        /// The session's RPC URL, its credentials redacted.
        cluster: String,
        ours: &'static str,
    },
    #[error("the runner at {runner_url} gave `{key}` as its key, not a public key")]
    NotAKey { runner_url: String, key: String },
    #[error("bundle digest `{0}` is malformed")]
    BundleDigest(String),
    #[error("the manifest's pack hash is malformed")]
    PackHash,
    #[error("the stored manifest {0} is not UTF-8")]
    NotUtf8(String),
    #[error("the runner stored the manifest as {stored}, not {manifest}: not escrowed")]
    StoredAs { stored: String, manifest: String },
    #[error(
        "--deadline {given}s: the runner needs at least {min}s for this manifest (its time limit, and time to settle)"
    )]
    DeadlineBelowRunner { given: i64, min: i64 },
    #[error(
        "--concurrency {asked}: the runner at {runner_url} runs at most {max} requests in flight per run (its max_concurrency): ask for {max} or fewer; nothing was signed in, uploaded or escrowed"
    )]
    ConcurrencyAboveRunner {
        runner_url: String,
        asked: u32,
        /// What the runner advertises (1 for a runner from before concurrency).
        max: u32,
    },
}

impl From<RpcFailure> for SubmitError {
    fn from(e: RpcFailure) -> Self {
        SubmitError::Session(SessionError::Rpc(e))
    }
}

/// What to submit: the manifest (its full hash, stored with its inputs), to which runner, with
/// which deadline (seconds from when the escrow lands), with how many requests in flight.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub manifest: &'a str,
    pub runner_url: &'a url::Url,
    pub deadline_secs: i64,
    /// At most the runner's advertised `max_concurrency` (refused before the sign-in otherwise).
    pub concurrency: Concurrency,
}

/// A step of [`prepare`] the person may want to see as it happens.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Step<'a> {
    /// Signing in to the runner with the wallet.
    SigningIn {
        runner_url: &'a url::Url,
        wallet: Pubkey,
    },
    /// A bundle the runner stored (and validated).
    UploadedBundle { name: &'a str, files: usize },
}

/// What [`prepare`] leaves to do.
#[derive(Debug)]
pub enum Submission {
    /// The runner had this run already: nothing escrowed again, nothing left to do.
    Registered(Submitted),
    /// The runner would register it once escrowed: the escrow to approve, then
    /// [`Pending::finish`].
    Escrow(Box<Pending>),
}

/// A submission the runner agreed to, waiting for its escrow.
#[derive(Debug)]
pub struct Pending {
    client: Client,
    runner_url: url::Url,
    runner: String,
    manifest: String,
    concurrency: Concurrency,
    escrow: escrow::Prepared,
}

/// What `submit` did: the run the runner registered, and the escrow opened for it (or found
/// open), or that the runner had it already. `submit --json` prints it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Submitted {
    /// The Run account's address.
    pub run: String,
    /// The runner daemon's URL.
    pub runner_url: String,
    /// The runner's public key.
    pub runner: String,
    /// The manifest hash.
    pub manifest: String,
    /// The run's phase at the runner.
    pub phase: crate::api::Phase,
    /// Requests in flight at once, as the runner registered the run (a run registered before
    /// keeps its own).
    pub concurrency: u32,
    #[serde(flatten)]
    pub registration: Registration,
}

/// How a submitted run came to be registered.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Registration {
    /// `escrow`: the escrow this submit opened, or found open, before registering.
    Escrow(Box<Escrowed>),
    /// `already_registered: true`: the runner had the run; nothing was escrowed again.
    AlreadyRegistered(bool),
}

/// Everything before the escrow is signed (see the module's documentation). `session` is the
/// cluster the escrow is opened on and its wallet; `on_step` sees the sign-in and each bundle
/// uploaded.
pub fn prepare(
    store: &Store,
    session: &Session,
    request: Request<'_>,
    on_step: &mut dyn FnMut(Step<'_>),
) -> Result<Submission, SubmitError> {
    let inputs = engine::load_inputs(store, request.manifest)?;
    let hash = inputs.hash.hex();
    let runner_url = request.runner_url;

    let mut client = Client::new(runner_url)?;
    let info = client.info()?;
    // The runner would refuse it at the check: refused here first, before the cluster is even
    // asked, so that the person learns the bound before anything is read or signed.
    if request.concurrency.get() > info.max_concurrency {
        return Err(SubmitError::ConcurrencyAboveRunner {
            runner_url: runner_url.to_string(),
            asked: request.concurrency.get(),
            max: info.max_concurrency,
        });
    }
    let genesis = session.chain.genesis_hash()?;
    let ours = crate::chain_id_of(&genesis);
    if ours != info.chain_id {
        return Err(SubmitError::OtherCluster {
            runner_url: runner_url.to_string(),
            runner_chain: info.chain_id,
            cluster: skilltrial_chain::rpc::redact_url(session.chain.url()),
            ours,
        });
    }
    let runner: Pubkey = info.runner.parse().map_err(|_| SubmitError::NotAKey {
        runner_url: runner_url.to_string(),
        key: info.runner.clone(),
    })?;
    let wallet = session.wallet()?;
    on_step(Step::SigningIn {
        runner_url,
        wallet: wallet.pubkey(),
    });
    client.sign_in(&wallet)?;

    // A and B, then the other skills a progressive run lists in every catalog.
    let others = inputs
        .manifest
        .delivery
        .iter()
        .flat_map(|d| d.with_skills.iter());
    for bundle in inputs
        .manifest
        .arms
        .iter()
        .filter_map(|spec| spec.bundle.as_ref())
        .chain(others)
    {
        let digest = store::parse_hex(&bundle.digest)
            .ok_or_else(|| SubmitError::BundleDigest(bundle.digest.clone()))?;
        let files = store.get_tree(&digest)?;
        let stored = client.upload_tree("bundle", None, &files)?;
        on_step(Step::UploadedBundle {
            name: &bundle.name,
            files: stored.files,
        });
    }
    let pack_digest = store::parse_hex(&inputs.manifest.pack.hash).ok_or(SubmitError::PackHash)?;
    let files = store.get_tree(&pack_digest)?;
    client.upload_tree("pack", Some(&inputs.manifest.pack.id), &files)?;
    let text = String::from_utf8(store.get(&inputs.hash)?)
        .map_err(|_| SubmitError::NotUtf8(hash.clone()))?;
    let terms = client.upload_manifest(&text)?;
    if terms.manifest != hash {
        return Err(SubmitError::StoredAs {
            stored: terms.manifest,
            manifest: hash,
        });
    }
    if request.deadline_secs < terms.min_deadline_secs {
        return Err(SubmitError::DeadlineBelowRunner {
            given: request.deadline_secs,
            min: terms.min_deadline_secs,
        });
    }
    // The runner agrees before anything is signed: a refusal after the escrow would leave the
    // money locked until the deadline.
    let checked = client.check_with(&hash, request.deadline_secs, Some(request.concurrency))?;
    if let Some(view) = checked.registered {
        return Ok(Submission::Registered(Submitted {
            run: view.run,
            runner_url: runner_url.to_string(),
            runner: info.runner,
            manifest: hash,
            phase: view.phase,
            concurrency: view.concurrency,
            registration: Registration::AlreadyRegistered(true),
        }));
    }
    let escrow = escrow::plan(&inputs, runner, request.deadline_secs)?.prepare(session)?;
    Ok(Submission::Escrow(Box::new(Pending {
        client,
        runner_url: runner_url.clone(),
        runner: info.runner,
        manifest: hash,
        concurrency: request.concurrency,
        escrow,
    })))
}

impl Pending {
    /// The escrow: open already (nothing to approve), or what would be signed.
    pub fn escrow(&self) -> &escrow::Prepared {
        &self.escrow
    }

    /// Opens the escrow (unless it was open already) and registers the run with the runner.
    /// Call it only once the person approved [`Pending::escrow`].
    pub fn finish(self: Box<Self>, session: &Session) -> Result<Submitted, SubmitError> {
        let escrowed = match self.escrow {
            escrow::Prepared::AlreadyOpen(open) => Escrowed::AlreadyOpen(open),
            escrow::Prepared::Ready(ready) => Escrowed::Opened(ready.open(session)?),
        };
        let view = self
            .client
            .register_with(&self.manifest, Some(self.concurrency))?;
        Ok(Submitted {
            run: view.run,
            runner_url: self.runner_url.to_string(),
            runner: self.runner,
            manifest: self.manifest,
            phase: view.phase,
            concurrency: view.concurrency,
            registration: Registration::Escrow(Box::new(escrowed)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documents' schemas name every field `submit --json` prints: the escrow, or that the
    /// runner had the run.
    #[test]
    fn the_submitted_documents_schema_holds_both_registrations() {
        let schema = serde_json::to_value(schemars::schema_for!(Submitted)).unwrap_or_default();
        let text = schema.to_string();
        for field in [
            "run",
            "runner_url",
            "runner",
            "manifest",
            "phase",
            "concurrency",
            "escrow",
            "already_registered",
            "already_open",
            "sol_usd",
        ] {
            assert!(text.contains(&format!("\"{field}\"")), "{field}: {text}");
        }
    }
}
