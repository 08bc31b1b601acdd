//! The command line: every subcommand and flag, parsed by clap.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use skilltrial_core::concurrency::Concurrency;
use skilltrial_core::manifest::DEFAULT_REPETITIONS;
use skilltrial_core::money::MicroUsd;
use skilltrial_core::profile::ProviderKind;
use skilltrial_core::solana::Address;

use crate::commands::purge::{Age, parse_age};

use crate::exit;

/// SkillTrial: see on which Solana tasks a new version of an agent skill helps, and where it
/// breaks, before it ships.
#[derive(Debug, Parser)]
#[command(name = "skilltrial", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

// Every numeric flag allows a leading `-`, so that `--reps -1` is refused by the flag's own
// parser, naming the flag, rather than read as an unknown flag `-1`.

/// Flags every subcommand takes.
#[derive(Debug, Args)]
pub struct Global {
    /// Print machine-readable JSON on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// State directory (journal and content-addressed store). Default: $SKILLTRIAL_HOME, then
    /// $XDG_DATA_HOME/skilltrial, then ~/.local/share/skilltrial.
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate skill bundles (folders or ZIPs): name, version, digest, files by kind, flags.
    ///
    /// Exits 1 if any bundle is rejected (with --lint: also if any lint finding is an error).
    /// Nothing is written to disk, except by --fix.
    Validate(ValidateArgs),
    /// Show this installation: version, and where state lives and why.
    Info,
    /// Fixture packs: list, show a task, verify every claim a pack makes.
    #[command(subcommand)]
    Pack(PackCommand),
    /// Score one answer file against a pack task with the deterministic checker.
    ///
    /// Exits 0 on pass, 1 otherwise.
    Check(CheckArgs),
    /// Plan a paired run: copy every input into the store, write the manifest, show the bounds.
    Plan(PlanArgs),
    /// Run (or resume) a planned manifest: one request in flight (up to N with --concurrency), budget
    /// reserved before each.
    Run(RunArgs),
    /// Show a run's counts, money and unknown attempts (the latest run by default).
    ///
    /// With `--remote --runner URL`: a hosted run on a runner daemon (signed in with your
    /// wallet); `--follow` streams its trials as they land.
    Status(StatusArgs),
    /// Stop a run's new dispatches (from any terminal); the requests in flight finish. With
    /// `--chain <RUN_ADDRESS>`, cancel a hosted run on-chain instead (the runner may still settle
    /// what it already executed, for a short window).
    Cancel(CancelArgs),
    /// Decide an `unknown` attempt: retry it (new attempt, with a reason) or release it as spent.
    Resolve(ResolveArgs),
    /// Re-score a run's stored answers with this binary's checker. No model calls.
    Recheck(RunRef),
    /// Delete raw model payloads older than the retention period (30 days by default).
    Purge(PurgeArgs),
    /// Write a run's report: canonical JSON (with its report hash) and a self-contained HTML page.
    ///
    /// Both files are always written (paths: --out, --out-json, --out-html). --json prints the
    /// summary as JSON on stdout instead of the table; it chooses no file.
    Report(ReportArgs),
    /// Compare two runs side by side; refuses runs that differ in model, pack, checker,
    /// sampling, output limit or prompt template (`--json` lists what was compared).
    Compare(CompareArgs),
    /// A ledger across models: the same bundles on the same pack, one run per model, side by
    /// side — success with Wilson intervals, pass^k and pass@k, fixes and breaks per version,
    /// per-task verdicts — and every run left out with why (docs/ledger.md).
    ///
    /// Without RUN or --report: every run in the journal. Prints text or --json; --out DIR also
    /// writes ledger.json and ledger.html.
    Ledger(LedgerArgs),
    /// The release gate: judge a run by a policy written before it (pinned with `plan --gate`;
    /// by default "B breaks no task that A passes, and B passes at least as often as A").
    ///
    /// Exits 0 cleared, 1 missed, 3 inconclusive (2: a usage or input error). Output as text,
    /// --json (or --format json), JUnit XML or GitHub Actions annotations.
    Gate(GateArgs),
    /// Recompute a report file's report hash and manifest hash from the file alone; with
    /// `--signature` and/or `--run`, also check its anchor memo and its Run account on-chain.
    Verify(VerifyArgs),
    /// Hosted: escrow a planned run's upper cost in a Run account on-chain (one transaction).
    Open(OpenArgs),
    /// Hosted: a Run account decoded: escrow, settled, refundable, digest, deadline.
    ChainStatus(ChainRunArgs),
    /// Hosted: after the deadline, take back everything a Run still holds, without the runner.
    Refund(ChainRunArgs),
    /// Hosted: close a finalized Run and take back what it holds (the rent included).
    Close(ChainRunArgs),
    /// Anchor a report on-chain: a top-level SPL Memo `st1:<manifest hash>:<report hash>`
    /// signed by your wallet. Prints the signature `verify --signature` checks.
    Anchor(AnchorArgs),
    /// Operators: the program's config (init, update, time-locked propose/apply, accept, show).
    #[command(subcommand)]
    Admin(AdminCommand),
    /// The program's buyback log: every buyback-and-burn, newest first, and the fee vault's books.
    BuybackLog(ChainOnlyArgs),
    /// A real local validator (Agave 4.2.2) with the program, SPL Token, Token-2022 and Memo
    /// loaded and the config initialized; funds your keypair and prints the RPC URL. Ctrl-C stops it.
    Localnet(LocalnetArgs),
    /// Hosted: sign in to a runner daemon, upload a planned run's inputs, escrow its upper cost
    /// (one wallet-signed transaction) and register it; the runner executes and settles it.
    Submit(SubmitArgs),
    /// Operators: the hosted runner daemon.
    #[command(subcommand)]
    Runner(RunnerCommand),
    /// The whole local job on embedded defaults: validate the example bundles, plan and run a
    /// paired run (54 trials on solana-core@1.0.3, 414 with --pack solana-core@2.0.0), write the
    /// reports. Uses the scripted model unless a key is set.
    Demo(DemoArgs),
    /// Model keys in the OS keychain: set (key read from standard input), remove, status.
    #[command(subcommand)]
    Key(KeyCommand),
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The run id (or a unique prefix); with --remote, the Run account address (all your runs
    /// on that runner when omitted).
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// Ask a runner daemon about a hosted run (needs --runner).
    #[arg(long, requires = "runner")]
    pub remote: bool,
    /// The runner daemon's URL (`submit` printed it).
    #[arg(long, value_name = "URL", value_parser = runner_url)]
    pub runner: Option<url::Url>,
    /// With --remote: stream the run's events until it is finalized or fails.
    #[arg(long, requires = "remote")]
    pub follow: bool,
    #[command(flatten)]
    pub solana: SolanaArgs,
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The manifest hash printed by `plan` (or a unique prefix), planned with --sol-usd against
    /// a profile the runner serves.
    #[arg(long, value_name = "HASH")]
    pub manifest: String,
    /// The runner daemon's URL.
    #[arg(long, value_name = "URL", value_parser = runner_url)]
    pub runner: url::Url,
    /// The Run's deadline, from when the escrow lands (at least the runner's minimum for this
    /// manifest): 30m, 24h, 7d.
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = duration, allow_hyphen_values = true)]
    pub deadline: i64,
    /// Escrow without asking.
    #[arg(long)]
    pub yes: bool,
    /// Requests the runner may have in flight at once for this run: 1 (one at a time) up to
    /// the runner's maximum (`max_concurrency` in its GET /v1/info; refused before the sign-in
    /// above it). Not part of the manifest: it changes how long the run takes, not its results.
    #[arg(long, value_name = "N", default_value_t = Concurrency::SEQUENTIAL, allow_negative_numbers = true)]
    pub concurrency: Concurrency,
    #[command(flatten)]
    pub solana: SolanaArgs,
}

