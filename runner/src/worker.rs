//! Executing one hosted run: authorised by its Run account, executed by the engine, settled in
//! batches as it goes, finalized with the report hash.
//!
//! Restart-safe by construction, step by step:
//! - the engine's journal (one per run, under `runs/<address>/`) holds every attempt; a request
//!   in flight at a kill becomes `unknown` and is never re-sent (and never charged: it has no
//!   answer to give evidence of);
//! - a settlement batch is written to the daemon's state **before** its transaction is signed,
//!   and its transaction goes through the chain client's outbox under the intent
//!   `settle:<run>:<seq>`: after a kill the same batch is re-driven (the same bytes resent, or
//!   found landed), never composed again, and the program's settled bitmap refuses a trial twice;
//! - the report is written durably before `run_finalize` is signed, and read back on a restart,
//!   so that the hash finalized is the hash of the file the owner downloads.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use skilltrial_chain::cli_config::Commitment;
use skilltrial_chain::ix::{self, RunFinalizeArgs, RunSettleArgs, TrialCharge};
use skilltrial_chain::outbox::{EntryState, Outbox};
use skilltrial_chain::rpc::Chain;
use skilltrial_chain::send::{SendError, Sender};
use skilltrial_chain::{Pubkey, anchor_key, pda};
use skilltrial_core::concurrency::Concurrency;
use skilltrial_core::hosted::Terms;
use skilltrial_core::manifest;
use skilltrial_core::money::MicroUsd;
use skilltrial_core::report::Report;
use skilltrial_core::settlement::{EvidenceRecord, SettledBatch, Settlement, batch_evidence_hash};
use skilltrial_engine::engine::{self, Gate, Inputs, RunOptions};
use skilltrial_engine::journal::{Journal, NotRunReason};
use skilltrial_engine::provider::{CallError, ModelRequest, ModelResponse, Provider};
use skilltrial_engine::store::Store;
use solana_signer::Signer;

use crate::api::{Event, Notice, Progress, Settled};
use crate::state::{Batch, HostedRun, Phase};
use crate::{App, rate};

/// Seconds a Run's deadline must leave after a request could end, for the last settlement and
/// the finalize to land.
pub const SETTLE_MARGIN_SECS: i64 = 60;

/// How a piece of work ended short of done.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    /// Worth trying again later (the node did not answer, a file could not be written).
    #[error("{0}")]
    Transient(String),
    /// The run can never go on: the detail is kept and shown to its owner.
    #[error("{0}")]
    Fatal(String),
    /// Nothing failed: the cluster has yet to reach a commitment. Tried again after
    /// [`crate::RETRY_FIRST`], without the back-off of failures.
    #[error("{0}")]
    Waiting(String),
    /// Nothing failed: the program refused a settlement for the runner's spending limit. Tried
    /// again at `until` (the limit's period ends, or the run's deadline passes), without the
    /// back-off of failures; meanwhile no run sends a request ([`App::pause_dispatch`]).
    #[error("{why}")]
    Paused {
        until: std::time::Instant,
        why: String,
    },
    /// The daemon is stopping.
    #[error("the daemon is stopping")]
    Stopping,
}

/// The engine's progress as the run's `progress` event carries it.
fn progress_of(p: &engine::Progress) -> Progress {
    Progress {
        counts: p.counts.clone(),
        current: p.current.clone(),
        done: p.done,
        reserved: p.reserved.0,
        spent: p.spent.0,
        status: None,
        total: p.total,
        trials: Some(p.trials.clone()),
    }
}

fn transient(e: impl std::fmt::Display) -> WorkError {
    WorkError::Transient(e.to_string())
}

