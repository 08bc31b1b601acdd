//! `skilltrial localnet`: a real local validator — Agave 4.2.2's `solana-test-validator` as a
//! library — with the SkillTrial program (upgradeable, your keypair its upgrade authority), SPL
//! Token, Token-2022, Memo and Associated Token Account loaded, transaction history on (so
//! `verify --signature` can fetch anchors), and the program's config initialized:
//!
//! - admin: your keypair (funded with `--fund-sol`; created, mode 0600, if the file is missing);
//! - runner: `<ledger>/skilltrial-runner.json` (funded with 10 SOL, for the settle and finalize
//!   fees it pays), payout `<ledger>/skilltrial-runner-payout.json` (funded with 1 SOL: an
//!   account receiving usage in small credits must already be rent-exempt);
//! - a short minimum deadline (`--min-deadline-secs`, 10 s by default) so refunds can be tried
//!   at once; the shortest time lock the program allows (1 h);
//! - buybacks that work: a real $SKTRIAL mint (6 decimals, your keypair its mint authority), the
//!   venue program (`programs/venue`) with a SOL → $SKTRIAL pool seeded with 100 SOL and the
//!   whole supply (10^15 base units), the runner's $SKTRIAL account, and a config naming that
//!   mint, the shortest interval (60 s) and a floor of one base unit per lamport.
//!
//! It prints the RPC URL and the keys (`--json`: one line of JSON) and runs until Ctrl-C or
//! SIGTERM, then stops the validator and exits 0; a panic in any validator thread, or 30 s
//! without a new slot or an answer, ends it with an error (exit 2) instead. Gossip, TPU and TVU
//! bind to `--bind` (loopback by default); the library binds JSON-RPC and its websocket on every
//! interface. The ledger persists in `--ledger` (the config, runs and history finalized by then
//! with it) unless `--reset`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_chain::cli_config::{self, Commitment, SolanaConfig};
use skilltrial_chain::ix::{self, BuybackRate, ConfigInitArgs, SpendingLimit};
use skilltrial_chain::outbox::Outbox;
use skilltrial_chain::rpc::Chain;
use skilltrial_chain::send::{Fees, Sender};
use skilltrial_chain::{
    PROGRAM_ID, Pubkey, SYSTEM_PROGRAM_ID, UPGRADEABLE_LOADER_ID, anchor_key, token, venue,
};
use solana_account::AccountSharedData;
use solana_keypair::Keypair;
use solana_signer::Signer;
use solana_test_validator::{TestValidatorGenesis, UpgradeableProgramInfo};

use crate::cli::{Global, LocalnetArgs};
use crate::commands::chain::{OUTBOX_FILE, sol};
use crate::exit::{CliError, Status};
use crate::state;

const LAMPORTS_PER_SOL: u64 = 1_000_000_000;
/// `localnet --json`: the running validator, its program and keys (one line, printed once it
/// is ready; the validator runs until Ctrl-C).
#[derive(Debug, Serialize, JsonSchema)]
pub struct LocalnetReady {
    /// JSON-RPC (`--url`).
    pub rpc_url: String,
    pub websocket_url: String,
    /// The address gossip and TPU bind to (`--bind`).
    pub bind: String,
    /// Where each service listens.
    pub listening: Listening,
    /// The SkillTrial program's id.
    pub program_id: String,
    /// Your wallet (funded).
    pub wallet: String,
    /// Its keypair file.
    pub wallet_keypair: String,
    pub wallet_lamports: u64,
    /// The runner's key (`runner serve -k <runner_keypair>`).
    pub runner: String,
    pub runner_keypair: String,
    pub runner_payout: String,
    /// The ledger folder (kept across restarts).
    pub ledger: String,
    /// Whether this start initialized the config (false when the ledger had it, or with
    /// `--no-init`).
    pub config_initialized_now: bool,
    /// The config's minimum deadline.
    pub min_deadline_secs: i64,
    /// The local $SKTRIAL mint.
    pub sktrial_mint: String,
    /// The test buyback venue's program id.
    pub venue_program_id: String,
    /// Its pool for the mint.
    pub venue_pool: String,
}