#[derive(Debug, Subcommand)]
pub enum RunnerCommand {
    /// Serve hosted runs: an HTTP API on loopback by default; runs authorised by their Run
    /// accounts execute, settle on-chain and finalize. Ctrl-C stops it after each run's request
    /// in flight.
    Serve(Box<ServeArgs>),
    /// Make one buyback now if it is due: sweep the fee vault's unreleased fees (up to the
    /// program's cap) through the venue and burn what they buy, in one transaction.
    Buyback(Box<BuybackOnceArgs>),
}

/// How buybacks are made (`runner serve` on a schedule, `runner buyback` once).
#[derive(Debug, Args)]
pub struct BuybackArgs {
    /// Where fees are swapped for $SKTRIAL: `auto` (the pool of `skilltrial localnet` on a local
    /// cluster, Jupiter elsewhere), `localnet`, `jupiter`, or `off` (no buybacks).
    #[arg(long, value_name = "VENUE", default_value = "auto", value_parser = ["auto", "localnet", "jupiter", "off"])]
    pub buyback_venue: String,
    /// How often the daemon checks whether a buyback is due, seconds (the program's interval
    /// decides when one may run).
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub buyback_every: u64,
    /// The least unreleased fee worth a buyback transaction, lamports.
    #[arg(long, value_name = "LAMPORTS", default_value_t = 1_000_000)]
    pub buyback_min_lamports: u64,
    /// How far below its quote the swap may fill, basis points: the buyback burns the quote less
    /// this (the venue's minimum output), and the swap fails below it.
    #[arg(long, value_name = "BPS", default_value_t = 100, value_parser = clap::value_parser!(u16).range(0..=5_000))]
    pub buyback_slippage_bps: u16,
    /// Jupiter's Swap API v2 base URL: https, or http on a loopback address only (a test
    /// venue). Its key is read from JUPITER_API_KEY (never a flag).
    #[arg(long, value_name = "URL", default_value = skilltrial_core::hosted::JUPITER_URL, value_parser = venue_url)]
    pub jupiter_url: url::Url,
}

#[derive(Debug, Args)]
pub struct BuybackOnceArgs {
    #[command(flatten)]
    pub buyback: BuybackArgs,
    /// The runner's keypair (-k/--keypair): the config's runner, who alone may buy back.
    #[command(flatten)]
    pub solana: SolanaArgs,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where people reach this daemon, scheme://host[:port] (every sign-in message names it).
    #[arg(long, value_name = "URL", env = "SKILLTRIAL_RUNNER_ORIGIN", value_parser = runner_url)]
    pub public_origin: url::Url,
    /// The socket to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    pub bind: std::net::SocketAddr,
    /// The daemon's state directory (default: <state dir>/runner).
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// The operator's model profiles file (the built-in profiles are always served).
    #[arg(long, value_name = "FILE")]
    pub profiles: Option<PathBuf>,
    /// Serve ONLY the built-in scripted demo model (profile `scripted@1`, free, no key, no model
    /// server): to try the page and the whole hosted lifecycle. The page and every report of
    /// its runs say the answers are scripted; no real profile is served beside it.
    #[arg(long, conflicts_with = "profiles")]
    pub demo_model: bool,
    /// Runs executing at once. 0 (with --database only): this worker serves the API and the
    /// page and executes nothing; the other workers on the database execute the runs it takes.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(0..=256))]
    pub max_runs: u16,
    /// The most requests one run may have in flight at once, 1 to 64: each run is registered
    /// with the concurrency its owner asks for (1 by default) up to this, published in GET
    /// /v1/info. The daemon's requests in flight are at most --max-runs times this.
    #[arg(
        long,
        value_name = "N",
        default_value = "4",
        allow_negative_numbers = true
    )]
    pub max_concurrency: Concurrency,
    /// Trials per settlement transaction.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=60))]
    pub batch: u32,
    /// The SOL/USD rate you are repaid at, USD per SOL (e.g. 151.25). Usage is charged in
    /// lamports at the rate a manifest pins, so only manifests pinned near this rate are run;
    /// published in GET /v1/info for users to plan with.
    #[arg(long, value_name = "USD", env = "SKILLTRIAL_RUNNER_SOL_USD", value_parser = MicroUsd::parse_usd)]
    pub sol_usd: MicroUsd,
    /// How far a manifest's pinned SOL/USD rate may be from --sol-usd, in basis points of it
    /// (200 = 2 %).
    #[arg(long, value_name = "BPS", default_value_t = 200, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub sol_usd_tolerance_bps: u32,
    /// How old a manifest's SOL/USD pin may be when it is uploaded (e.g. 30m, 1h).
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = duration)]
    pub max_rate_age: i64,
    /// Keep the daemon's state in this PostgreSQL database (postgres://user@host/db, or libpq's
    /// key=value form) instead of SQLite files: several daemons on one database share the runs,
    /// each executing the runs it claims, taking over those of a worker that stopped renewing
    /// its lease. Say sslmode=require for a server on another machine. --state still holds
    /// this worker's own working copies.
    #[arg(
        long,
        value_name = "URL",
        env = "SKILLTRIAL_RUNNER_DATABASE",
        hide_env_values = true
    )]
    pub database: Option<String>,
    /// A PEM file of the certificate authorities that sign the database server's certificate
    /// (default: the platform's).
    #[arg(long, value_name = "FILE", requires = "database")]
    pub database_ca: Option<PathBuf>,
    /// Connections this worker keeps to the database.
    #[arg(long, value_name = "N", default_value_t = 16, requires = "database", value_parser = clap::value_parser!(u16).range(2..=1024))]
    pub database_pool: u16,
    /// How long a run stays this worker's without a renewal (renewed every third of it): a
    /// worker that dies is taken over this long after its last renewal. At least 3 s.
    #[arg(long, value_name = "DURATION", default_value = "30s", requires = "database", value_parser = lease_duration)]
    pub lease: std::time::Duration,
    #[command(flatten)]
    pub buyback: BuybackArgs,
    /// The runner keypair (-k/--keypair): it signs settlements and finalizations, and must be
    /// the runner the program's config names.
    #[command(flatten)]
    pub solana: SolanaArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run id (or a unique prefix); the latest run when omitted.
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// Directory for both files (default: <state dir>/reports/<run>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Where to write report.json (default: <DIR>/report.json).
    #[arg(long, value_name = "PATH")]
    pub out_json: Option<std::path::PathBuf>,
    /// Where to write report.html (default: <DIR>/report.html).
    #[arg(long, value_name = "PATH")]
    pub out_html: Option<std::path::PathBuf>,
    /// Download a hosted run's report from a runner daemon (needs --runner; RUN is the Run
    /// account address). Its hashes are checked before anything is written.
    #[arg(long, requires = "runner")]
    pub remote: bool,
    /// The runner daemon's URL.
    #[arg(long, value_name = "URL", value_parser = runner_url, requires = "remote")]
    pub runner: Option<url::Url>,
    #[command(flatten)]
    pub solana: SolanaArgs,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("whose").args(["signer", "run"]).multiple(true)))]