/// A run's own directory: its journal and its payloads.
pub fn run_dir(state_dir: &Path, address: &str) -> PathBuf {
    state_dir.join("runs").join(address)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Whether the daemon executes `manifest`: its model must be one of the profiles this daemon
/// serves — it holds the key and can call it ([`crate::profiles`]) — exactly (provider, model,
/// endpoint and price), so that a user can never point the operator's key at an endpoint of
/// their own; a scripted model is the CLI's demo, not a hosted run.
pub fn served(
    app: &App,
    m: &manifest::Manifest,
) -> Result<skilltrial_core::profile::Profile, String> {
    // The scripted model runs only on a daemon started with --demo-model, which serves nothing
    // else; a manifest of its profile says it is scripted, so its report does too.
    let demo = app.profiles.is_demo(&m.model.profile);
    if m.model.scripted && !demo {
        return Err(
            "the manifest pins the scripted demo model; this runner executes real model profiles only (a runner started with --demo-model serves the scripted one)"
                .to_owned(),
        );
    }
    if demo && !m.model.scripted {
        return Err(format!(
            "profile `{}` is this runner's scripted demo model: its manifest must say it is scripted (the page marks it)",
            m.model.profile
        ));
    }
    let served = app.profiles.find(&m.model.profile)?;
    let (profile, endpoint) = (served.profile.clone(), served.endpoint.clone());
    if profile.provider != m.model.provider
        || profile.model != m.model.model
        || endpoint != m.model.endpoint
        || profile.price != m.budget.price
    {
        return Err(format!(
            "the manifest's model `{}` ({} at {}) is not this runner's profile `{}` ({} at {}, with its price): plan against the runner's profile",
            m.model.profile, m.model.model, m.model.endpoint, profile.id, profile.model, endpoint
        ));
    }
    Ok(profile)
}

/// Checks what the daemon is asked to run, from the manifest alone: stored and valid (the
/// engine's own loading: canonical, its pack and bundles present and hashing right, this
/// binary's checker and template) and fit for escrow. Returns its inputs and terms. A run
/// already registered is checked with this alone: what it was admitted under stays (whether its
/// profile is still served decides only whether it can still be executed, see [`work`]).
pub fn check_manifest(app: &App, manifest_hex: &str) -> Result<(Inputs, Terms), String> {
    examine(app, manifest_hex, None)
}

/// When a manifest is admitted, for the age of its SOL/USD pin.
#[derive(Debug, Clone, Copy)]
pub enum Admission {
    /// Uploaded, or checked before the escrow: the pin's age limit as it is.
    Before,
    /// Registered after the escrow: the limit and [`rate::REGISTER_GRACE_SECS`].
    Register,
}

/// [`check_manifest`], and what the daemon admits only new: a profile it serves, the bounds
/// `plan` holds a manifest to on that profile (core's own check), and a SOL/USD pin the
/// operator accepts.
pub fn admit_manifest(
    app: &App,
    manifest_hex: &str,
    admission: Admission,
) -> Result<(Inputs, Terms), String> {
    examine(app, manifest_hex, Some(admission))
}

fn examine(
    app: &App,
    manifest_hex: &str,
    admission: Option<Admission>,
) -> Result<(Inputs, Terms), String> {
    let inputs = engine::load_inputs(&app.store, manifest_hex).map_err(|e| e.to_string())?;
    let m = &inputs.manifest;
    let bounds = |e: manifest::PlanError| format!("manifest {manifest_hex}: {e}");
    if admission.is_some() {
        let profile = served(app, m)?;
        // Before the plan is computed from it: a bound names its field, not a symptom.
        manifest::check_planned(m, &profile).map_err(bounds)?;
    }
    let (trials, _) = inputs.trials().map_err(|e| e.to_string())?;
    if let Some(admission) = admission {
        manifest::check_token_cap(m, &trials, manifest::Naming::Fields).map_err(bounds)?;
        if let Some(pinned) = &m.sol_usd {
            let grace = match admission {
                Admission::Before => 0,
                Admission::Register => rate::REGISTER_GRACE_SECS,
            };
            app.config
                .rate
                .check(pinned, now(), grace)
                .map_err(|e| format!("manifest {manifest_hex}: {e}"))?;
        }
    }
    let terms = Terms::of(m, &trials).map_err(|e| format!("manifest {manifest_hex}: {e}"))?;
    Ok((inputs, terms))
}

/// The shortest deadline the daemon accepts for `m`: room for one request and twice the
/// settlement margin. A shorter run than planned is no loss to the user: the daemon stops
/// dispatching one request's time and the margin before the deadline, settles what ran, and
/// what was never dispatched costs nothing.
pub fn min_deadline_secs(m: &manifest::Manifest) -> i64 {
    i64::try_from(m.limits.request_timeout_ms.div_ceil(1000))
        .unwrap_or(i64::MAX)
        .saturating_add(SETTLE_MARGIN_SECS.saturating_mul(2))
}

/// Why the chain does not authorise a run, in words for its owner.
#[derive(Debug, thiserror::Error)]
pub enum Unauthorised {
    /// The manifest is not one the daemon admits (`422`).
    #[error("{0}")]
    Inadmissible(String),
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Unavailable(String),
}

/// Seconds a deadline asked about before the escrow must leave beyond [`min_deadline_secs`]:
/// the escrow lands and the run registers a little after the check (the one allowance of
/// `core::hosted`, the CLI's and the page's too).
pub const CHECK_LANDING_SECS: i64 = skilltrial_core::hosted::LANDING_ALLOWANCE_SECS;

/// Every check of a registration but the Run account's: the manifest is admitted (stored,
/// valid, served, plan's bounds, the operator's rate, `admission` saying how old its pin may
/// be), and this daemon's key is the runner the program's config names. `deadline_secs`, the
/// deadline the escrow will be opened with (seconds from now), is checked when given.
pub fn preflight(
    app: &App,
    manifest_hex: &str,
    admission: Admission,
    deadline_secs: Option<i64>,
) -> Result<(Inputs, Terms), Unauthorised> {
    if app.pg.is_some() {
        // Uploaded through another worker, perhaps.
        fetch_inputs(app, manifest_hex).map_err(|e| match e {
            WorkError::Fatal(why) => Unauthorised::Inadmissible(why),
            other => Unauthorised::Unavailable(other.to_string()),
        })?;
    }
    let (inputs, terms) =
        admit_manifest(app, manifest_hex, admission).map_err(Unauthorised::Inadmissible)?;
    if let Some(secs) = deadline_secs {
        let least = min_deadline_secs(&inputs.manifest).saturating_add(CHECK_LANDING_SECS);
        if secs < least {
            return Err(Unauthorised::Inadmissible(format!(
                "--deadline {secs}s: this runner needs at least {least}s for manifest {manifest_hex} (one request's time, {} s to settle and finalize, and {CHECK_LANDING_SECS} s for the escrow to land)",
                SETTLE_MARGIN_SECS.saturating_mul(2)
            )));
        }
    }
    let config = app
        .chain()
        .config()
        .map_err(|e| Unauthorised::Unavailable(e.to_string()))?
        .ok_or_else(|| {
            Unauthorised::Unavailable("the program has no config on this cluster".to_owned())
        })?;
    let me = app.runner.pubkey();
    if config.runner != anchor_key(&me) {
        return Err(Unauthorised::Refused(format!(
            "this runner ({me}) is not the runner the program's config names ({}): it executes nothing",
            config.runner
        )));
    }
    Ok((inputs, terms))
}

/// The concurrency a run asks for (`None`: it says nothing, 1), when it is from 1 to the
/// operator's maximum; otherwise why not, naming the field, the value and the maximum.
pub fn concurrency(app: &App, asked: Option<u32>) -> Result<Concurrency, Unauthorised> {
    let most = app.config.max_concurrency;
    let Some(n) = asked else {
        return Ok(Concurrency::SEQUENTIAL);
    };
    Concurrency::new(n)
        .ok()
        .filter(|c| *c <= most)
        .ok_or_else(|| {
            Unauthorised::Inadmissible(format!(
                "`concurrency` {n} is out of range: this runner runs 1 to {most} requests in flight per run (its `max_concurrency` in GET /v1/info); nothing was registered"
            ))
        })
}

/// The chain's authorisation of `user`'s run of `manifest_hex`: [`preflight`], and its Run
/// account exists, names this runner, pins this manifest, is open, holds the manifest's whole
/// upper cost and fee, and leaves time to run and settle. Returns the run to register, with
/// `concurrency` (checked by [`concurrency`]).
pub fn authorise(
    app: &App,
    user: &Pubkey,
    manifest_hex: &str,
    concurrency: Concurrency,
) -> Result<HostedRun, Unauthorised> {
    let (inputs, terms) = preflight(app, manifest_hex, Admission::Register, None)?;
    let chain = app.chain();
    let address = pda::run(user, &inputs.hash.0);
    let unavailable =
        |e: skilltrial_chain::rpc::RpcFailure| Unauthorised::Unavailable(e.to_string());
    let me = app.runner.pubkey();
    let live = chain.run(&address).map_err(unavailable)?.ok_or_else(|| {
        Unauthorised::Refused(format!(
            "no Run account at {address} (wallet {user}, manifest {manifest_hex}): open the escrow first (`skilltrial open --manifest {manifest_hex} --runner {me}`)"
        ))
    })?;
    let r = &live.account.run;
    let refuse = |why: String| Err(Unauthorised::Refused(format!("Run {address}: {why}")));
    if r.user != anchor_key(user) {
        return refuse(format!("it is {}'s, not {user}'s", r.user));
    }
    if r.runner != anchor_key(&me) {
        return refuse(format!(
            "it names runner {}, not this runner {me}",
            r.runner
        ));
    }
    if r.manifest_hash != inputs.hash.0 {
        return refuse("it pins another manifest".to_owned());
    }
    if !matches!(r.status, skilltrial_chain::account::RunStatus::Open) {
        return refuse("it is no longer open (cancelled, finalized or refunded)".to_owned());
    }
    if r.planned_trials != terms.planned_trials {
        return refuse(format!(
            "it plans {} trials; the manifest has {}",
            r.planned_trials, terms.planned_trials
        ));
    }
    if r.per_request_cap < terms.per_request_cap.0 {
        return refuse(format!(
            "its per-request cap {} lamports is below the manifest's largest upper cost, {} lamports",
            r.per_request_cap, terms.per_request_cap.0
        ));
    }
    let needed = terms.escrow(r.fee_per_trial).ok_or_else(|| {
        Unauthorised::Refused("the manifest's escrow overflows u64 lamports".to_owned())
    })?;
    if r.escrowed < needed {
        return refuse(format!(
            "it escrows {} lamports; the manifest's upper cost and fees need {needed}",
            r.escrowed
        ));
    }
    // The deadline is the cluster's (the program judges it by the Clock sysvar), so it is
    // compared with the cluster's time, not this machine's.
    let cluster_now = chain.cluster_time().map_err(unavailable)?;
    let least = cluster_now.saturating_add(min_deadline_secs(&inputs.manifest));
    if r.deadline < least {
        return refuse(format!(
            "its deadline {} leaves less than one request's time and {} s to run and settle (the cluster's time is {})",
            skilltrial_core::time::rfc3339(r.deadline),
            SETTLE_MARGIN_SECS.saturating_mul(2),
            skilltrial_core::time::rfc3339(cluster_now)
        ));
    }
    let at = now();
    Ok(HostedRun {
        address: address.to_string(),
        user: user.to_string(),
        manifest: inputs.hash.hex(),
        run_id: r.run_id,
        deadline: r.deadline,
        phase: Phase::Executing,
        detail: None,
        report_hash: None,
        finalize_signature: None,
        concurrency,
        created_at: at,
        updated_at: at,
    })
}

/// Why the gate last stopped the engine.
const GATE_GO: u8 = 0;
const GATE_UNREADABLE: u8 = 1;
const GATE_DEADLINE: u8 = 2;
const GATE_GONE: u8 = 3;
const GATE_PAUSED: u8 = 4;

/// Drives `run` as far as it can go now. The Run account is read first, before a provider is
/// built or anything sent: a run refunded or closed under the daemon ends here, one finalized
/// already is recorded so.
pub fn work(app: &Arc<App>, run: &HostedRun) -> Result<(), WorkError> {
    let address: Pubkey = run
        .address
        .parse()
        .map_err(|_| WorkError::Fatal(format!("`{}` is not an address", run.address)))?;
    if app.pg.is_some() {
        fetch_inputs(app, &run.manifest)?;
    }
    let (inputs, terms) = check_manifest(app, &run.manifest).map_err(WorkError::Fatal)?;
    let dir = run_dir(&app.config.state_dir, &run.address);
    std::fs::create_dir_all(&dir).map_err(|e| transient(format!("{}: {e}", dir.display())))?;
    let (mut journal, mut outbox) = match &app.pg {
        Some(pg) => replicas(app, pg, &run.address, &dir)?,
        None => (
            Journal::open(&dir.join("journal.sqlite")).map_err(transient)?,
            Outbox::open(&app.config.state_dir.join("chain-outbox.sqlite")).map_err(transient)?,
        ),
    };
    let payloads = Store::open(&dir.join("payloads")).map_err(transient)?;
    let chain = app.chain();
    let ctx = Ctx {
        app,
        run,
        address,
        inputs: &inputs,
        terms,
        chain: &chain,
    };
    if ctx.standing(&mut outbox)? == Standing::Finalized {
        return Ok(());
    }

    if run.phase == Phase::Executing {
        ctx.execute(&mut journal, &payloads, &mut outbox)?;
        app.set_phase(&run.address, Phase::Finalizing, None)
            .map_err(transient)?;
    }
    ctx.finalize(&journal, &payloads, &mut outbox)
}

/// On PostgreSQL: copies the run's manifest, pack and bundles from the database into this
/// worker's store (the run may have been uploaded through another worker).
fn fetch_inputs(app: &App, manifest_hex: &str) -> Result<(), WorkError> {
    let digest = skilltrial_engine::store::parse_hex(manifest_hex)
        .ok_or_else(|| WorkError::Fatal(format!("manifest `{manifest_hex}` is not a digest")))?;
    app.fetch(&digest).map_err(transient)?;
    let bytes = app.store.get(&digest).map_err(transient)?;
    let m: manifest::Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| WorkError::Fatal(format!("manifest {manifest_hex}: {e}")))?;
    let mut trees = vec![m.pack.hash.clone()];
    trees.extend(
        m.arms
            .iter()
            .filter_map(|a| a.bundle.as_ref().map(|b| b.digest.clone())),
    );
    if let Some(delivery) = &m.delivery {
        trees.extend(delivery.with_skills.iter().map(|b| b.digest.clone()));
    }
    for tree in trees {
        let digest = skilltrial_engine::store::parse_hex(&tree).ok_or_else(|| {
            WorkError::Fatal(format!("manifest {manifest_hex}: `{tree}` is not a digest"))
        })?;
        app.fetch(&digest).map_err(transient)?;
    }
    Ok(())
}

