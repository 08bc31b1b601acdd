// SkillTrial's New-run page: drop two bundles, validate them here, plan and approve, sign one
// transaction, watch the trials land, then open, export, anchor and verify the report.
//
// Everything that decides money or identity runs in the project's Rust, compiled to wasm
// (`web/wasm`): validation, the manifest and its hash, the escrow, the transactions. This file
// only moves bytes between the user, the wallet, the wasm and the runner, and shows what they say.
// No text from a bundle, a wallet or the runner is ever parsed as HTML (the live grid is SVG the
// core writes, every name escaped there, parsed as XML).

import type { Wallet, WalletAccount } from "@wallet-standard/base";
import init, {
  Dropped,
  from_base64,
  hosted_terms,
  live_grid,
  money,
  open_transaction,
  pack_tree,
  plan as planOf,
  sol,
  to_base58,
  to_base64,
  user_transaction,
} from "../pkg/skilltrial_web.js";
import {
  ApiError,
  call,
  post,
  type Blockhash,
  type Check,
  type Checked,
  type Funds,
  type Info,
  type Offer,
  type OfferedProfile,
  type Progress,
  type Register,
  type RunView,
  type Terms,
} from "./api.js";
import { Declined, connect, signAndSend, signMessage, usable, watchWallets } from "./wallet.js";

// ---- small DOM helpers (text only, never HTML) ----

/** What a deadline must allow beyond the runner's minimum for the escrow to land: the CLI's
 *  value, read from the shared hosted terms (`core::hosted`) through the wasm crate. */
function landingAllowanceSecs(): number {
  const terms = JSON.parse(hosted_terms()) as { landing_allowance_secs: number };
  return terms.landing_allowance_secs;
}

function $<T extends HTMLElement = HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found as T;
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

function say(id: string, message: string | null): void {
  const node = $(id);
  node.textContent = message ?? "";
  node.hidden = message === null;
}

