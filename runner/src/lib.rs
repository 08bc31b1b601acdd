//! The hosted runner daemon (`skilltrial runner serve`) and its client.
//!
//! A hosted run is authorised in two parts. **Execution is authorised by the chain**: the
//! daemon starts a run only when its Run account exists, names this runner, pins the uploaded
//! manifest, holds the manifest's whole upper cost and fee, and leaves time to run and settle
//! ([`worker::authorise`]); before every dispatch it reads the Run again, so an on-chain cancel
//! stops it. **Private data** (uploads, the runs of a wallet, their events and reports) needs a
//! Sign-In With Solana session ([`siws`]): a bearer token for the CLI, an HttpOnly
//! SameSite=Strict cookie for the page.
//!
//! - [`http`]: the HTTP API (axum) and the New-run page, bound to loopback by default; its
//!   public origin is a required setting (every sign-in message names it). Its accept loop holds
//!   connections to bounds (how many at once, how long a request's head may take).
//! - [`worker`]: one run: the engine in chunks, settlement batches, the report, `run_finalize`.
//! - [`state`]: the daemon's state behind one trait, SQLite by default.
//! - [`client`]: what `skilltrial submit`, `status --remote` and `report --remote` speak.
//!
//! Threads: the HTTP server runs on a tokio runtime; each run executes on a thread of its own
//! (the engine, the journal and the chain client are blocking), at most `max_runs` at once, each
//! with up to the concurrency its owner registered it with in flight (at most the operator's
//! `max_concurrency`). The supervisor thread starts runs as they are registered and again after
//! a restart.
//!
//! Logs are `tracing` events, with the run's address, a transaction's signature or a batch as
//! fields; the binary installs the subscriber. Never a secret: keys stay in the provider, tokens
//! are never logged, and RPC URLs are redacted by the chain client's errors.

pub mod api;
pub mod buyback;
pub mod client;
pub mod http;
pub mod metrics;
pub mod pg;
pub mod profiles;
pub mod rate;
pub mod siws;
pub mod state;
pub mod tree;
pub mod worker;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use skilltrial_chain::cli_config::Commitment;
use skilltrial_chain::rpc::Chain;
use skilltrial_chain::send::Fees;
use skilltrial_core::concurrency::Concurrency;
use skilltrial_engine::store::Store;
use solana_keypair::Keypair;

use crate::api::{BuybackInfo, BuybackOutcome, Event, Notice, PhaseChange};
use crate::state::{Batch, HostedRun, Phase, RunnerState, SqliteState, StateError};

/// The daemon's settings.
#[derive(Debug)]
pub struct Config {
    /// Where people reach it (`https://runner.example`): every sign-in names it.
    pub origin: url::Url,
    /// The socket it listens on (loopback by default).
    pub bind: SocketAddr,
    /// Its state: `runner.sqlite`, the uploads store, `runs/<address>/`, the chain outbox.
    pub state_dir: PathBuf,
    pub rpc_url: String,
    pub commitment: Commitment,
    /// `mainnet`, `devnet`, `testnet` or `localnet`.
    pub chain_id: String,
    /// The operator's model profiles file, over the built-in ones; each is served only when the
    /// daemon can call it ([`profiles`]).
    pub profiles: Option<PathBuf>,
    /// Runs executing at once.
    pub max_runs: usize,
    /// The most requests one run may have in flight at once: a run is registered with 1 up to
    /// this, and `GET /v1/info` advertises it. Requests in flight on the daemon are at most
    /// `max_runs` times this.
    pub max_concurrency: Concurrency,
    /// Trials per engine chunk and per settlement transaction.
    pub batch: u32,
    pub fees: Fees,
    /// The SOL/USD rate the operator is repaid at, and what it accepts around it.
    pub rate: rate::OperatorRate,
    /// Buybacks on a schedule (`None`: the operator makes none).
    pub buyback: Option<BuybackSettings>,
    /// The PostgreSQL database this worker shares with others (`None`: the embedded SQLite
    /// state in `state_dir`, one daemon alone).
    pub database: Option<pg::PgOptions>,
}

/// Which venue buybacks swap through.
#[derive(Debug, Clone)]
pub enum VenueChoice {
    /// The local validator's pool program (`skilltrial localnet`).
    LocalPool,
    /// Jupiter's Swap API (`base`, e.g. https://api.jup.ag/swap/v2), with the operator's key.
    Jupiter {
        base: url::Url,
        api_key: Option<String>,
    },
}