/// On PostgreSQL: the run's journal and outbox, rebuilt in its directory from the database's
/// log of them (whatever this worker held of them before is stale: another worker may have
/// written since), and from now on appending every write transaction there, fenced by this
/// worker's lease, before it commits.
fn replicas(
    app: &App,
    pg: &crate::pg::Pg,
    address: &str,
    dir: &Path,
) -> Result<(Journal, Outbox), WorkError> {
    use crate::pg::{Hold, ReplicaFile};
    let journal_path = dir.join("journal.sqlite");
    let outbox_path = dir.join("outbox.sqlite");
    let Some(Hold::Held(epoch)) = pg.hold(address) else {
        return Err(transient(format!(
            "this worker holds no lease on run {address}"
        )));
    };
    // Kept leased while it waited: its working copies are the log, reopened as they are.
    if app.resumable(address, epoch) && journal_path.is_file() && outbox_path.is_file() {
        let mut journal = Journal::open(&journal_path).map_err(transient)?;
        journal
            .replicate(Box::new(
                pg.sink(
                    address,
                    ReplicaFile::Journal,
                    skilltrial_engine::journal::SCHEMA_VERSION,
                )
                .map_err(transient)?,
            ))
            .map_err(transient)?;
        let mut outbox = Outbox::open(&outbox_path).map_err(transient)?;
        outbox
            .replicate(Box::new(
                pg.sink(
                    address,
                    ReplicaFile::Outbox,
                    skilltrial_chain::outbox::SCHEMA_VERSION,
                )
                .map_err(transient)?,
            ))
            .map_err(transient)?;
        return Ok((journal, outbox));
    }
    let reports = [dir.join("report.json"), dir.join("report.html")];
    for path in [&journal_path, &outbox_path, &reports[0], &reports[1]] {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut file = path.as_os_str().to_owned();
            file.push(suffix);
            match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(transient(format!("{}: {e}", Path::new(&file).display()))),
            }
        }
    }
    let log = pg
        .replica_log(
            address,
            ReplicaFile::Journal,
            skilltrial_engine::journal::SCHEMA_VERSION,
        )
        .map_err(transient)?;
    let mut journal = Journal::restore(&journal_path, log).map_err(transient)?;
    journal
        .replicate(Box::new(
            pg.sink(
                address,
                ReplicaFile::Journal,
                skilltrial_engine::journal::SCHEMA_VERSION,
            )
            .map_err(transient)?,
        ))
        .map_err(transient)?;
    let log = pg
        .replica_log(
            address,
            ReplicaFile::Outbox,
            skilltrial_chain::outbox::SCHEMA_VERSION,
        )
        .map_err(transient)?;
    let mut outbox = Outbox::restore(&outbox_path, log).map_err(transient)?;
    outbox
        .replicate(Box::new(
            pg.sink(
                address,
                ReplicaFile::Outbox,
                skilltrial_chain::outbox::SCHEMA_VERSION,
            )
            .map_err(transient)?,
        ))
        .map_err(transient)?;
    // The report as its owner kept it, so that a takeover finalizes the very same file.
    for name in ["report.json", "report.html"] {
        if let Ok(bytes) = app.run_file(address, name) {
            skilltrial_engine::store::write_durably(&dir.join(name), &bytes).map_err(transient)?;
        }
    }
    app.written_under(address, epoch);
    Ok((journal, outbox))
}

struct Ctx<'a> {
    app: &'a Arc<App>,
    run: &'a HostedRun,
    address: Pubkey,
    inputs: &'a Inputs,
    terms: Terms,
    chain: &'a Chain,
}