function reason(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

// ---- state ----

interface Planned {
  manifest: string;
  hash: string;
  pack: string;
  trials: number;
  max_requests: number;
  max_input_tokens: string;
  max_output_tokens: string;
  upper_cost_usd_micros: string | null;
  upper_cost_lamports: string | null;
  planned_trials: number;
  per_request_cap_lamports: string;
  usd_micros_per_sol: string;
  cap_usd_micros: string | null;
  scripted: boolean;
  /// How the skill reaches the model, as the manifest pins it.
  delivery: "inline" | "progressive";
  /// K: the most requests one trial sends (1 inline).
  max_turns: number;
  /// Whether the manifest pins the profile's cache prices (prompt caching asked for).
  cache: boolean;
  /// What leaves the wallet: the model cap plus the runner's fees, under the budget cap.
  escrow: {
    cap_lamports: string;
    model_lamports: string;
    fees_lamports: string;
    escrow_lamports: string;
    cap_sol: string;
    model_sol: string;
    fees_sol: string;
    escrow_sol: string;
  };
  /// Set by the page: the escrow shown.
  escrow_lamports: string;
}

/// The choices of a plan that are not the browser's own form state.
interface Delivery {
  delivery: "inline" | "progressive";
  turns: string;
  cache: boolean;
}

/// A plan whose escrow was being signed when the page was left (see rememberPending).
const pending = ((): { seed?: string; pinnedAt?: number; delivery?: Delivery } => {
  try {
    return JSON.parse(localStorage.getItem("skilltrial.pending") ?? "{}") as { seed?: string; pinnedAt?: number; delivery?: Delivery };
  } catch {
    return {};
  }
})();

const state: {
  info?: Info;
  offer?: Offer;
  chain?: string;
  wallet?: Wallet;
  account?: WalletAccount;
  dropped: { a?: Dropped; b?: Dropped };
  planned?: Planned;
  seed: string;
  /// When the plan shown pinned the runner's rate (Unix seconds).
  pinnedAt?: number;
  run?: string;
  events?: EventSource;
  finished: boolean;
  /// A run of this wallet still executing (not finalized, failed or closed): while there is
  /// one, no second escrow is one click away.
  live: string | null;
  /// Runs this page closed (the runner may list them until it notices).
  closed: Set<string>;
} = { dropped: {}, seed: pending.seed ?? randomSeed(), finished: false, live: null, closed: new Set() };

/// The `-u` moniker of the runner's cluster, for the commands the page prints.
function cluster(): string {
  const id = state.info?.chain_id ?? "";
  return { localnet: "l", devnet: "d", testnet: "t", mainnet: "m" }[id] ?? id;
}

/// Unix seconds of the cluster's clock as a date, said as such.
function clusterDate(secs: number): string {
  return `${new Date(secs * 1000).toISOString().replace("T", " ").slice(0, 16)} UTC (cluster time)`;
}

function randomSeed(): string {
  const words = new Uint32Array(2);
  crypto.getRandomValues(words);
  return ((BigInt(words[0] ?? 0) << 32n) | BigInt(words[1] ?? 0)).toString();
}

const rate = (): string => String(state.info?.sol_usd.usd_micros_per_sol ?? 0);

function moneyText(usdMicros: string | number | null | undefined): string {
  if (usdMicros === null || usdMicros === undefined) return "unbounded";
  const m = JSON.parse(money(String(usdMicros), rate())) as { usd: string; sol: string };
  return `${m.usd} (${m.sol} at the runner's rate)`;
}

// ---- 0. the runner and the wallets ----

async function start(): Promise<void> {
  await init({ module_or_path: "/skilltrial_web_bg.wasm" });
  try {
    state.info = await call<Info>("/v1/info");
    state.offer = await call<Offer>("/v1/offer");
  } catch (e) {
    say("fatal", `The runner cannot be reached: ${reason(e)}. Reload the page once it is running.`);
    $("runner-line").textContent = "Runner unavailable.";
    return;
  }
  const info = state.info;
  if (info.origin !== location.origin) {
    say("fatal", `This runner serves its page at ${info.origin}: open it there (sign-in names that address, so from ${location.origin} it would be refused).`);
  }
  state.chain = `solana:${info.chain_id}`;
  $("runner-line").textContent =
    `Runner ${info.runner} on ${info.chain_id} · SOL at ${moneyText(String(info.sol_usd.usd_micros_per_sol)).split(" ")[0]} · fee ${sol(String(state.offer.fee_per_trial_lamports))} per executed trial`;
  // A run asks for 1 up to the operator's maximum (a runner from before concurrency: 1).
  $<HTMLInputElement>("concurrency").max = String(info.max_concurrency);
  $("concurrency-max").textContent = String(info.max_concurrency);
  const select = $<HTMLSelectElement>("profile");
  // The operator's own profiles first: the built-in ones follow.
  state.offer.profiles.sort((x, y) => Number(x.profile["origin"] === "builtin") - Number(y.profile["origin"] === "builtin"));
  for (const offered of state.offer.profiles) {
    const label = offered.demo
      ? `${offered.profile.id}: DEMO, scripted answers, not a real model (free)`
      : `${offered.profile.id} (${offered.profile.model})`;
    select.append(el("option", { value: offered.profile.id }, label));
  }
  if (state.offer.profiles.some((p) => p.demo)) {
    say("demo-note", "This runner serves only SkillTrial's scripted demo model (runner serve --demo-model): its answers are scripted, not a real model's, and every report of its runs says so. Use it to try the page; its results say nothing about any model.");
  }
  if (state.offer.profiles.length === 0) {
    say("plan-error", "This runner offers no priced model profile, so no hosted run can be planned here.");
  }
  watchWallets(showWallets);
  void showMyRuns().catch((e: unknown) => say("fatal", `Your runs could not be listed: ${reason(e)}. Reload to try again.`));
  for (const arm of ["a", "b"] as const) wireSlot(arm);
  if (pending.delivery) {
    $<HTMLSelectElement>("delivery").value = pending.delivery.delivery;
    $<HTMLInputElement>("turns").value = pending.delivery.turns;
    $<HTMLInputElement>("cache").checked = pending.delivery.cache;
  }
  for (const id of ["profile", "reps", "cap", "delivery", "turns", "cache"]) $(id).addEventListener("input", () => replan());
  showDelivery(chosenProfile());
  $("plan-form").addEventListener("submit", (e) => {
    e.preventDefault();
    void approve();
  });
  $("cancel").addEventListener("click", () => void cancelRun());
  $("anchor").addEventListener("click", () => void anchorReport());
  $("close").addEventListener("click", () => void closeRun());
}

/// The signed-in wallet's runs (the session cookie outlives a reload), and the run the address
/// names (`#run=<address>`), watched again.
async function showMyRuns(): Promise<void> {
  const runs = await listRuns();
  const named = /^#run=(\w+)$/.exec(location.hash)?.[1];
  if (named && runs.some((r) => r.run === named)) watch(named);
}

/// Lists the signed-in wallet's runs (after every open, cancel, finalize and close); a run
/// still executing keeps the approval locked.
async function listRuns(): Promise<RunView[]> {
  const signedIn = await call<{ address: string | null }>("/v1/auth/session");
  if (signedIn.address === null) return []; // not signed in yet: nothing to show
  const runs = await call<RunView[]>("/v1/runs");
  const list = $("my-runs-list");
  list.replaceChildren(
    ...runs.map((r) => {
      const button = el("button", { type: "button" }, `Watch ${r.run.slice(0, 8)}…`);
      button.addEventListener("click", () => watch(r.run));
      const phase = state.closed.has(r.run) ? "closed" : r.phase;
      const done = r.progress ? `${r.progress.done} of ${r.progress.total} done` : "not started";
      return el("li", { "data-run": r.run, "data-phase": phase }, button, ` ${phase} · ${done} · deadline ${clusterDate(r.deadline)}`);
    }),
  );
  $("my-runs").hidden = runs.length === 0;
  const live = runs.find((r) => isLive(r.run, r.phase));
  setLive(live ? live.run : state.live !== null && runs.some((r) => r.run === state.live && isLive(r.run, r.phase)) ? state.live : null);
  return runs;
}

function refreshRuns(): void {
  void listRuns().catch((e: unknown) => say("fatal", `Your runs could not be listed: ${reason(e)}. Reload to try again.`));
}

function isLive(run: string, phase: string): boolean {
  return !state.closed.has(run) && !["finalized", "failed", "closed"].includes(phase);
}

/// Locks (or unlocks) the approval while a run is live, saying why.
function setLive(run: string | null): void {
  state.live = run;
  const button = $<HTMLButtonElement>("approve");
  if (run !== null) {
    button.disabled = true;
    say("live-note", `Run ${run} is still live: wait until it is finalized (or cancel it below) before approving another escrow.`);
  } else {
    button.disabled = state.planned === undefined;
    say("live-note", null);
  }
}

function showWallets(wallets: readonly Wallet[]): void {
  const list = $("wallet-list");
  list.replaceChildren();
  if (state.account) return;
  const chain = state.chain ?? "";
  const fit = wallets.filter((w) => usable(w, chain));
  if (fit.length === 0) {
    $("wallet-status").textContent =
      wallets.length === 0
        ? "No Solana wallet found in this browser. Install or unlock one (Phantom, Solflare, Backpack…), then reload."
        : `No wallet here can sign on ${chain}: switch your wallet to that cluster, then reload.`;
    return;
  }
  $("wallet-status").textContent = "Connect a wallet to approve the run:";
  for (const wallet of fit) {
    const button = el("button", { type: "button" }, `Connect ${wallet.name}`);
    button.addEventListener("click", () => void choose(wallet));
    list.append(button);
  }
}

async function choose(wallet: Wallet): Promise<void> {
  try {
    state.account = await connect(wallet);
    state.wallet = wallet;
    $("wallet-status").textContent = `Wallet ${wallet.name}: ${state.account.address}`;
    $("wallet-list").replaceChildren();
  } catch (e) {
    $("wallet-status").textContent = `${reason(e)}. Choose a wallet again when ready.`;
  }
}

// ---- 1. drop and validate ----

interface Picked {
  name: string;
  files: { path: string; file: File }[];
  zip?: File;
}

/// The most bytes the page reads from one drop: well above what a bundle may hold (the
/// validation says the exact limit), and a bound on what a mistaken drop costs the browser.
const MAX_DROP_BYTES = 256 * 1024 * 1024;

function wireSlot(arm: "a" | "b"): void {
  const zip = $<HTMLInputElement>(`zip-${arm}`);
  const dir = $<HTMLInputElement>(`dir-${arm}`);
  $(`zip-${arm}-btn`).addEventListener("click", () => zip.click());
  $(`dir-${arm}-btn`).addEventListener("click", () => dir.click());
  zip.addEventListener("change", () => {
    const file = zip.files?.[0];
    if (file) void accept(arm, { name: file.name, files: [], zip: file });
    zip.value = "";
  });
  dir.addEventListener("change", () => {
    const files = Array.from(dir.files ?? []);
    dir.value = "";
    if (files.length === 0) return;
    const root = (files[0]?.webkitRelativePath ?? "").split("/")[0] ?? "folder";
    void accept(arm, {
      name: root,
      files: files.map((file) => ({
        path: file.webkitRelativePath.split("/").slice(1).join("/"),
        file,
      })),
    });
  });
  const zone = $(`drop-${arm}`);
  zone.addEventListener("dragover", (e) => {
    e.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    void dropped(arm, e.dataTransfer);
  });
  zone.addEventListener("keydown", (e) => {
    if (e.target === zone && (e.key === "Enter" || e.key === " ")) {
      e.preventDefault();
      $(`zip-${arm}-btn`).focus();
    }
  });
}

async function dropped(arm: "a" | "b", data: DataTransfer | null): Promise<void> {
  const items = Array.from(data?.items ?? []).filter((i) => i.kind === "file");
  const entries = items.map((i) => i.webkitGetAsEntry()).filter((e): e is FileSystemEntry => e !== null);
  // A file handed over without a file-system entry (some browsers, a scripted drop) is a ZIP.
  const plain = data?.files[0];
  if (entries.length === 0 && items.length === 1 && plain) {
    await accept(arm, { name: plain.name, files: [], zip: plain });
    return;
  }
  if (entries.length !== 1 || !entries[0]) {
    showRejected(arm, "Drop exactly one ZIP or one folder per version.");
    return;
  }
  const entry = entries[0];
  if (entry.isFile) {
    const file = await new Promise<File>((ok, fail) => (entry as FileSystemFileEntry).file(ok, fail));
    await accept(arm, { name: file.name, files: [], zip: file });
    return;
  }
  const files: { path: string; file: File }[] = [];
  await walk(entry as FileSystemDirectoryEntry, "", files);
  await accept(arm, { name: entry.name, files });
}

async function walk(dir: FileSystemDirectoryEntry, prefix: string, out: { path: string; file: File }[]): Promise<void> {
  const reader = dir.createReader();
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((ok, fail) => reader.readEntries(ok, fail));
    if (batch.length === 0) return;
    for (const entry of batch) {
      const path = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory) {
        await walk(entry as FileSystemDirectoryEntry, path, out);
      } else {
        const file = await new Promise<File>((ok, fail) => (entry as FileSystemFileEntry).file(ok, fail));
        out.push({ path, file });
      }
    }
  }
}