pub struct VerifyArgs {
    /// A report.json written by `skilltrial report`.
    #[arg(value_name = "REPORT_JSON")]
    pub report: std::path::PathBuf,
    /// A hosted run's Run account as `solana account <RUN> --output json` prints it: the
    /// report's settlement digest, run id, batches, trials, usage and report hash must be the
    /// account's.
    #[arg(long, value_name = "ACCOUNT_JSON", conflicts_with = "run")]
    pub run_account: Option<std::path::PathBuf>,
    /// The anchor transaction (`skilltrial anchor` printed it): fetched finalized over RPC, it
    /// must have succeeded and carry this report's anchor memo, top-level, signed by the signer.
    #[arg(long, value_name = "SIGNATURE", value_parser = signature, requires = "whose")]
    pub signature: Option<TxSignature>,
    /// The hosted run's Run account address: fetched over RPC and compared with the report
    /// (manifest hash, report hash, settlement digest and counts). Once the account is closed,
    /// the same books are read from its `RunFinalized` event, found in the address's history.
    #[arg(long, value_name = "ADDRESS", value_parser = address)]
    pub run: Option<Address>,
    /// Whose anchor it must be (a wallet address). Default with --run: the Run's user.
    #[arg(long, value_name = "ADDRESS", requires = "signature", value_parser = address)]
    pub signer: Option<Address>,
    /// How long to wait (seconds, at most 3600) for the anchor to be finalized, and for a
    /// closed run's finalize transaction to be listed by the node. Still pending then: exit 75.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub wait_secs: u64,
    #[command(flatten)]
    pub solana: SolanaArgs,
}

/// The Solana CLI's connection flags, with its defaults (`~/.config/solana/cli/config.yml`).
#[derive(Debug, Clone, Args)]
pub struct SolanaArgs {
    /// JSON-RPC URL or moniker: m[ainnet-beta], d[evnet], t[estnet], l[ocalhost]. Default: the
    /// Solana CLI config's json_rpc_url, else mainnet-beta.
    #[arg(long, short = 'u', value_name = "URL_OR_MONIKER")]
    pub url: Option<String>,
    /// Your wallet: a solana-keygen keypair file. Default: the Solana CLI config's keypair_path,
    /// else ~/.config/solana/id.json.
    #[arg(long, short = 'k', value_name = "KEYPAIR")]
    pub keypair: Option<PathBuf>,
    /// processed, confirmed or finalized. Default: the Solana CLI config's, else confirmed.
    #[arg(long, value_name = "LEVEL")]
    pub commitment: Option<String>,
    /// The Solana CLI config file. Default: ~/.config/solana/cli/config.yml.
    #[arg(long = "config", value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    /// The priority fee, micro-lamports per compute unit, instead of the recent market price.
    #[arg(long, value_name = "MICROLAMPORTS")]
    pub with_compute_unit_price: Option<u64>,
    /// The most a market-derived priority fee may be, micro-lamports per compute unit.
    #[arg(long, value_name = "MICROLAMPORTS", default_value_t = skilltrial_core::hosted::DEFAULT_PRICE_CEILING)]
    pub max_compute_unit_price: u64,
}

#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The run id (or a unique prefix of at least 8 characters); the latest run when omitted.
    #[arg(value_name = "RUN", conflicts_with = "chain")]
    pub run: Option<String>,
    /// Cancel the hosted run at this Run account address on-chain (signed by your wallet).
    #[arg(long, value_name = "RUN_ADDRESS", value_parser = address)]
    pub chain: Option<Address>,
    #[command(flatten)]
    pub solana: SolanaArgs,
}

#[derive(Debug, Args)]
pub struct OpenArgs {
    /// The manifest hash printed by `plan` (or a unique prefix); planned with --sol-usd.
    #[arg(long, value_name = "HASH")]
    pub manifest: String,
    /// The runner you agree to (the program's config must name the same key).
    #[arg(long, value_name = "PUBKEY", value_parser = address)]
    pub runner: Address,
    /// When the runner's time is up and you may refund alone, from when the escrow lands:
    /// 90s, 30m, 24h, 7d (at most 7d).
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = duration, allow_hyphen_values = true)]
    pub deadline: i64,
    /// Escrow without asking.
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub solana: SolanaArgs,
}

#[derive(Debug, Args)]
pub struct ChainRunArgs {
    /// The Run account address (`open` printed it).
    #[arg(value_name = "RUN_ADDRESS", value_parser = address)]
    pub run: Address,
    #[command(flatten)]
    pub solana: SolanaArgs,
}

#[derive(Debug, Args)]
pub struct ChainOnlyArgs {
    #[command(flatten)]
    pub solana: SolanaArgs,
}