/// Where the validator's services listen. The library binds JSON-RPC and its websocket to
/// 0.0.0.0 whatever `bind` says; on loopback they are confined to the loopback device
/// (`0.0.0.0%lo:<port>`, as `ss` writes it).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Listening {
    pub rpc: String,
    pub websocket: String,
    pub gossip: String,
    pub tpu_quic: String,
}

const RUNNER_FILE: &str = "skilltrial-runner.json";
const PAYOUT_FILE: &str = "skilltrial-runner-payout.json";
/// The runner's starting balance: it pays the settle and finalize fees.
const RUNNER_SOL: u64 = 10;

fn env_error(message: String) -> CliError {
    CliError::Environment(anyhow::anyhow!(message))
}

/// The keypair at `path`, created (mode 0600) when the file does not exist.
fn keypair_at(path: &Path) -> Result<(Keypair, bool), CliError> {
    if path.exists() {
        return cli_config::read_keypair_file(path)
            .map(|k| (k, false))
            .map_err(|e| env_error(e.to_string()));
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| env_error(format!("cannot create {}: {e}", parent.display())))?;
    }
    let keypair = Keypair::new();
    solana_keypair::write_keypair_file(&keypair, path)
        .map_err(|e| env_error(format!("cannot write the keypair {}: {e}", path.display())))?;
    Ok((keypair, true))
}

