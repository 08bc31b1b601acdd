//! The daemon's state on PostgreSQL, shared by several workers (`runner serve --database
//! postgres://…`; ARCHITECTURE.md, "Several workers on one PostgreSQL").
//!
//! What one database gives several workers:
//! - the runner's own state ([`PgState`], the same [`RunnerState`] as the SQLite file);
//! - a **lease** on each run: a worker claims a run it may execute (`FOR UPDATE SKIP LOCKED`, so
//!   claimers never wait on each other), renews it on a timer, and every write it makes for the
//!   run is **fenced** by the lease's epoch: a write carrying an epoch older than the run's, or
//!   made after the lease lapsed on the database's clock, changes nothing and fails;
//! - the **write log** of each run's journal and outbox ([`ReplicaSink`]): the owner's SQLite
//!   files stay local, but every write transaction is appended here (fenced) before it commits,
//!   so a worker taking the run over rebuilds both files exactly as they were after the last
//!   write that could have had an effect outside (a request is sent only after its `dispatched`
//!   row is here);
//! - the uploads and reports every worker serves (`blobs`, `run_files`).
//!
//! The trait is synchronous (runs execute on threads of their own, the HTTP layer holds it
//! under a mutex as it does the SQLite file), so this backend drives its pool on a runtime of
//! its own and blocks the caller on a channel: that works from a run's thread and from an async
//! handler alike, and the pool's connections are never starved by the caller's runtime.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use serde_json::Value;
use skilltrial_core::concurrency::Concurrency;
use skilltrial_core::settlement::EvidenceRecord;
use tokio_postgres::Row;
use tokio_postgres::config::{Host, SslMode};

use crate::state::{Batch, Census, Event, HostedRun, Phase, RunnerState, StateError};

/// The schema version: the number of migrations in `migrations/runner-pg/` applied.
pub const SCHEMA_VERSION: i32 = 1;

const MIGRATIONS: &[&str] = &[include_str!("../../migrations/runner-pg/0001_runner.sql")];

/// The advisory lock migrations run under (any constant of our own: `b"skltrial"` as a number).
const MIGRATION_LOCK: i64 = 0x736b_6c74_7269_616c;

/// The columns [`run_from`] reads.
const RUN_COLUMNS: &str = "address, \"user\", manifest, run_id, deadline, phase, detail, report_hash, \
                           finalize_signature, concurrency, created_at, updated_at";

/// How to reach the database and how this worker holds leases.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// A `postgres://` URL or a `key=value` connection string (libpq's forms).
    pub url: String,
    /// A PEM file of certificate authorities to trust for TLS, instead of the platform's.
    pub ca_file: Option<PathBuf>,
    /// Connections in this worker's pool.
    pub pool_size: usize,
    /// How long a claimed run stays this worker's without a renewal.
    pub lease: Duration,
    /// This worker's name in `runs.lease_owner`.
    pub worker: String,
}

impl PgOptions {
    /// `url` with the defaults: 16 connections, a 30 s lease, a worker name of the host, the
    /// process and a random suffix (a restarted process never inherits a dead one's leases).
    pub fn new(url: &str) -> Self {
        let host = std::fs::read_to_string("/etc/hostname")
            .map(|h| h.trim().to_owned())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "host".to_owned());
        let mut nonce = [0u8; 4];
        let _ = getrandom::fill(&mut nonce);
        Self {
            url: url.to_owned(),
            ca_file: None,
            pool_size: 16,
            lease: Duration::from_secs(30),
            worker: format!(
                "{host}:{}:{:08x}",
                std::process::id(),
                u32::from_be_bytes(nonce)
            ),
        }
    }
}

/// Where the database is, for messages: hosts, port and database name, never the password.
pub fn describe(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let port = config
        .get_ports()
        .first()
        .map_or(String::new(), |p| format!(":{p}"));
    format!(
        "postgres {}{port}/{}",
        if hosts.is_empty() {
            "localhost".to_owned()
        } else {
            hosts.join(",")
        },
        config.get_dbname().unwrap_or("")
    )
}

/// A runtime dropped in the background: the daemon's state may be dropped on an async thread,
/// where dropping a runtime the ordinary way is refused.
#[derive(Debug)]
struct Background(Option<tokio::runtime::Runtime>);

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// A lease this worker holds, or held until it learned it lost it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Claimed at this epoch, renewed as it goes.
    Held(i64),
    /// Lost (not renewed in time, or taken over): nothing more is written for the run here.
    Lost,
}

/// A run this worker claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub address: String,
    pub epoch: i64,
    /// The worker that held it before, when this claim takes a lapsed lease over.
    pub previous: Option<String>,
}

/// The connection pool and this worker's leases.
#[derive(Clone)]
pub struct Pg {
    rt: Arc<Background>,
    pool: Pool,
    /// For the LISTEN connection, which lives outside the pool.
    config: tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    where_: String,
    worker: String,
    lease_secs: f64,
    held: Arc<Mutex<HashMap<String, Hold>>>,
}

impl std::fmt::Debug for Pg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pg")
            .field("database", &self.where_)
            .field("worker", &self.worker)
            .finish_non_exhaustive()
    }
}