#[derive(Debug, Args)]
pub struct AnchorArgs {
    /// A report.json written by `skilltrial report`.
    #[arg(value_name = "REPORT_JSON")]
    pub report: std::path::PathBuf,
    /// Send a new anchor even though this wallet already anchored this report on this cluster
    /// (by default the earlier anchor is shown and nothing is signed).
    #[arg(long)]
    pub again: bool,
    #[command(flatten)]
    pub solana: SolanaArgs,
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create the config (once; signed by the program's upgrade authority, who becomes admin).
    Init(AdminInitArgs),
    /// Change what takes effect at once: the fee, the minimum deadline; revoke the runner;
    /// propose a new admin.
    Update(AdminUpdateArgs),
    /// Propose a time-locked change (runner, mint, buyback, usage limit, time lock); it can be
    /// applied once the time lock has passed.
    Propose(AdminProposeArgs),
    /// Apply the pending time-locked change (after its time).
    Apply(ChainOnlyArgs),
    /// Accept the admin role proposed to your wallet.
    Accept(ChainOnlyArgs),
    /// The config decoded, with any pending change and when it may apply.
    Show(ChainOnlyArgs),
}

#[derive(Debug, Args)]
pub struct AdminInitArgs {
    /// The runner's signing key.
    #[arg(long, value_name = "PUBKEY", value_parser = address)]
    pub runner: Address,
    /// Where the runner's share of usage is paid (not the runner's signing key).
    #[arg(long, value_name = "PUBKEY", value_parser = address)]
    pub runner_payout: Address,
    /// The runner fee per executed trial, lamports (at most 10,000,000).
    #[arg(long, value_name = "LAMPORTS", default_value_t = 200_000)]
    pub fee_lamports: u64,
    /// The nearest deadline a run may set, seconds (10 to 86,400).
    #[arg(long, value_name = "SECS", default_value_t = 3_600)]
    pub min_deadline_secs: i64,
    /// The delay before a proposed change may apply, seconds (3,600 to 2,592,000).
    #[arg(long, value_name = "SECS", default_value_t = 86_400)]
    pub time_lock_secs: i64,
    /// The most usage the runner may settle per period, lamports.
    #[arg(long, value_name = "LAMPORTS", default_value_t = 100_000_000_000)]
    pub usage_limit_lamports: u64,
    /// The usage limit's period, seconds (60 to 2,592,000).
    #[arg(long, value_name = "SECS", default_value_t = 86_400)]
    pub usage_period_secs: i64,
    /// The $SKTRIAL mint buybacks burn.
    #[arg(long, value_name = "PUBKEY", value_parser = address)]
    pub mint: Address,
    /// The least time between buybacks, seconds (60 to 2,592,000).
    #[arg(long, value_name = "SECS", default_value_t = 21_600)]
    pub buyback_interval_secs: i64,
    /// The most lamports one buyback may release.
    #[arg(long, value_name = "LAMPORTS", default_value_t = 10_000_000_000)]
    pub max_buyback_lamports: u64,
    /// The least tokens burned per lamport released, as TOKENS:LAMPORTS (base units).
    #[arg(long, value_name = "TOKENS:LAMPORTS", value_parser = buyback_rate)]
    pub buyback_rate: BuybackRate,
    /// Initialize without asking.
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub solana: SolanaArgs,
}

#[derive(Debug, Args)]
pub struct AdminUpdateArgs {
    /// The new runner fee per executed trial, lamports (runs already open keep theirs).
    #[arg(long, value_name = "LAMPORTS")]
    pub fee_lamports: Option<u64>,
    /// The new minimum deadline, seconds.
    #[arg(long, value_name = "SECS")]
    pub min_deadline_secs: Option<i64>,
    /// Revoke the runner at once (no settling, finalizing or buying back; no new runs).
    #[arg(long)]
    pub revoke_runner: bool,
    /// Propose a new admin, who must `admin accept`.
    #[arg(long, value_name = "PUBKEY", value_parser = address)]
    pub propose_admin: Option<Address>,
    #[command(flatten)]
    pub solana: SolanaArgs,
}

#[derive(Debug, Args)]
pub struct AdminProposeArgs {
    /// A new runner signing key (with --runner-payout).
    #[arg(long, value_name = "PUBKEY", requires = "runner_payout", value_parser = address)]
    pub runner: Option<Address>,
    /// The new runner's payout address (with --runner).
    #[arg(long, value_name = "PUBKEY", requires = "runner", value_parser = address)]
    pub runner_payout: Option<Address>,
    /// A new $SKTRIAL mint.
    #[arg(long, value_name = "PUBKEY", value_parser = address)]
    pub mint: Option<Address>,
    #[arg(long, value_name = "SECS")]
    pub buyback_interval_secs: Option<i64>,
    #[arg(long, value_name = "LAMPORTS")]
    pub max_buyback_lamports: Option<u64>,
    /// TOKENS:LAMPORTS.
    #[arg(long, value_name = "TOKENS:LAMPORTS", value_parser = buyback_rate)]
    pub buyback_rate: Option<BuybackRate>,
    /// A new usage limit as LAMPORTS/SECS (amount per period).
    #[arg(long, value_name = "LAMPORTS/SECS", value_parser = usage_limit)]
    pub usage_limit: Option<SpendingLimit>,
    #[arg(long, value_name = "SECS")]
    pub time_lock_secs: Option<i64>,
    #[command(flatten)]
    pub solana: SolanaArgs,
}

#[derive(Debug, Args)]
pub struct LocalnetArgs {
    /// The ledger folder (kept between starts unless --reset).
    #[arg(long, value_name = "DIR", default_value = "test-ledger")]
    pub ledger: PathBuf,
    /// Start from a fresh ledger (deletes DIR's ledger first).
    #[arg(long)]
    pub reset: bool,
    /// The JSON-RPC port (the websocket is the next one).
    #[arg(long, value_name = "PORT", default_value_t = 8899)]
    pub rpc_port: u16,
    /// The IPv4 address the validator's gossip, TPU and TVU sockets bind to, and that it
    /// advertises in its RPC URL. Loopback by default, and then JSON-RPC and its websocket are
    /// confined to the loopback device too. Another address (this machine's on a LAN) lets other
    /// machines reach it, JSON-RPC on every interface, and anyone there send it transactions.
    /// See docs/hosted.md "Where it listens".
    #[arg(long, value_name = "IP", default_value = "127.0.0.1")]
    pub bind: std::net::Ipv4Addr,
    /// The keypair to fund and make the config's admin (created, 0600, when the file does not
    /// exist). Default: the Solana CLI's (config.yml, else ~/.config/solana/id.json).
    #[arg(long, short = 'k', value_name = "KEYPAIR")]
    pub keypair: Option<PathBuf>,
    /// The program .so. Default: target/deploy/skilltrial.so beside this binary's build.
    #[arg(long, value_name = "FILE")]
    pub program: Option<PathBuf>,
    /// The buyback venue's .so (a SOL → $SKTRIAL pool seeded in genesis). Default:
    /// target/deploy/skilltrial_venue.so beside this binary's build.
    #[arg(long, value_name = "FILE")]
    pub venue_program: Option<PathBuf>,
    /// SOL to fund the keypair with.
    #[arg(long, value_name = "SOL", default_value_t = 100)]
    pub fund_sol: u64,
    /// The config's minimum run deadline, seconds (short, so refunds can be tried at once).
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub min_deadline_secs: i64,
    /// Leave the program without a config, for trying `skilltrial admin init` yourself (your
    /// keypair is the program's upgrade authority, so it may).
    #[arg(long)]
    pub no_init: bool,
}

#[derive(Debug, Args)]
pub struct GateArgs {
    /// The run id (or a unique prefix); the latest run when omitted.
    #[arg(value_name = "RUN", conflicts_with = "report")]
    pub run: Option<String>,
    /// Judge an exported report.json instead of a run in the journal (its report and manifest
    /// hashes are checked first): a hosted run's report, or one from another machine.
    #[arg(long, value_name = "REPORT_JSON")]
    pub report: Option<std::path::PathBuf>,
    /// The policy file (TOML, docs/gate.md). A run that pinned one is judged by the pinned one,
    /// and this file must have the pinned hash; a run that pinned none is judged by this file,
    /// and the output says it was not pinned.
    #[arg(long, value_name = "GATE_TOML")]
    pub policy: Option<std::path::PathBuf>,
    /// Output: text, json (also --json), junit (JUnit XML) or github (Actions annotations).
    #[arg(long, value_enum, default_value_t = GateFormat::Text)]
    pub format: GateFormat,
    /// Print the default policy (a starting gate.toml) and exit.
    #[arg(long, conflicts_with_all = ["run", "report", "policy"])]
    pub print_default_policy: bool,
}

/// `gate --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GateFormat {
    Text,
    Json,
    Junit,
    Github,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    #[arg(value_name = "RUN1")]
    pub first: String,
    #[arg(value_name = "RUN2")]
    pub second: String,
}