/// A program `.so` (`name`): given by `flag`, else `target/deploy/<name>` of the build this
/// binary belongs to (`target/<profile>/skilltrial` → `target/deploy/`), else under the current
/// folder.
fn program_path(given: Option<&PathBuf>, flag: &str, name: &str) -> Result<PathBuf, CliError> {
    if let Some(path) = given {
        return if path.is_file() {
            Ok(path.clone())
        } else {
            Err(env_error(format!(
                "{flag} {}: no such file",
                path.display()
            )))
        };
    }
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe()
        && let Some(target) = exe.parent().and_then(Path::parent)
    {
        candidates.push(target.join("deploy").join(name));
    }
    candidates.push(PathBuf::from("target/deploy").join(name));
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| {
            env_error(format!(
                "{name} is not built (looked for {}): run `bash scripts/build-sbf.sh`, or pass {flag} FILE",
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

pub fn run(args: &LocalnetArgs, global: &Global) -> Result<Status, CliError> {
    let program = program_path(args.program.as_ref(), "--program", "skilltrial.so")?;
    let venue_program = program_path(
        args.venue_program.as_ref(),
        "--venue-program",
        "skilltrial_venue.so",
    )?;
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let keypair_path = match &args.keypair {
        Some(path) => path.clone(),
        None => {
            let config = match &home {
                Some(home) => SolanaConfig::read(&home.join(cli_config::CONFIG_FILE))
                    .map_err(|e| env_error(e.to_string()))?,
                None => SolanaConfig::default(),
            };
            cli_config::resolve(None, None, None, &config, home.as_deref())
                .map_err(|e| env_error(e.to_string()))?
                .keypair_path
        }
    };
    let ledger = &args.ledger;
    if args.rpc_port == 0 {
        return Err(env_error(
            "--rpc-port 0: give the port to listen on (8899 by default)".to_owned(),
        ));
    }
    let bind = args.bind;
    if bind.is_unspecified() || bind.is_broadcast() || bind.is_multicast() {
        return Err(env_error(format!(
            "--bind {bind}: give one address of this machine (the validator advertises it to its clients); 127.0.0.1, the default, keeps it to this machine"
        )));
    }
    let bounds = skilltrial_chain::constants::MIN_DEADLINE_FLOOR_SECS
        ..=skilltrial_chain::constants::MIN_DEADLINE_CEILING_SECS;
    if !bounds.contains(&args.min_deadline_secs) {
        return Err(env_error(format!(
            "--min-deadline-secs {}: the program allows {} to {}",
            args.min_deadline_secs,
            bounds.start(),
            bounds.end()
        )));
    }
    if ledger.exists() {
        if !ledger.is_dir() {
            return Err(env_error(format!(
                "--ledger {}: not a folder",
                ledger.display()
            )));
        }
        // Only a ledger (or a folder holding nothing but what `localnet` itself writes) is used
        // or deleted: a folder of other files is refused, never written into nor emptied.
        if !TestValidatorGenesis::ledger_exists(ledger) && !holds_only_ours(ledger) {
            return Err(env_error(format!(
                "--ledger {}: a folder with other files in it, not a validator ledger; give a new or empty folder",
                ledger.display()
            )));
        }
        if args.reset {
            std::fs::remove_dir_all(ledger)
                .map_err(|e| env_error(format!("cannot reset {}: {e}", ledger.display())))?;
        }
    }
    std::fs::create_dir_all(ledger)
        .map_err(|e| env_error(format!("cannot create {}: {e}", ledger.display())))?;
    let (wallet, created) = keypair_at(&keypair_path)?;
    if created {
        crate::commands::progress::notice(&format!(
            "created a new keypair at {}",
            keypair_path.display()
        ));
    }
    let (runner, _) = keypair_at(&ledger.join(RUNNER_FILE))?;
    let (payout, _) = keypair_at(&ledger.join(PAYOUT_FILE))?;
    let fund = args
        .fund_sol
        .checked_mul(LAMPORTS_PER_SOL)
        .ok_or_else(|| env_error(format!("--fund-sol {}: too much SOL", args.fund_sol)))?;

    // Ports in use are refused up front, in words (the library would panic on them). The
    // library binds JSON-RPC and its websocket on every interface: the port must be free on all.
    let pubsub_port = args.rpc_port.checked_add(1).ok_or_else(|| {
        env_error(format!(
            "--rpc-port {}: the websocket needs the next port",
            args.rpc_port
        ))
    })?;
    for port in [args.rpc_port, pubsub_port] {
        if std::net::TcpListener::bind((std::net::Ipv4Addr::UNSPECIFIED, port)).is_err() {
            return Err(env_error(format!(
                "port {port} is in use (another local validator?): stop it, or pass another --rpc-port"
            )));
        }
    }
    let gossip_port = free_gossip_port(bind)?;
    let mut genesis = TestValidatorGenesis::default();
    genesis
        .ledger_path(ledger)
        .rpc_port(args.rpc_port)
        // Gossip, TPU, TVU and repair bind here (the library's default is loopback too, said
        // explicitly so that `--bind` widens them all).
        .bind_ip_addr(std::net::IpAddr::V4(bind))
        .gossip_host(std::net::IpAddr::V4(bind))
        .gossip_port(gossip_port)
        .rpc_config(solana_rpc::rpc::JsonRpcConfig {
            enable_rpc_transaction_history: true,
            // Keep each transaction's log messages, inner instructions and return data, as an
            // RPC node does: Anchor's event parser, explorers and `verify` read them.
            enable_extended_tx_metadata_storage: true,
            ..solana_rpc::rpc::JsonRpcConfig::default_for_test()
        })
        .add_account(
            wallet.pubkey(),
            AccountSharedData::new(fund, 0, &SYSTEM_PROGRAM_ID),
        )
        .add_account(
            runner.pubkey(),
            AccountSharedData::new(RUNNER_SOL * LAMPORTS_PER_SOL, 0, &SYSTEM_PROGRAM_ID),
        )
        // The payout receives usage in small credits: it must exist (rent-exempt) first.
        .add_account(
            payout.pubkey(),
            AccountSharedData::new(LAMPORTS_PER_SOL, 0, &SYSTEM_PROGRAM_ID),
        )
        .add_upgradeable_programs_with_path(&[
            UpgradeableProgramInfo {
                program_id: PROGRAM_ID,
                loader: UPGRADEABLE_LOADER_ID,
                upgrade_authority: wallet.pubkey(),
                program_path: program.clone(),
            },
            UpgradeableProgramInfo {
                program_id: venue::VENUE_ID,
                loader: UPGRADEABLE_LOADER_ID,
                upgrade_authority: wallet.pubkey(),
                program_path: venue_program,
            },
        ]);
    // A fresh ledger gets a $SKTRIAL mint and its pool; a kept one already has them (and its
    // config names its mint).
    let mint = Keypair::new().pubkey();
    for (address, account) in buyback_accounts(&mint, &wallet.pubkey(), &runner.pubkey()) {
        genesis.add_account(address, account);
    }
    crate::commands::progress::notice(&format!(
        "starting a local validator (ledger {}, program {})…",
        ledger.display(),
        program.display()
    ));
    // Installed before the start, so a Ctrl-C while it starts stops it cleanly afterwards.
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| env_error(format!("cannot install the Ctrl-C handler: {e}")))?;
    }
    // The genesis faucet: a throwaway key (the wallet and runner are funded explicitly). The
    // library prints its start-up progress on stdout: moved to stderr meanwhile.
    let validator = {
        let _stdout_on_stderr = StdoutToStderr::new();
        start_without_panicking(|| {
            genesis.start_with_mint_address(
                Keypair::new().pubkey(),
                solana_net_utils::SocketAddrSpace::new(true),
            )
        })?
    }
    .map_err(|e| env_error(format!("the local validator did not start: {e}")))?;
    // From here a panic in any of the validator's threads is a crash, as for Agave's own
    // validators (which exit on any panic rather than limp along half dead).
    let crash = Crash::watch();
    // The library binds JSON-RPC and its websocket to 0.0.0.0 whatever `bind` says: on loopback
    // (the default) both listeners are confined to the loopback device at once, or localnet stops.
    let listening_on = if bind.is_loopback() {
        if let Err(why) = confine_to_loopback([args.rpc_port, pubsub_port]) {
            drop(validator);
            return Err(env_error(format!(
                "cannot keep the validator's JSON-RPC to this machine: {why}. Nothing was left running; pass --bind with an address of this machine to serve JSON-RPC on every interface"
            )));
        }
        "%lo"
    } else {
        ""
    };
    let url = validator.rpc_url();

    let chain = Chain::new(&url, Commitment::Confirmed);
    if !wait_for_slot(&chain, 4, &stop)? {
        crate::commands::progress::notice("stopped before the validator was ready");
        drop(validator);
        return Ok(Status::Ok);
    }
    let initialized = !args.no_init
        && init_config(
            &chain,
            global,
            &wallet,
            &runner.pubkey(),
            &payout.pubkey(),
            &mint,
            args.min_deadline_secs,
        )?;
    let balance = chain
        .balance(&wallet.pubkey())
        .map_err(|e| env_error(e.to_string()))?;
    // What the config says (a restarted ledger keeps the deadline and mint it was created with).
    let config = chain.config().map_err(|e| env_error(e.to_string()))?;
    let min_deadline_secs = config
        .as_ref()
        .map_or(args.min_deadline_secs, |c| c.min_deadline_secs);
    let mint = config.as_ref().map_or(mint, |c| c.sktrial_mint);
    if global.json {
        let info = LocalnetReady {
            rpc_url: url.clone(),
            websocket_url: validator.rpc_pubsub_url(),
            bind: bind.to_string(),
            // The library binds JSON-RPC and its websocket to 0.0.0.0 whatever `bind` says
            // (solana-test-validator 4.2.2, `TestValidator::start`).
            listening: Listening {
                rpc: format!("0.0.0.0{listening_on}:{}", args.rpc_port),
                websocket: format!("0.0.0.0{listening_on}:{pubsub_port}"),
                gossip: validator.gossip().to_string(),
                tpu_quic: validator.tpu_quic().to_string(),
            },
            program_id: PROGRAM_ID.to_string(),
            wallet: wallet.pubkey().to_string(),
            wallet_keypair: keypair_path.display().to_string(),
            wallet_lamports: balance,
            runner: runner.pubkey().to_string(),
            runner_keypair: ledger.join(RUNNER_FILE).display().to_string(),
            runner_payout: payout.pubkey().to_string(),
            ledger: ledger.display().to_string(),
            config_initialized_now: initialized,
            min_deadline_secs,
            sktrial_mint: mint.to_string(),
            venue_program_id: venue::VENUE_ID.to_string(),
            venue_pool: venue::pool_address(&mint).to_string(),
        };
        // One line, so a script can read it before the validator stops.
        let line = serde_json::to_string(&info)
            .map_err(|e| env_error(format!("cannot encode the JSON output: {e}")))?;
        crate::output::text(&format!("{line}\n"))?;
    } else {
        crate::output::text(&format!(
            "local validator ready\n  RPC URL   {url}   (use --url {url}, or -u l on the default port)\n  listens   JSON-RPC and websocket {} (ports {} and {pubsub_port}); gossip and TPU on {bind}\n  program   {}\n  $SKTRIAL  {} (buybacks through the pool {})\n  wallet    {} ({}), {}\n  runner    {} ({})\n  payout    {}\n  ledger    {}\nCtrl-C stops it.\n",
            if listening_on.is_empty() {
                "on every interface"
            } else {
                "on the loopback device only"
            },
            args.rpc_port,
            PROGRAM_ID,
            mint,
            venue::pool_address(&mint),
            wallet.pubkey(),
            keypair_path.display(),
            sol(balance),
            runner.pubkey(),
            ledger.join(RUNNER_FILE).display(),
            payout.pubkey(),
            ledger.display(),
        ))?;
    }
    let why = match watch(&chain, &stop, &crash) {
        Ended::Stopped => {
            crate::commands::progress::notice("stopping the local validator…");
            drop(validator);
            crate::commands::progress::notice("stopped");
            return Ok(Status::Ok);
        }
        // Not closed: its close joins every thread and fails on the one that panicked (or
        // waits on a thread that waits on it). The process ends with its threads, as Agave's
        // validators do on a panic; the ledger keeps what was written.
        Ended::Crashed(why) => {
            std::mem::forget(validator);
            why
        }
        // A wedged validator gets a few seconds to stop, then ends with the process: a thread
        // that hangs must not keep this process (and the clients on its port) waiting.
        Ended::Stalled(why) => {
            let closed = close_within(validator, std::time::Duration::from_secs(10));
            crate::commands::progress::notice(if closed {
                "stopped"
            } else {
                "the validator did not stop within 10 s: exiting without it"
            });
            why
        }
    };
    Err(env_error(format!(
        "{why}; start `skilltrial localnet` again (the ledger {} is kept: finalized transactions survive, confirmed ones may not)",
        ledger.display()
    )))
}

/// Drops (stops) the validator on another thread, waiting at most `limit`: whether it stopped.
fn close_within(
    validator: solana_test_validator::TestValidator,
    limit: std::time::Duration,
) -> bool {
    let (done, stopped) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("localnet-close".to_owned())
        .spawn(move || {
            drop(validator);
            let _ = done.send(());
        });
    spawned.is_ok() && stopped.recv_timeout(limit).is_ok()
}

/// The first panic in any thread of this process once the validator runs, as the panic hook
/// saw it: which thread, where, and what it said.
struct Crash {
    first: Arc<std::sync::Mutex<Option<String>>>,
}

impl Crash {
    /// Installs the panic hook (keeping the previous one, which prints the panic as usual).
    fn watch() -> Self {
        let first = Arc::new(std::sync::Mutex::new(None::<String>));
        let hook_first = Arc::clone(&first);
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            let thread = std::thread::current();
            let said = format!(
                "thread '{}' panicked at {}",
                thread.name().unwrap_or("unnamed"),
                info.location()
                    .map_or_else(|| "?".to_owned(), ToString::to_string)
            );
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| info.payload().downcast_ref::<String>().cloned());
            if let Ok(mut slot) = hook_first.lock() {
                slot.get_or_insert(match message {
                    Some(message) => format!("{said}: {message}"),
                    None => said,
                });
            }
        }));
        Self { first }
    }

    fn panicked(&self) -> Option<String> {
        self.first.lock().ok().and_then(|slot| slot.clone())
    }
}

