//! Operators: `skilltrial admin init|update|propose|apply|accept|show` and `skilltrial
//! buyback-log`. Every bound the program enforces (fee, deadline, time lock, periods) is the
//! program's own; the commands check what they can before signing so a refusal costs nothing,
//! and the program checks it all again.

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_chain::ix::{
    self, ConfigChange, ConfigInitArgs, ConfigUpdateArgs, RunnerKeys, SpendingLimit,
};
use skilltrial_chain::rpc::Chain;
use skilltrial_chain::{anchor_key, host_key, pda};
use solana_signer::Signer;

use crate::cli::{
    AdminCommand, AdminInitArgs, AdminProposeArgs, AdminUpdateArgs, ChainOnlyArgs, Global,
};
use crate::commands::chain::{self, Session, sol, when};
use crate::exit::{CliError, Status};
use crate::output;

/// `admin update|apply|accept --json`: the transaction that made the change.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Sent {
    /// The transaction's signature (base58).
    pub signature: String,
}

/// `admin init --json`: the config created.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Initialized {
    /// The transaction's signature.
    pub signature: String,
    /// The config account's address.
    pub config: String,
    /// The admin: the wallet that signed (the program's upgrade authority).
    pub admin: String,
}

/// `admin propose --json`: the time-locked change proposed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Proposed {
    /// The transaction's signature.
    pub signature: String,
    /// From when `admin apply` may apply it (RFC 3339, cluster time).
    pub effective_at: Option<String>,
}

/// `admin show --json`: the program's config decoded, with its pending change and the fee
/// vault's books.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConfigView {
    /// The config account's address.
    pub config: String,
    pub version: u8,
    pub admin: String,
    /// The admin proposed to take over (`admin accept`), if any.
    pub pending_admin: Option<String>,
    /// The runner allowed to settle runs; null once revoked.
    pub runner: Option<String>,
    pub runner_payout: String,
    pub fee_per_trial_lamports: u64,
    pub min_deadline_secs: i64,
    pub time_lock_secs: i64,
    /// `<lamports>/<period seconds>`.
    pub usage_limit: String,
    /// The $SKTRIAL mint buybacks burn.
    pub sktrial_mint: String,
    pub buyback_interval_secs: i64,
    pub max_buyback_lamports: u64,
    /// `<tokens>:<lamports>`: the least a buyback must buy.
    pub buyback_rate: String,
    /// The time-locked change waiting to be applied, if any.
    pub pending: Option<PendingView>,
    /// The fee vault's books (null when it does not exist yet).
    pub fee_vault: Option<FeeVaultView>,
}

/// A proposed change and when it may apply.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PendingView {
    pub change: ChangeView,
    /// RFC 3339, cluster time.
    pub effective_at: String,
}

/// What a proposed change sets; null for what it leaves as it is. (Members in alphabetical
/// order: `admin show` prints this object in its text too, as it always has.)
#[derive(Debug, Serialize, JsonSchema)]
pub struct ChangeView {
    pub buyback_interval_secs: Option<i64>,
    /// `<tokens>:<lamports>`.
    pub buyback_rate: Option<String>,
    pub max_buyback_lamports: Option<u64>,
    pub runner: Option<RunnerView>,
    pub sktrial_mint: Option<String>,
    pub time_lock_secs: Option<i64>,
    /// `<lamports>/<period seconds>`.
    pub usage_limit: Option<String>,
}

/// A runner's keys. (Alphabetical, as [`ChangeView`].)
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunnerView {
    pub payout: String,
    pub signer: String,
}

/// The fee vault's books.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FeeVaultView {
    pub address: String,
    /// What the account holds now.
    pub lamports: u64,
    pub next_run_id: u64,
    pub total_trials_settled: u64,
    pub total_usage_lamports: u64,
    pub total_fees_lamports: u64,
    pub total_bought_back_lamports: u64,
    /// $SKTRIAL base units burned by buybacks.
    pub total_burned: u64,
}

/// `buyback-log --json`: every buyback-and-burn the log holds, newest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BuybackLogView {
    /// Buybacks ever made (the log keeps the latest ones).
    pub count: u64,
    pub entries: Vec<BuybackEntryView>,
    /// From the fee vault (null when it does not exist).
    pub total_bought_back_lamports: Option<u64>,
    pub total_burned: Option<u64>,
}

/// One buyback.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BuybackEntryView {
    /// RFC 3339, cluster time.
    pub at: String,
    /// Fees spent.
    pub lamports_in: u64,
    /// $SKTRIAL base units burned.
    pub tokens_burned: u64,
    pub burn_index: u64,
    /// The token account burned from.
    pub token_account: String,
}