async function accept(arm: "a" | "b", picked: Picked): Promise<void> {
  const size = picked.zip ? picked.zip.size : picked.files.reduce((n, f) => n + f.file.size, 0);
  if (size > MAX_DROP_BYTES) {
    showRejected(arm, `${picked.name} holds ${size} bytes; a bundle is far smaller. Drop the skill's own folder or ZIP.`);
    return;
  }
  state.dropped[arm]?.free();
  delete state.dropped[arm];
  let result: Dropped;
  if (picked.zip) {
    result = Dropped.fromZip(picked.name, new Uint8Array(await picked.zip.arrayBuffer()));
  } else {
    const data = new Uint8Array(size);
    const lengths = new Uint32Array(picked.files.length);
    let at = 0;
    for (const [i, f] of picked.files.entries()) {
      const bytes = new Uint8Array(await f.file.arrayBuffer());
      data.set(bytes, at);
      lengths[i] = bytes.length;
      at += bytes.length;
    }
    result = Dropped.fromFolder(picked.name, picked.files.map((f) => f.path), lengths, data);
  }
  state.dropped[arm] = result;
  showVerdict(arm, JSON.parse(result.report()) as Verdict);
  replan();
}

interface Verdict {
  input: string;
  ok: boolean;
  source: string | null;
  name: string | null;
  version: string | null;
  digest: string | null;
  coverage: string | null;
  files: { path: string; kind: string; size: number }[];
  flags: { kind: string; path: string; line: number; excerpt: string }[];
  errors: { code: string; path: string | null; message: string }[];
}

function showRejected(arm: "a" | "b", message: string): void {
  $(`verdict-${arm}`).replaceChildren(el("p", { class: "status bad", role: "alert" }, message));
}

function showVerdict(arm: "a" | "b", v: Verdict): void {
  const out: Node[] = [];
  if (v.ok) {
    out.push(
      el("p", { class: "status ok" }, `Accepted: ${v.name ?? "?"} ${v.version ?? "(no version)"} — from ${v.input} (${v.source ?? ""})`),
      el("p", {}, "Digest ", el("code", { class: "hash" }, v.digest ?? "")),
    );
    const kinds = new Map<string, number>();
    for (const f of v.files) kinds.set(f.kind, (kinds.get(f.kind) ?? 0) + 1);
    out.push(
      el("p", {}, `Files: ${[...kinds].map(([k, n]) => `${n} ${k}`).join(", ")}; coverage ${v.coverage ?? "full"}`),
    );
    if (v.coverage === "partial") {
      out.push(el("p", { class: "flag" }, "It holds scripts or binaries, which are never run: tasks that need them cannot be fully covered."));
    }
  } else {
    out.push(el("p", { class: "status bad", role: "alert" }, `Rejected: ${v.input} cannot be run. Fix what is listed and drop it again.`));
  }
  if (v.errors.length > 0) {
    const table = el("table", {}, el("caption", { class: "muted" }, "Rejections"), el("tr", {}, el("th", {}, "Code"), el("th", {}, "Path"), el("th", {}, "What to do")));
    for (const e of v.errors) {
      table.append(el("tr", { class: "reject" }, el("td", {}, el("code", {}, e.code)), el("td", {}, e.path ?? "—"), el("td", {}, e.message)));
    }
    out.push(table);
  }
  if (v.flags.length > 0) {
    const table = el("table", {}, el("caption", { class: "muted" }, `Flags (${v.flags.length}): shown for review, never scored`), el("tr", {}, el("th", {}, "Kind"), el("th", {}, "Where"), el("th", {}, "Excerpt")));
    for (const f of v.flags) {
      table.append(el("tr", { class: "flag" }, el("td", {}, el("code", {}, f.kind)), el("td", {}, `${f.path}:${f.line}`), el("td", {}, f.excerpt)));
    }
    out.push(table);
  }
  $(`verdict-${arm}`).replaceChildren(...out);
}

// ---- 2. plan ----