/// How long the validator may go without a new slot (or without answering) before `localnet`
/// gives it up: a panicked or wedged validator must not look alive to the clients waiting on it.
const STALL_AFTER: std::time::Duration = std::time::Duration::from_secs(30);

/// A 200 ms sleep that took longer than this means this process itself was not running (Ctrl-Z,
/// a suspended machine): the validator did not run either, so the stall clock starts over.
const SUSPENDED_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// Why [`watch`] returned; a crash or stall says what happened (already told on stderr).
enum Ended {
    /// Ctrl-C or SIGTERM.
    Stopped,
    /// A thread panicked.
    Crashed(String),
    /// No new slot, or no answer, for [`STALL_AFTER`].
    Stalled(String),
}

/// Watches the running validator until Ctrl-C, until one of its threads panics, or until it
/// has produced no slot, or not answered, for [`STALL_AFTER`].
fn watch(chain: &Chain, stop: &AtomicBool, crash: &Crash) -> Ended {
    let mut last: Option<u64> = None;
    let mut since = std::time::Instant::now();
    let mut checked = std::time::Instant::now();
    while !stop.load(Ordering::SeqCst) {
        let asleep = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(200));
        if asleep.elapsed() > SUSPENDED_AFTER {
            since = std::time::Instant::now();
        }
        if let Some(panic) = crash.panicked() {
            let why = format!("the local validator crashed: {panic}");
            crate::commands::progress::notice(&format!("error: {why}"));
            return Ended::Crashed(why);
        }
        if checked.elapsed() < std::time::Duration::from_secs(2) {
            continue;
        }
        checked = std::time::Instant::now();
        match chain.slot() {
            Ok(slot) if last != Some(slot) => {
                last = Some(slot);
                since = std::time::Instant::now();
            }
            _ if since.elapsed() >= STALL_AFTER => {
                let why = match last {
                    Some(slot) => format!(
                        "the local validator has produced no slot since {slot} for {} s, or stopped answering",
                        STALL_AFTER.as_secs()
                    ),
                    None => "the local validator stopped answering".to_owned(),
                };
                crate::commands::progress::notice(&format!("error: {why}"));
                return Ended::Stalled(why);
            }
            _ => {}
        }
    }
    Ended::Stopped
}