/// The TLS connector: rustls with the platform's roots, or the operator's CA file.
fn tls(ca_file: Option<&Path>) -> Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("--database-ca {}: {e}", path.display()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("--database-ca {}: {e}", path.display()))?;
            if certs.is_empty() {
                return Err(format!(
                    "--database-ca {}: no PEM certificate in it",
                    path.display()
                ));
            }
            for cert in certs {
                roots
                    .add(cert)
                    .map_err(|e| format!("--database-ca {}: {e}", path.display()))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for cert in found.certs {
                // A platform certificate rustls cannot use is skipped, as every client does.
                let _ = roots.add(cert);
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

impl Pg {
    /// Connects (checking the server answers) and brings the schema to [`SCHEMA_VERSION`]. A
    /// database of a newer schema than this daemon knows is refused, untouched.
    pub fn connect(options: &PgOptions) -> Result<Self, String> {
        let mut config: tokio_postgres::Config = options
            .url
            .parse()
            .map_err(|e| format!("--database: not a PostgreSQL connection string: {e}"))?;
        // The worker's name in pg_stat_activity, unless the URL names the application itself.
        if config.get_application_name().is_none() {
            config.application_name(&options.worker);
        }
        let where_ = describe(&config);
        let remote = config.get_hosts().iter().any(|h| match h {
            Host::Tcp(name) => !matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1"),
            Host::Unix(_) => false,
        });
        if remote && config.get_ssl_mode() != SslMode::Require {
            tracing::warn!(
                database = %where_,
                "the database is not on this machine and its URL does not say sslmode=require: the connection may go unencrypted"
            );
        }
        let tls = tls(options.ca_file.as_deref())?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("postgres")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the database runtime: {e}"))?;
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = {
            let _entered = rt.enter();
            Pool::builder(manager)
                .max_size(options.pool_size.max(2))
                .runtime(deadpool_postgres::Runtime::Tokio1)
                .wait_timeout(Some(Duration::from_secs(30)))
                .create_timeout(Some(Duration::from_secs(10)))
                .build()
                .map_err(|e| format!("{where_}: {e}"))?
        };
        let pg = Self {
            rt: Arc::new(Background(Some(rt))),
            pool,
            config,
            tls,
            where_,
            worker: options.worker.clone(),
            lease_secs: options.lease.as_secs_f64(),
            held: Arc::new(Mutex::new(HashMap::new())),
        };
        pg.migrate()?;
        Ok(pg)
    }

    /// Where the database is (no password).
    pub fn database(&self) -> &str {
        &self.where_
    }

    /// This worker's name.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// Runs `work` on the pool's runtime and waits for it, from any thread (a run's, or an
    /// async handler's).
    fn block<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, PgError>> + Send + 'static,
    ) -> Result<T, PgError> {
        let Some(rt) = self.rt.0.as_ref() else {
            return Err(PgError("the database runtime has stopped".to_owned()));
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            let _ = tx.send(work.await);
        });
        rx.recv()
            .unwrap_or_else(|_| Err(PgError("the database task ended".to_owned())))
    }

    fn fail(&self, e: impl std::fmt::Display) -> StateError {
        StateError::new(&self.where_, e)
    }

    /// A pooled connection.
    async fn client(pool: &Pool, where_: &str) -> Result<deadpool_postgres::Object, PgError> {
        pool.get()
            .await
            .map_err(|e| PgError(format!("{where_}: no connection: {}", causes(&e))))
    }

    fn migrate(&self) -> Result<(), String> {
        let pool = self.pool.clone();
        let where_ = self.where_.clone();
        let done: Result<(), PgError> = self.block(async move {
            let mut client = Self::client(&pool, &where_).await?;
            let tx = client.transaction().await.map_err(pg(&where_))?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .await
                .map_err(pg(&where_))?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS runner_schema (
                     version    integer PRIMARY KEY,
                     applied_at timestamptz NOT NULL DEFAULT now())",
            )
            .await
            .map_err(pg(&where_))?;
            let row = tx
                .query_one("SELECT COALESCE(MAX(version), 0) FROM runner_schema", &[])
                .await
                .map_err(pg(&where_))?;
            let at: i32 = row.get(0);
            if at > SCHEMA_VERSION {
                return Err(PgError(format!(
                    "{where_} holds the runner's schema {at}, newer than this daemon's {SCHEMA_VERSION}: run the newer skilltrial"
                )));
            }
            for (version, sql) in (1..).zip(MIGRATIONS.iter()).skip(usize::try_from(at).unwrap_or(0)) {
                tx.batch_execute(sql).await.map_err(|e| {
                    PgError(format!("{where_}: migration {version}: {}", detail(&e)))
                })?;
                tx.execute("INSERT INTO runner_schema (version) VALUES ($1)", &[&version])
                    .await
                    .map_err(pg(&where_))?;
            }
            tx.commit().await.map_err(pg(&where_))
        });
        done.map_err(|e| e.0)
    }

    /// Runs `f` with a pooled connection on the pool's runtime.
    fn with<T, F>(&self, f: F) -> Result<T, StateError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(
                &'c mut deadpool_postgres::Object,
            ) -> std::pin::Pin<
                Box<dyn Future<Output = Result<T, PgError>> + Send + 'c>,
            > + Send
            + 'static,
    {
        let pool = self.pool.clone();
        let where_ = self.where_.clone();
        let out: Result<T, PgError> = self.block(async move {
            let mut client = Self::client(&pool, &where_).await?;
            f(&mut client).await
        });
        out.map_err(|e| self.fail(e.0))
    }

    /// Hints that a run has new events, from every worker: the run's address (`*` after the
    /// listening connection was re-established: anything may have been missed). A hint is only
    /// a hint: a follower re-reads the events table, which is the record. One connection per
    /// worker LISTENs, reconnecting after a second when it is lost.
    pub fn listen(&self) -> tokio::sync::broadcast::Sender<String> {
        let (hints, _) = tokio::sync::broadcast::channel(1024);
        let Some(rt) = self.rt.0.as_ref() else {
            return hints;
        };
        let (config, tls, where_, sender) = (
            self.config.clone(),
            self.tls.clone(),
            self.where_.clone(),
            hints.clone(),
        );
        rt.spawn(async move {
            // Back off while the database stays away: 1 s, doubling to 30 s; a session that
            // lasted starts over at 1 s.
            let mut wait = Duration::from_secs(1);
            loop {
                let began = std::time::Instant::now();
                let ended = listen_once(&config, tls.clone(), &sender).await;
                if began.elapsed() >= Duration::from_secs(30) {
                    wait = Duration::from_secs(1);
                }
                match ended {
                    Ok(()) => tracing::warn!(database = %where_, "the event listener's connection ended; reconnecting in {} s", wait.as_secs()),
                    Err(e) => tracing::warn!(database = %where_, "event listener: {e}; reconnecting in {} s", wait.as_secs()),
                }
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(30));
            }
        });
        hints
    }

    /// The 32-byte secret `name` every worker on this database shares: drawn from the OS's
    /// CSPRNG by the first worker that asks, read back by every other.
    pub fn shared_key(&self, name: &str) -> Result<[u8; 32], StateError> {
        let mut fresh = [0u8; 32];
        getrandom::fill(&mut fresh).map_err(|e| self.fail(format!("cannot draw a key: {e}")))?;
        let name = name.to_owned();
        let stored: Vec<u8> = self.with(move |c| {
            Box::pin(async move {
                c.execute(
                    "INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                    &[&name, &fresh.as_slice()],
                )
                .await
                .map_err(pg(""))?;
                let row = c
                    .query_one("SELECT value FROM secrets WHERE name = $1", &[&name])
                    .await
                    .map_err(pg(""))?;
                Ok(row.get::<_, Vec<u8>>(0))
            })
        })?;
        <[u8; 32]>::try_from(stored.as_slice())
            .map_err(|_| self.fail("a shared key is not 32 bytes"))
    }

    /// Whether the database answers (`/readyz`).
    pub fn ping(&self) -> Result<(), StateError> {
        self.with(|c| {
            Box::pin(async move {
                c.simple_query("SELECT 1").await.map_err(pg(""))?;
                Ok(())
            })
        })
    }

    /// The lease this worker holds on `address`, if any.
    pub fn hold(&self, address: &str) -> Option<Hold> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(address)
            .copied()
    }

    /// Runs this worker holds (lost ones included until [`Pg::release`]).
    pub fn held(&self) -> Vec<(String, Hold)> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(a, h)| (a.clone(), *h))
            .collect()
    }

    /// Marks every lease this worker holds lost (the database was out of reach for a whole
    /// lease: another worker may hold them now).
    /// Returns how many were held.
    pub fn lose_all(&self) -> u64 {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut lost = 0;
        for (run, hold) in held.iter_mut() {
            if *hold != Hold::Lost {
                tracing::warn!(run = %run, "lease lost: the database was out of reach for a whole lease");
                *hold = Hold::Lost;
                lost += 1;
            }
        }
        lost
    }

    fn set_hold(&self, address: &str, hold: Option<Hold>) {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match hold {
            Some(h) => {
                held.insert(address.to_owned(), h);
            }
            None => {
                held.remove(address);
            }
        }
    }

    /// Claims up to `max` runs with work left whose lease is free or lapsed (and whose back-off
    /// has passed), oldest first; each claim bumps the run's epoch. Rows another worker is
    /// claiming or writing under its lease this instant are skipped, not waited for.
    pub fn claim(&self, max: usize) -> Result<Vec<Claim>, StateError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let worker = self.worker.clone();
        let secs = self.lease_secs;
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let claims = self.with(move |c| {
            Box::pin(async move {
                let rows = c
                    .query(
                        "WITH c AS MATERIALIZED (
                             SELECT address, lease_owner AS previous FROM runs
                              WHERE phase IN ('executing', 'finalizing')
                                AND (lease_expires IS NULL OR lease_expires < now())
                                AND (not_before IS NULL OR not_before <= now())
                              ORDER BY created_at, address
                              LIMIT $3::bigint
                              FOR UPDATE SKIP LOCKED)
                         UPDATE runs r SET lease_owner = $1, lease_epoch = r.lease_epoch + 1,
                                lease_expires = now() + make_interval(secs => $2::float8), not_before = NULL
                           FROM c WHERE r.address = c.address
                         RETURNING r.address, r.lease_epoch, c.previous",
                        &[&worker, &secs, &limit],
                    )
                    .await
                    .map_err(pg(""))?;
                Ok(rows
                    .iter()
                    .map(|r| Claim {
                        address: r.get(0),
                        epoch: r.get(1),
                        previous: r.get(2),
                    })
                    .collect::<Vec<_>>())
            })
        })?;
        for claim in &claims {
            self.set_hold(&claim.address, Some(Hold::Held(claim.epoch)));
        }
        Ok(claims)
    }

    /// Renews every lease this worker holds; returns the runs whose lease it found lost (taken
    /// over, or lapsed and claimed): they are marked [`Hold::Lost`].
    pub fn renew(&self) -> Result<Vec<String>, StateError> {
        let held: Vec<(String, i64)> = self
            .held()
            .into_iter()
            .filter_map(|(a, h)| match h {
                Hold::Held(e) => Some((a, e)),
                Hold::Lost => None,
            })
            .collect();
        if held.is_empty() {
            return Ok(Vec::new());
        }
        let (addresses, epochs): (Vec<String>, Vec<i64>) = held.iter().cloned().unzip();
        let worker = self.worker.clone();
        let secs = self.lease_secs;
        let renewed: Vec<String> = self.with(move |c| {
            Box::pin(async move {
                let rows = c
                    .query(
                        "UPDATE runs r SET lease_expires = now() + make_interval(secs => $3::float8)
                           FROM unnest($1::text[], $2::bigint[]) AS h(address, epoch)
                          WHERE r.address = h.address AND r.lease_epoch = h.epoch
                            AND r.lease_owner = $4 AND r.lease_expires > now()
                         RETURNING r.address",
                        &[&addresses, &epochs, &secs, &worker],
                    )
                    .await
                    .map_err(pg(""))?;
                Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
            })
        })?;
        let mut lost = Vec::new();
        for (address, _) in held {
            if !renewed.contains(&address) {
                self.set_hold(&address, Some(Hold::Lost));
                lost.push(address);
            }
        }
        Ok(lost)
    }

    /// Gives `address` back: its lease ends now (at the epoch this worker holds, if it still
    /// does), and no worker claims it again before `not_before` from now.
    pub fn release(&self, address: &str, not_before: Option<Duration>) -> Result<(), StateError> {
        let hold = self.hold(address);
        self.set_hold(address, None);
        let Some(Hold::Held(epoch)) = hold else {
            return Ok(());
        };
        let address = address.to_owned();
        let wait = not_before.map_or(0.0, |d| d.as_secs_f64());
        self.with(move |c| {
            Box::pin(async move {
                c.execute(
                    "UPDATE runs SET lease_owner = NULL, lease_expires = NULL,
                            not_before = CASE WHEN $3::float8 > 0 THEN now() + make_interval(secs => $3::float8) END
                      WHERE address = $1 AND lease_epoch = $2",
                    &[&address, &epoch, &wait],
                )
                .await
                .map_err(pg(""))?;
                Ok(())
            })
        })
    }

    /// The epoch a fenced write of `address` carries: `Ok(None)` when this worker holds no lease
    /// on it (a write from the HTTP layer), an error when it held one and lost it.
    fn fence(&self, address: &str) -> Result<Option<i64>, StateError> {
        match self.hold(address) {
            None => Ok(None),
            Some(Hold::Held(epoch)) => Ok(Some(epoch)),
            Some(Hold::Lost) => Err(self.fail(format!(
                "this worker's lease on run {address} is lost: it writes nothing more for it"
            ))),
        }
    }

    /// The write log of `address`'s `file` (`journal` or `outbox`), one transaction's
    /// statements per entry, in order. A log written by another schema of the file than
    /// `schema_version` is refused: a rolling upgrade drains runs first (docs/runner.md).
    pub fn replica_log(
        &self,
        address: &str,
        file: ReplicaFile,
        schema_version: u32,
    ) -> Result<Vec<Vec<String>>, StateError> {
        let address = address.to_owned();
        let rows = self.with(move |c| {
            Box::pin(async move {
                c.query(
                    "SELECT schema_version, statements FROM replica_log
                      WHERE run = $1 AND file = $2 ORDER BY seq",
                    &[&address, &file.as_str()],
                )
                .await
                .map_err(pg(""))
            })
        })?;
        let want = i32::try_from(schema_version).unwrap_or(i32::MAX);
        let mut log = Vec::with_capacity(rows.len());
        for row in rows {
            let version: i32 = row.get(0);
            if version != want {
                return Err(self.fail(format!(
                    "the {} of this run was written at schema {version} and this daemon's is {want}: finish or drain the run with the daemon that started it",
                    file.as_str()
                )));
            }
            log.push(row.get::<_, Vec<String>>(1));
        }
        Ok(log)
    }

    /// The sink a run's `file` appends its write transactions to, fenced by the lease this
    /// worker holds on it.
    pub fn sink(
        &self,
        address: &str,
        file: ReplicaFile,
        schema_version: u32,
    ) -> Result<ReplicaSink, StateError> {
        let Some(Hold::Held(epoch)) = self.hold(address) else {
            return Err(self.fail(format!(
                "this worker holds no lease on run {address}: it cannot write its {}",
                file.as_str()
            )));
        };
        Ok(ReplicaSink {
            pg: self.clone(),
            address: address.to_owned(),
            file,
            epoch,
            schema_version: i32::try_from(schema_version).unwrap_or(i32::MAX),
        })
    }

    /// Stores `bytes` under their SHA-256 `digest` (hex), once.
    pub fn put_blob(&self, digest: &str, bytes: Vec<u8>) -> Result<(), StateError> {
        let digest = digest.to_owned();
        self.with(move |c| {
            Box::pin(async move {
                c.execute(
                    "INSERT INTO blobs (digest, bytes) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING",
                    &[&digest, &bytes],
                )
                .await
                .map_err(pg(""))?;
                Ok(())
            })
        })
    }

    /// The bytes stored under `digest`, if any.
    pub fn blob(&self, digest: &str) -> Result<Option<Vec<u8>>, StateError> {
        let digest = digest.to_owned();
        self.with(move |c| {
            Box::pin(async move {
                let row = c
                    .query_opt("SELECT bytes FROM blobs WHERE digest = $1", &[&digest])
                    .await
                    .map_err(pg(""))?;
                Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
            })
        })
    }

    /// Names `digest` (stored before) as `address`'s file `name`, fenced by this worker's lease.
    pub fn set_run_file(&self, address: &str, name: &str, digest: &str) -> Result<(), StateError> {
        let epoch = self.fence(address)?;
        let (owned, name, digest) = (address.to_owned(), name.to_owned(), digest.to_owned());
        let changed = self.with(move |c| {
            Box::pin(async move {
                c.execute(
                    "INSERT INTO run_files (run, name, digest)
                     SELECT address, $2, $3 FROM runs
                      WHERE address = $1 AND ($4::bigint IS NULL OR (lease_epoch = $4 AND lease_expires > now()))
                     ON CONFLICT (run, name) DO UPDATE SET digest = excluded.digest",
                    &[&owned, &name, &digest, &epoch],
                )
                .await
                .map_err(pg(""))
            })
        })?;
        self.fenced(address, changed)
    }

    /// The digest of `address`'s file `name`, if it has one.
    pub fn run_file(&self, address: &str, name: &str) -> Result<Option<String>, StateError> {
        let (address, name) = (address.to_owned(), name.to_owned());
        self.with(move |c| {
            Box::pin(async move {
                let row = c
                    .query_opt(
                        "SELECT digest FROM run_files WHERE run = $1 AND name = $2",
                        &[&address, &name],
                    )
                    .await
                    .map_err(pg(""))?;
                Ok(row.map(|r| r.get::<_, String>(0)))
            })
        })
    }

    /// A fenced write that changed no row lost its lease (or named no run).
    fn fenced(&self, address: &str, changed: u64) -> Result<(), StateError> {
        if changed == 0 && matches!(self.hold(address), Some(Hold::Held(_))) {
            self.set_hold(address, Some(Hold::Lost));
            return Err(self.fail(format!(
                "this worker's lease on run {address} is lost (taken over, or lapsed): the write was refused"
            )));
        }
        Ok(())
    }
}