/// Shows the delivery's own fields: the turn limit for progressive delivery, and prompt caching
/// only where the chosen profile states cache prices (else it is off, and the note says why).
function showDelivery(offered: OfferedProfile | undefined): void {
  const progressive = $<HTMLSelectElement>("delivery").value === "progressive";
  for (const id of ["turns-label", "turns", "turns-help"]) $(id).hidden = !progressive;
  const cache = $<HTMLInputElement>("cache");
  const prices = cachePrices(offered);
  cache.disabled = prices === null;
  if (prices === null) {
    cache.checked = false;
    $("cache-help").textContent = offered
      ? `Not available: profile ${offered.profile.id} states no cache prices, so cached tokens could not be priced; its requests are sent without cache marks.`
      : "Choose a model profile first.";
    return;
  }
  $("cache-help").textContent =
    `Marks the start every request shares (the system prompt${progressive ? ", the catalog and the tools" : " and the skill"}) for the provider's prompt cache; cached tokens are charged as the provider reports them, written at ${perMtok(prices.write)} and read at ${perMtok(prices.read)} per million tokens. The escrow still prices every input token at the dearer of an input token and a cache write, so it never falls short; what caching saves comes back.`;
}

/// The cache prices (µUSD per million tokens) the runner's profile states, if any.
function cachePrices(offered: OfferedProfile | undefined): { write: number; read: number } | null {
  const price = offered?.profile.price as { cache?: { write?: unknown; read?: unknown } | null } | null | undefined;
  const cache = price?.cache;
  if (!cache || typeof cache.write !== "number" || typeof cache.read !== "number") return null;
  return { write: cache.write, read: cache.read };
}

/// µUSD as dollars, through the wasm (integers, never a float).
function perMtok(usdMicros: number): string {
  return (JSON.parse(money(String(usdMicros), rate())) as { usd: string }).usd;
}

/// The runner's profile the form names.
function chosenProfile(): OfferedProfile | undefined {
  const id = $<HTMLSelectElement>("profile").value;
  return state.offer?.profiles.find((p) => p.profile.id === id);
}

/// What the summary says of a plan's delivery.
function deliveryText(planned: Planned): string {
  const how =
    planned.delivery === "progressive"
      ? `progressive, at most ${planned.max_turns} turns per trial: the model loads the skill with tools; each turn is one request, all of them reserved before the trial starts`
      : "inline, one request per trial: the whole skill in every skill arm's prompt";
  return planned.cache ? `${how}; prompt caching on, cached tokens charged at the profile's cache prices` : how;
}

/// The delivery asked for, as the form holds it (see rememberPending).
function deliveryAsked(): Delivery {
  const cache = $<HTMLInputElement>("cache");
  return {
    delivery: $<HTMLSelectElement>("delivery").value === "progressive" ? "progressive" : "inline",
    turns: $<HTMLInputElement>("turns").value.trim(),
    cache: cache.checked && !cache.disabled,
  };
}

function replan(): void {
  const { a, b } = state.dropped;
  const out = $("plan-out");
  say("plan-error", null);
  delete state.planned;
  const offered = chosenProfile();
  showDelivery(offered);
  if (!a || !b || !state.offer || !state.info) {
    out.hidden = true;
    return;
  }
  if (!a.accepted() || !b.accepted()) {
    out.hidden = true;
    say("plan-error", "Both versions must be accepted before the run can be planned.");
    return;
  }
  if (!offered) {
    out.hidden = true;
    return;
  }
  const reps = Number($<HTMLInputElement>("reps").value);
  if (!Number.isInteger(reps) || reps < 1) {
    out.hidden = true;
    say("plan-error", "Repetitions must be a whole number, at least 1.");
    return;
  }
  const asked = deliveryAsked();
  const turns = Number(asked.turns);
  if (asked.delivery === "progressive" && (asked.turns === "" || !Number.isInteger(turns) || turns < 2 || turns > 12)) {
    out.hidden = true;
    say("plan-error", "Turns per trial must be a whole number from 2 to 12.");
    return;
  }
  const cap = $<HTMLInputElement>("cap").value.trim();
  // The pin of a plan whose escrow was being signed before a reload, while the runner takes it.
  const now = Math.floor(Date.now() / 1000);
  const pinnedAt =
    pending.pinnedAt !== undefined && now - pending.pinnedAt < state.info.sol_usd.max_age_secs / 2 ? pending.pinnedAt : now;
  let planned: Planned;
  try {
    planned = JSON.parse(
      planOf(
        JSON.stringify({
          pack: state.offer.packs[0] ?? "solana-core@1.0.3",
          profile: offered.profile,
          endpoint: offered.endpoint,
          repetitions: reps,
          seed: state.seed,
          cap_sol: cap === "" ? null : cap,
          fee_per_trial_lamports: String(state.offer.fee_per_trial_lamports),
          scripted: offered.demo === true,
          usd_micros_per_sol: rate(),
          sol_usd_source: `the runner's rate at ${state.info.origin}`,
          pinned_at: pinnedAt,
          delivery: asked.delivery,
          max_turns: asked.delivery === "progressive" ? turns : null,
          cache: asked.cache,
        }),
        a,
        b,
      ),
    ) as Planned;
  } catch (e) {
    out.hidden = true;
    say("plan-error", `This plan cannot run: ${reason(e)}.`);
    return;
  }
  state.pinnedAt = pinnedAt;
  const escrow = planned.escrow;
  planned.escrow_lamports = escrow.escrow_lamports;
  state.planned = planned;
  setLive(state.live);
  $("p-trials").textContent = `${planned.trials} (${planned.pack}: baseline, A and B × tasks × ${reps})`;
  $("p-delivery").textContent = deliveryText(planned);
  $("p-requests").textContent = String(planned.max_requests);
  $("p-tokens").textContent = `${planned.max_input_tokens} input, ${planned.max_output_tokens} output`;
  $("p-upper").textContent = moneyText(planned.upper_cost_usd_micros);
  $("p-cap").textContent = `${escrow.cap_sol}, fees included: the escrow fits under it; the model may spend ${moneyText(planned.cap_usd_micros)} of it`;
  $("p-escrow").textContent = `${escrow.escrow_sol} (${escrow.escrow_lamports} lamports): what your wallet sends now, besides the transaction fee; what is not used comes back`;
  $("p-model").textContent = `${escrow.model_sol}: ${planned.planned_trials} trials × ${sol(planned.per_request_cap_lamports)}, the most one trial's usage may be charged${planned.scripted ? " (the scripted demo model charges none)" : ""}`;
  $("p-fees").textContent = `${escrow.fees_sol}: ${planned.planned_trials} trials × ${sol(String(state.offer.fee_per_trial_lamports))}, charged per executed trial`;
  $("p-deadline").textContent = `${Math.round(state.offer.default_deadline_secs / 3600)} h after the escrow is signed, by the cluster's clock (not this browser's); after it, you can take back everything still held.`;
  $("p-hash").textContent = planned.hash;
  out.hidden = false;
}

// ---- 3. sign: sign in, upload, check, one run_open, register ----