pub fn run(command: AdminCommand, global: &Global) -> Result<Status, CliError> {
    match command {
        AdminCommand::Init(args) => init(&args, global),
        AdminCommand::Update(args) => update(&args, global),
        AdminCommand::Propose(args) => propose(&args, global),
        AdminCommand::Apply(args) => apply(&args, global),
        AdminCommand::Accept(args) => accept(&args, global),
        AdminCommand::Show(args) => show(&args, global),
    }
}

fn rejected(message: String) -> CliError {
    CliError::Rejected(anyhow::anyhow!(message))
}

/// The config, or a clear "not initialized".
fn config(chain: &Chain) -> Result<skilltrial_chain::account::Config, CliError> {
    chain.config()?.ok_or_else(|| {
        CliError::Environment(anyhow::anyhow!(
            "{}: the SkillTrial program has no config on this cluster yet (`skilltrial admin init`)",
            chain.url()
        ))
    })
}

/// The wallet, refused unless it is the config's admin.
fn admin_wallet(
    session: &Session,
    config: &skilltrial_chain::account::Config,
) -> Result<solana_keypair::Keypair, CliError> {
    let wallet = session.signer()?;
    if anchor_key(&wallet.pubkey()) != config.admin {
        return Err(rejected(format!(
            "your wallet {} is not the program's admin ({}); --keypair names the wallet",
            wallet.pubkey(),
            config.admin
        )));
    }
    Ok(wallet)
}

fn init(args: &AdminInitArgs, global: &Global) -> Result<Status, CliError> {
    let (runner, payout, mint, rate) = (
        host_key(&args.runner),
        host_key(&args.runner_payout),
        host_key(&args.mint),
        args.buyback_rate.into(),
    );
    let session = chain::connect(&args.solana, global)?;
    if session.chain.config()?.is_some() {
        return Err(rejected(format!(
            "{}: the config already exists (`skilltrial admin show`); change it with `admin update` or `admin propose`",
            session.chain.url()
        )));
    }
    let wallet = session.signer()?;
    let init_args = ConfigInitArgs {
        runner: anchor_key(&runner),
        runner_payout: anchor_key(&payout),
        fee_per_trial: args.fee_lamports,
        min_deadline_secs: args.min_deadline_secs,
        time_lock_secs: args.time_lock_secs,
        usage_limit: SpendingLimit {
            amount: args.usage_limit_lamports,
            period_secs: args.usage_period_secs,
        },
        sktrial_mint: anchor_key(&mint),
        buyback_interval_secs: args.buyback_interval_secs,
        max_buyback_lamports: args.max_buyback_lamports,
        buyback_rate: rate,
    };
    crate::commands::progress::notice(&format!(
        "initializing the config on {} with admin {} (the program's upgrade authority must sign)",
        session.chain.url(),
        wallet.pubkey()
    ));
    if !args.yes {
        crate::commands::open::approve("Initialize the config?")?;
    }
    let sent = session.send(
        "config_init",
        &wallet,
        &[ix::config_init(&wallet.pubkey(), init_args)],
    )?;
    if global.json {
        output::json(&Initialized {
            signature: sent.signature.to_string(),
            config: pda::config().to_string(),
            admin: wallet.pubkey().to_string(),
        })?;
    } else {
        output::text(&format!(
            "initialized the config {} (transaction {}); admin {}\n",
            pda::config(),
            sent.signature,
            wallet.pubkey()
        ))?;
    }
    Ok(Status::Ok)
}

fn update(args: &AdminUpdateArgs, global: &Global) -> Result<Status, CliError> {
    let propose_admin = args.propose_admin;
    if args.fee_lamports.is_none()
        && args.min_deadline_secs.is_none()
        && !args.revoke_runner
        && propose_admin.is_none()
    {
        return Err(rejected(
            "admin update: nothing to change (--fee-lamports, --min-deadline-secs, --revoke-runner, --propose-admin)".to_owned(),
        ));
    }
    let session = chain::connect(&args.solana, global)?;
    let current = config(&session.chain)?;
    let wallet = admin_wallet(&session, &current)?;
    let update = ConfigUpdateArgs {
        fee_per_trial: args.fee_lamports,
        min_deadline_secs: args.min_deadline_secs,
        revoke_runner: args.revoke_runner,
        propose_admin: propose_admin.as_ref().map(|a| anchor_key(&host_key(a))),
    };
    let sent = session.send(
        &format!("config_update:{}", now_nanos()),
        &wallet,
        &[ix::config_update(&wallet.pubkey(), update)],
    )?;
    report_sent(global, &sent.signature, "updated the config")
}