/// One LISTEN session: hints until the connection ends.
async fn listen_once(
    config: &tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    hints: &tokio::sync::broadcast::Sender<String>,
) -> Result<(), String> {
    use futures_util::StreamExt;
    let (client, mut connection) = config.connect(tls).await.map_err(|e| detail(&e))?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                    if tx.send(n.payload().to_owned()).is_err() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    let listening = client.batch_execute("LISTEN run_events").await;
    if let Err(e) = listening {
        driver.abort();
        return Err(detail(&e));
    }
    // Events may have been appended while no connection listened.
    let _ = hints.send("*".to_owned());
    while let Some(payload) = rx.recv().await {
        let run = payload
            .rsplit_once(':')
            .map_or(payload.as_str(), |(run, _)| run);
        let _ = hints.send(run.to_owned());
    }
    drop(client);
    Ok(())
}

/// Which of a run's SQLite files a replica log is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaFile {
    Journal,
    Outbox,
}

impl ReplicaFile {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Journal => "journal",
            Self::Outbox => "outbox",
        }
    }
}

/// Appends a run file's write transactions to `replica_log`, each before it commits locally,
/// only while the lease it was made under holds (same epoch, not lapsed on the database's
/// clock). The run's row is locked for the append, so a claimer skips the run meanwhile and a
/// takeover sees every entry appended before it.
#[derive(Debug, Clone)]
pub struct ReplicaSink {
    pg: Pg,
    address: String,
    file: ReplicaFile,
    epoch: i64,
    schema_version: i32,
}