impl Ctx<'_> {
    /// Where the Run account stands, read before anything is built or sent. `Open` covers a
    /// cancelled run too (its trials close `not_run` at the first dispatch, and what ran is
    /// settled within the cancel window). A Run finalized by this daemon's own transaction is
    /// recorded as finalized; one refunded or closed under the daemon ends the run (`failed`,
    /// with why), so that its followers are told and nothing waits for an account that is gone.
    fn standing(&self, outbox: &mut Outbox) -> Result<Standing, WorkError> {
        let name = &self.run.address;
        let cluster = self.chain.genesis_hash().map_err(transient)?;
        if let Some(signature) = landed(outbox, &cluster, &format!("finalize:{name}"))? {
            self.app.finalized(name, &signature).map_err(transient)?;
            return Ok(Standing::Finalized);
        }
        let live = match self.chain.run(&self.address).map_err(transient)? {
            Some(live) => Some(live),
            // Not seen at the daemon's commitment: gone, unless the finalized view still has it.
            None => Chain::new(&self.app.config.rpc_url, Commitment::Finalized)
                .run(&self.address)
                .map_err(transient)?,
        };
        let Some(live) = live else {
            return Err(WorkError::Fatal(format!(
                "the Run account {name} no longer exists (its owner refunded it after the deadline, or closed it): nothing is left to settle or finalize"
            )));
        };
        match live.account.run.status {
            skilltrial_chain::account::RunStatus::Finalized { .. } => Err(WorkError::Fatal(
                "the Run was finalized by another runner key (the config's runner changed): this runner settles and finalizes nothing more".to_owned(),
            )),
            _ => Ok(Standing::Open),
        }
    }

    /// The provider of the run's model, or why the daemon cannot call it (its profile is no
    /// longer served, no key, a bad endpoint): then a stand-in that is never asked, because the
    /// gate closes each trial before its dispatch.
    fn provider(&self) -> (Box<dyn Provider>, Option<String>) {
        let m = &self.inputs.manifest;
        let built = served(self.app, m).and_then(|_| {
            if let Some(demo) = &self.app.profiles.demo {
                demo.prepare(self.inputs)?;
            }
            skilltrial_engine::provider::for_manifest(m)
                .map_err(|e| format!("the operator's model key: {e}"))
        });
        match built {
            Ok(provider) => (
                Box::new(crate::metrics::Measured {
                    inner: provider,
                    metrics: Arc::clone(&self.app.metrics),
                }),
                None,
            ),
            Err(why) => (
                Box::new(Uncallable {
                    kind: m.model.provider,
                    why: why.clone(),
                }),
                Some(why),
            ),
        }
    }

    fn execute(
        &self,
        journal: &mut Journal,
        payloads: &Store,
        outbox: &mut Outbox,
    ) -> Result<(), WorkError> {
        let (provider, uncallable) = self.provider();
        // Each trial not yet sent closes with the reason and this message (a user's cancel, read
        // at the same gate, still closes them `cancelled`).
        let unavailable = uncallable.map(|why| {
            let message = format!(
                "this runner cannot call the run's model ({why}): every trial not yet sent closes not_run (reason `not_run_model_unavailable`) and is never charged; what ran is settled and the run finalized, so that its owner can close it and take the rest of the escrow back"
            );
            tracing::warn!(run = %self.run.address, "{message}");
            self.app
                .event(&self.run.address, Event::Notice(Notice::says(message.clone())));
            format!("this runner cannot call the run's model: {why}")
        });
        let uncallable = unavailable.is_some();
        let timeout_secs = i64::try_from(
            self.inputs
                .manifest
                .limits
                .request_timeout_ms
                .div_ceil(1000),
        )
        .unwrap_or(i64::MAX);
        loop {
            // Whatever was executed and not yet settled (a restart's leftovers too) first.
            self.settle(journal, payloads, outbox)?;
            // The runner's spending limit is used up: nothing is sent until its period ends
            // (closing the trials of a run that cannot be called sends nothing).
            if !uncallable && let Some((until, why)) = self.app.dispatch_paused() {
                return Err(WorkError::Paused { until, why });
            }
            let why = Arc::new(AtomicU8::new(GATE_GO));
            // The deadline is the cluster's: its clock, read once a chunk, as an offset from
            // this machine's (a cluster clock behind or ahead of it moves every decision).
            let skew = self
                .chain
                .cluster_time()
                .map_err(transient)?
                .saturating_sub(now());
            let gate = {
                let why = Arc::clone(&why);
                let app = Arc::clone(self.app);
                let url = self.app.config.rpc_url.clone();
                let commitment = self.app.config.commitment;
                let address = self.address;
                let deadline = self.run.deadline;
                let unavailable = unavailable.clone();
                move || {
                    // Closing a trial sends nothing: neither the deadline nor a pause holds it.
                    if unavailable.is_none()
                        && now()
                            .saturating_add(skew)
                            .saturating_add(timeout_secs)
                            .saturating_add(SETTLE_MARGIN_SECS)
                            > deadline
                    {
                        why.store(GATE_DEADLINE, Ordering::SeqCst);
                        return Gate::Stop;
                    }
                    if unavailable.is_none() && app.dispatch_paused().is_some() {
                        why.store(GATE_PAUSED, Ordering::SeqCst);
                        return Gate::Stop;
                    }
                    match Chain::new(&url, commitment).run(&address) {
                        Ok(Some(live)) => match live.account.run.status {
                            skilltrial_chain::account::RunStatus::Open => match &unavailable {
                                None => Gate::Go,
                                Some(message) => {
                                    Gate::Close(NotRunReason::ModelUnavailable, message.clone())
                                }
                            },
                            skilltrial_chain::account::RunStatus::Cancelled { .. } => Gate::Cancel,
                            _ => {
                                why.store(GATE_GONE, Ordering::SeqCst);
                                Gate::Stop
                            }
                        },
                        Ok(None) => {
                            why.store(GATE_GONE, Ordering::SeqCst);
                            Gate::Stop
                        }
                        Err(_) => {
                            why.store(GATE_UNREADABLE, Ordering::SeqCst);
                            Gate::Stop
                        }
                    }
                }
            };
            let app = Arc::clone(self.app);
            let name = self.run.address.clone();
            let mut last_done = u32::MAX;
            let summary = engine::run(
                journal,
                payloads,
                provider.as_ref(),
                self.inputs,
                RunOptions {
                    dispatch_limit: Some(self.app.config.batch),
                    stop: Some(Arc::clone(&self.app.stop)),
                    gate: Some(Arc::new(gate)),
                    // The key is the operator's: a refused key pauses the run (retried later,
                    // the refused trial sent again), never ends it as a row of errors.
                    stop_on_key_refusal: true,
                    // As its owner registered it: within the operator's maximum then.
                    concurrency: self.run.concurrency,
                },
                &mut |p| {
                    if p.done != last_done || p.current.is_none() {
                        last_done = p.done;
                        app.event(&name, Event::Progress(progress_of(p)));
                    }
                },
            );
            let summary = match summary {
                Ok(summary) => summary,
                // Cancelled before a restart: nothing more to run; settle and finalize.
                Err(engine::EngineError::Refused(engine::Refusal::RunCancelled(_))) => {
                    self.settle(journal, payloads, outbox)?;
                    return Ok(());
                }
                Err(engine::EngineError::Refused(r @ engine::Refusal::KeyRefused { .. })) => {
                    // What has run is settled; the run waits for the operator's key.
                    self.settle(journal, payloads, outbox)?;
                    return Err(WorkError::Transient(format!(
                        "the operator's model key: {r}"
                    )));
                }
                Err(engine::EngineError::Refused(r)) => {
                    return Err(WorkError::Fatal(r.to_string()));
                }
                Err(other) => return Err(transient(other)),
            };
            // The engine closes trials it will not send without a progress line: say where
            // the run stands after each chunk.
            let pending = summary.counts.get("pending").copied().unwrap_or(0);
            // The grid as the chunk left it; a journal that cannot be read now leaves it to the
            // next progress (the run itself does not depend on it).
            let trials = match (
                self.inputs.trials(),
                journal.attempts_without_details(&self.inputs.hash.hex()),
            ) {
                (Ok((planned, _)), Ok(attempts)) => Some(engine::live_trials(
                    &self.inputs.manifest,
                    &planned,
                    &attempts,
                    &|_| false,
                )),
                _ => None,
            };
            self.app.event(
                &self.run.address,
                Event::Progress(Progress {
                    counts: summary.counts.clone(),
                    current: None,
                    done: summary.planned.saturating_sub(pending),
                    reserved: summary.reserved.0,
                    spent: summary.spent.0,
                    status: Some(summary.status.clone()),
                    total: summary.planned,
                    trials,
                }),
            );
            self.settle(journal, payloads, outbox)?;
            match summary.status.as_str() {
                "finished" | "cancelled" => return Ok(()),
                _ if self.app.stopping() => return Err(WorkError::Stopping),
                _ => match why.load(Ordering::SeqCst) {
                    GATE_GO => {} // the dispatch limit: the next chunk
                    GATE_DEADLINE => {
                        self.app.event(
                            &self.run.address,
                            Event::Notice(Notice::says(
                                "the Run's deadline is near: nothing more is sent; settling and finalizing what ran",
                            )),
                        );
                        return Ok(());
                    }
                    GATE_GONE => {
                        return Err(WorkError::Fatal(
                            "the Run account was refunded or closed under the run".to_owned(),
                        ));
                    }
                    GATE_PAUSED => {} // the next chunk waits for the spending limit's period
                    _ => {
                        return Err(WorkError::Transient(
                            "the Run account could not be read before a dispatch".to_owned(),
                        ));
                    }
                },
            }
        }
    }

    /// The sealed report (with what has settled), rebuilt from the journal.
    fn report(&self, journal: &Journal, payloads: &Store) -> Result<Report, WorkError> {
        let row = journal
            .find_run(&self.run.manifest)
            .map_err(transient)?
            .ok_or_else(|| WorkError::Fatal("the run's journal has no run".to_owned()))?;
        skilltrial_engine::report::build(journal, &self.app.store, payloads, &row)
            .map_err(transient)
    }

    /// Settles every executed trial not yet in a batch, and re-drives batches not yet landed.
    fn settle(
        &self,
        journal: &Journal,
        payloads: &Store,
        outbox: &mut Outbox,
    ) -> Result<(), WorkError> {
        let name = &self.run.address;
        let mut batches = self.app.batches(name).map_err(transient)?;
        let in_batches: std::collections::BTreeSet<u16> = batches
            .iter()
            .flat_map(|b| b.evidence.iter().map(EvidenceRecord::trial))
            .collect();
        if journal
            .find_run(&self.run.manifest)
            .map_err(transient)?
            .is_some()
        {
            let report = self.report(journal, payloads)?;
            let mut fresh = Vec::new();
            for (position, trial) in report.trials.iter().enumerate() {
                let Ok(index) = u16::try_from(trial.index) else {
                    continue;
                };
                if in_batches.contains(&index) {
                    continue;
                }
                let spent: u64 = trial
                    .attempts
                    .iter()
                    .filter_map(|a| a.spent_usd_micros)
                    .fold(0u64, u64::saturating_add);
                let usage = self
                    .terms
                    .usage_lamports(&self.inputs.manifest, MicroUsd(spent))
                    .map_err(|e| WorkError::Fatal(e.to_string()))?;
                match report.evidence_of(position, usage) {
                    Some(Ok(record)) => fresh.push(record),
                    Some(Err(e)) => return Err(WorkError::Fatal(e.to_string())),
                    None => {}
                }
            }
            for chunk in fresh.chunks(usize::try_from(self.app.config.batch).unwrap_or(10).max(1)) {
                let seq = u32::try_from(batches.len() + 1).unwrap_or(u32::MAX);
                self.app.add_batch(name, seq, chunk).map_err(transient)?;
                skilltrial_chain::failpoint::hit("batch-recorded", name);
                batches.push(crate::state::Batch {
                    seq,
                    evidence: chunk.to_vec(),
                    signature: None,
                    refused: None,
                });
            }
        }
        let pending: Vec<_> = batches.iter().filter(|b| b.is_pending()).collect();
        if pending.is_empty() {
            return Ok(());
        }
        let payout = self.payout()?;
        let cluster = self.chain.genesis_hash().map_err(transient)?;
        for batch in pending {
            let intent = format!("settle:{name}:{}", batch.seq);
            let signature = match landed(outbox, &cluster, &intent)? {
                Some(signature) => signature,
                None => {
                    let instruction = ix::run_settle(
                        &self.app.runner.pubkey(),
                        &self.address,
                        &payout,
                        settle_args(self.run.run_id, &batch.evidence),
                    );
                    let started = std::time::Instant::now();
                    match self.send_settle(outbox, &intent, instruction, batch)? {
                        Ok(signature) => {
                            self.app
                                .metrics
                                .settlement_seconds
                                .observe(started.elapsed().as_secs_f64());
                            signature
                        }
                        Err(why) => {
                            self.refuse_batch(batch, &why)?;
                            continue;
                        }
                    }
                }
            };
            self.app
                .batch_landed(name, batch.seq, &signature)
                .map_err(transient)?;
            self.landed_metrics(batch);
            self.app.event(
                name,
                Event::Settled(Settled {
                    batch: batch.seq,
                    signature,
                    trials: batch.evidence.iter().map(EvidenceRecord::trial).collect(),
                    usage_lamports: batch
                        .evidence
                        .iter()
                        .map(EvidenceRecord::usage_lamports)
                        .sum(),
                }),
            );
        }
        Ok(())
    }

    /// Sends `instruction` under `intent`: its signature once landed, the sender's error
    /// otherwise.
    fn send_raw(
        &self,
        outbox: &mut Outbox,
        intent: &str,
        instruction: skilltrial_chain::Instruction,
    ) -> Result<String, SendError> {
        let progress = |_: &str| {};
        let mut sender = Sender::new(self.chain, outbox, &progress)?;
        sender
            .send(
                intent,
                &self.app.runner,
                &[],
                &[instruction],
                self.app.config.fees,
            )
            .map(|sent| sent.signature.to_string())
    }

    /// [`Self::send_raw`] for a finalize or a re-sent batch: a refusal by the program ends
    /// the run (`Fatal`); anything that may pass (the node, an expiry) is tried again.
    fn send(
        &self,
        outbox: &mut Outbox,
        intent: &str,
        instruction: skilltrial_chain::Instruction,
    ) -> Result<String, WorkError> {
        self.send_raw(outbox, intent, instruction)
            .map_err(|e| match refusal_of(&e) {
                SettleRefusal::Passing(why) => WorkError::Transient(why),
                _ => WorkError::Fatal(format!("{intent}: {}", e.explain())),
            })
    }

    /// Sends settlement `batch`: `Ok(Ok(signature))` once landed, `Ok(Err(why))` when the
    /// program refused it for good (its trials can no longer be charged: the run goes on to be
    /// finalized with what was settled, and the user takes the rest back). A refusal that
    /// passes with time — the runner's spending limit, the operator's funds below rent or fees,
    /// an unanswering node — leaves the batch pending and the run waiting; it never fails it.
    fn send_settle(
        &self,
        outbox: &mut Outbox,
        intent: &str,
        instruction: skilltrial_chain::Instruction,
        batch: &Batch,
    ) -> Result<Result<String, String>, WorkError> {
        let e = match self.send_raw(outbox, intent, instruction) {
            Ok(signature) => return Ok(Ok(signature)),
            Err(e) => e,
        };
        let name = &self.run.address;
        match refusal_of(&e) {
            SettleRefusal::Passing(why) => Err(WorkError::Transient(why)),
            SettleRefusal::SpendingLimit => self.limit_reached(batch),
            SettleRefusal::TooLate(why) => Ok(Err(why)),
            SettleRefusal::OperatorFunds(why) => {
                tracing::error!(
                    run = %name,
                    batch = batch.seq,
                    "ALERT: settlement batch refused: {why}: fund the runner's key and its payout address (each above rent); the run's settlement waits"
                );
                Err(WorkError::Transient(format!(
                    "settlement waits for the operator: {why}"
                )))
            }
            SettleRefusal::Other(why) => {
                // Nothing else the program says of a settlement passes with time: its trials
                // are not charged (the user's favour) and the run is finalized, never left open.
                tracing::error!(
                    run = %name,
                    batch = batch.seq,
                    "ALERT: settlement batch refused by the program, not charged: {why}"
                );
                Ok(Err(format!("the program refused it: {why}")))
            }
        }
    }

    /// Records `batch` as refused for good, and tells the run's owner which trials are not
    /// charged and why.
    fn refuse_batch(&self, batch: &Batch, why: &str) -> Result<(), WorkError> {
        let name = &self.run.address;
        self.app
            .batch_refused(name, batch.seq, why)
            .map_err(transient)?;
        self.app
            .metrics
            .settlements
            .get_or_create(&crate::metrics::SettledLabels {
                result: crate::metrics::Settled::Refused,
            })
            .inc();
        let trials: Vec<u16> = batch.evidence.iter().map(EvidenceRecord::trial).collect();
        let message = format!(
            "settlement batch {} ({} trials) can no longer be charged ({why}): those trials cost nothing; the run is finalized with what was settled and its owner takes the rest back",
            batch.seq,
            trials.len()
        );
        tracing::warn!(run = %name, batch = batch.seq, "{message}");
        self.app.event(
            name,
            Event::Notice(Notice {
                batch: Some(batch.seq),
                charged: Some(false),
                trials: Some(trials),
                ..Notice::says(message)
            }),
        );
        Ok(())
    }

    /// The program refused `batch` for the runner's spending limit. When the batch alone is
    /// above the whole limit it can never be charged (refused for good). Otherwise every run's
    /// dispatch pauses until the limit's period ends (the fee vault's `usage_period_start` plus
    /// the config's period), and this run tries again then — or once its deadline has passed,
    /// when the program refuses any settlement and the run is finalized with what was settled.
    /// Usage and fees are both counted against the limit here, as the program counts them.
    fn limit_reached(&self, batch: &Batch) -> Result<Result<String, String>, WorkError> {
        let config = self
            .chain
            .config()
            .map_err(transient)?
            .ok_or_else(|| transient("the program has no config on this cluster"))?;
        let (vault, _) = self
            .chain
            .fee_vault()
            .map_err(transient)?
            .ok_or_else(|| transient("the program has no fee vault on this cluster"))?;
        let fee = self
            .chain
            .run(&self.address)
            .map_err(transient)?
            .map_or(config.fee_per_trial, |live| live.account.run.fee_per_trial);
        let limit = config.usage_limit;
        let charged = batch_charge(&batch.evidence, fee);
        if charged.is_none_or(|c| c > limit.amount) {
            return Ok(Err(format!(
                "this batch alone charges {} lamports of usage and fees, above the runner's whole spending limit of {} lamports per {} s: lower --batch, or raise the limit",
                charged.map_or_else(|| "more than u64".to_owned(), |c| c.to_string()),
                limit.amount,
                limit.period_secs
            )));
        }
        let cluster_now = self.chain.cluster_time().map_err(transient)?;
        let ends = vault.usage_period_start.saturating_add(limit.period_secs);
        // One second past the end: the program opens the next period at `now >= ends`.
        let wait = secs(ends.saturating_sub(cluster_now).saturating_add(1));
        let past_deadline = secs(
            self.run
                .deadline
                .saturating_sub(cluster_now)
                .saturating_add(1),
        );
        let now = std::time::Instant::now();
        self.app.pause_dispatch(
            now + wait,
            &format!(
                "the program refused a settlement: the runner's spending limit of {} lamports per {} s is used up until {}",
                limit.amount,
                limit.period_secs,
                skilltrial_core::time::rfc3339(ends)
            ),
        );
        Err(WorkError::Paused {
            until: now + wait.min(past_deadline),
            why: format!(
                "the runner's spending limit for this period is used up: settlement batch {} and new requests wait until it ends ({}); nothing is lost",
                batch.seq,
                skilltrial_core::time::rfc3339(ends)
            ),
        })
    }

    /// Seals the report with its settlement, keeps it, and finalizes the Run with its hash.
    fn finalize(
        &self,
        journal: &Journal,
        payloads: &Store,
        outbox: &mut Outbox,
    ) -> Result<(), WorkError> {
        let name = &self.run.address;
        // Everything that ran is settled first (a restart may land here with batches pending).
        self.settle(journal, payloads, outbox)?;
        // And the chain holds it, finalized: a batch the outbox saw land can still be lost
        // with a fork the cluster abandoned, and a finalized report must not claim it.
        self.reconcile(outbox)?;
        let dir = run_dir(&self.app.config.state_dir, name);
        let json_path = dir.join("report.json");
        let cluster = self.chain.genesis_hash().map_err(transient)?;
        let intent = format!("finalize:{name}");
        // What landed, and nothing the program refused for good (never charged).
        let batches = self.app.batches(name).map_err(transient)?;
        let settlement = Settlement::new(
            skilltrial_chain::PROGRAM_ID.to_string(),
            name.clone(),
            self.run.run_id,
            batches
                .into_iter()
                .filter(|b| b.signature.is_some())
                .map(|b| SettledBatch::new(b.evidence, b.signature))
                .collect(),
        );
        let kept = if json_path.is_file() {
            let text = std::fs::read_to_string(&json_path).map_err(transient)?;
            Some(
                Report::from_json(&text)
                    .map_err(|e| WorkError::Fatal(format!("{}: {e}", json_path.display())))?,
            )
        } else {
            None
        };
        // A finalize already signed carries the kept report's hash and may still land (or has):
        // that report stands. Otherwise a kept report stands only while it states the
        // settlement as it now is; one written before a batch was settled again is sealed anew.
        let signed = outbox
            .latest(&cluster, &intent)
            .map_err(transient)?
            .map(|e| e.state);
        let report = match kept {
            Some(kept) if kept_report_stands(kept.settlement.as_ref(), &settlement, signed) => kept,
            kept => {
                if kept.is_some() {
                    tracing::info!(
                        run = %name,
                        "the kept report states a settlement that has changed since (a batch settled again); sealing it anew"
                    );
                }
                let mut report = self.report(journal, payloads)?;
                skilltrial_core::report::HOSTED_WARNING.clone_into(&mut report.warning);
                report.settlement = Some(settlement);
                report.seal().map_err(|e| WorkError::Fatal(e.to_string()))?;
                let value = report
                    .to_value()
                    .map_err(|e| WorkError::Fatal(e.to_string()))?;
                let mut text = serde_json::to_string_pretty(&value).map_err(transient)?;
                text.push('\n');
                let html = skilltrial_core::report::html::render(&report);
                self.app
                    .keep_run_file(name, "report.html", html.as_bytes())
                    .map_err(transient)?;
                self.app
                    .keep_run_file(name, "report.json", text.as_bytes())
                    .map_err(transient)?;
                report
            }
        };
        let hash = report
            .report_hash
            .clone()
            .ok_or_else(|| WorkError::Fatal("the kept report has no hash".to_owned()))?;
        let digest = skilltrial_engine::store::parse_hex(&hash)
            .ok_or_else(|| WorkError::Fatal(format!("report hash `{hash}` is not hex")))?;
        self.app.set_report(name, &hash).map_err(transient)?;
        let signature = match landed(outbox, &cluster, &intent)? {
            Some(signature) => signature,
            None => {
                let instruction = ix::run_finalize(
                    &self.app.runner.pubkey(),
                    &self.address,
                    RunFinalizeArgs {
                        expected_run_id: self.run.run_id,
                        report_hash: digest.0,
                    },
                );
                self.send(outbox, &intent, instruction)?
            }
        };
        self.app.finalized(name, &signature).map_err(transient)?;
        Ok(())
    }
}