const STEPS: [string, string][] = [
  ["signin", "Sign in with your wallet (a message, no transaction)"],
  ["upload-a", "Upload version A"],
  ["upload-b", "Upload version B"],
  ["upload-pack", "Upload the task pack"],
  ["upload-manifest", "Upload the manifest; compare the runner's terms with this page's"],
  ["check", "Ask the runner whether it will run it"],
  ["open", "Sign the escrow (run_open) in your wallet"],
  ["register", "Hand the run to the runner"],
];

function step(id: string, stateName: "active" | "done" | "failed", note = ""): void {
  const item = document.querySelector<HTMLElement>(`#steps li[data-step="${id}"]`);
  if (!item) return;
  item.dataset["state"] = stateName;
  const label = { active: "in progress…", done: "done", failed: "failed" }[stateName];
  item.querySelector(".state")!.textContent = note ? `${label}: ${note}` : label;
}

async function approve(): Promise<void> {
  const planned = state.planned;
  const { a, b } = state.dropped;
  if (!planned || !a || !b || !state.info || !state.offer) return;
  if (state.live !== null) {
    setLive(state.live);
    return;
  }
  // The runner takes a rate pinned within its maximum age: a plan left open longer is planned
  // again (a new hash) and shown before anything is signed.
  const age = Math.floor(Date.now() / 1000) - (state.pinnedAt ?? 0);
  const margin = Math.min(300, Math.floor(state.info.sol_usd.max_age_secs / 4));
  if (age > state.info.sol_usd.max_age_secs - margin) {
    replan();
    say("plan-error", "This plan's rate was pinned too long ago for the runner, so it was planned again: check the new hash, then approve.");
    return;
  }
  const concurrency = concurrencyAsked(state.info.max_concurrency);
  if (concurrency === null) {
    say("plan-error", `Requests at once must be a whole number from 1 to ${state.info.max_concurrency} (this runner's maximum).`);
    $("concurrency").focus();
    return;
  }
  if (!state.wallet || !state.account) {
    say("plan-error", "Connect a wallet first (at the top of the page).");
    $("wallet-list").querySelector("button")?.focus();
    return;
  }
  const wallet = state.wallet;
  const account = state.account;
  const approveButton = $<HTMLButtonElement>("approve");
  approveButton.disabled = true;
  // Nothing the plan depends on changes while it is being signed.
  const frozen = [$("drop-section"), $("plan-fields")];
  for (const part of frozen) part.inert = true;
  $("sign-section").hidden = false;
  $("sign-h").focus();
  say("sign-error", null);
  $("steps").replaceChildren(
    ...STEPS.map(([id, text]) => el("li", { "data-step": id }, text, el("span", { class: "state" }, "waiting"))),
  );
  let current = "signin";
  escrowSigned = false;
  const hash = planned.hash;
  try {
    step(current, "active");
    const challenge = await call<{ message: string }>(`/v1/auth/challenge?address=${encodeURIComponent(account.address)}`);
    checkSignIn(challenge.message, account.address, state.info.chain_id);
    const signature = await signMessage(wallet, account, new TextEncoder().encode(challenge.message));
    await post("/v1/auth/verify", {
      message: challenge.message,
      signature: to_base58(signature),
      address: account.address,
    });
    step(current, "done");

    for (const [id, dropped] of [["upload-a", a], ["upload-b", b]] as const) {
      current = id;
      step(id, "active");
      const stored = await post<{ digest: string; files: number }>("/v1/trees?kind=bundle", dropped.tree());
      step(id, "done", `${stored.files} files, digest ${stored.digest.slice(0, 16)}…`);
    }
    current = "upload-pack";
    step(current, "active");
    await post(`/v1/trees?kind=pack&id=${encodeURIComponent(planned.pack)}`, pack_tree(planned.pack));
    step(current, "done");

    current = "upload-manifest";
    step(current, "active");
    const terms = await post<Terms>("/v1/manifests", planned.manifest);
    const mismatch = [
      terms.manifest !== hash && `the runner hashed the manifest to ${terms.manifest}, this page to ${hash}`,
      terms.trials !== planned.planned_trials && `${terms.trials} trials, not ${planned.planned_trials}`,
      String(terms.per_request_cap_lamports) !== planned.per_request_cap_lamports &&
        `a per-trial cap of ${terms.per_request_cap_lamports} lamports, not ${planned.per_request_cap_lamports}`,
      terms.runner !== state.info.runner && `runner ${terms.runner}, not ${state.info.runner}`,
      terms.fee_per_trial_lamports !== state.offer.fee_per_trial_lamports &&
        `a fee of ${terms.fee_per_trial_lamports} lamports per trial, not the ${state.offer.fee_per_trial_lamports} shown`,
      String(terms.escrow_lamports) !== planned.escrow_lamports &&
        `an escrow of ${terms.escrow_lamports} lamports, not the ${planned.escrow_lamports} shown`,
      terms.min_deadline_secs + landingAllowanceSecs() > state.offer.default_deadline_secs &&
        `a deadline of at least ${terms.min_deadline_secs + landingAllowanceSecs()} s, longer than the ${state.offer.default_deadline_secs} s shown`,
    ].filter((m): m is string => typeof m === "string");
    if (mismatch.length > 0) {
      throw new Error(`the runner's terms differ from this page's plan (${mismatch.join("; ")}): reload the page to plan with the runner's current terms`);
    }
    step(current, "done", `hash ${hash.slice(0, 16)}… agrees`);

    current = "check";
    step(current, "active");
    const deadlineSecs = state.offer.default_deadline_secs;
    const checked = await post<Checked>("/v1/runs/check", { manifest: hash, deadline_secs: deadlineSecs, concurrency } satisfies Check);
    if (checked.registered) {
      step(current, "done", "this wallet's run of this manifest is already running: nothing to escrow again");
      watch(checked.registered.run);
      return;
    }
    step(current, "done");

    // An escrow of this very plan may have landed already (an approval interrupted after the
    // wallet signed): then it is registered, never escrowed twice.
    if (checked.escrowed) {
      const landed = await post<RunView>("/v1/runs", { manifest: hash, concurrency } satisfies Register);
      step(current, "done", "this plan's escrow has already landed: it is handed to the runner, nothing is escrowed again");
      forgetPending();
      watch(landed.run);
      return;
    }

    current = "open";
    step(current, "active", "approve it in your wallet");
    rememberPending();
    const { blockhash, cluster_time: clusterNow } = await call<Blockhash>("/v1/chain/blockhash");
    // The program judges the deadline by the cluster's clock, which may differ from this
    // browser's: it is set from the chain's.
    const deadlineAt = clusterNow + deadlineSecs;
    const built = JSON.parse(
      open_transaction(
        JSON.stringify({
          user: account.address,
          manifest_hash: hash,
          planned_trials: planned.planned_trials,
          per_request_cap_lamports: planned.per_request_cap_lamports,
          fee_per_trial_lamports: String(terms.fee_per_trial_lamports),
          runner: state.info.runner,
          deadline: deadlineAt,
          blockhash,
        }),
      ),
    ) as { transaction: string; run: string; escrow_lamports: string; escrow_sol: string };
    if (built.run !== checked.run) {
      throw new Error(`the runner expects Run ${checked.run}, this page derives ${built.run}: nothing was escrowed`);
    }
    if (built.escrow_lamports !== planned.escrow_lamports) {
      throw new Error(`the escrow built is ${built.escrow_lamports} lamports, not the ${planned.escrow_lamports} shown`);
    }
    step(current, "active", `approve it in your wallet: ${built.escrow_sol}, deadline ${clusterDate(deadlineAt)}`);
    const sent = await signAndSend(wallet, account, state.chain ?? "", from_base64(built.transaction), "The escrow", (signed) => {
      escrowSigned = true;
      return relay(signed);
    });
    step(current, "done", `${built.escrow_sol} escrowed, transaction ${sent}`);

    current = "register";
    step(current, "active");
    const view = await registerWhenLanded(hash, concurrency);
    step(current, "done", `run ${view.run} is ${view.phase}`);
    forgetPending();
    setLive(view.run);
    // The next plan is another manifest, even with the same inputs.
    state.seed = randomSeed();
    replan();
    watch(view.run);
    refreshRuns();
  } catch (e) {
    step(current, "failed", reason(e));
    let message: string;
    if (escrowSigned) {
      message = `${reason(e)}. Your wallet signed the escrow, so it may have landed: press Approve and sign again — the page hands this same plan to the runner if its escrow is on-chain, and escrows only if it is not.`;
    } else if (e instanceof Declined) {
      message = `${reason(e)}. Nothing was escrowed. Approve again when you are ready.`;
    } else if (e instanceof ApiError && e.code === "unavailable") {
      message = `${reason(e)}. Nothing was escrowed. Try again in a moment.`;
    } else if (e instanceof ApiError && e.code === "conflict") {
      message = `This exact plan already ran on this runner. Change anything (or reload for a new seed) to plan another run.`;
    } else {
      message = `${reason(e)}. Nothing was escrowed.`;
    }
    say("sign-error", message);
    setLive(state.live);
    approveButton.focus();
  } finally {
    for (const part of frozen) part.inert = false;
  }
}