impl skilltrial_sqlite::replica::ChangeSink for ReplicaSink {
    fn append(&mut self, statements: &[String]) -> Result<(), String> {
        if statements.is_empty() {
            return Ok(());
        }
        if self.pg.hold(&self.address) != Some(Hold::Held(self.epoch)) {
            return Err(format!(
                "this worker's lease on run {} is lost: its {} takes no more writes here",
                self.address,
                self.file.as_str()
            ));
        }
        let (address, file, epoch, version) = (
            self.address.clone(),
            self.file,
            self.epoch,
            self.schema_version,
        );
        let statements = statements.to_vec();
        let appended = self.pg.with(move |c| {
            Box::pin(async move {
                let tx = c.transaction().await.map_err(pg(""))?;
                let live = tx
                    .query_opt(
                        "SELECT 1 FROM runs WHERE address = $1 AND lease_epoch = $2
                            AND lease_expires > now() FOR UPDATE",
                        &[&address, &epoch],
                    )
                    .await
                    .map_err(pg(""))?;
                if live.is_none() {
                    return Ok(false);
                }
                tx.execute(
                    "INSERT INTO replica_log (run, file, seq, epoch, schema_version, statements)
                     SELECT $1, $2, COALESCE(MAX(seq), 0) + 1, $3, $4, $5 FROM replica_log
                      WHERE run = $1 AND file = $2",
                    &[&address, &file.as_str(), &epoch, &version, &statements],
                )
                .await
                .map_err(pg(""))?;
                tx.commit().await.map_err(pg(""))?;
                Ok(true)
            })
        });
        match appended {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.pg.set_hold(&self.address, Some(Hold::Lost));
                Err(format!(
                    "this worker's lease on run {} is lost (taken over, or lapsed): its {} write was refused",
                    self.address,
                    self.file.as_str()
                ))
            }
            Err(e) => Err(e.to_string()),
        }
    }
}