impl Ctx<'_> {
    /// Compares the Run account, finalized, with the batches the daemon recorded as landed:
    /// `Ok` when it holds exactly them. Otherwise a passing failure, so that finalization waits:
    /// for finality when the account already holds them at the daemon's commitment; after
    /// settling again the batches it lacks when it holds a prefix of them (the program's
    /// per-trial bitmap refuses a trial twice, so this can never charge one twice); and with
    /// the difference named when it holds something else.
    fn reconcile(&self, outbox: &mut Outbox) -> Result<(), WorkError> {
        let name = &self.run.address;
        // The batches that landed (the settlement settles every other one first, or records
        // it refused for good, never charged).
        let batches: Vec<Batch> = self
            .app
            .batches(name)
            .map_err(transient)?
            .into_iter()
            .filter(|b| b.signature.is_some())
            .collect();
        let ours: Vec<&[EvidenceRecord]> = batches.iter().map(|b| b.evidence.as_slice()).collect();
        let held = |chain: &Chain| -> Result<Reconciled, WorkError> {
            let live = chain.run(&self.address).map_err(transient)?.ok_or_else(|| {
                WorkError::Waiting(format!(
                    "waiting for the Run account to be readable at `{}` commitment before finalizing (a run opened moments ago is not finalized yet)",
                    chain.commitment().as_str()
                ))
            })?;
            Ok(reconcile(&ours, &Held::of(&live.account.run)))
        };
        let finalized = Chain::new(&self.app.config.rpc_url, Commitment::Finalized);
        if held(&finalized)? == Reconciled::Agrees {
            return Ok(());
        }
        match held(self.chain)? {
            Reconciled::Agrees => Err(WorkError::Waiting(
                "waiting for the settlement to be finalized before finalizing the run".to_owned(),
            )),
            Reconciled::Missing { held } => {
                let why = format!(
                    "the Run account holds {held} of the {} settlement batches this runner saw land (a fork the cluster abandoned took the rest): settling them again before finalizing",
                    batches.len()
                );
                tracing::warn!(run = %name, "{why}");
                self.app
                    .event(name, Event::Notice(Notice::says(why.clone())));
                for batch in batches.iter().skip(held) {
                    self.settle_again(outbox, batch)?;
                }
                Err(WorkError::Transient(format!(
                    "{why}; re-sent, finalizing once the account holds them"
                )))
            }
            Reconciled::Differs(what) => Err(WorkError::Transient(format!(
                "not finalizing: the Run account's settlement is not this runner's ({what})"
            ))),
        }
    }

    /// Where settlements pay the runner: the program's config says.
    fn payout(&self) -> Result<Pubkey, WorkError> {
        let config = self
            .chain
            .config()
            .map_err(transient)?
            .ok_or_else(|| transient("the program has no config on this cluster"))?;
        Ok(Pubkey::new_from_array(config.runner_payout.to_bytes()))
    }

    /// Sends `batch` again under a fresh intent (its earlier transactions landed and were lost),
    /// and records the new signature as the batch's.
    fn settle_again(&self, outbox: &mut Outbox, batch: &Batch) -> Result<(), WorkError> {
        let name = &self.run.address;
        let cluster = self.chain.genesis_hash().map_err(transient)?;
        // The first retry of this batch not already seen landing (and lost since).
        let mut attempt = 1u32;
        let intent = loop {
            let intent = format!("settle:{name}:{}:again-{attempt}", batch.seq);
            if landed(outbox, &cluster, &intent)?.is_none() {
                break intent;
            }
            attempt = attempt.saturating_add(1);
        };
        let payout = self.payout()?;
        let instruction = ix::run_settle(
            &self.app.runner.pubkey(),
            &self.address,
            &payout,
            settle_args(self.run.run_id, &batch.evidence),
        );
        // Whatever the cluster says, the next look at the account decides: never fatal here.
        let signature = self
            .send(outbox, &intent, instruction)
            .map_err(|e| match e {
                WorkError::Fatal(why) => WorkError::Transient(why),
                other => other,
            })?;
        self.app
            .batch_landed(name, batch.seq, &signature)
            .map_err(transient)?;
        self.landed_metrics(batch);
        Ok(())
    }

    fn landed_metrics(&self, batch: &Batch) {
        let m = &self.app.metrics;
        m.settlements
            .get_or_create(&crate::metrics::SettledLabels {
                result: crate::metrics::Settled::Landed,
            })
            .inc();
        m.trials_settled
            .inc_by(u64::try_from(batch.evidence.len()).unwrap_or(u64::MAX));
    }
}