/// Whether the wallet has signed the escrow of the approval in flight.
let escrowSigned = false;

const PENDING = "skilltrial.pending";

/// The plan being escrowed (seed, rate pin and delivery), kept across a reload so the same inputs give
/// the same manifest, whose escrow is then found rather than opened twice.
function rememberPending(): void {
  escrowSigned = false;
  localStorage.setItem(PENDING, JSON.stringify({ seed: state.seed, pinnedAt: state.pinnedAt, delivery: deliveryAsked() }));
}

function forgetPending(): void {
  localStorage.removeItem(PENDING);
}

/// Refuses a sign-in text that does not sign in to this page's runner, as this wallet, on its
/// cluster: another runner could hand over its own challenge for this wallet.
function checkSignIn(message: string, address: string, chainId: string): void {
  const lines = message.split("\n");
  const field = (name: string) => lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
  const wrong = [
    lines[0] !== `${location.host} wants you to sign in with your Solana account:` && `it is for ${lines[0] ?? "nothing"}`,
    lines[1] !== address && `it signs in ${lines[1] ?? "nobody"}, not ${address}`,
    field("URI") !== location.origin && `its URI is ${field("URI") ?? "missing"}, not ${location.origin}`,
    field("Chain ID") !== chainId && `its chain is ${field("Chain ID") ?? "missing"}, not ${chainId}`,
  ].filter((w): w is string => typeof w === "string");
  if (wrong.length > 0) {
    throw new Error(`the runner's sign-in message is not for this page (${wrong.join("; ")}): nothing was signed`);
  }
}

async function relay(signed: Uint8Array): Promise<string> {
  const relayed = await post<{ signature: string }>("/v1/chain/send", { transaction: to_base64(signed) });
  return relayed.signature;
}

/// The requests at once asked for in the form, when it is a whole number from 1 to `max`.
function concurrencyAsked(max: number): number | null {
  const n = Number($<HTMLInputElement>("concurrency").value);
  return Number.isInteger(n) && n >= 1 && n <= max ? n : null;
}