fn propose(args: &AdminProposeArgs, global: &Global) -> Result<Status, CliError> {
    let runner = match (&args.runner, &args.runner_payout) {
        (Some(signer), Some(payout)) => Some(RunnerKeys {
            signer: anchor_key(&host_key(signer)),
            payout: anchor_key(&host_key(payout)),
        }),
        _ => None,
    };
    let change = ConfigChange {
        runner,
        sktrial_mint: args.mint.as_ref().map(|m| anchor_key(&host_key(m))),
        buyback_interval_secs: args.buyback_interval_secs,
        max_buyback_lamports: args.max_buyback_lamports,
        buyback_rate: args.buyback_rate.map(Into::into),
        usage_limit: args.usage_limit.map(Into::into),
        time_lock_secs: args.time_lock_secs,
    };
    if change.is_empty() {
        return Err(rejected(
            "admin propose: nothing to propose (--runner/--runner-payout, --mint, --buyback-*, --usage-limit, --time-lock-secs)".to_owned(),
        ));
    }
    let session = chain::connect(&args.solana, global)?;
    let current = config(&session.chain)?;
    let wallet = admin_wallet(&session, &current)?;
    let sent = session.send(
        &format!("config_propose:{}", now_nanos()),
        &wallet,
        &[ix::config_propose(&wallet.pubkey(), change)],
    )?;
    let after = config(&session.chain)?;
    let effective = after.pending.as_ref().map(|p| when(p.effective_at));
    if global.json {
        output::json(&Proposed {
            signature: sent.signature.to_string(),
            effective_at: effective,
        })?;
    } else {
        output::text(&format!(
            "proposed (transaction {}); `skilltrial admin apply` from {}\n",
            sent.signature,
            effective.unwrap_or_default()
        ))?;
    }
    Ok(Status::Ok)
}

fn apply(args: &ChainOnlyArgs, global: &Global) -> Result<Status, CliError> {
    let session = chain::connect(&args.solana, global)?;
    let current = config(&session.chain)?;
    let wallet = admin_wallet(&session, &current)?;
    let Some(pending) = &current.pending else {
        return Err(rejected("admin apply: no change is pending".to_owned()));
    };
    let now = session.chain.cluster_time()?;
    if now < pending.effective_at {
        return Err(rejected(format!(
            "admin apply: the pending change takes effect at {} (cluster time {}): the time lock has not passed",
            when(pending.effective_at),
            when(now)
        )));
    }
    let sent = session.send(
        &format!("config_apply:{}", pending.effective_at),
        &wallet,
        &[ix::config_apply(&wallet.pubkey())],
    )?;
    report_sent(global, &sent.signature, "applied the pending change")
}

fn accept(args: &ChainOnlyArgs, global: &Global) -> Result<Status, CliError> {
    let session = chain::connect(&args.solana, global)?;
    let current = config(&session.chain)?;
    let wallet = session.signer()?;
    if current.pending_admin != Some(anchor_key(&wallet.pubkey())) {
        return Err(rejected(format!(
            "admin accept: your wallet {} is not the proposed admin ({})",
            wallet.pubkey(),
            current
                .pending_admin
                .map_or_else(|| "none is proposed".to_owned(), |k| k.to_string())
        )));
    }
    let sent = session.send(
        &format!("config_accept_admin:{}", wallet.pubkey()),
        &wallet,
        &[ix::config_accept_admin(&wallet.pubkey())],
    )?;
    report_sent(global, &sent.signature, "you are now the admin")
}

fn report_sent(global: &Global, signature: &impl ToString, what: &str) -> Result<Status, CliError> {
    if global.json {
        output::json(&Sent {
            signature: signature.to_string(),
        })?;
    } else {
        output::text(&format!("{what} (transaction {})\n", signature.to_string()))?;
    }
    Ok(Status::Ok)
}

/// A fresh intent name for changes that may rightly be sent again with the same content.
fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn change_view(change: &ConfigChange) -> ChangeView {
    ChangeView {
        buyback_interval_secs: change.buyback_interval_secs,
        buyback_rate: change
            .buyback_rate
            .map(|r| format!("{}:{}", r.tokens, r.lamports)),
        max_buyback_lamports: change.max_buyback_lamports,
        runner: change.runner.map(|r| RunnerView {
            payout: r.payout.to_string(),
            signer: r.signer.to_string(),
        }),
        sktrial_mint: change.sktrial_mint.map(|k| k.to_string()),
        time_lock_secs: change.time_lock_secs,
        usage_limit: change
            .usage_limit
            .map(|l| format!("{}/{}", l.amount, l.period_secs)),
    }
}