/// What a Run account holds of its settlement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub batches: u16,
    pub trials: u16,
    pub usage: u64,
    pub digest: [u8; 32],
}

impl Held {
    fn of(run: &skilltrial_chain::account::Run) -> Self {
        Self {
            batches: run.settle_batches,
            trials: run.settled_trials,
            usage: run.settled_usage,
            digest: run.settle_digest,
        }
    }
}

/// Where a Run account's settlement stands against the batches a runner recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reconciled {
    /// It holds exactly them.
    Agrees,
    /// It holds the first `held` of them and nothing else: the rest are to be settled again.
    Missing { held: usize },
    /// It holds something else, in words (each field: ours, the account's).
    Differs(String),
}

/// Folds `ours` as the program does and compares each prefix with `held`.
pub fn reconcile(ours: &[&[EvidenceRecord]], held: &Held) -> Reconciled {
    let mut digest = [0u8; 32];
    let (mut trials, mut usage) = (0u64, 0u64);
    let mut prefixes = vec![(digest, trials, usage)];
    for batch in ours {
        let entries: Vec<(u16, u64)> = batch
            .iter()
            .map(|r| (r.trial(), r.usage_lamports()))
            .collect();
        digest = skilltrial_core::settlement::fold_digest(
            &digest,
            &batch_evidence_hash(batch),
            &entries,
        );
        trials = trials.saturating_add(u64::try_from(batch.len()).unwrap_or(u64::MAX));
        usage = entries
            .iter()
            .fold(usage, |sum, (_, lamports)| sum.saturating_add(*lamports));
        prefixes.push((digest, trials, usage));
    }
    let matches = |k: usize| {
        prefixes.get(k).is_some_and(|(d, t, u)| {
            *d == held.digest && *t == u64::from(held.trials) && *u == held.usage
        })
    };
    let k = usize::from(held.batches);
    if k == ours.len() && matches(k) {
        return Reconciled::Agrees;
    }
    if k < ours.len() && matches(k) {
        return Reconciled::Missing { held: k };
    }
    let hex = |d: &[u8; 32]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
    Reconciled::Differs(format!(
        "settle batches: this runner's {}, the account's {}; trials settled: {trials}, {}; usage settled, lamports: {usage}, {}; settlement digest: {}, {}",
        ours.len(),
        held.batches,
        held.trials,
        held.usage,
        hex(&digest),
        hex(&held.digest)
    ))
}