impl VenueChoice {
    /// The venue, speaking to `chain` where it reads the chain.
    pub fn open(&self, chain: Chain) -> Result<Box<dyn buyback::Venue>, String> {
        Ok(match self {
            Self::LocalPool => Box::new(buyback::LocalPool::new(chain)),
            Self::Jupiter { base, api_key } => {
                Box::new(buyback::Jupiter::new(base.clone(), api_key.clone())?)
            }
        })
    }
}

/// How the daemon buys back: through which venue, how often it looks, on what terms.
#[derive(Debug, Clone)]
pub struct BuybackSettings {
    pub venue: VenueChoice,
    /// How often the daemon checks whether a buyback is due (the program's interval decides
    /// whether one may run).
    pub every: Duration,
    pub terms: buyback::Terms,
}

/// Everything the HTTP handlers and the run threads share.
pub struct App {
    pub config: Config,
    pub runner: Keypair,
    pub expect: siws::Expect,
    /// Issues and recognises sign-in nonces (stored only once spent).
    pub challenges: siws::Challenges,
    pub store: Store,
    /// The model profiles served, and those skipped with why: decided at start.
    pub profiles: profiles::Profiles,
    state: Mutex<Box<dyn RunnerState>>,
    events: tokio::sync::broadcast::Sender<Recorded>,
    /// Set on Ctrl-C / SIGTERM: runs stop after the request in flight.
    pub stop: Arc<AtomicBool>,
    /// Becomes `true` with `stop`: live event streams end, so the HTTP server can stop.
    closing: tokio::sync::watch::Sender<bool>,
    /// Runs executing now.
    active: Mutex<BTreeSet<String>>,
    /// Runs waiting after a transient failure: when to try again, and how many failures in a row
    /// (the wait doubles with each, from [`RETRY_FIRST`] up to [`RETRY_MOST`]).
    retry_at: Mutex<BTreeMap<String, (Instant, u32)>>,
    /// Set when the program refused a settlement for the runner's spending limit: no run sends a
    /// request before the instant (the limit's period ends), with why.
    dispatch_pause: Mutex<Option<(Instant, String)>>,
    /// The last buyback attempt's outcome, for `/v1/info`.
    last_buyback: Mutex<Option<BuybackOutcome>>,
    /// What `GET /metrics` exports.
    pub metrics: Arc<metrics::Metrics>,
    /// The shared database and this worker's leases, when the state is on PostgreSQL.
    pub pg: Option<pg::Pg>,
    /// On PostgreSQL: the runs with new events, as any worker appends them ([`pg::Pg::listen`]).
    hints: Option<tokio::sync::broadcast::Sender<String>>,
    /// On PostgreSQL: runs this worker keeps leased while they wait, with the epoch their
    /// working copies were last written under (reopened as they are, not rebuilt, while the
    /// lease is still that epoch).
    resumable: Mutex<BTreeMap<String, i64>>,
    /// The state directory's lock: one daemon per state directory (it dies with the process).
    _lock: std::fs::File,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("config", &self.config)
            .field("runner", &solana_signer::Signer::pubkey(&self.runner))
            .finish_non_exhaustive()
    }
}

/// The genesis hashes of the public clusters, for the sign-in's chain id.
const CLUSTERS: [(&str, &str); 3] = [
    ("5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d", "mainnet"),
    ("EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG", "devnet"),
    ("4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY", "testnet"),
];

/// The sign-in chain id of the cluster whose genesis hash is `genesis`: a public cluster by
/// name, anything else `localnet`.
pub fn chain_id_of(genesis: &str) -> &'static str {
    CLUSTERS
        .iter()
        .find(|(hash, _)| *hash == genesis)
        .map_or("localnet", |(_, name)| name)
}

impl App {
    /// Opens the daemon's state under `config.state_dir`, serving the profiles it can call
    /// ([`profiles::Profiles::load`]).
    pub fn open(config: Config, runner: Keypair) -> Result<Arc<Self>, String> {
        let profiles = profiles::Profiles::load(config.profiles.as_deref())?;
        Self::open_with(config, runner, profiles)
    }

