//! Seeds, the singletons' addresses and every fixed limit, in one place. Seeds MUST NOT change:
//! they derive existing accounts.

use anchor_lang::prelude::*;

/// `[CONFIG_SEED]` → the program's single Config account.
pub const CONFIG_SEED: &[u8] = b"config";
/// `[FEE_VAULT_SEED]` → the fee vault: runner fees awaiting a buyback, and the program's books.
pub const FEE_VAULT_SEED: &[u8] = b"fee_vault";
/// `[RUN_SEED, user, manifest_hash]` → one hosted run.
pub const RUN_SEED: &[u8] = b"run";
/// `[BUYBACK_LOG_SEED]` → the on-chain buyback log.
pub const BUYBACK_LOG_SEED: &[u8] = b"buyback_log";

/// The singletons' canonical addresses, derived at compile time from their seeds. Instructions
/// check these by address (one comparison) instead of re-deriving them (a 1,500-CU syscall each);
/// `config_init` creates them with `seeds` + `bump`, so they are the same accounts.
pub const CONFIG_ADDRESS: Pubkey = Pubkey::new_from_array(
    anchor_lang::derive_program_address(&[CONFIG_SEED], &crate::ID.to_bytes()).0,
);
/// See [`CONFIG_ADDRESS`].
pub const FEE_VAULT_ADDRESS: Pubkey = Pubkey::new_from_array(
    anchor_lang::derive_program_address(&[FEE_VAULT_SEED], &crate::ID.to_bytes()).0,
);
/// See [`CONFIG_ADDRESS`].
pub const BUYBACK_LOG_ADDRESS: Pubkey = Pubkey::new_from_array(
    anchor_lang::derive_program_address(&[BUYBACK_LOG_SEED], &crate::ID.to_bytes()).0,
);

/// Most trials one run may plan (docs/runs.md: 100 requests per run by default).
pub const MAX_TRIALS: u16 = 100;
/// Bytes of the settled-trials bitmap: one bit per trial.
pub const SETTLED_BITMAP_BYTES: usize = 13;
const _: () = assert!(SETTLED_BITMAP_BYTES * 8 >= MAX_TRIALS as usize);
/// Most trials settled in one `run_settle` (keeps a batch inside one transaction).
pub const MAX_SETTLE_BATCH: usize = 60;
/// After a cancel, how long the runner may still settle requests that were already in flight
/// (docs/runs.md: a request already sent may still cost money, its usage is never zeroed). A request
/// takes at most 60 s; the rest is time to submit the settlement.
pub const CANCEL_SETTLE_WINDOW_SECS: i64 = 10 * 60;

/// Bounds of the config's minimum deadline (`Config::min_deadline_secs`). The minimum protects
/// the runner (a user cannot refund from under a run still executing), so the admin may lower it
/// (a local validator test uses a short one), never to zero.
pub const MIN_DEADLINE_FLOOR_SECS: i64 = 10;
/// See [`MIN_DEADLINE_FLOOR_SECS`].
pub const MIN_DEADLINE_CEILING_SECS: i64 = 24 * 60 * 60;
/// The furthest deadline a run may set: if the runner disappears, the user's escrow is back
/// within a week at the latest.
pub const MAX_DEADLINE_SECS: i64 = 7 * 24 * 60 * 60;

/// The highest runner fee per executed trial the config accepts: 0.01 SOL (a `u64::MAX` fee
/// would make every `run_open` overflow).
pub const MAX_FEE_PER_TRIAL: u64 = 10_000_000;
/// Bounds of the buyback interval: at least a minute, at most 30 days (a longer one would
/// freeze the vault).
pub const MIN_BUYBACK_INTERVAL_SECS: i64 = 60;
/// See [`MIN_BUYBACK_INTERVAL_SECS`].
pub const MAX_BUYBACK_INTERVAL_SECS: i64 = 30 * 24 * 60 * 60;
/// Bounds of the time lock on appointments and buyback terms: at least an hour (long enough to
/// see a change coming), at most 30 days (a longer one would brick governance).
pub const MIN_TIME_LOCK_SECS: i64 = 60 * 60;
/// See [`MIN_TIME_LOCK_SECS`].
pub const MAX_TIME_LOCK_SECS: i64 = 30 * 24 * 60 * 60;
/// Bounds of the runner's spending-limit period.
pub const MIN_USAGE_PERIOD_SECS: i64 = 60;
/// See [`MIN_USAGE_PERIOD_SECS`].
pub const MAX_USAGE_PERIOD_SECS: i64 = 30 * 24 * 60 * 60;

/// The least per-request cap a run may open with: 5,000 lamports, one signature's base fee. A
/// cap below it reserves dust that no model request fits in (the runner daemon refuses such a
/// run, so the user would escrow for nothing); `skilltrial_core::hosted::Terms` rounds every
/// manifest's cap up to it, so every plan the daemon accepts clears it.
pub const MIN_PER_REQUEST_CAP: u64 = 5_000;

/// Entries the buyback log keeps (a ring buffer).
pub const BUYBACK_LOG_LEN: usize = 32;
/// Layout version of the program's accounts (v2: bounded trust, pull refunds, settlement digest).
pub const ACCOUNT_VERSION: u8 = 2;