/// `run_settle`'s arguments for one batch of `run_id`.
fn settle_args(run_id: u64, evidence: &[EvidenceRecord]) -> RunSettleArgs {
    RunSettleArgs {
        expected_run_id: run_id,
        evidence_hash: batch_evidence_hash(evidence),
        trials: evidence
            .iter()
            .map(|r| TrialCharge {
                index: r.trial(),
                usage: r.usage_lamports(),
            })
            .collect(),
    }
}

/// The signature of `intent`'s transaction if the outbox saw it land.
/// Whether a report kept from an earlier finalize attempt is the one to finalize with: always
/// when that attempt's `run_finalize` was signed and may still land or has (`finalize`, the
/// outbox state of its intent; it carries the kept report's hash), else only while the report
/// states (`kept`, its settlement section) `settlement`, the batches as they landed now.
fn kept_report_stands(
    kept: Option<&Settlement>,
    settlement: &Settlement,
    finalize: Option<EntryState>,
) -> bool {
    matches!(finalize, Some(EntryState::Pending | EntryState::Landed)) || kept == Some(settlement)
}

fn landed(outbox: &Outbox, cluster: &str, intent: &str) -> Result<Option<String>, WorkError> {
    Ok(outbox
        .latest(cluster, intent)
        .map_err(transient)?
        .filter(|e| e.state == EntryState::Landed)
        .map(|e| e.signature))
}

/// Where a Run account stands for the daemon, read before a run's work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    /// Open or cancelled: there is work to do.
    Open,
    /// Finalized by this daemon's own `run_finalize` (now recorded).
    Finalized,
}

/// The stand-in provider of a run whose model the daemon cannot call. The gate closes every
/// trial before its dispatch, so it is never asked; were it asked, the request would end as an
/// infrastructure error, which charges nothing.
struct Uncallable {
    kind: skilltrial_core::profile::ProviderKind,
    why: String,
}

impl Provider for Uncallable {
    fn kind(&self) -> skilltrial_core::profile::ProviderKind {
        self.kind
    }
    fn body(&self, _request: &ModelRequest) -> Vec<u8> {
        Vec::new()
    }
    fn call(&self, _request: &ModelRequest) -> Result<ModelResponse, CallError> {
        Err(CallError::NotDelivered {
            message: self.why.clone(),
        })
    }
}

/// What a refused settlement means for its run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettleRefusal {
    /// Nothing the program said: the node, an expiry, a transaction that may still land. Tried
    /// again later.
    Passing(String),
    /// `SpendingLimitExceeded`: the runner's limit for this period is used up.
    SpendingLimit,
    /// `DeadlinePassed` or `CancelWindowClosed`: the batch can never be charged.
    TooLate(String),
    /// The runner's key or its payout address lacks the lamports for rent or fees: the
    /// operator's to fix.
    OperatorFunds(String),
    /// Any other refusal by the program, which no wait changes.
    Other(String),
}

/// Classifies a failed send of a settlement or a finalize.
pub fn refusal_of(e: &SendError) -> SettleRefusal {
    match e {
        SendError::Refused(text) | SendError::FailedOnChain { reason: text, .. } => {
            classify_refusal(text)
        }
        SendError::Build(text) => {
            SettleRefusal::Other(format!("the transaction could not be built: {text}"))
        }
        other => SettleRefusal::Passing(other.explain()),
    }
}

/// Classifies a refusal by the program's error code (Anchor's: 6000 + the variant's index in
/// `programs/skilltrial/src/error.rs`, taken from the program crate), or by the runtime's
/// error for the operator's funds.
pub fn classify_refusal(text: &str) -> SettleRefusal {
    use skilltrial_chain::error::SkillTrialError;
    if ["InsufficientFundsForRent", "InsufficientFundsForFee"]
        .iter()
        .any(|e| text.contains(e))
    {
        return SettleRefusal::OperatorFunds(text.to_owned());
    }
    let Some(code) = program_code(text) else {
        return SettleRefusal::Passing(text.to_owned());
    };
    if code == u32::from(SkillTrialError::SpendingLimitExceeded) {
        SettleRefusal::SpendingLimit
    } else if code == u32::from(SkillTrialError::DeadlinePassed) {
        SettleRefusal::TooLate("the run's deadline has passed: nothing settles after it".to_owned())
    } else if code == u32::from(SkillTrialError::CancelWindowClosed) {
        SettleRefusal::TooLate(
            "the run was cancelled and its window for settling requests in flight has closed"
                .to_owned(),
        )
    } else {
        SettleRefusal::Other(text.to_owned())
    }
}

/// The program error code a refusal's text names: Anchor's log line (`Error Number: 6029`), the
/// transaction error (`"Custom":6029`, `Custom(6029)`), or a preflight's
/// `custom program error: 0x178d`.
pub fn program_code(text: &str) -> Option<u32> {
    let digits = |rest: &str, radix: u32| {
        let end = rest
            .find(|c: char| !c.is_digit(radix))
            .unwrap_or(rest.len());
        u32::from_str_radix(&rest[..end], radix).ok()
    };
    for (marker, radix) in [
        ("Error Number: ", 10),
        ("\"Custom\":", 10),
        ("Custom(", 10),
        ("custom program error: 0x", 16),
    ] {
        if let Some(at) = text.find(marker)
            && let Some(code) = digits(&text[at + marker.len()..], radix)
        {
            return Some(code);
        }
    }
    None
}