    /// As [`App::open`], serving `profiles` as decided by the caller.
    pub fn open_with(
        config: Config,
        runner: Keypair,
        profiles: profiles::Profiles,
    ) -> Result<Arc<Self>, String> {
        std::fs::create_dir_all(&config.state_dir)
            .map_err(|e| format!("{}: {e}", config.state_dir.display()))?;
        // Two daemons on one state would execute the same runs twice over: the second is
        // refused before it reads anything.
        let lock_path = config.state_dir.join("daemon.lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| format!("{}: {e}", lock_path.display()))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(format!(
                    "another runner daemon serves the state directory {}: stop it first, or give this one another --state",
                    config.state_dir.display()
                ));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(format!("cannot lock {}: {e}", lock_path.display()));
            }
        }
        let (state, pg): (Box<dyn RunnerState>, Option<pg::Pg>) = match &config.database {
            Some(options) => {
                let pg = pg::Pg::connect(options)?;
                tracing::info!(database = %pg.database(), worker = %pg.worker(), "state on PostgreSQL");
                (Box::new(pg::PgState::new(pg.clone())), Some(pg))
            }
            None => (
                Box::new(
                    SqliteState::open(&config.state_dir.join("runner.sqlite"))
                        .map_err(|e| e.to_string())?,
                ),
                None,
            ),
        };
        let store = Store::open(&config.state_dir.join("store")).map_err(|e| e.to_string())?;
        // Workers on one database share the sign-in key: a challenge may be fetched from one
        // and signed back to another behind a load balancer.
        let challenges = match &pg {
            Some(pg) => {
                siws::Challenges::with_key(pg.shared_key("challenges").map_err(|e| e.to_string())?)
            }
            None => siws::Challenges::new()?,
        };
        let expect = siws::Expect::new(&config.origin, &config.chain_id)?;
        for line in profiles.describe() {
            tracing::info!("{line}");
        }
        let (events, _) = tokio::sync::broadcast::channel(1024);
        Ok(Arc::new(Self {
            config,
            runner,
            expect,
            challenges,
            store,
            profiles,
            state: Mutex::new(state),
            events,
            stop: Arc::new(AtomicBool::new(false)),
            closing: tokio::sync::watch::Sender::new(false),
            active: Mutex::new(BTreeSet::new()),
            retry_at: Mutex::new(BTreeMap::new()),
            dispatch_pause: Mutex::new(None),
            last_buyback: Mutex::new(None),
            hints: pg.as_ref().map(pg::Pg::listen),
            resumable: Mutex::new(BTreeMap::new()),
            metrics: Arc::new(metrics::Metrics::new()),
            pg,
            _lock: lock,
        }))
    }

    pub fn chain(&self) -> Chain {
        Chain::new(&self.config.rpc_url, self.config.commitment)
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Stops the daemon: runs after their request in flight, event streams at once.
    pub fn begin_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.closing.send_replace(true);
    }

    /// Becomes `true` when the daemon stops.
    pub fn closing(&self) -> tokio::sync::watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// The state, locked. A panic elsewhere while it was held does not lose it (every write
    /// is one SQLite transaction).
    pub fn state(&self) -> MutexGuard<'_, Box<dyn RunnerState>> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Recorded> {
        self.events.subscribe()
    }

    /// On PostgreSQL: the runs other workers (and this one) appended events to, as hints to
    /// re-read them ([`pg::Pg::listen`]).
    pub fn hints(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        self.hints
            .as_ref()
            .map(tokio::sync::broadcast::Sender::subscribe)
    }

    /// The ids of the model profiles served.
    pub fn profile_ids(&self) -> Vec<String> {
        self.profiles.ids()
    }

    /// Holds every run's next request until `until` (the spending limit's period ends), saying
    /// `why` once in the log: an exhausted limit pauses dispatch, it fails no run.
    pub fn pause_dispatch(&self, until: Instant, why: &str) {
        let mut pause = self
            .dispatch_pause
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let fresh = pause.as_ref().is_none_or(|(at, _)| *at <= now);
        if pause.as_ref().is_none_or(|(at, _)| *at < until) {
            *pause = Some((until, why.to_owned()));
        }
        if fresh {
            tracing::error!(
                "ALERT: {why}; no run sends a request for {} s, then settlement resumes",
                until.saturating_duration_since(now).as_secs()
            );
        }
    }

    /// Why requests are held now, and until when; `None` when they are not.
    pub fn dispatch_paused(&self) -> Option<(Instant, String)> {
        self.dispatch_pause
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .filter(|(until, _)| *until > Instant::now())
    }

    /// Records and broadcasts an event of `run` (a failure to record is only logged: the
    /// stream is a view, the journal and the chain are the record).
    pub fn event(&self, run: &str, event: Event) {
        match self.state().append_event(run, event.kind(), &event.data()) {
            Ok(stored) => {
                let _ = self.events.send(Recorded {
                    run: stored.run,
                    seq: stored.seq,
                    at: stored.at,
                    event,
                });
            }
            Err(e) => tracing::warn!(run, "event not recorded: {e}"),
        }
    }

    /// `run`'s recorded events after number `after`, in order. One the daemon cannot read (it
    /// would be a hand-edited state) is left out and logged: the stream is a view.
    pub fn events_after(&self, run: &str, after: u64) -> Result<Vec<Recorded>, StateError> {
        let stored = self.state().events_after(run, after)?;
        Ok(stored
            .into_iter()
            .filter_map(|e| match Event::from_parts(&e.kind, e.data) {
                Ok(event) => Some(Recorded {
                    run: e.run,
                    seq: e.seq,
                    at: e.at,
                    event,
                }),
                Err(why) => {
                    tracing::warn!(
                        run = %e.run,
                        seq = e.seq,
                        kind = %e.kind,
                        "an event this daemon does not read, left out: {why}"
                    );
                    None
                }
            })
            .collect())
    }

    pub fn set_phase(
        &self,
        run: &str,
        phase: Phase,
        detail: Option<&str>,
    ) -> Result<(), StateError> {
        self.state().set_phase(run, phase, detail)?;
        self.event(
            run,
            Event::Phase(PhaseChange {
                detail: detail.map(str::to_owned),
                phase,
                signature: None,
            }),
        );
        Ok(())
    }

    pub fn batches(&self, run: &str) -> Result<Vec<Batch>, StateError> {
        self.state().batches(run)
    }

    pub fn add_batch(
        &self,
        run: &str,
        seq: u32,
        evidence: &[skilltrial_core::settlement::EvidenceRecord],
    ) -> Result<(), StateError> {
        self.state().add_batch(run, seq, evidence)
    }

    pub fn batch_landed(&self, run: &str, seq: u32, signature: &str) -> Result<(), StateError> {
        self.state().batch_landed(run, seq, signature)
    }

    pub fn batch_refused(&self, run: &str, seq: u32, why: &str) -> Result<(), StateError> {
        self.state().batch_refused(run, seq, why)
    }

    pub fn set_report(&self, run: &str, hash: &str) -> Result<(), StateError> {
        self.state().set_report(run, hash)
    }

    pub fn finalized(&self, run: &str, signature: &str) -> Result<(), StateError> {
        self.state().set_finalized(run, signature)?;
        self.event(
            run,
            Event::Phase(PhaseChange {
                detail: None,
                phase: Phase::Finalized,
                signature: Some(signature.to_owned()),
            }),
        );
        Ok(())
    }

    /// Starts a thread for every run with work left that is not running, up to `max_runs`.
    pub fn dispatch_runs(self: &Arc<Self>) {
        if self.stopping() {
            return;
        }
        if let Some(pg) = &self.pg {
            self.claim_runs(pg);
            return;
        }
        let runs = match self.state().runs_to_work() {
            Ok(runs) => runs,
            Err(e) => {
                tracing::error!("cannot list runs: {e}");
                return;
            }
        };
        let now = Instant::now();
        for run in runs {
            {
                let mut active = self
                    .active
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if active.contains(&run.address) || active.len() >= self.config.max_runs {
                    continue;
                }
                let retry = self
                    .retry_at
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if retry.get(&run.address).is_some_and(|(at, _)| *at > now) {
                    continue;
                }
                active.insert(run.address.clone());
            }
            let app = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name(format!("run-{}", &run.address[..8.min(run.address.len())]))
                .spawn(move || app.work_on(&run));
            if let Err(e) = spawned {
                tracing::error!("cannot start a run thread: {e}");
            }
        }
    }

    /// On PostgreSQL: claims runs up to `max_runs` (fresh ones, and lapsed leases of workers
    /// that died or were cut off) and starts a thread for each.
    fn claim_runs(self: &Arc<Self>, pg: &pg::Pg) {
        // Counted and claimed under the lock of the runs executing here, so that the supervisor
        // and a registration claiming at the same moment never exceed `max_runs` together.
        let claims = {
            let mut active = self
                .active
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Runs kept leased while they wait: lost ones are given up, due ones go on here.
            let now = Instant::now();
            let mut waiting = 0usize;
            let mut due = Vec::new();
            for (address, hold) in pg.held() {
                if active.contains(&address) {
                    continue;
                }
                match hold {
                    pg::Hold::Lost => {
                        let _ = pg.release(&address, None);
                        self.resumable
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .remove(&address);
                    }
                    pg::Hold::Held(epoch) => {
                        let at = self
                            .retry_at
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .get(&address)
                            .map(|(at, _)| *at);
                        if at.is_none_or(|at| at <= now) {
                            active.insert(address.clone());
                            due.push(pg::Claim {
                                address,
                                epoch,
                                previous: None,
                            });
                        } else {
                            waiting += 1;
                        }
                    }
                }
            }
            let free = self.config.max_runs.saturating_sub(active.len() + waiting);
            match pg.claim(free) {
                Ok(claims) => {
                    for claim in &claims {
                        active.insert(claim.address.clone());
                    }
                    self.metrics_of_claims(&claims);
                    due.into_iter().chain(claims).collect::<Vec<_>>()
                }
                Err(e) if !due.is_empty() => {
                    tracing::warn!("cannot claim runs: {e}");
                    due
                }
                Err(e) => {
                    // Said once a minute while it lasts, not at every half-second try.
                    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
                    let mut last = LAST
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if last.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
                        *last = Some(Instant::now());
                        tracing::error!(
                            "cannot claim runs (said again in a minute if it lasts): {e}"
                        );
                    }
                    return;
                }
            }
        };
        for claim in claims {
            let read = self.state().run(&claim.address);
            let Ok(Some(run)) = read else {
                tracing::error!(run = %claim.address, "cannot read a claimed run ({read:?}); giving it back");
                let _ = pg.release(&claim.address, Some(RETRY_FIRST));
                self.active
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(&claim.address);
                continue;
            };
            match &claim.previous {
                Some(previous) => tracing::warn!(
                    run = %run.address,
                    epoch = claim.epoch,
                    previous = %previous,
                    "taking the run over: its lease lapsed"
                ),
                None => tracing::info!(run = %run.address, epoch = claim.epoch, "claimed"),
            }
            let app = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name(format!("run-{}", &run.address[..8.min(run.address.len())]))
                .spawn(move || app.work_on(&run));
            if let Err(e) = spawned {
                tracing::error!("cannot start a run thread: {e}");
                self.active
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(&claim.address);
                let _ = pg.release(&claim.address, Some(RETRY_FIRST));
            }
        }
    }

    /// Counts `claims` (fresh, or taken over) in the metrics.
    fn metrics_of_claims(&self, claims: &[pg::Claim]) {
        for claim in claims {
            let kind = if claim.previous.is_some() {
                metrics::ClaimKind::Takeover
            } else {
                metrics::ClaimKind::Fresh
            };
            self.metrics
                .claims
                .get_or_create(&metrics::ClaimLabels { kind })
                .inc();
        }
    }

    /// Whether `run`'s working copies may be reopened as they are: this worker kept its lease
    /// at `epoch` since it last wrote them.
    pub fn resumable(&self, run: &str, epoch: i64) -> bool {
        self.resumable
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(run)
            == Some(&epoch)
    }

    /// Records that `run`'s working copies are the database's log at `epoch`.
    pub fn written_under(&self, run: &str, epoch: i64) {
        self.resumable
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(run.to_owned(), epoch);
    }

    /// On PostgreSQL: renews this worker's leases every third of their length until the daemon
    /// stops. A lease found lost is marked so (its run writes nothing more); a database that
    /// cannot be reached for a whole lease loses them all here too, so that no run of this
    /// worker goes on past a lease another worker may already hold.
    pub fn spawn_lease_renewal(self: &Arc<Self>) -> Option<std::thread::JoinHandle<()>> {
        let pg = self.pg.clone()?;
        let every = self
            .config
            .database
            .as_ref()
            .map_or(Duration::from_secs(10), |o| o.lease / 3);
        let lease = every * 3;
        let app = Arc::clone(self);
        std::thread::Builder::new()
            .name("leases".to_owned())
            .spawn(move || {
                let mut last_ok = Instant::now();
                // Leases are renewed while runs wind down after a stop, too.
                while !app.stopping() || app.active_runs() > 0 {
                    match pg.renew() {
                        Ok(lost) => {
                            last_ok = Instant::now();
                            for run in lost {
                                app.metrics.leases_lost.inc();
                                tracing::warn!(run = %run, "lease lost: another worker may take the run over; this one stops it");
                            }
                        }
                        Err(e) => {
                            tracing::warn!("cannot renew leases: {e}");
                            if last_ok.elapsed() + every >= lease {
                                let lost = pg.lose_all();
                                app.metrics.leases_lost.inc_by(lost);
                            }
                        }
                    }
                    std::thread::sleep(every);
                }
            })
            .map_err(|e| tracing::error!("cannot start the lease renewal: {e}"))
            .ok()
    }

    /// A run's file (`report.json`, `report.html`): the copy in its directory, else (on
    /// PostgreSQL) the one its owner stored there, checked against its digest.
    pub fn run_file(&self, run: &str, name: &str) -> Result<Vec<u8>, String> {
        let path = worker::run_dir(&self.config.state_dir, run).join(name);
        match std::fs::read(&path) {
            Ok(bytes) => return Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && self.pg.is_some() => {}
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
        let Some(pg) = &self.pg else {
            return Err(format!("{}: not found", path.display()));
        };
        let digest = pg
            .run_file(run, name)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("run {run} has no {name}"))?;
        let bytes = pg
            .blob(&digest)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| {
                format!("{name} of run {run} ({digest}) is missing from the database")
            })?;
        let sha = skilltrial_core::digest::Sha256Digest::of(&bytes).hex();
        if sha != digest {
            return Err(format!(
                "{name} of run {run} in the database does not match its digest"
            ));
        }
        Ok(bytes)
    }

    /// Stores `bytes` as the run's file `name`: durably in its directory and, on PostgreSQL,
    /// in the database (under the run's lease) so that any worker serves it and a worker taking
    /// the run over finalizes the very same file.
    pub fn keep_run_file(&self, run: &str, name: &str, bytes: &[u8]) -> Result<(), String> {
        let path = worker::run_dir(&self.config.state_dir, run).join(name);
        skilltrial_engine::store::write_durably(&path, bytes).map_err(|e| e.to_string())?;
        if let Some(pg) = &self.pg {
            let digest = skilltrial_core::digest::Sha256Digest::of(bytes).hex();
            pg.put_blob(&digest, bytes.to_vec())
                .map_err(|e| e.to_string())?;
            pg.set_run_file(run, name, &digest)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// On PostgreSQL, copies content `digest` from the local store to the database (a tree's
    /// listing with every file it lists), so that any worker can execute what was uploaded here.
    pub fn publish(&self, digest: &skilltrial_core::digest::Sha256Digest) -> Result<(), String> {
        let Some(pg) = &self.pg else {
            return Ok(());
        };
        let bytes = self.store.get(digest).map_err(|e| e.to_string())?;
        if let Some(files) = skilltrial_engine::store::listed(&bytes) {
            for file in files {
                let content = self.store.get(&file).map_err(|e| e.to_string())?;
                pg.put_blob(&file.hex(), content)
                    .map_err(|e| e.to_string())?;
            }
        }
        pg.put_blob(&digest.hex(), bytes).map_err(|e| e.to_string())
    }

    /// On PostgreSQL, copies content `digest` (a tree with its files) from the database into
    /// the local store when it is not there: a run uploaded through another worker.
    pub fn fetch(&self, digest: &skilltrial_core::digest::Sha256Digest) -> Result<(), String> {
        let Some(pg) = &self.pg else {
            return Ok(());
        };
        let listed = if self.store.contains(digest) {
            self.store.get(digest).map_err(|e| e.to_string())?
        } else {
            let bytes = pg
                .blob(&digest.hex())
                .map_err(|e| e.to_string())?
                .ok_or_else(|| {
                    format!("{} is in neither the store nor the database", digest.hex())
                })?;
            let stored = self.store.put(&bytes).map_err(|e| e.to_string())?;
            if stored != *digest {
                return Err(format!(
                    "{} in the database does not match its digest",
                    digest.hex()
                ));
            }
            bytes
        };
        for file in skilltrial_engine::store::listed(&listed).unwrap_or_default() {
            if self.store.contains(&file) {
                continue;
            }
            let bytes = pg
                .blob(&file.hex())
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("{} is missing from the database", file.hex()))?;
            if self.store.put(&bytes).map_err(|e| e.to_string())? != file {
                return Err(format!(
                    "{} in the database does not match its digest",
                    file.hex()
                ));
            }
        }
        Ok(())
    }

    fn work_on(self: &Arc<Self>, run: &HostedRun) {
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker::work(self, run)));
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(_) => Err(worker::WorkError::Transient(
                "the run's thread panicked".to_owned(),
            )),
        };
        // A run that only waits (for the cluster's commitment, or the spending limit's period)
        // keeps its lease and its working copies on this worker: nothing failed, so they are
        // exactly the database's log, and the next try goes on from them.
        let waits = matches!(
            outcome,
            Err(worker::WorkError::Waiting(_) | worker::WorkError::Paused { .. })
        );
        match outcome {
            Ok(()) => {
                self.retry_at
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(&run.address);
            }
            Err(worker::WorkError::Stopping) => {}
            Err(worker::WorkError::Paused { until, why }) => {
                self.retry_at
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(run.address.clone(), (until, 0));
                let secs = until.saturating_duration_since(Instant::now()).as_secs();
                tracing::warn!(
                    run = %run.address,
                    retry_in_secs = secs,
                    "{why}; settling again in {secs} s"
                );
                self.event(
                    &run.address,
                    Event::Notice(Notice {
                        retry_in_secs: Some(secs),
                        ..Notice::says(why)
                    }),
                );
            }
            Err(worker::WorkError::Waiting(why)) => {
                self.retry_later(&run.address, false);
                tracing::info!(run = %run.address, "{why}");
                self.event(&run.address, Event::Notice(Notice::says(why)));
            }
            Err(worker::WorkError::Transient(why)) => {
                let wait = self.retry_later(&run.address, true);
                tracing::warn!(
                    run = %run.address,
                    retry_in_secs = wait.as_secs(),
                    "{why}; trying again in {} s",
                    wait.as_secs()
                );
                self.event(
                    &run.address,
                    Event::Notice(Notice {
                        retry_in_secs: Some(wait.as_secs()),
                        ..Notice::says(why)
                    }),
                );
            }
            Err(worker::WorkError::Fatal(why)) => {
                tracing::error!(run = %run.address, phase = Phase::Failed.as_str(), "failed: {why}");
                if let Err(e) = self.set_phase(&run.address, Phase::Failed, Some(&why)) {
                    tracing::error!(run = %run.address, "{e}");
                }
            }
        }
        // On PostgreSQL the lease is given back, with the wait decided above as the time no
        // worker may claim the run again (a stopping daemon hands its runs over at once).
        if let Some(pg) = &self.pg
            && !(waits
                && !self.stopping()
                && matches!(pg.hold(&run.address), Some(pg::Hold::Held(_))))
        {
            self.resumable
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&run.address);
            let wait = self
                .retry_at
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(&run.address)
                .map(|(at, _)| at.saturating_duration_since(Instant::now()));
            if let Err(e) = pg.release(&run.address, wait) {
                tracing::warn!(run = %run.address, "cannot give the lease back (it lapses by itself): {e}");
            }
        }
        self.active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&run.address);
    }

    /// Holds `address` back before its next try: [`RETRY_FIRST`] for a wait, the back-off of
    /// [`retry_wait`] for a `failure` (which counts toward it). Returns the wait.
    fn retry_later(&self, address: &str, failure: bool) -> Duration {
        let mut retry = self
            .retry_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let failures = retry.get(address).map_or(0, |(_, n)| *n);
        let (wait, failures) = if failure {
            (retry_wait(failures), failures.saturating_add(1))
        } else {
            (RETRY_FIRST, failures)
        };
        retry.insert(address.to_owned(), (Instant::now() + wait, failures));
        wait
    }

    /// Starts the buyback scheduler when the config asks for one: every `every`, a buyback if
    /// the program's interval allows it and enough fees are booked. Failures are logged and
    /// tried again at the next tick; nothing here can stop a run.
    pub fn spawn_buybacks(self: &Arc<Self>) {
        let Some(settings) = self.config.buyback.clone() else {
            return;
        };
        let app = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("buybacks".to_owned())
            .spawn(move || {
                let mut next = Instant::now();
                while !app.stopping() {
                    if Instant::now() >= next {
                        app.buyback_tick(&settings);
                        next = Instant::now() + settings.every;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            });
        if let Err(e) = spawned {
            tracing::error!("cannot start the buyback scheduler: {e}");
        }
    }

    fn buyback_tick(&self, settings: &BuybackSettings) {
        let outcome = (|| {
            let chain = self.chain();
            let venue = settings
                .venue
                .open(self.chain())
                .map_err(buyback::BuybackError::Setup)?;
            let mut outbox = skilltrial_chain::outbox::Outbox::open(
                &self.config.state_dir.join("chain-outbox.sqlite"),
            )
            .map_err(|e| buyback::BuybackError::Transient(e.to_string()))?;
            let progress = |line: &str| tracing::info!("{line}");
            buyback::buyback_once(
                &chain,
                &mut outbox,
                &self.runner,
                venue.as_ref(),
                settings.terms,
                &progress,
            )
        })();
        let info = match outcome {
            Ok(buyback::Outcome::Done {
                signature,
                lamports_in,
                quoted_out,
                tokens_burned,
                surplus,
            }) => {
                tracing::info!(
                    %signature,
                    lamports_in,
                    tokens_burned,
                    quoted_out,
                    "buyback {signature}: {lamports_in} lamports of fees bought {tokens_burned} $SKTRIAL base units (quoted {quoted_out}), burned; {surplus}"
                );
                let (surplus_signature, surplus_left) = match &surplus {
                    buyback::Surplus::Nothing => (None, None),
                    buyback::Surplus::Burned { signature, .. } => (Some(signature.clone()), None),
                    buyback::Surplus::Left { why } => (None, Some(why.clone())),
                };
                BuybackOutcome::Done {
                    lamports_in,
                    quoted_out,
                    signature,
                    surplus_burned: surplus.burned(),
                    surplus_left,
                    surplus_signature,
                    tokens_burned,
                }
            }
            Ok(buyback::Outcome::NotDue { next_at }) => BuybackOutcome::NotDue { next_at },
            Ok(buyback::Outcome::TooLittle {
                unreleased,
                minimum,
            }) => BuybackOutcome::TooLittle {
                minimum,
                unreleased,
            },
            Err(e) => {
                tracing::warn!("buyback not made: {e}");
                BuybackOutcome::Failed {
                    error: e.to_string(),
                }
            }
        };
        *self
            .last_buyback
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(info);
    }

    /// The buyback schedule and its last outcome, for `/v1/info` (`None` when off).
    pub fn buyback_info(&self) -> Option<BuybackInfo> {
        let settings = self.config.buyback.as_ref()?;
        let venue = match &settings.venue {
            VenueChoice::LocalPool => "localnet pool".to_owned(),
            VenueChoice::Jupiter { base, .. } => format!("jupiter ({base})"),
        };
        let last = self
            .last_buyback
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        Some(BuybackInfo {
            every_secs: settings.every.as_secs(),
            last,
            min_lamports: settings.terms.min_lamports,
            slippage_bps: settings.terms.slippage_bps,
            venue,
        })
    }

    /// Runs executing now.
    pub fn active_runs(&self) -> usize {
        self.active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

/// An event of a run as recorded: its run, its number in the run, when.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub run: String,
    pub seq: u64,
    /// Unix seconds.
    pub at: i64,
    pub event: Event,
}

/// The wait after a run's first transient failure in a row.
pub const RETRY_FIRST: Duration = Duration::from_secs(5);
/// The longest wait between two tries of a run (a node down for hours, a refused key).
pub const RETRY_MOST: Duration = Duration::from_secs(300);

/// The wait after `failures` earlier transient failures in a row: [`RETRY_FIRST`], doubled with
/// each, at most [`RETRY_MOST`].
fn retry_wait(failures: u32) -> Duration {
    RETRY_FIRST
        .saturating_mul(1u32 << failures.min(10))
        .min(RETRY_MOST)
}
