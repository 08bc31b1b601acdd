// Generated from runner/src/api.rs by its test `wire_types_are_the_committed_typescript`:
// do not edit. To regenerate: SKILLTRIAL_WRITE_WIRE=1 cargo test -p skilltrial-runner --lib wire_types_are, then bash scripts/web.sh.

export type Info = { service: string, version: string, 
/**
 * The runner key runs must name (base58).
 */
runner: string, origin: string, 
/**
 * `mainnet`, `devnet`, `testnet` or `localnet`.
 */
chain_id: string, program: string, 
/**
 * The model profiles this runner executes (a manifest must pin one of them exactly).
 */
profiles: Array<string>, 
/**
 * The SOL/USD rate this runner is repaid at: a manifest must pin one within its tolerance,
 * pinned recently (`plan --sol-usd`).
 */
sol_usd: Rate, 
/**
 * The buyback schedule and the last attempt's outcome; `null` when the operator makes no
 * buybacks.
 */
buyback: BuybackInfo | null, 
/**
 * The most requests one run may have in flight at once on this runner
 * (`runner serve --max-concurrency`): a run asks for 1 up to it when it is registered. A
 * runner from before concurrency runs one at a time, and says nothing: 1.
 */
max_concurrency: number, };

export type Rate = { 
/**
 * µUSD per SOL (151.25 USD/SOL is 151_250_000).
 */
usd_micros_per_sol: number, 
/**
 * How far a manifest's pinned rate may be from it, in basis points of it.
 */
tolerance_bps: number, 
/**
 * How old a manifest's pin may be, in seconds.
 */
max_age_secs: number, };

export type BuybackInfo = { 
/**
 * How often the daemon checks whether a buyback is due.
 */
every_secs: number, 
/**
 * The last attempt's outcome, `null` before the first.
 */
last: BuybackOutcome | null, min_lamports: number, slippage_bps: number, 
/**
 * `localnet pool`, or `jupiter (<its base URL>)`.
 */
venue: string, };

export type BuybackOutcome = { "outcome": "done", lamports_in: number, quoted_out: number, signature: string, 
/**
 * Tokens the swap filled above its minimum, burned after it.
 */
surplus_burned: number, 
/**
 * Why that surplus is not burned yet, if it is not.
 */
surplus_left: string | null, 
/**
 * The surplus burn's transaction, if there was one.
 */
surplus_signature: string | null, tokens_burned: number, } | { "outcome": "not_due", next_at: number, } | { "outcome": "too_little", minimum: number, unreleased: number, } | { "outcome": "failed", error: string, };

export type Challenge = { 
/**
 * The exact text to sign (UTF-8).
 */
message: string, nonce: string, expires_at: number, };

export type SignIn = { 
/**
 * The signed bytes as text, exactly as signed.
 */
message: string, 
/**
 * Base58 Ed25519 signature.
 */
signature: string, 
/**
 * Base58 public key.
 */
address: string, };

export type Session = { 
/**
 * The bearer token (also set as an HttpOnly cookie for the page). Shown once.
 */
token: string, address: string, expires_at: number, };

export type SignedIn = { address: string | null, };

export type TreeFile = { path: string, 
/**
 * Standard base64, padded.
 */
base64: string, };

export type Tree = { files: Array<TreeFile>, };

export type Stored = { kind: string, 
/**
 * The content digest (hex): what a manifest pins.
 */
digest: string, name: string | null, version: string | null, files: number, };

export type Terms = { manifest: string, trials: number, per_request_cap_lamports: number, fee_per_trial_lamports: number, escrow_lamports: number, runner: string, 
/**
 * The shortest deadline (seconds from now) the runner accepts for it.
 */
min_deadline_secs: number, };

export type Register = { manifest: string, 
/**
 * Requests in flight at once for this run, 1 up to the runner's `max_concurrency`; 1 when
 * missing. It changes how long the run takes, never what it sends or finds.
 */
concurrency?: number, };

export type Phase = "executing" | "finalizing" | "finalized" | "failed";

export type RunView = { run: string, user: string, manifest: string, run_id: number, deadline: number, phase: Phase, detail: string | null, 
/**
 * The latest progress event's data, if any.
 */
progress: Progress | null, settled_trials: number, settle_batches: number, report_hash: string | null, finalize_signature: string | null, 
/**
 * Requests in flight at once, as the run was registered with (1 from a runner from
 * before concurrency).
 */
concurrency: number, };

export type Progress = { 
/**
 * Trials by outcome (`pass`, `fail`, `not_run`, `unknown`, …).
 */
counts: { [key in string]: number }, 
/**
 * The trial in flight: (task, arm, repetition); `null` between trials.
 */
current: [string, string, number] | null, 
/**
 * Trials closed, of `total`.
 */
done: number, 
/**
 * µUSD reserved for requests in flight.
 */
reserved: number, 
/**
 * µUSD spent.
 */
spent: number, 
/**
 * The engine's status at the end of a chunk (`finished`, `cancelled`, …); absent from the
 * progress of one trial.
 */
status?: string | null, total: number, 
/**
 * Every planned trial's outcome so far (the live page's grid, `skilltrial_core::live`):
 * the plan's tasks, arms and repetitions, and one code per trial in that order. Absent from
 * a runner from before it.
 */
trials?: { tasks: Array<string>; arms: Array<string>; repetitions: number; outcomes: string } | null, };