/// What a batch charges against the spending limit: its usage and its fees, `None` above u64.
fn batch_charge(evidence: &[EvidenceRecord], fee_per_trial: u64) -> Option<u64> {
    let usage = evidence
        .iter()
        .try_fold(0u64, |sum, r| sum.checked_add(r.usage_lamports()))?;
    let count = u64::try_from(evidence.len()).ok()?;
    usage.checked_add(fee_per_trial.checked_mul(count)?)
}

/// `seconds` as a wait (none when not positive).
fn secs(seconds: i64) -> std::time::Duration {
    std::time::Duration::from_secs(u64::try_from(seconds).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(trial: u16, usage: u64) -> EvidenceRecord {
        EvidenceRecord::new(
            trial,
            format!("r-{trial:03}-1"),
            None,
            usage,
            "ab".repeat(32),
        )
        .unwrap()
    }

    /// What an account holds after the program applied `batches`.
    fn applied(batches: &[Vec<EvidenceRecord>]) -> Held {
        let refs: Vec<&[EvidenceRecord]> = batches.iter().map(Vec::as_slice).collect();
        let settlement = Settlement::new(
            skilltrial_chain::PROGRAM_ID.to_string(),
            Pubkey::new_from_array([7; 32]).to_string(),
            1,
            batches
                .iter()
                .map(|b| SettledBatch::new(b.clone(), None))
                .collect(),
        );
        let check = settlement.verify().unwrap();
        assert_eq!(check.batches, refs.len());
        Held {
            batches: u16::try_from(check.batches).unwrap(),
            trials: u16::try_from(check.records).unwrap(),
            usage: check.usage_lamports,
            digest: check.digest.0,
        }
    }

    fn ours() -> Vec<Vec<EvidenceRecord>> {
        vec![
            vec![record(0, 700), record(1, 700)],
            vec![record(2, 650)],
            vec![record(3, 700), record(5, 10)],
        ]
    }

    /// Regression: every settle refusal was `Fatal`. Each is now read by its program
    /// code, as the three places the sender finds it write it.
    #[test]
    fn settle_refusals_are_classified_by_their_program_code() {
        use skilltrial_chain::error::SkillTrialError;
        let limit = u32::from(SkillTrialError::SpendingLimitExceeded);
        // Simulation: Anchor's log line, as `describe_failure` quotes it.
        let simulated = format!(
            "the program refused it: Error Code: SpendingLimitExceeded. Error Number: {limit}. Error Message: the runner's spending limit for this period would be exceeded"
        );
        assert_eq!(program_code(&simulated), Some(limit));
        assert_eq!(classify_refusal(&simulated), SettleRefusal::SpendingLimit);
        // Preflight: the node's words, in hex.
        let preflight = format!(
            "Transaction simulation failed: Error processing Instruction 1: custom program error: {limit:#x}"
        );
        assert_eq!(classify_refusal(&preflight), SettleRefusal::SpendingLimit);
        // On-chain: the transaction error.
        let deadline = u32::from(SkillTrialError::DeadlinePassed);
        let failed = format!("{{\"InstructionError\":[1,{{\"Custom\":{deadline}}}]}}");
        assert!(matches!(
            classify_refusal(&failed),
            SettleRefusal::TooLate(_)
        ));
        let window = u32::from(SkillTrialError::CancelWindowClosed);
        assert!(matches!(
            classify_refusal(&format!("Custom({window})")),
            SettleRefusal::TooLate(_)
        ));
        let revoked = u32::from(SkillTrialError::RunnerRevoked);
        assert!(matches!(
            classify_refusal(&format!("Error Number: {revoked}.")),
            SettleRefusal::Other(_)
        ));
        // The runtime's refusal for rent: the operator's to fix, never a lost charge.
        assert!(matches!(
            classify_refusal("{\"InsufficientFundsForRent\":{\"account_index\":4}}"),
            SettleRefusal::OperatorFunds(_)
        ));
        // No program code: the node, not the program; tried again.
        assert!(matches!(
            classify_refusal("Blockhash not found"),
            SettleRefusal::Passing(_)
        ));
        assert_eq!(program_code("custom program error: 0x"), None);
    }

    /// A report kept from a finalize attempt that never signed is sealed anew when
    /// a batch settled again since (its signature, or the batches, differ); once a finalize
    /// with the kept report's hash was signed and may land, that report stands.
    #[test]
    fn a_kept_report_is_sealed_anew_unless_a_finalize_carries_its_hash() {
        let section = |batches: &[Vec<EvidenceRecord>], signature: &str| {
            Settlement::new(
                skilltrial_chain::PROGRAM_ID.to_string(),
                Pubkey::new_from_array([7; 32]).to_string(),
                1,
                batches
                    .iter()
                    .enumerate()
                    .map(|(n, b)| SettledBatch::new(b.clone(), Some(format!("{signature}{n}"))))
                    .collect(),
            )
        };
        let all = ours();
        let now = section(&all, "sig-");
        // Written with the batches as they stand: it stands.
        assert!(kept_report_stands(Some(&now), &now, None));
        // The last batch was settled again under another signature, or was missing then.
        let resettled = section(&all, "old-");
        let short = section(&all[..2], "sig-");
        for stale in [&resettled, &short] {
            assert!(!kept_report_stands(Some(stale), &now, None));
            assert!(!kept_report_stands(
                Some(stale),
                &now,
                Some(EntryState::Expired)
            ));
            assert!(!kept_report_stands(
                Some(stale),
                &now,
                Some(EntryState::Failed)
            ));
            assert!(kept_report_stands(
                Some(stale),
                &now,
                Some(EntryState::Pending)
            ));
            assert!(kept_report_stands(
                Some(stale),
                &now,
                Some(EntryState::Landed)
            ));
        }
        // A kept report with no settlement section is never a hosted run's sealed report.
        assert!(!kept_report_stands(None, &now, None));
    }

    #[test]
    fn a_batch_charges_its_usage_and_fees_against_the_limit() {
        let batch = [record(0, 700), record(1, 650)];
        assert_eq!(batch_charge(&batch, 5), Some(1_360));
        assert_eq!(batch_charge(&batch, u64::MAX), None);
        assert_eq!(secs(-3), std::time::Duration::ZERO);
    }

    #[test]
    fn an_account_holding_exactly_the_batches_agrees() {
        let ours = ours();
        let refs: Vec<&[EvidenceRecord]> = ours.iter().map(Vec::as_slice).collect();
        assert_eq!(reconcile(&refs, &applied(&ours)), Reconciled::Agrees);
        assert_eq!(reconcile(&[], &applied(&[])), Reconciled::Agrees);
    }

    /// Regression: after a fork was abandoned the account held 2 of 6 batches
    /// the outbox saw land, and the daemon finalized a report claiming all 6.
    #[test]
    fn an_account_holding_a_prefix_is_missing_the_rest() {
        let ours = ours();
        let refs: Vec<&[EvidenceRecord]> = ours.iter().map(Vec::as_slice).collect();
        assert_eq!(
            reconcile(&refs, &applied(&ours[..1])),
            Reconciled::Missing { held: 1 }
        );
        assert_eq!(
            reconcile(&refs, &applied(&[])),
            Reconciled::Missing { held: 0 }
        );
    }

    #[test]
    fn an_account_holding_anything_else_differs_naming_each_field() {
        let ours = ours();
        let refs: Vec<&[EvidenceRecord]> = ours.iter().map(Vec::as_slice).collect();
        // Another first batch: the same count of batches, another digest and usage.
        let other = vec![vec![record(0, 1), record(1, 700)]];
        let Reconciled::Differs(why) = reconcile(&refs[..1], &applied(&other)) else {
            panic!("agreed with another batch");
        };
        assert!(why.contains("usage settled, lamports: 1400, 701"), "{why}");
        assert!(why.contains("settlement digest"), "{why}");
        // More batches than ours.
        let mut more = ours.clone();
        more.push(vec![record(9, 1)]);
        let Reconciled::Differs(why) = reconcile(&refs, &applied(&more)) else {
            panic!("agreed with more batches");
        };
        assert!(
            why.contains("settle batches: this runner's 3, the account's 4"),
            "{why}"
        );
    }
}