/// $SKTRIAL's supply on a local cluster: 10^9 tokens of 6 decimals, all in the pool.
const SKTRIAL_SUPPLY: u64 = 1_000_000_000_000_000;
const SKTRIAL_DECIMALS: u8 = 6;
/// The pool's SOL reserve.
const POOL_SOL: u64 = 100;
/// The pool's fee, basis points.
const POOL_FEE_BPS: u16 = 30;

/// The rent-exempt minimum of `len` bytes at the default rent (what a test validator charges):
/// (128 bytes of overhead + len) × 3,480 lamports per byte-year × 2 years.
fn rent_exempt(len: usize) -> u64 {
    u64::try_from(len)
        .unwrap_or(u64::MAX)
        .saturating_add(128)
        .saturating_mul(6_960)
}

/// The genesis accounts buybacks need: the `mint` (authority `authority`), the venue's pool of
/// it with its vault holding the whole supply, and the runner's (empty) associated account.
fn buyback_accounts(
    mint: &Pubkey,
    authority: &Pubkey,
    runner: &Pubkey,
) -> Vec<(Pubkey, AccountSharedData)> {
    let token_account = |data: Vec<u8>| {
        let mut account = AccountSharedData::new(
            rent_exempt(data.len()),
            data.len(),
            &token::TOKEN_PROGRAM_ID,
        );
        account.set_data_from_slice(&data);
        account
    };
    let pool = venue::pool_address(mint);
    let vault = Keypair::new().pubkey();
    let pool_data = venue::pool_bytes(mint, &vault, POOL_FEE_BPS);
    let mut pool_account = AccountSharedData::new(
        rent_exempt(pool_data.len()).saturating_add(POOL_SOL * LAMPORTS_PER_SOL),
        pool_data.len(),
        &venue::VENUE_ID,
    );
    pool_account.set_data_from_slice(&pool_data);
    vec![
        (
            *mint,
            token_account(token::mint_bytes(
                Some(authority),
                SKTRIAL_SUPPLY,
                SKTRIAL_DECIMALS,
            )),
        ),
        (pool, pool_account),
        (
            vault,
            token_account(token::account_bytes(mint, &pool, SKTRIAL_SUPPLY)),
        ),
        (
            token::associated_account(runner, mint, &token::TOKEN_PROGRAM_ID),
            token_account(token::account_bytes(mint, runner, 0)),
        ),
    ]
}