#[derive(Debug, Args)]
pub struct LedgerArgs {
    /// Runs in the journal (manifest hashes or prefixes); the first with a scored trial (runs
    /// before --report files) sets what the others must share. Default, with no --report
    /// either: every run in the journal.
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    /// A report.json file (from `skilltrial report`, another machine or a hosted run), checked
    /// against its report hash; repeatable.
    #[arg(long = "report", value_name = "REPORT_JSON")]
    pub reports: Vec<std::path::PathBuf>,
    /// Also write ledger.json and ledger.html into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Bundle A (a folder or ZIP). Default: the built-in example solana-reader 1.4.2.
    #[arg(long, value_name = "BUNDLE")]
    pub a: Option<std::path::PathBuf>,
    /// Bundle B (a folder or ZIP). Default: the built-in example solana-reader 1.5.0.
    #[arg(long, value_name = "BUNDLE")]
    pub b: Option<std::path::PathBuf>,
    /// A model profile to use instead of choosing by the keys in the environment.
    #[arg(long, value_name = "PROFILE")]
    pub model: Option<String>,
    /// Repetitions.
    #[arg(long, default_value_t = DEFAULT_REPETITIONS, allow_negative_numbers = true)]
    pub reps: u32,
    /// The pack to run: solana-core@1.0.3 (six tasks, the default) or solana-core@2.0.0 (46
    /// tasks, where the paired test can reach significance), or a pack folder.
    #[arg(long, value_name = "PACK", default_value = "solana-core@1.0.3")]
    pub pack: String,
    /// Budget cap in USD for a real model.
    #[arg(long, value_name = "USD", default_value = "4", allow_negative_numbers = true, value_parser = MicroUsd::parse_usd)]
    pub cap_usd: MicroUsd,
    /// Where to write the reports (default: <state dir>/reports/<run>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Use the scripted model even when a key is set.
    #[arg(long)]
    pub scripted: bool,
    /// Which built-in scripted model answers (implies --scripted): 1, the default, or 2, which
    /// plays another script — run the demo with each to try `skilltrial ledger` without a key.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=2), conflicts_with = "model")]
    pub scripted_model: Option<u8>,
    /// A release-gate policy (TOML, docs/gate.md) to pin in the demo's manifest; then
    /// `skilltrial gate` judges the run by it.
    #[arg(long, value_name = "GATE_TOML")]
    pub gate: Option<std::path::PathBuf>,
    /// Confirm a run on an unpriced profile (a local server) without a prompt.
    #[arg(long)]
    pub yes: bool,
    /// The model name your own server serves (e.g. qwen3:8b), for a profile without a price such
    /// as openai-compatible-local.
    #[arg(long, value_name = "NAME", env = "SKILLTRIAL_MODEL_NAME")]
    pub model_name: Option<String>,
    /// Requests in flight at once, 1 to 64 (default 1: one at a time). Not part of the
    /// manifest: the trials go out in their planned order and every cap holds exactly at any
    /// setting (docs/runs.md, "Concurrency").
    #[arg(long, value_name = "N", default_value_t = Concurrency::SEQUENTIAL, allow_negative_numbers = true)]
    pub concurrency: Concurrency,
    /// How the skill reaches the model: `inline` (default) or `progressive` (a catalog and the
    /// load_skill / read_skill_resource tools; the report then shows which trials loaded it).
    #[arg(long, value_name = "MODE", default_value = "inline", value_parser = parse_delivery)]
    pub delivery: skilltrial_core::delivery::Mode,
    /// K: the most requests one progressive trial sends (2 to 12, default 4).
    #[arg(long, value_name = "K", value_parser = parse_max_turns, allow_negative_numbers = true)]
    pub max_turns: Option<u32>,
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Store a provider's key, read from standard input (e.g. `printf %s "$KEY" | skilltrial key set anthropic`).
    Set(KeyProvider),
    /// Remove a provider's key from the keychain.
    Remove(KeyProvider),
    /// Which providers have a key, and where it comes from (never the key itself).
    Status,
}

#[derive(Debug, Args)]
pub struct KeyProvider {
    /// anthropic or openai
    #[arg(value_name = "PROVIDER")]
    pub provider: KeyProviderName,
}