fn show(args: &ChainOnlyArgs, global: &Global) -> Result<Status, CliError> {
    let session = chain::connect(&args.solana, global)?;
    let c = config(&session.chain)?;
    let vault = session.chain.fee_vault()?;
    let doc = ConfigView {
        config: pda::config().to_string(),
        version: c.version,
        admin: c.admin.to_string(),
        pending_admin: c.pending_admin.map(|k| k.to_string()),
        runner: c.has_runner().then(|| c.runner.to_string()),
        runner_payout: c.runner_payout.to_string(),
        fee_per_trial_lamports: c.fee_per_trial,
        min_deadline_secs: c.min_deadline_secs,
        time_lock_secs: c.time_lock_secs,
        usage_limit: format!("{}/{}", c.usage_limit.amount, c.usage_limit.period_secs),
        sktrial_mint: c.sktrial_mint.to_string(),
        buyback_interval_secs: c.buyback_interval_secs,
        max_buyback_lamports: c.max_buyback_lamports,
        buyback_rate: format!("{}:{}", c.buyback_rate.tokens, c.buyback_rate.lamports),
        pending: c.pending.as_ref().map(|p| PendingView {
            change: change_view(&p.change),
            effective_at: when(p.effective_at),
        }),
        fee_vault: vault.as_ref().map(|(v, lamports)| FeeVaultView {
            address: pda::fee_vault().to_string(),
            lamports: *lamports,
            next_run_id: v.next_run_id,
            total_trials_settled: v.total_trials_settled,
            total_usage_lamports: v.total_usage,
            total_fees_lamports: v.total_fees,
            total_bought_back_lamports: v.total_bought_back,
            total_burned: v.total_burned,
        }),
    };
    if global.json {
        output::json(&doc)?;
        return Ok(Status::Ok);
    }
    let mut out = format!(
        "config        {}\nadmin         {}{}\nrunner        {} (payout {})\nfee           {} per executed trial\ndeadlines     at least {} s\ntime lock     {} s\nusage limit   {} per {} s\nmint          {}\nbuybacks      every {} s or more, at most {}, at least {} tokens per {} lamports\n",
        pda::config(),
        c.admin,
        c.pending_admin
            .map(|k| format!(" (proposed: {k})"))
            .unwrap_or_default(),
        if c.has_runner() {
            c.runner.to_string()
        } else {
            "revoked".to_owned()
        },
        c.runner_payout,
        sol(c.fee_per_trial),
        c.min_deadline_secs,
        c.time_lock_secs,
        sol(c.usage_limit.amount),
        c.usage_limit.period_secs,
        c.sktrial_mint,
        c.buyback_interval_secs,
        sol(c.max_buyback_lamports),
        c.buyback_rate.tokens,
        c.buyback_rate.lamports,
    );
    if let Some(p) = &c.pending {
        // The change as one line of JSON, as the text has always shown it.
        let change = serde_json::to_string(&change_view(&p.change)).unwrap_or_default();
        out.push_str(&format!(
            "pending       {change} from {}\n",
            when(p.effective_at)
        ));
    }
    if let Some((v, lamports)) = &vault {
        out.push_str(&format!(
            "fee vault     {} holds {}; {} trials settled, usage {}, fees {}, bought back {}\n",
            pda::fee_vault(),
            sol(*lamports),
            v.total_trials_settled,
            sol(v.total_usage),
            sol(v.total_fees),
            sol(v.total_bought_back),
        ));
    }
    output::text(&out)?;
    Ok(Status::Ok)
}

/// `skilltrial buyback-log`.
pub fn buyback_log(args: &ChainOnlyArgs, global: &Global) -> Result<Status, CliError> {
    let session = chain::connect(&args.solana, global)?;
    let log = session
        .chain
        .buyback_log()
        ?
        .ok_or_else(|| {
            CliError::Environment(anyhow::anyhow!(
                "{}: the SkillTrial program has no buyback log on this cluster yet (`skilltrial admin init`)",
                session.chain.url()
            ))
        })?;
    let vault = session.chain.fee_vault()?;
    let entries = skilltrial_chain::account::buyback_entries(&log);
    if global.json {
        let entries = entries
            .iter()
            .map(|e| BuybackEntryView {
                at: when(e.at),
                lamports_in: e.lamports_in,
                tokens_burned: e.tokens_burned,
                burn_index: e.burn_index,
                token_account: e.token_account.to_string(),
            })
            .collect();
        output::json(&BuybackLogView {
            count: log.count,
            entries,
            total_bought_back_lamports: vault.as_ref().map(|(v, _)| v.total_bought_back),
            total_burned: vault.as_ref().map(|(v, _)| v.total_burned),
        })?;
        return Ok(Status::Ok);
    }
    let mut out = format!("{} buybacks in all", log.count);
    if let Some((v, _)) = &vault {
        out.push_str(&format!(
            ": {} released, {} tokens burned",
            sol(v.total_bought_back),
            v.total_burned
        ));
    }
    out.push('\n');
    for e in &entries {
        out.push_str(&format!(
            "{}  {}  burned {} from {}\n",
            when(e.at),
            sol(e.lamports_in),
            e.tokens_burned,
            e.token_account
        ));
    }
    output::text(&out)?;
    Ok(Status::Ok)
}