/// While alive, file descriptor 1 (stdout) writes to stderr; dropped, stdout is restored. A
/// failure to redirect leaves stdout as it was.
struct StdoutToStderr {
    saved: Option<std::os::fd::OwnedFd>,
}

impl StdoutToStderr {
    fn new() -> Self {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        let saved = rustix::io::dup(std::io::stdout())
            .ok()
            .filter(|_| rustix::stdio::dup2_stdout(std::io::stderr()).is_ok());
        Self { saved }
    }
}

impl Drop for StdoutToStderr {
    fn drop(&mut self) {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        if let Some(saved) = self.saved.take() {
            let _ = rustix::stdio::dup2_stdout(&saved);
        }
    }
}

/// How long the websocket listener may take to appear after the validator started (the
/// library binds it from a thread of its own).
const LISTENERS_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Confines this process's TCP listeners on `0.0.0.0:<port>`, for each of `ports`, to the
/// loopback device (`SO_BINDTODEVICE "lo"`): a connection arriving on any other interface then
/// finds no listener and is refused by the kernel, as if the socket were bound to 127.0.0.1.
/// The listeners belong to the validator library, so each is reached through a second handle
/// (`pidfd_getfd` on this process's own pidfd: no raw descriptor is ever borrowed); the option
/// is set on the socket both handles share, then read back. Every listener of each port is
/// confined (the JSON-RPC server may run several with `SO_REUSEPORT`), and each port must have
/// one within [`LISTENERS_WITHIN`].
#[cfg(target_os = "linux")]
fn confine_to_loopback(ports: [u16; 2]) -> Result<(), String> {
    use rustix::process::{PidfdFlags, PidfdGetfdFlags, getpid, pidfd_getfd, pidfd_open};
    let me = pidfd_open(getpid(), PidfdFlags::empty())
        .map_err(|e| format!("pidfd_open needs Linux 5.3 or later ({e})"))?;
    let started = std::time::Instant::now();
    let mut confined: Vec<u16> = Vec::new();
    loop {
        let entries = std::fs::read_dir("/proc/self/fd")
            .map_err(|e| format!("cannot list /proc/self/fd: {e}"))?;
        for entry in entries.flatten() {
            let Some(number) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let is_socket = std::fs::read_link(entry.path())
                .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"));
            if !is_socket {
                continue;
            }
            // Closed since it was listed, or not ours to take: not a listener we look for.
            let Ok(handle) = pidfd_getfd(&me, number, PidfdGetfdFlags::empty()) else {
                continue;
            };
            let socket = socket2::Socket::from(handle);
            let Some(local) = socket.local_addr().ok().and_then(|a| a.as_socket()) else {
                continue;
            };
            let wanted = local.ip() == std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
                && ports.contains(&local.port())
                && socket.r#type().is_ok_and(|t| t == socket2::Type::STREAM)
                && socket.is_listener().unwrap_or(false);
            if !wanted {
                continue;
            }
            // Confined by an earlier pass (the other port was not up yet): changing a device
            // once set needs CAP_NET_RAW, so it is left as it is.
            let already = socket
                .device()
                .is_ok_and(|d| d.as_deref() == Some(b"lo".as_slice()));
            if already {
                continue;
            }
            socket.bind_device(Some(b"lo")).map_err(|e| {
                format!(
                    "SO_BINDTODEVICE on {local} was refused ({e}; unprivileged use needs Linux 5.7 or later)"
                )
            })?;
            let device = socket
                .device()
                .map_err(|e| format!("cannot read back the device of {local}: {e}"))?;
            if device.as_deref() != Some(b"lo".as_slice()) {
                return Err(format!(
                    "{local} reads back bound to {:?}, not lo",
                    device.map(|d| String::from_utf8_lossy(&d).into_owned())
                ));
            }
            if !confined.contains(&local.port()) {
                confined.push(local.port());
            }
        }
        let missing: Vec<u16> = ports
            .iter()
            .copied()
            .filter(|p| !confined.contains(p))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if started.elapsed() > LISTENERS_WITHIN {
            return Err(format!(
                "no listener on 0.0.0.0 port {missing:?} appeared within {} s",
                LISTENERS_WITHIN.as_secs()
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Elsewhere the option is not there: localnet refuses loopback-only rather than pretend.
#[cfg(not(target_os = "linux"))]
fn confine_to_loopback(_ports: [u16; 2]) -> Result<(), String> {
    Err("confining a listener to the loopback device needs Linux".to_owned())
}

/// A port of `bind` free for both UDP and TCP, for gossip (the library's default is a fixed
/// port, which a second validator on the machine would collide with).
fn free_gossip_port(bind: std::net::Ipv4Addr) -> Result<u16, CliError> {
    for _ in 0..50 {
        let udp = std::net::UdpSocket::bind((bind, 0))
            .map_err(|e| env_error(format!("--bind {bind}: cannot bind a UDP port there ({e}): is it an address of this machine?")))?;
        let port = udp
            .local_addr()
            .map_err(|e| env_error(format!("cannot read a bound port: {e}")))?
            .port();
        if std::net::TcpListener::bind((bind, port)).is_ok() {
            return Ok(port);
        }
    }
    Err(env_error(format!(
        "no port of {bind} is free for both UDP and TCP (gossip)"
    )))
}

/// Runs the library's start, turning a panic inside it (a port taken between our check and its
/// bind, a ledger it cannot open) into an error that says what it said.
fn start_without_panicking<T>(start: impl FnOnce() -> T) -> Result<T, CliError> {
    let said = Arc::new(std::sync::Mutex::new(None::<String>));
    let hook_said = Arc::clone(&said);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Ok(mut slot) = hook_said.lock() {
            slot.get_or_insert_with(|| info.to_string());
        }
    }));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(start));
    std::panic::set_hook(previous);
    result.map_err(|_| {
        let message = said
            .lock()
            .ok()
            .and_then(|s| s.clone())
            .unwrap_or_else(|| "it panicked".to_owned());
        env_error(format!("the local validator did not start: {message}"))
    })
}

/// Whether `path` holds nothing but the keypair files `localnet` writes before the validator
/// (a first start that failed leaves those).
fn holds_only_ours(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|entries| {
        entries.into_iter().all(|entry| {
            entry.is_ok_and(|e| {
                let name = e.file_name();
                name == RUNNER_FILE || name == PAYOUT_FILE
            })
        })
    })
}