export type Event = { "kind": "progress", "data": Progress } | { "kind": "phase", "data": PhaseChange } | { "kind": "settled", "data": Settled } | { "kind": "notice", "data": Notice };

export type Framed = { 
/**
 * When the daemon recorded it (Unix seconds).
 */
at: number, 
/**
 * The event's fields ([`Event::data`]).
 */
data: Event["data"], };

export type PhaseChange = { 
/**
 * Why (a failure's reason), or `null`.
 */
detail: string | null, phase: Phase, 
/**
 * The `run_finalize` transaction, on `finalized`.
 */
signature?: string | null, };

export type Settled = { batch: number, signature: string, 
/**
 * The trials it charged.
 */
trials: Array<number>, usage_lamports: number, };

export type Notice = { 
/**
 * The settlement batch it is about.
 */
batch?: number | null, 
/**
 * Whether that batch's trials are charged (`false`: they cost nothing).
 */
charged?: boolean | null, message: string, 
/**
 * When the run is tried again, in seconds.
 */
retry_in_secs?: number | null, 
/**
 * The daemon is stopping: the stream ends here (never recorded).
 */
stopping?: boolean | null, 
/**
 * The trials of that batch.
 */
trials?: Array<number> | null, };

export type ApiError = { error: string, 
/**
 * A stable name for the case: `unauthenticated`, `forbidden`, `not_found`, `invalid`,
 * `too_large`, `timeout` (a body that did not arrive in time), `busy` (as many uploads
 * read at once as the runner reads: retry after `Retry-After`), `refused`, `conflict`,
 * `unavailable`, `not_yet`, `internal`.
 */
code: string, };

export type Check = { 
/**
 * The manifest hash (hex).
 */
manifest: string, 
/**
 * The deadline the escrow will be opened with, in seconds from now.
 */
deadline_secs: number, 
/**
 * The concurrency the run will be registered with ([`Register::concurrency`]), checked
 * against the runner's maximum before anything is escrowed; 1 when missing.
 */
concurrency?: number, };

export type Checked = { 
/**
 * The Run account's address the escrow will open.
 */
run: string, manifest: string, 
/**
 * The run, when this wallet's run of this manifest is already registered and executing:
 * nothing to escrow again.
 */
registered: RunView | null, 
/**
 * Whether the Run account exists already (an escrow that landed but was never
 * registered): register it; do not escrow again.
 */
escrowed: boolean, 
/**
 * The shortest deadline the daemon takes for this manifest, in seconds.
 */
min_deadline_secs: number, };

export type Offer = { 
/**
 * The priced profiles this runner executes, each exactly as it runs it.
 */
profiles: Array<OfferedProfile>, 
/**
 * The embedded packs.
 */
packs: Array<string>, 
/**
 * The program config's fee per executed trial (the program refuses any other).
 */
fee_per_trial_lamports: number, 
/**
 * The deadline the page proposes, in seconds from the escrow.
 */
default_deadline_secs: number, };

export type OfferedProfile = { 
/**
 * The core's profile, as its serde form writes it (the page reads these fields and passes
 * the whole back to the planner).
 */
profile: { id: string; provider: string; model: string; price: unknown; [key: string]: unknown }, 
/**
 * Where this runner sends its requests (scheme, host, port, path): what a manifest pins.
 */
endpoint: string, 
/**
 * The scripted demo model (`runner serve --demo-model`), not a real model: its manifests
 * and reports say `scripted`.
 */
demo: boolean, };

export type Blockhash = { blockhash: string, last_valid_block_height: number, 
/**
 * The cluster's clock (Unix seconds, the block time of its latest slot): what the program
 * judges deadlines by, so the page sets them from it, never from the browser's clock.
 */
cluster_time: number, };

export type Funds = { 
/**
 * The live Run account's money, or `None` once it is gone.
 */
account: HeldFunds | null, };

export type HeldFunds = { escrowed: number, settled_usage: number, settled_fees: number, 
/**
 * The account's balance: what is still held (the escrow's remainder) plus its rent, all of
 * which returns to the owner on close.
 */
lamports: number, };

export type Relay = { 
/**
 * The signed transaction, standard base64.
 */
transaction: string, };

export type Relayed = { signature: string, slot: number, };

export type Verification = { checks: Array<VerifiedCheck>, };

export type VerifiedCheck = { name: string, ok: boolean, 
/**
 * Not decided yet (the anchor is not finalized yet): ask again in a few seconds.
 */
pending: boolean, 
/**
 * What was compared, or where it falls short.
 */
detail: string, };