/// An error on the pool's side, in words (never the password: connection errors name the
/// database by [`describe`]).
#[derive(Debug)]
pub struct PgError(String);

/// A PostgreSQL error's message with its detail, when the server gave one.
fn detail(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(d) => format!("{}: {d}", db.message()),
            None => db.message().to_owned(),
        },
        None => causes(e),
    }
}

/// An error and every cause under it, each said once (a pool's "error occurred while creating a
/// new object" says nothing until the server's "password authentication failed" is added). The
/// server's messages never hold the password.
fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut said: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(error) = next {
        let text = match error.downcast_ref::<tokio_postgres::Error>() {
            Some(pg) => match pg.as_db_error() {
                Some(db) => db.message().to_owned(),
                None => pg.to_string(),
            },
            None => error.to_string(),
        };
        if !said.iter().any(|s| s.contains(&text)) {
            said.push(text);
        }
        next = error.source();
    }
    said.join(": ")
}

fn pg(where_: &str) -> impl Fn(tokio_postgres::Error) -> PgError + '_ {
    move |e| {
        if where_.is_empty() {
            PgError(detail(&e))
        } else {
            PgError(format!("{where_}: {}", detail(&e)))
        }
    }
}

fn run_from(row: &Row) -> Result<HostedRun, PgError> {
    let phase: String = row.get("phase");
    let run_id: i64 = row.get("run_id");
    let concurrency: i32 = row.get("concurrency");
    Ok(HostedRun {
        address: row.get("address"),
        user: row.get("user"),
        manifest: row.get("manifest"),
        run_id: u64::try_from(run_id)
            .map_err(|_| PgError(format!("run_id {run_id} is negative")))?,
        deadline: row.get("deadline"),
        phase: Phase::parse(&phase).ok_or_else(|| PgError(format!("unknown phase {phase:?}")))?,
        detail: row.get("detail"),
        report_hash: row.get("report_hash"),
        finalize_signature: row.get("finalize_signature"),
        concurrency: u32::try_from(concurrency)
            .ok()
            .and_then(|n| Concurrency::new(n).ok())
            .ok_or_else(|| PgError(format!("concurrency {concurrency} is out of range")))?,
        created_at: row.get("created_at"),
        updated_at: row.get("updated_at"),
    })
}

