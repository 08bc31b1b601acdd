//! Seeds and fixed limits, in one place. Seeds MUST NOT change: they derive existing accounts.

/// `[CONFIG_SEED]` → the program's single Config account.
pub const CONFIG_SEED: &[u8] = b"config";
/// `[FEE_VAULT_SEED]` → the fee vault that collects runner fees until a buyback.
pub const FEE_VAULT_SEED: &[u8] = b"fee_vault";
/// `[RUN_SEED, user, manifest_hash]` → one hosted run.
pub const RUN_SEED: &[u8] = b"run";
/// `[BUYBACK_LOG_SEED]` → the on-chain buyback log.
pub const BUYBACK_LOG_SEED: &[u8] = b"buyback_log";

/// Most trials one run may plan (docs/runs.md: 100 requests per run by default).
pub const MAX_TRIALS: u16 = 100;
/// Bytes of the settled-trials bitmap: one bit per trial.
pub const SETTLED_BITMAP_BYTES: usize = 13;
/// Most trials settled in one `run_settle` (keeps a batch inside one transaction).
pub const MAX_SETTLE_BATCH: usize = 60;
/// After a cancel, how long the runner may still settle requests that were already in flight
/// (docs/runs.md: a request already sent may still cost money, its usage is never zeroed). A request
/// takes at most 60 s; the rest is time to submit the settlement.
pub const CANCEL_SETTLE_WINDOW_SECS: i64 = 10 * 60;
/// The nearest deadline a run may set: the default run limit (60 min) plus time to settle and
/// finalize, so a user cannot refund from under a runner that is still executing.
pub const MIN_DEADLINE_SECS: i64 = 75 * 60;
/// Entries the buyback log keeps (a ring buffer).
pub const BUYBACK_LOG_LEN: usize = 32;
/// The runner fee per executed trial when the config is created: 0.0002 SOL.
pub const DEFAULT_FEE_PER_TRIAL: u64 = 200_000;
/// The buyback interval when the config is created: 6 hours.
pub const DEFAULT_BUYBACK_INTERVAL_SECS: i64 = 6 * 60 * 60;