/// Waits until the cluster has produced `slot` (transactions sent before that may be dropped):
/// `true` when it has, `false` when Ctrl-C came first.
fn wait_for_slot(chain: &Chain, slot: u64, stop: &AtomicBool) -> Result<bool, CliError> {
    let started = std::time::Instant::now();
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(false);
        }
        if chain.slot().is_ok_and(|s| s >= slot) {
            return Ok(true);
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            return Err(env_error(format!(
                "the local validator did not reach slot {slot} within 60 s"
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Initializes the config unless it exists (a restarted ledger keeps it). Returns whether it
/// was initialized now.
fn init_config(
    chain: &Chain,
    global: &Global,
    admin: &Keypair,
    runner: &Pubkey,
    payout: &Pubkey,
    mint: &Pubkey,
    min_deadline_secs: i64,
) -> Result<bool, CliError> {
    if chain
        .config()
        .map_err(|e| env_error(e.to_string()))?
        .is_some()
    {
        return Ok(false);
    }
    let layout = state::layout(global)?;
    let mut outbox =
        Outbox::open(&layout.root.join(OUTBOX_FILE)).map_err(|e| env_error(e.to_string()))?;
    let progress = |line: &str| crate::commands::progress::notice(line);
    let mut sender = Sender::new(chain, &mut outbox, &progress)?;
    let args = ConfigInitArgs {
        runner: anchor_key(runner),
        runner_payout: anchor_key(payout),
        fee_per_trial: 200_000,
        min_deadline_secs,
        time_lock_secs: skilltrial_chain::constants::MIN_TIME_LOCK_SECS,
        usage_limit: SpendingLimit {
            amount: 1_000 * LAMPORTS_PER_SOL,
            period_secs: 86_400,
        },
        // The mint seeded in genesis, with its pool: buybacks work out of the box.
        sktrial_mint: anchor_key(mint),
        buyback_interval_secs: skilltrial_chain::constants::MIN_BUYBACK_INTERVAL_SECS,
        max_buyback_lamports: 10 * LAMPORTS_PER_SOL,
        // At least one base unit per lamport (the pool starts at 10,000).
        buyback_rate: BuybackRate {
            tokens: 1,
            lamports: 1,
        },
    };
    sender.send(
        "config_init",
        admin,
        &[],
        &[ix::config_init(&admin.pubkey(), args)],
        Fees::default(),
    )?;
    Ok(true)
}