/// A provider whose key the keychain can hold, as `key set` and `key remove` take it.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum KeyProviderName {
    Anthropic,
    Openai,
}

impl From<KeyProviderName> for ProviderKind {
    fn from(name: KeyProviderName) -> Self {
        match name {
            KeyProviderName::Anthropic => ProviderKind::Anthropic,
            KeyProviderName::Openai => ProviderKind::Openai,
        }
    }
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The fixture pack (an embedded id such as solana-core@1.0.3, or a pack folder path).
    #[arg(long, default_value = "solana-core@1.0.3")]
    pub pack: String,
    /// The model profile id (see the README's profile table, or your profiles file).
    #[arg(long, value_name = "PROFILE")]
    pub model: String,
    /// Skill bundle A (folder or ZIP).
    #[arg(long, value_name = "BUNDLE")]
    pub a: Option<std::path::PathBuf>,
    /// Skill bundle B (folder or ZIP); needs --a.
    #[arg(long, value_name = "BUNDLE")]
    pub b: Option<std::path::PathBuf>,
    /// Repetitions of every (task, arm).
    #[arg(long, default_value_t = DEFAULT_REPETITIONS, allow_negative_numbers = true)]
    pub reps: u32,
    /// Budget cap in USD (required for priced profiles), e.g. 4 or 0.50.
    #[arg(long, value_name = "USD", allow_negative_numbers = true, value_parser = MicroUsd::parse_usd)]
    pub cap_usd: Option<MicroUsd>,
    /// Arm-order seed (random when omitted; recorded in the manifest).
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// Hard cap on requests (default 100; required for unpriced profiles).
    #[arg(long, allow_negative_numbers = true)]
    pub max_requests: Option<u32>,
    /// Hard cap on tokens over the run (required for unpriced profiles).
    #[arg(long, allow_negative_numbers = true)]
    pub max_tokens: Option<u64>,
    /// Output limit per request (default 2048, at most the profile's).
    #[arg(long, allow_negative_numbers = true)]
    pub max_output_tokens: Option<u64>,
    /// Also write the manifest here.
    #[arg(long, value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
    /// A release-gate policy (TOML, docs/gate.md) to pin in the manifest: `skilltrial gate` then
    /// judges the run by exactly this text, written before any result was seen.
    #[arg(long, value_name = "GATE_TOML")]
    pub gate: Option<std::path::PathBuf>,
    /// A TOML file of extra model profiles (default $XDG_CONFIG_HOME/skilltrial/profiles.toml).
    #[arg(long, value_name = "FILE")]
    pub profiles: Option<std::path::PathBuf>,
    /// The model name your own server serves (e.g. qwen3:8b), for a profile without a price such
    /// as openai-compatible-local.
    #[arg(long, value_name = "NAME", env = "SKILLTRIAL_MODEL_NAME")]
    pub model_name: Option<String>,
    /// For a hosted run: pin this SOL/USD rate in the manifest (e.g. 151.25). `skilltrial open`
    /// escrows the run's upper cost converted at it.
    #[arg(long, value_name = "USD", allow_negative_numbers = true, value_parser = MicroUsd::parse_usd)]
    pub sol_usd: Option<MicroUsd>,
    /// Where the --sol-usd rate comes from (recorded with it and shown before the escrow).
    #[arg(long, value_name = "TEXT", requires = "sol_usd", value_parser = non_blank)]
    pub sol_usd_source: Option<String>,
    /// How the skill reaches the model: `inline` (the whole bundle in every prompt, the default)
    /// or `progressive` (a catalog of names and descriptions; the model loads SKILL.md and reads
    /// files with tools, over at most --max-turns requests per trial).
    #[arg(long, value_name = "MODE", default_value = "inline", value_parser = parse_delivery)]
    pub delivery: skilltrial_core::delivery::Mode,
    /// K: the most requests one progressive trial sends (2 to 12, default 4).
    #[arg(long, value_name = "K", value_parser = parse_max_turns, allow_negative_numbers = true)]
    pub max_turns: Option<u32>,
    /// Other skills (folders or ZIPs) listed in every arm's catalog beside the arm's own, the
    /// baseline's too (needs --delivery progressive): does the model pick A or B among them, and
    /// how often does it load another instead?
    #[arg(long, value_name = "BUNDLE", num_args = 1..)]
    pub with_skills: Vec<std::path::PathBuf>,
    /// Use the provider's prompt cache: mark the stable prefix of every request (Anthropic
    /// `cache_control`; OpenAI caches shared prefixes itself) and price cached tokens at the
    /// profile's cache prices. Reservations price every input token as a cache write.
    #[arg(long)]
    pub cache: bool,
}

fn parse_delivery(text: &str) -> Result<skilltrial_core::delivery::Mode, String> {
    text.parse()
}

fn parse_max_turns(text: &str) -> Result<u32, String> {
    skilltrial_core::delivery::parse_max_turns(text)
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The manifest hash printed by `plan`.
    #[arg(long, value_name = "HASH")]
    pub manifest: String,
    /// Show the trials and bounds without sending anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Confirm a run without a monetary cap (unpriced profile) without a prompt.
    #[arg(long)]
    pub yes: bool,
    /// Stop after this many dispatches in this invocation (the run can be resumed).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_dispatch: Option<u32>,
    /// Requests in flight at once, 1 to 64 (default 1: one at a time). Not part of the
    /// manifest: the trials go out in their planned order and every cap holds exactly at any
    /// setting (docs/runs.md, "Concurrency").
    #[arg(long, value_name = "N", default_value_t = Concurrency::SEQUENTIAL, allow_negative_numbers = true)]
    pub concurrency: Concurrency,
}

#[derive(Debug, Args)]
pub struct RunRef {
    /// The run id (or a unique prefix of at least 8 characters); the latest run when omitted.
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("decision").required(true).args(["retry", "release"])))]
pub struct ResolveArgs {
    /// The attempt id (shown by `status`).
    #[arg(value_name = "ATTEMPT")]
    pub attempt: String,
    /// Plan a new attempt of the same trial.
    #[arg(long, requires = "reason")]
    pub retry: bool,
    /// Close the attempt, counting its reserve as spent.
    #[arg(long)]
    pub release: bool,
    /// Why the attempt is retried (kept with the new attempt).
    #[arg(long, value_parser = non_blank)]
    pub reason: Option<String>,
}