fn event_from(row: &Row) -> Result<Event, PgError> {
    let seq: i64 = row.get("seq");
    let data: String = row.get("data");
    Ok(Event {
        run: row.get("run"),
        seq: u64::try_from(seq).map_err(|_| PgError(format!("event seq {seq} is negative")))?,
        at: row.get("at"),
        kind: row.get("kind"),
        data: serde_json::from_str(&data).map_err(|e| PgError(format!("event data: {e}")))?,
    })
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The runner's state on PostgreSQL: the same facts and rules as [`crate::state::SqliteState`],
/// with a run's writes fenced by this worker's lease when it holds one ([`Pg::claim`]).
#[derive(Debug, Clone)]
pub struct PgState {
    pg: Pg,
}

impl PgState {
    pub fn new(pg: Pg) -> Self {
        Self { pg }
    }

    pub fn pg(&self) -> &Pg {
        &self.pg
    }

    fn select_runs(
        &self,
        filter: &'static str,
        arg: Option<String>,
    ) -> Result<Vec<HostedRun>, StateError> {
        self.pg.with(move |c| {
            Box::pin(async move {
                let sql = format!("SELECT {RUN_COLUMNS} FROM runs {filter}");
                let rows = match &arg {
                    Some(a) => c.query(&sql, &[a]).await,
                    None => c.query(&sql, &[]).await,
                }
                .map_err(pg(""))?;
                rows.iter().map(run_from).collect()
            })
        })
    }

    /// A write of `address`'s row (`UPDATE runs … WHERE address = $1 AND <fence>`), fenced
    /// when this worker holds the run's lease.
    fn update_run(
        &self,
        address: &str,
        set: &'static str,
        args: Vec<Option<String>>,
    ) -> Result<(), StateError> {
        let epoch = self.pg.fence(address)?;
        let address_owned = address.to_owned();
        let changed = self.pg.with(move |c| {
            Box::pin(async move {
                // $1 the address, $2 the epoch (NULL: unfenced), $3.. the values.
                let sql = format!(
                    "UPDATE runs SET {set}, updated_at = {now} WHERE address = $1
                        AND ($2::bigint IS NULL OR (lease_epoch = $2 AND lease_expires > now()))",
                    now = now()
                );
                let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                    vec![&address_owned, &epoch];
                for a in &args {
                    params.push(a);
                }
                c.execute(&sql, &params).await.map_err(pg(""))
            })
        })?;
        self.pg.fenced(address, changed)
    }
}

impl RunnerState for PgState {
    fn spend_nonce(
        &mut self,
        nonce: &str,
        address: &str,
        expires_at: i64,
        now: i64,
    ) -> Result<bool, StateError> {
        let (nonce, address) = (nonce.to_owned(), address.to_owned());
        self.pg.with(move |c| {
            Box::pin(async move {
                let tx = c.transaction().await.map_err(pg(""))?;
                tx.execute("DELETE FROM nonces WHERE expires_at < $1", &[&now])
                    .await
                    .map_err(pg(""))?;
                tx.execute("DELETE FROM sessions WHERE expires_at < $1", &[&now])
                    .await
                    .map_err(pg(""))?;
                let n = tx
                    .execute(
                        "INSERT INTO nonces (nonce, address, expires_at) VALUES ($1, $2, $3)
                         ON CONFLICT (nonce) DO NOTHING",
                        &[&nonce, &address, &expires_at],
                    )
                    .await
                    .map_err(pg(""))?;
                tx.commit().await.map_err(pg(""))?;
                Ok(n == 1)
            })
        })
    }

    fn create_session(
        &mut self,
        token_sha256: &str,
        address: &str,
        expires_at: i64,
    ) -> Result<(), StateError> {
        let (token, address) = (token_sha256.to_owned(), address.to_owned());
        self.pg.with(move |c| {
            Box::pin(async move {
                c.execute(
                    "INSERT INTO sessions (token_sha256, address, expires_at) VALUES ($1, $2, $3)",
                    &[&token, &address, &expires_at],
                )
                .await
                .map_err(pg(""))?;
                Ok(())
            })
        })
    }

    fn session(&self, token_sha256: &str, now: i64) -> Result<Option<String>, StateError> {
        let token = token_sha256.to_owned();
        self.pg.with(move |c| {
            Box::pin(async move {
                let row = c
                    .query_opt(
                        "SELECT address FROM sessions WHERE token_sha256 = $1 AND expires_at > $2",
                        &[&token, &now],
                    )
                    .await
                    .map_err(pg(""))?;
                Ok(row.map(|r| r.get::<_, String>(0)))
            })
        })
    }

    fn hold(&mut self, address: &str, digest: &str) -> Result<(), StateError> {
        let (address, digest) = (address.to_owned(), digest.to_owned());
        self.pg.with(move |c| {
            Box::pin(async move {
                c.execute(
                    "INSERT INTO holdings (address, digest) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    &[&address, &digest],
                )
                .await
                .map_err(pg(""))?;
                Ok(())
            })
        })
    }

    fn holds(&self, address: &str, digest: &str) -> Result<bool, StateError> {
        let (address, digest) = (address.to_owned(), digest.to_owned());
        self.pg.with(move |c| {
            Box::pin(async move {
                let row = c
                    .query_one(
                        "SELECT EXISTS (SELECT 1 FROM holdings WHERE address = $1 AND digest = $2)",
                        &[&address, &digest],
                    )
                    .await
                    .map_err(pg(""))?;
                Ok(row.get::<_, bool>(0))
            })
        })
    }

    fn register_run(&mut self, run: &HostedRun) -> Result<bool, StateError> {
        let run = run.clone();
        let run_id = i64::try_from(run.run_id).map_err(|e| self.pg.fail(e))?;
        let concurrency = i32::try_from(run.concurrency.get()).map_err(|e| self.pg.fail(e))?;
        self.pg.with(move |c| {
            Box::pin(async move {
                let n = c
                    .execute(
                        "INSERT INTO runs (address, \"user\", manifest, run_id, deadline, phase, detail, concurrency, created_at, updated_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) ON CONFLICT (address) DO NOTHING",
                        &[
                            &run.address,
                            &run.user,
                            &run.manifest,
                            &run_id,
                            &run.deadline,
                            &run.phase.as_str(),
                            &run.detail,
                            &concurrency,
                            &run.created_at,
                        ],
                    )
                    .await
                    .map_err(pg(""))?;
                Ok(n == 1)
            })
        })
    }

    fn run(&self, address: &str) -> Result<Option<HostedRun>, StateError> {
        Ok(self
            .select_runs("WHERE address = $1", Some(address.to_owned()))?
            .into_iter()
            .next())
    }

    fn runs_of(&self, user: &str) -> Result<Vec<HostedRun>, StateError> {
        self.select_runs(
            "WHERE \"user\" = $1 ORDER BY created_at DESC, address",
            Some(user.to_owned()),
        )
    }

    fn runs_to_work(&self) -> Result<Vec<HostedRun>, StateError> {
        self.select_runs(
            "WHERE phase IN ('executing', 'finalizing') ORDER BY created_at, address",
            None,
        )
    }

    fn set_phase(
        &mut self,
        address: &str,
        phase: Phase,
        detail: Option<&str>,
    ) -> Result<(), StateError> {
        self.update_run(
            address,
            "phase = $3, detail = $4",
            vec![Some(phase.as_str().to_owned()), detail.map(str::to_owned)],
        )
    }

    fn set_report(&mut self, address: &str, report_hash: &str) -> Result<(), StateError> {
        self.update_run(
            address,
            "report_hash = $3",
            vec![Some(report_hash.to_owned())],
        )
    }

    fn set_finalized(&mut self, address: &str, signature: &str) -> Result<(), StateError> {
        self.update_run(
            address,
            "phase = 'finalized', detail = NULL, finalize_signature = $3",
            vec![Some(signature.to_owned())],
        )
    }

    fn batches(&self, address: &str) -> Result<Vec<Batch>, StateError> {
        let address = address.to_owned();
        self.pg.with(move |c| {
            Box::pin(async move {
                let rows = c
                    .query(
                        "SELECT seq, evidence, signature, refused FROM batches WHERE run = $1 ORDER BY seq",
                        &[&address],
                    )
                    .await
                    .map_err(pg(""))?;
                rows.iter()
                    .map(|r| {
                        let seq: i32 = r.get(0);
                        let evidence: String = r.get(1);
                        Ok(Batch {
                            seq: u32::try_from(seq)
                                .map_err(|_| PgError(format!("batch seq {seq} is negative")))?,
                            evidence: serde_json::from_str(&evidence)
                                .map_err(|e| PgError(format!("batch {seq} evidence: {e}")))?,
                            signature: r.get(2),
                            refused: r.get(3),
                        })
                    })
                    .collect()
            })
        })
    }

    fn add_batch(
        &mut self,
        address: &str,
        seq: u32,
        evidence: &[EvidenceRecord],
    ) -> Result<(), StateError> {
        let text = serde_json::to_string(evidence).map_err(|e| self.pg.fail(e))?;
        let seq = i32::try_from(seq).map_err(|e| self.pg.fail(e))?;
        let epoch = self.pg.fence(address)?;
        let owned = address.to_owned();
        let changed = self.pg.with(move |c| {
            Box::pin(async move {
                c.execute(
                    "INSERT INTO batches (run, seq, evidence)
                     SELECT address, $2, $3 FROM runs
                      WHERE address = $1 AND ($4::bigint IS NULL OR (lease_epoch = $4 AND lease_expires > now()))",
                    &[&owned, &seq, &text, &epoch],
                )
                .await
                .map_err(pg(""))
            })
        })?;
        self.pg.fenced(address, changed)
    }

    fn batch_landed(&mut self, address: &str, seq: u32, signature: &str) -> Result<(), StateError> {
        self.batch_update(address, seq, "signature = $4", signature)
    }

    fn batch_refused(&mut self, address: &str, seq: u32, why: &str) -> Result<(), StateError> {
        self.batch_update(address, seq, "refused = $4", why)
    }

    fn append_event(
        &mut self,
        address: &str,
        kind: &str,
        data: &Value,
    ) -> Result<Event, StateError> {
        let epoch = self.pg.fence(address)?;
        let (owned, kind_owned, text) = (address.to_owned(), kind.to_owned(), data.to_string());
        let at = now();
        let seq = self.pg.with(move |c| {
            Box::pin(async move {
                let row = c
                    .query_opt(
                        "WITH s AS (
                             UPDATE runs SET event_seq = event_seq + 1
                              WHERE address = $1
                                AND ($2::bigint IS NULL OR (lease_epoch = $2 AND lease_expires > now()))
                             RETURNING address, event_seq)
                         INSERT INTO events (run, seq, at, kind, data)
                         SELECT address, event_seq, $3, $4, $5 FROM s
                         RETURNING seq, pg_notify('run_events', run || ':' || seq)",
                        &[&owned, &epoch, &at, &kind_owned, &text],
                    )
                    .await
                    .map_err(pg(""))?;
                Ok(row.map(|r| r.get::<_, i64>(0)))
            })
        })?;
        let Some(seq) = seq else {
            self.pg.fenced(address, 0)?;
            return Err(self
                .pg
                .fail(format!("no run {address} to record an event of")));
        };
        Ok(Event {
            run: address.to_owned(),
            seq: u64::try_from(seq).unwrap_or(0),
            at,
            kind: kind.to_owned(),
            data: data.clone(),
        })
    }

    fn census(&self) -> Result<Census, StateError> {
        self.pg.with(|c| {
            Box::pin(async move {
                let rows = c
                    .query(
                        "SELECT phase, count(*) FROM runs GROUP BY phase ORDER BY phase",
                        &[],
                    )
                    .await
                    .map_err(pg(""))?;
                let mut runs = Vec::new();
                for row in rows {
                    let phase: String = row.get(0);
                    let n: i64 = row.get(1);
                    runs.push((
                        Phase::parse(&phase)
                            .ok_or_else(|| PgError(format!("unknown phase {phase:?}")))?,
                        u64::try_from(n).unwrap_or(0),
                    ));
                }
                let pending: i64 = c
                    .query_one(
                        "SELECT count(*) FROM batches WHERE signature IS NULL AND refused IS NULL",
                        &[],
                    )
                    .await
                    .map_err(pg(""))?
                    .get(0);
                Ok(Census {
                    runs,
                    batches_pending: u64::try_from(pending).unwrap_or(0),
                })
            })
        })
    }

    fn events_after(&self, address: &str, after: u64) -> Result<Vec<Event>, StateError> {
        let address = address.to_owned();
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.pg.with(move |c| {
            Box::pin(async move {
                let rows = c
                    .query(
                        "SELECT run, seq, at, kind, data FROM events WHERE run = $1 AND seq > $2 ORDER BY seq",
                        &[&address, &after],
                    )
                    .await
                    .map_err(pg(""))?;
                rows.iter().map(event_from).collect()
            })
        })
    }
}