/// Registers the run; a wallet that sent the escrow itself may be a few seconds ahead of the
/// runner's view of the chain, so a missing Run account is asked about again for a minute.
async function registerWhenLanded(hash: string, concurrency: number): Promise<RunView> {
  const until = Date.now() + 60_000;
  for (;;) {
    try {
      return await post<RunView>("/v1/runs", { manifest: hash, concurrency } satisfies Register);
    } catch (e) {
      const notYet =
        e instanceof ApiError && ((e.status === 403 && e.message.startsWith("no Run account")) || e.status === 503);
      if (!notYet || Date.now() > until) throw e;
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}

// ---- 4. watch ----

function watch(run: string): void {
  // A run watched before (a reload, the list of runs, the next run): start afresh.
  state.events?.close();
  state.finished = false;
  settledTrials = 0;
  settledLamports = 0n;
  finishing = false;
  anchorSignature = null;
  $("events").replaceChildren();
  $("finish-section").hidden = true;
  $("f-anchor").textContent = "";
  say("watch-error", null);
  say("finish-error", null);
  $<HTMLButtonElement>("cancel").disabled = false;
  $<HTMLButtonElement>("anchor").disabled = false;
  $<HTMLButtonElement>("close").disabled = false;
  $("f-closed").textContent = "";
  $("f-returned").textContent = "";
  $("f-funds").textContent = "";
  $("w-deadline").textContent = "—";
  $("w-concurrency").textContent = "—";
  $("w-grid").replaceChildren();
  $("w-grid-figure").hidden = true;
  $("verification").removeAttribute("data-shown");
  state.run = run;
  // A reload comes back to the run.
  history.replaceState(null, "", `#run=${run}`);
  $("watch-section").hidden = false;
  $("w-run").textContent = run;
  $("watch-h").scrollIntoView({ block: "start" });
  $("watch-h").setAttribute("tabindex", "-1");
  $("watch-h").focus();
  $("verification").replaceChildren(el("li", {}, "Checking…"));
  $("f-summary").textContent = "";
  const current = () => state.run === run;
  void call<RunView>(`/v1/runs/${run}`).then(
    (view) => current() && showView(view),
    () => undefined,
  );
  const source = new EventSource(`/v1/runs/${run}/events`);
  state.events = source;
  for (const kind of ["progress", "settled", "phase", "notice"]) {
    source.addEventListener(kind, (e) => current() && onEvent(kind, (e as MessageEvent<string>).data));
  }
  let dropped = false;
  source.onopen = () => {
    dropped = false;
  };
  source.onerror = () => {
    if (state.finished || !current()) return;
    if (source.readyState === EventSource.CLOSED) {
      say("watch-error", "The live view stopped (the runner refused it: your sign-in may have expired). Reload the page to sign in and follow the run again.");
    } else if (!dropped) {
      dropped = true;
      addEvent("the event stream dropped; reconnecting…");
    }
  };
}

function showView(view: RunView): void {
  showPhase(view.phase, view.detail);
  $("w-deadline").textContent = `${clusterDate(view.deadline)}: the chain's clock decides; after it, you can take back everything still held`;
  $("w-concurrency").textContent = view.concurrency === 1 ? "1 (one at a time)" : `up to ${view.concurrency} in flight`;
  if (isLive(view.run, view.phase)) setLive(view.run);
  else if (state.live === view.run) setLive(null);
  if (view.progress) showProgress(view.progress);
  if (view.phase === "finalized") void finish();
}

function showPhase(phase: string, detail: string | null): void {
  $("w-phase").textContent = phase;
  $("w-detail").textContent = detail ? `— ${detail}` : "";
}

function showProgress(p: Progress): void {
  const bar = $<HTMLProgressElement>("w-progress");
  bar.max = Math.max(p.total, 1);
  bar.value = p.done;
  const notRun = p.counts["not_run"] ?? 0;
  $("w-count").textContent =
    notRun > 0
      ? `${p.done - notRun} of ${p.total} trials ran; ${notRun} will not run`
      : `${p.done} of ${p.total} trials done`;
  const counts = Object.entries(p.counts).filter(([, n]) => n > 0);
  $("w-outcomes").textContent = counts.length === 0 ? "none yet" : counts.map(([k, n]) => `${n} ${k}`).join(", ");
  $("w-spent").textContent = moneyText(p.spent);
  $("w-reserved").textContent = moneyText(p.reserved);
  // A runner from before the grid sends no trials: the last grid shown stays.
  if (p.trials) showGrid(p.trials);
}

const SVG_NS = "http://www.w3.org/2000/svg";

/// The run's trials as the core draws them (one cell per planned trial, its colour its outcome,
/// a legend, and the counts as the SVG's title), put in the page as SVG nodes: the markup is
/// parsed as XML and only an `<svg>` root is taken.
function showGrid(trials: NonNullable<Progress["trials"]>): void {
  const figure = $("w-grid-figure");
  let markup: string;
  try {
    markup = live_grid(JSON.stringify(trials), "live-grid");
  } catch (e) {
    figure.hidden = true;
    say("watch-error", `The trials' grid cannot be drawn: ${reason(e)}`);
    return;
  }
  const doc = new DOMParser().parseFromString(markup, "image/svg+xml");
  const root = doc.documentElement;
  if (root.namespaceURI !== SVG_NS || root.localName !== "svg" || doc.getElementsByTagName("parsererror").length > 0) {
    figure.hidden = true;
    return;
  }
  $("w-grid").replaceChildren(document.importNode(root, true));
  figure.hidden = false;
}

let settledTrials = 0;
let settledLamports = 0n;

function onEvent(kind: string, raw: string): void {
  let event: { at: number; data: Record<string, unknown> };
  try {
    event = JSON.parse(raw) as typeof event;
  } catch {
    return;
  }
  const d = event.data;
  const time = new Date(event.at * 1000).toLocaleTimeString();
  switch (kind) {
    case "progress":
      showProgress(d as unknown as Progress);
      addEvent(`${time} · ${String(d["done"])} of ${String(d["total"])} done`);
      break;
    case "settled": {
      const trials = (d["trials"] as unknown[] | undefined)?.length ?? 0;
      settledTrials += trials;
      settledLamports += BigInt(String(d["usage_lamports"] ?? 0));
      $("w-settled").textContent = `${settledTrials} trials, ${sol(settledLamports.toString())} of usage`;
      addEvent(`${time} · settled ${trials} trials on-chain (${String(d["signature"])})`);
      break;
    }
    case "phase": {
      const phase = String(d["phase"]);
      showPhase(phase, (d["detail"] as string | null) ?? null);
      addEvent(`${time} · ${phase}${d["detail"] ? `: ${String(d["detail"])}` : ""}`);
      if (phase === "finalized" || phase === "failed") {
        state.events?.close();
        state.finished = true;
        $<HTMLButtonElement>("cancel").disabled = true;
        if (state.live === state.run) setLive(null);
        refreshRuns();
        if (phase === "finalized") void finish();
      }
      break;
    }
    case "notice":
      addNotice(time, String(d["message"]));
      break;
  }
}

function addEvent(text: string): void {
  const list = $("events");
  list.append(el("li", {}, text));
  list.scrollTop = list.scrollHeight;
}

/// A notice; the same notice again (the runner says "waiting for the settlement to be
/// finalized…" every few seconds) updates its one line, moved to the end, instead of adding
/// another.
function addNotice(time: string, message: string): void {
  const list = $("events");
  const seen = Array.from(list.children).find((li) => (li as HTMLElement).dataset["notice"] === message) as
    | HTMLElement
    | undefined;
  if (seen) {
    const times = Number(seen.dataset["times"] ?? "1") + 1;
    seen.dataset["times"] = String(times);
    seen.textContent = `${seen.dataset["first"] ?? time} · ${message} (×${times}, last at ${time})`;
    list.append(seen);
    list.scrollTop = list.scrollHeight;
    return;
  }
  addEvent(`${time} · ${message}`);
  const added = $("events").lastElementChild as HTMLElement;
  added.dataset["notice"] = message;
  added.dataset["first"] = time;
}

async function userTransaction(request: Record<string, unknown>, what: string): Promise<string> {
  if (!state.wallet || !state.account) throw new Error("connect the wallet that opened the run");
  const { blockhash } = await call<{ blockhash: string }>("/v1/chain/blockhash");
  const built = JSON.parse(user_transaction(JSON.stringify({ user: state.account.address, blockhash, ...request }))) as {
    transaction: string;
  };
  return signAndSend(state.wallet, state.account, state.chain ?? "", from_base64(built.transaction), what, relay);
}

async function cancelRun(): Promise<void> {
  if (!state.run) return;
  const button = $<HTMLButtonElement>("cancel");
  button.disabled = true;
  say("watch-error", null);
  try {
    const signature = await userTransaction({ cancel: state.run }, "The cancel");
    addEvent(`cancelled on-chain (${signature}): no new trial starts; what ran is settled and the rest comes back`);
    refreshRuns();
  } catch (e) {
    say("watch-error", `${reason(e)}. The run goes on; cancel again if you still want to.`);
    button.disabled = false;
  }
}

// ---- 5. finish ----

interface Verification {
  checks: { name: string; ok: boolean; pending: boolean; detail: string }[];
}

let anchorSignature: string | null = null;

let finishing = false;

async function finish(): Promise<void> {
  if (!state.run || finishing) return;
  finishing = true;
  const run = state.run;
  $("finish-section").hidden = false;
  $<HTMLAnchorElement>("open-report").href = `/v1/runs/${run}/report.html`;
  const json = $<HTMLAnchorElement>("export-json");
  json.href = `/v1/runs/${run}/report.json`;
  json.download = `skilltrial-report-${run}.json`;
  $("verify-cmd").textContent = verifyCommand(run);
  try {
    const view = await call<RunView>(`/v1/runs/${run}`);
    if (state.run !== run) return;
    $("f-summary").textContent = `Finalized: ${view.settled_trials} trials settled in ${view.settle_batches} batches; report ${view.report_hash ?? "?"}.`;
    await showFunds(run);
    await verify();
  } catch (e) {
    if (state.run === run) say("finish-error", `The finished run could not be read: ${reason(e)}. Reload the page to try again.`);
  }
}

/// Shows the verification; answers whether a check is still pending (the anchor's finality).
async function verify(): Promise<boolean> {
  const run = state.run;
  if (!run) return false;
  const list = $("verification");
  try {
    const query = anchorSignature ? `?anchor=${anchorSignature}` : "";
    const v = await call<Verification>(`/v1/runs/${run}/verification${query}`);
    if (state.run !== run) return false;
    const text = JSON.stringify(v.checks);
    // Re-announced only when something changed.
    if (list.dataset["shown"] === text) return v.checks.some((c) => c.pending);
    list.dataset["shown"] = text;
    list.replaceChildren(
      ...v.checks.map((c) => {
        const [mark, kind] = c.ok ? ["✓", "ok"] : c.pending ? ["…", "pending"] : ["✗", "bad"];
        return el("li", { class: kind }, `${mark} ${c.name}: ${c.detail}`);
      }),
    );
    return v.checks.some((c) => c.pending);
  } catch (e) {
    list.replaceChildren(el("li", { class: "bad" }, `The verification could not be read: ${reason(e)}`));
    return false;
  }
}

async function anchorReport(): Promise<void> {
  if (!state.run) return;
  const button = $<HTMLButtonElement>("anchor");
  button.disabled = true;
  say("finish-error", null);
  try {
    const view = await call<RunView>(`/v1/runs/${state.run}`);
    if (!view.report_hash) throw new Error("the report has no hash yet");
    anchorSignature = await userTransaction(
      { anchor: { manifest: view.manifest, report: view.report_hash.replace(/^sha256:/, "") } },
      "The anchor",
    );
    $("f-anchor").textContent = `Anchored by your wallet in transaction ${anchorSignature}.`;
    // The anchor is checked once finalized (usually 15 s more; a busy cluster takes longer).
    const until = Date.now() + 10 * 60_000;
    while ((await verify()) && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 3000));
    }
  } catch (e) {
    say("finish-error", `${reason(e)}. The report is not anchored; try again when ready.`);
    button.disabled = false;
  }
}