/// An address: 32 bytes in base58.
/// A runner daemon's URL: http or https, a host, nothing after the path.
fn runner_url(text: &str) -> Result<url::Url, String> {
    let url: url::Url = text
        .parse()
        .map_err(|e| format!("`{text}` is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("`{text}`: a runner URL is http(s)://host[:port]"));
    }
    if url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(format!(
            "`{text}`: a runner URL has no credentials, query or fragment"
        ));
    }
    Ok(url)
}

fn address(text: &str) -> Result<Address, String> {
    let bytes = bs58::decode(text.trim())
        .into_vec()
        .map_err(|_| "not a base58 address".to_owned())?;
    let array: [u8; 32] = bytes
        .try_into()
        .map_err(|b: Vec<u8>| format!("decodes to {} bytes, an address has 32", b.len()))?;
    Ok(Address(array))
}

/// A transaction signature as `--signature` gives it: 64 bytes, written in base58.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxSignature(pub [u8; 64]);

impl std::fmt::Display for TxSignature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&bs58::encode(self.0).into_string())
    }
}

#[cfg(feature = "chain")]
impl From<SpendingLimit> for skilltrial_chain::ix::SpendingLimit {
    fn from(limit: SpendingLimit) -> Self {
        skilltrial_chain::ix::SpendingLimit {
            amount: limit.amount,
            period_secs: limit.period_secs,
        }
    }
}

/// A transaction signature: 64 bytes in base58.
fn signature(text: &str) -> Result<TxSignature, String> {
    let refused = || "not a transaction signature (64 bytes in base58)".to_owned();
    let bytes = bs58::decode(text.trim())
        .into_vec()
        .map_err(|_| refused())?;
    bytes.try_into().map(TxSignature).map_err(|_| refused())
}

/// `--buyback-rate TOKENS:LAMPORTS`: the least tokens burned per lamport released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuybackRate {
    pub tokens: u64,
    pub lamports: u64,
}

#[cfg(feature = "chain")]
impl From<BuybackRate> for skilltrial_chain::ix::BuybackRate {
    fn from(rate: BuybackRate) -> Self {
        skilltrial_chain::ix::BuybackRate {
            tokens: rate.tokens,
            lamports: rate.lamports,
        }
    }
}

/// `--usage-limit LAMPORTS/SECS`: the most usage settled per period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpendingLimit {
    pub amount: u64,
    pub period_secs: i64,
}

/// A duration: 90s, 30m, 24h, 7d, or plain seconds; positive.
fn duration(text: &str) -> Result<i64, String> {
    let refused = || "not a positive duration (e.g. 90s, 30m, 24h, 7d)".to_owned();
    let trimmed = text.trim();
    let (number, unit) = match trimmed.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => trimmed.split_at(i),
        None => (trimmed, "s"),
    };
    let n: i64 = number.parse().map_err(|_| refused())?;
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(refused()),
    };
    n.checked_mul(scale)
        .filter(|secs| *secs > 0)
        .ok_or_else(refused)
}

/// A lease length: a [`duration`] of 3 s to 1 h (renewed every third of it, so a second at
/// least between renewals).
fn lease_duration(text: &str) -> Result<std::time::Duration, String> {
    let secs = duration(text)?;
    if !(3..=3_600).contains(&secs) {
        return Err(format!("{secs} s is out of range: a lease is 3s to 1h"));
    }
    Ok(std::time::Duration::from_secs(secs.unsigned_abs()))
}

/// `TOKENS:LAMPORTS`, both positive.
fn buyback_rate(text: &str) -> Result<BuybackRate, String> {
    let refused = || "not TOKENS:LAMPORTS (two positive integers, e.g. 1000:1)".to_owned();
    let (tokens, lamports) = text.split_once(':').ok_or_else(refused)?;
    let tokens: u64 = tokens.trim().parse().map_err(|_| refused())?;
    let lamports: u64 = lamports.trim().parse().map_err(|_| refused())?;
    if tokens == 0 || lamports == 0 {
        return Err(refused());
    }
    Ok(BuybackRate { tokens, lamports })
}

/// `LAMPORTS/SECS`.
/// A buyback venue's base URL: https, or plain http only to this machine. Its answers are
/// checked before anything is signed, but a route, a quote and the API key still should not
/// cross a network in clear text or come from whoever sits on the path.
fn venue_url(text: &str) -> Result<url::Url, String> {
    let url: url::Url = text
        .parse()
        .map_err(|e| format!("{text:?} is not a URL: {e}"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        other => Err(format!(
            "{text:?} uses {other}: a venue URL must be https (plain http only on a loopback address, for a test venue)"
        )),
    }
}

fn usage_limit(text: &str) -> Result<SpendingLimit, String> {
    let refused = || "not LAMPORTS/SECS (e.g. 100000000000/86400)".to_owned();
    let (amount, period) = text.split_once('/').ok_or_else(refused)?;
    Ok(SpendingLimit {
        amount: amount.trim().parse().map_err(|_| refused())?,
        period_secs: period.trim().parse().map_err(|_| refused())?,
    })
}

/// A text that says something: trimmed, and refused when nothing is left.
fn non_blank(text: &str) -> Result<String, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        Err("it is empty: say why".to_owned())
    } else {
        Ok(trimmed.to_owned())
    }
}

#[derive(Debug, Args)]
pub struct PurgeArgs {
    /// Delete payloads older than this: 30d, 12h, 0d.
    #[arg(long, default_value = "30d", value_name = "AGE", value_parser = parse_age)]
    pub older_than: Age,
}

#[derive(Debug, Subcommand)]
pub enum PackCommand {
    /// List the packs built into this binary.
    List,
    /// Show a pack's public tasks (the golden record only with --reveal).
    Show(PackShowArgs),
    /// Verify a pack: hashes, golden records regenerate, golden answers pass, every known-wrong
    /// answer is rejected with its stated reasons. Exits 1 on any failure.
    Verify(PackArg),
    /// Maintainers: rewrite every golden.json of a pack folder from its raw inputs.
    #[command(hide = true)]
    Regenerate(PackArg),
    /// Start a pack of your own: a folder with an empty pack.json (docs/pack-and-checker.md).
    New(PackNewArgs),
    /// Add a task to your pack from chain data, fetched once at `finalized` from --url: an
    /// account, a transaction, or a transfer to plan. The golden record comes from the decoder,
    /// the known-wrong answers from mutating it, each with the checker's exact verdict.
    AddTask(PackAddTaskArgs),
    /// Seal your pack: regenerate every golden record from its raw input, verify every claim,
    /// and print the content hash a manifest pins when you plan with `--pack <folder>`.
    Build(PackArg),
}