impl PgState {
    fn batch_update(
        &mut self,
        address: &str,
        seq: u32,
        set: &'static str,
        value: &str,
    ) -> Result<(), StateError> {
        let seq = i32::try_from(seq).map_err(|e| self.pg.fail(e))?;
        let epoch = self.pg.fence(address)?;
        let (owned, value) = (address.to_owned(), value.to_owned());
        // A refusal never overwrites a landed batch (as in SQLite).
        let guard = if set.starts_with("refused") {
            " AND b.signature IS NULL"
        } else {
            ""
        };
        let changed = self.pg.with(move |c| {
            Box::pin(async move {
                let sql = format!(
                    "UPDATE batches b SET {set} FROM runs r
                      WHERE b.run = $1 AND b.seq = $2 AND r.address = b.run{guard}
                        AND ($3::bigint IS NULL OR (r.lease_epoch = $3 AND r.lease_expires > now()))"
                );
                c.execute(&sql, &[&owned, &seq, &epoch, &value])
                    .await
                    .map_err(pg(""))
            })
        })?;
        if changed == 0 && guard.is_empty() {
            return self.pg.fenced(address, 0);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_is_described_without_its_password() {
        let config: tokio_postgres::Config =
            "postgres://runner:s3cret-pa55@db.internal:6543/skilltrial?sslmode=require"
                .parse()
                .unwrap();
        let said = describe(&config);
        assert_eq!(said, "postgres db.internal:6543/skilltrial");
        assert!(!said.contains("s3cret"));
    }

    #[test]
    fn a_ca_file_that_is_missing_or_holds_no_certificate_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let Err(e) = tls(Some(&missing)) else {
            panic!("a missing CA file was accepted");
        };
        assert!(
            e.contains("--database-ca") && e.contains("missing.pem"),
            "{e}"
        );
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let Err(e) = tls(Some(&empty)) else {
            panic!("a CA file without a certificate was accepted");
        };
        assert!(e.contains("no PEM certificate"), "{e}");
        assert!(tls(None).is_ok(), "the platform's roots");
    }

    #[test]
    fn a_connection_string_that_does_not_parse_is_refused_without_echoing_it() {
        let options = PgOptions::new("postgres://runner:s3cret@db.internal:notaport/x");
        let Err(e) = Pg::connect(&options) else {
            panic!("a bad URL was accepted");
        };
        assert!(
            e.starts_with("--database: not a PostgreSQL connection string"),
            "{e}"
        );
        assert!(!e.contains("s3cret"), "{e}");
    }
}