/// `skilltrial verify` of the exported report against the run, on the runner's cluster: it
/// works as printed, before the close and after it (then from the chain's history).
function verifyCommand(run: string): string {
  return `skilltrial verify skilltrial-report-${run}.json --run ${run} -u ${cluster()}`;
}

/// The run's money as the chain holds it: escrowed, paid out, and what is still held (which
/// the close returns).
async function showFunds(run: string): Promise<void> {
  const funds = await call<Funds>(`/v1/runs/${run}/funds`);
  if (state.run !== run) return;
  const held = funds.account;
  $("f-funds").textContent = held
    ? `On-chain: ${sol(String(held.escrowed))} escrowed; ${sol(String(held.settled_usage))} paid for usage; ${sol(String(held.settled_fees))} in runner fees; ${sol(String(held.lamports))} (${held.lamports} lamports) still held in the Run account, its rent included: all of it returns to your wallet when you take back the remainder.`
    : "The Run account is no longer on the cluster (closed, or refunded after its deadline).";
}

async function closeRun(): Promise<void> {
  if (!state.run) return;
  const run = state.run;
  const button = $<HTMLButtonElement>("close");
  button.disabled = true;
  say("finish-error", null);
  try {
    // What the Run holds just before its close is what the close returns (all of it).
    const before = await call<Funds>(`/v1/runs/${run}/funds`);
    const signature = await userTransaction({ close: run }, "Closing the run");
    state.closed.add(run);
    refreshRuns();
    $("f-closed").textContent = `Closed in transaction ${signature}. The Run account is gone, so the page's check against it above no longer runs; the command below still verifies the report, from the chain's history.`;
    void showReturned(run, before);
  } catch (e) {
    say("finish-error", `${reason(e)}. Nothing was closed; the remainder stays in the Run until you close it.`);
    button.disabled = false;
    button.focus();
  }
}

/// What the close returned to the wallet: the Run account's whole balance, read from the chain
/// just before the close, once the chain shows the account gone.
async function showReturned(run: string, before: Funds): Promise<void> {
  try {
    const after = await call<Funds>(`/v1/runs/${run}/funds`);
    if (state.run !== run || !before.account) return;
    $("f-returned").textContent =
      after.account === null
        ? `Returned to your wallet: ${sol(String(before.account.lamports))} (${before.account.lamports} lamports), the Run account's whole balance on the chain just before the close; the account is now gone.`
        : `The cluster still shows the Run account holding ${after.account.lamports} lamports: reload in a moment.`;
  } catch (e) {
    if (state.run === run) $("f-returned").textContent = `The run is closed; what it returned could not be read (${reason(e)}): your wallet's history shows it.`;
  }
}

void start().catch((e: unknown) => say("fatal", `The page could not start: ${reason(e)}. Reload it.`));