#[derive(Debug, Args)]
pub struct PackNewArgs {
    /// The folder to create (it must not exist, or be empty).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The pack's name: lowercase letters, digits, `-`, `.`, `_`.
    #[arg(long)]
    pub name: String,
    /// The pack's version (a released pack never changes: a change is a new version).
    #[arg(long, value_name = "VERSION", default_value = "0.1.0")]
    pub pack_version: String,
    /// One sentence on what the pack holds.
    #[arg(long, default_value = "")]
    pub description: String,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("source").required(true).args(["account", "transaction", "transfer"])))]
pub struct PackAddTaskArgs {
    /// The pack folder (made with `pack new`).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// A token account or mint (SPL Token or Token-2022), by address.
    #[arg(long, value_name = "ADDRESS")]
    pub account: Option<String>,
    /// A transaction (legacy or version 0), by signature.
    #[arg(long, value_name = "SIGNATURE")]
    pub transaction: Option<String>,
    /// A transfer to plan: needs --mint, --from, --to and --amount (and takes --memo).
    #[arg(long, requires_all = ["mint", "from", "to", "amount"])]
    pub transfer: bool,
    /// The transfer's mint (its bytes are fetched).
    #[arg(long, value_name = "ADDRESS")]
    pub mint: Option<String>,
    /// The sender's wallet (owner of the source token account).
    #[arg(long, value_name = "ADDRESS")]
    pub from: Option<String>,
    /// The recipient's wallet.
    #[arg(long, value_name = "ADDRESS")]
    pub to: Option<String>,
    /// The amount in whole tokens, e.g. 12.5.
    #[arg(long, value_name = "TOKENS")]
    pub amount: Option<String>,
    /// A memo to attach.
    #[arg(long)]
    pub memo: Option<String>,
    /// The Solana JSON-RPC endpoint to fetch from (required: no cluster is assumed).
    #[arg(long, value_name = "URL")]
    pub url: String,
    /// The task id (default: from the kind and the address or signature).
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// The network tag the task records (default: from the cluster's genesis hash: mainnet,
    /// devnet, testnet, else localnet).
    #[arg(long, value_name = "NAME")]
    pub network: Option<String>,
}

#[derive(Debug, Args)]
pub struct PackArg {
    /// An embedded pack (e.g. solana-core@1.0.3) or a pack folder.
    #[arg(value_name = "PACK")]
    pub pack: String,
}

#[derive(Debug, Args)]
pub struct PackShowArgs {
    /// An embedded pack (e.g. solana-core@1.0.3) or a pack folder.
    #[arg(value_name = "PACK")]
    pub pack: String,
    /// Only this task.
    #[arg(long, value_name = "TASK")]
    pub task: Option<String>,
    /// Also show each task's expected answer (never shown to a model).
    #[arg(long)]
    pub reveal: bool,
    /// Print the full task text a model is given, input included.
    #[arg(long)]
    pub prompt: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// An embedded pack (e.g. solana-core@1.0.3) or a pack folder.
    #[arg(long, value_name = "PACK")]
    pub pack: String,
    /// The task id.
    #[arg(long, value_name = "TASK")]
    pub task: String,
    /// The answer file (`-` for standard input).
    #[arg(value_name = "ANSWER_FILE")]
    pub answer: std::path::PathBuf,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Bundle folders or ZIP files, e.g. ./v1.4.2 ./v1.5.0.zip
    #[arg(required = true, value_name = "BUNDLE")]
    pub bundles: Vec<PathBuf>,
    /// Also check the lint rules for skill authors (docs/bundles.md, "Lint rules"): each finding
    /// with its rule id, severity and file:line. Lint never changes a digest or a score.
    #[arg(long)]
    pub lint: bool,
    /// The rule set: strict (the Agent Skills format as written) or lenient (what Claude Code
    /// accepts).
    #[arg(long, value_enum, default_value_t = LintMode::Strict, requires = "lint")]
    pub mode: LintMode,
    /// Rewrite what is mechanical in folder bundles (a `name` into the format, a link whose
    /// target differs from a bundle file only in letter case), then lint again.
    #[arg(long, requires = "lint")]
    pub fix: bool,
}

/// `validate --mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LintMode {
    Strict,
    Lenient,
}

/// Parses the arguments. Help and version print and exit 0; usage errors print (as JSON when
/// `--json` was given) and exit 2.
pub fn parse(args: Vec<OsString>) -> Result<Cli, ExitCode> {
    // Only here is `--json` looked for by hand: a usage error has no parsed flags to ask.
    let json = args.iter().any(|a| a == "--json");
    Cli::try_parse_from(args).map_err(|error| exit::clap_error(&error, json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        // clap's own checks (unique names, valid groups and requirements) over every command,
        // which otherwise run only when a command is first parsed.
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_parse_with_units_and_are_positive() {
        assert_eq!(duration("90s"), Ok(90));
        assert_eq!(duration("24h"), Ok(86_400));
        assert_eq!(duration("7d"), Ok(604_800));
        assert_eq!(duration("15"), Ok(15));
        for bad in [
            "",
            "h",
            "-5m",
            "0",
            "0s",
            "5w",
            "1.5h",
            "99999999999999999999d",
        ] {
            assert!(duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn addresses_rates_and_limits_are_checked() {
        assert!(address("11111111111111111111111111111111").is_ok());
        assert_eq!(
            address("not-an-address!"),
            Err("not a base58 address".to_owned())
        );
        assert_eq!(
            address("abc"),
            Err("decodes to 3 bytes, an address has 32".to_owned())
        );
        assert!(signature("abc").is_err());
        assert_eq!(
            buyback_rate("1000:1").map(|r| (r.tokens, r.lamports)),
            Ok((1000, 1))
        );
        for bad in ["1000", "0:1", "1:0", "a:b", "-1:1"] {
            assert!(buyback_rate(bad).is_err(), "{bad}");
        }
        assert_eq!(
            usage_limit("5/60").map(|l| (l.amount, l.period_secs)),
            Ok((5, 60))
        );
        assert!(usage_limit("5:60").is_err());
        assert!(venue_url("https://api.jup.ag/swap/v2").is_ok());
        assert!(venue_url("http://127.0.0.1:9/x").is_ok());
        assert!(venue_url("http://[::1]:9/x").is_ok());
        assert!(venue_url("http://localhost:9").is_ok());
        for bad in [
            "http://api.jup.ag/swap/v2",
            "ftp://127.0.0.1/",
            "http://10.0.0.1/",
            "nonsense",
        ] {
            assert!(venue_url(bad).is_err(), "{bad}");
        }
    }
}
