// The New-run page in a real browser (Debian's Chromium driven by playwright-core), as a user
// goes through the Quickstart: a hostile ZIP rejected, both versions dropped (a folder through
// the directory picker, a ZIP dragged onto the page), a plan approved, the escrow declined once,
// then signed; the trials watched live; a cancel midway; then a second run to the end: the
// report opened and exported, anchored by the wallet, verified on-chain in the page.
//
// The whole walk is on a 390 px wide phone screen: at every screenshot the page is no wider.
// With `"mode": "demo"` it walks a daemon started with --demo-model instead: only the labelled
// scripted demo profile is offered, one run completes, and its report says it is scripted.
//
// `node tests/e2e.mjs <config.json>`, run by the Rust test tests/hosted/page.rs, which starts
// the validator, the daemon and the model server, checks the chain afterwards, and paces the
// model server by the lines this script prints on stdout (one JSON object per line).
import { readFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
// The test answers some steps on stdin, one line each, once it has checked the chain.
// The interface is closed at the end, whatever happened: an open stdin keeps Node running.
const stdin = createInterface({ input: process.stdin });
const lines = stdin[Symbol.asyncIterator]();
const nextLine = async () => (await lines.next()).value;
const said = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
mkdirSync(config.shots, { recursive: true });
let shot = 0;

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`);
}

const browser = await chromium.launch({
  executablePath: config.chromium,
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
// A phone's screen (an iPhone 14's CSS width).
const PHONE = 390;
const context = await browser.newContext({ viewport: { width: PHONE, height: 844 }, acceptDownloads: true });
await context.addInitScript({
  content: `globalThis.__testWalletConfig = ${JSON.stringify({
    seed: config.seed,
    publicKey: config.publicKey,
    address: config.address,
    chain: "solana:localnet",
  })};\n${readFileSync(new URL("./test-wallet.js", import.meta.url), "utf8")}`,
});
const page = await context.newPage();
// File choosers are intercepted from the start: enabling it only when a step waits for one races
// with the key press that opens it.
page.on("filechooser", () => {});
const problems = [];
page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
page.on("console", (m) => {
  if (m.type() === "error") problems.push(`console error: ${m.text()}`);
});

// Every state the walk shows fits the phone: nothing scrolls sideways.
async function snap(name) {
  shot += 1;
  const path = join(config.shots, `${String(shot).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path, fullPage: true });
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  check(width <= PHONE, `${name}: the page is ${width} px wide on a ${PHONE} px screen`);
  said({ step: "width", name, width });
  return path;
}

const text = (selector) => page.locator(selector).innerText();

/// The live grid as it stands, read in one go with the progress it was drawn beside: its cells,
/// those with an outcome's colour, the trials done and planned, and the SVG's own title.
async function grid(name) {
  const seen = await page.evaluate(() => {
    const svg = document.querySelector("#w-grid svg.live-grid");
    const cells = svg ? [...svg.querySelectorAll("rect.cell")] : [];
    const bar = document.querySelector("#w-progress");
    return {
      cells: cells.length,
      landed: cells.filter((c) => !c.classList.contains("o-pending")).length,
      outcomes: [...new Set(cells.map((c) => [...c.classList].find((k) => k.startsWith("o-"))))].sort(),
      done: Number(bar?.value ?? -1),
      total: Number(bar?.max ?? -1),
      title: svg?.querySelector("title")?.textContent ?? null,
      role: svg?.getAttribute("role") ?? null,
      width: svg ? Math.round(svg.getBoundingClientRect().width) : 0,
    };
  });
  check(seen.cells === seen.total, `${name}: the grid has one cell per planned trial: ${JSON.stringify(seen)}`);
  check(seen.landed === seen.done, `${name}: the grid's coloured cells are the trials landed: ${JSON.stringify(seen)}`);
  check(seen.role === "img" && seen.title?.startsWith(`Trials of this run: ${seen.done} of ${seen.total} landed`), `${name}: the grid says its counts in words: ${JSON.stringify(seen)}`);
  said({ step: "grid", name, ...seen });
  return seen;
}

/// The page at a desktop's width too (1200 px), in light and dark: nothing wider than it.
async function wide(name) {
  await page.setViewportSize({ width: 1200, height: 900 });
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    shot += 1;
    await page.screenshot({ path: join(config.shots, `${String(shot).padStart(2, "0")}-${name}-1200-${scheme}.png`), fullPage: true });
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    check(width <= 1200, `${name}: the page is ${width} px wide on a 1200 px screen`);
  }
  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize({ width: PHONE, height: 844 });
}

try {
  if (config.mode === "demo") {
    await demo();
  } else {
    await quickstart();
  }
  check(problems.length === 0, `the page logged no error: ${problems.join("; ")}`);
  said({ step: "done", signed: await page.evaluate(() => globalThis.__testWallet.signed.length) });
} catch (e) {
  try {
    await snap("failure");
  } catch {}
  writeFileSync(join(config.shots, "failure.txt"), `${e.stack ?? e}\n${problems.join("\n")}\n`);
  said({ step: "failed", error: String(e.message ?? e), problems });
  process.exitCode = 1;
} finally {
  stdin.close();
  process.stdin.destroy();
  await browser.close();
}

/// Both versions as folders (the directory pickers).
async function pickBoth() {
  const [chooserA] = await Promise.all([page.waitForEvent("filechooser"), page.locator("#dir-a-btn").click()]);
  await chooserA.setFiles(config.bundleA);
  const [chooserB] = await Promise.all([page.waitForEvent("filechooser"), page.locator("#dir-b-btn").click()]);
  await chooserB.setFiles(config.bundleBFolder);
}

/// The escrow's parts as the plan shows them, in lamports.
async function escrowShown() {
  const lamports = (t) => {
    const [whole, frac = ""] = t.match(/^([\d.]+) SOL/)[1].split(".");
    return BigInt(whole) * 1_000_000_000n + BigInt(frac.padEnd(9, "0"));
  };
  const shown = { escrow: await text("#p-escrow"), model: await text("#p-model"), fees: await text("#p-fees"), cap: await text("#p-cap") };
  const [escrow, model, fees, cap] = [shown.escrow, shown.model, shown.fees, shown.cap].map(lamports);
  check(escrow === model + fees, `the escrow is the model cap plus the runner fees: ${JSON.stringify(shown)}`);
  check(escrow <= cap, `the escrow fits under the budget cap: ${JSON.stringify(shown)}`);
  return { ...shown, lamports: { escrow: String(escrow), model: String(model), fees: String(fees), cap: String(cap) } };
}

/// The delivery choices, on a plan with room for them (a cap of 1 SOL; nothing is signed): the
/// summary says progressive and its turns, the turn limit is checked, the hash changes with it,
/// and prompt caching is off with a note for a profile without cache prices. Ends on inline.
async function deliveries() {
  check(await page.locator("#turns").isHidden(), "no turn limit is asked for inline delivery");
  await page.fill("#cap", "1");
  await page.locator("#p-delivery", { hasText: "inline, one request per trial" }).waitFor();
  const inline = await text("#p-hash");
  await page.selectOption("#delivery", "progressive");
  await page.locator("#turns").waitFor();
  check((await page.inputValue("#turns")) === "4", "the turn limit starts at the default, 4");
  await page.locator("#p-delivery", { hasText: "progressive, at most 4 turns per trial" }).waitFor();
  const four = await text("#p-hash");
  await page.fill("#turns", "3");
  await page.locator("#p-delivery", { hasText: "progressive, at most 3 turns per trial" }).waitFor();
  const three = { hash: await text("#p-hash"), delivery: await text("#p-delivery"), escrow: await escrowShown() };
  check(new Set([inline, four, three.hash]).size === 3, `each delivery is its own manifest: ${inline}, ${four}, ${three.hash}`);
  await snap("progressive");
  await page.fill("#turns", "13");
  await page.locator("#plan-error", { hasText: "Turns per trial must be a whole number from 2 to 12" }).waitFor();
  check(await page.locator("#plan-out").isHidden(), "nothing can be approved with 13 turns per trial");
  await page.fill("#turns", "4");
  await page.locator("#plan-out").waitFor();
  // The operator's loopback profile states no cache prices.
  const cache = { enabled: await page.locator("#cache").isEnabled(), note: await text("#cache-help") };
  check(!cache.enabled && /states no cache prices/.test(cache.note), `prompt caching is off, saying why: ${JSON.stringify(cache)}`);
  await page.selectOption("#delivery", "inline");
  await page.locator("#p-delivery", { hasText: "inline, one request per trial" }).waitFor();
  check(await page.locator("#turns").isHidden(), "the turn limit is hidden again for inline delivery");
  return { inline, four, three, cache };
}

/// A daemon with --demo-model: one labelled profile, a run to the end, a labelled report.
async function demo() {
  await page.goto(config.url);
  await page.getByRole("button", { name: "Connect SkillTrial Test Wallet" }).click();
  await page.locator("#wallet-status", { hasText: config.address }).waitFor();
  const options = await page.locator("#profile option").allInnerTexts();
  check(options.length === 1 && /DEMO, scripted answers, not a real model/.test(options[0]), `only the labelled demo profile is offered: ${options.join(" | ")}`);
  const note = await text("#demo-note");
  check(/scripted demo model/.test(note), `the page says the runner serves the scripted demo model: ${note}`);
  await pickBoth();
  await page.fill("#reps", "1");
  // Requests at once (filled in the form's order, before the cap): bounded by the runner's
  // maximum (`runner serve --max-concurrency`, 4 by default), sent with the run and shown in its
  // view.
  const most = await page.locator("#concurrency").getAttribute("max");
  check(most === "4" && (await text("#concurrency-max")) === "4", `the field is bounded by the runner's maximum: ${most}`);
  await page.fill("#concurrency", "2");
  await page.fill("#cap", "0.05");
  await page.locator("#plan-out").waitFor();
  const escrow = await escrowShown();
  await snap("demo-planned");
  await page.locator("#approve").click();
  await page.locator("#watch-section").waitFor({ timeout: 180_000 });
  await page.locator("#w-concurrency", { hasText: "up to 2 in flight" }).waitFor({ timeout: 30_000 });
  const run = await text("#w-run");
  const view = await page.evaluate(async (r) => (await fetch(`/v1/runs/${r}`)).json(), run);
  check(view.concurrency === 2, `the run is registered with 2 requests at once: ${JSON.stringify(view)}`);
  said({ step: "opened", run, hash: await text("#p-hash"), escrow, options, note });
  await page.locator("#finish-section").waitFor({ timeout: 300_000 });
  await page.locator("#verification li.ok", { hasText: "Run account" }).waitFor({ timeout: 120_000 });
  const demoGrid = await grid("demo-finished");
  check(demoGrid.landed === demoGrid.total && !demoGrid.outcomes.includes("o-pending"), `every trial of the demo run is coloured: ${JSON.stringify(demoGrid)}`);
  await snap("demo-finished");
  await wide("demo-finished");
  const report = await page.evaluate(async (r) => (await fetch(`/v1/runs/${r}/report.json`)).json(), run);
  const [html] = await Promise.all([context.waitForEvent("page"), page.locator("#open-report").click()]);
  await html.waitForLoadState();
  const banner = await html.locator(".banner").first().innerText();
  check(/Scripted model/.test(banner), `the report says its answers are scripted: ${banner}`);
  await html.setViewportSize({ width: PHONE, height: 844 });
  await html.close();
  said({ step: "finished", run, scripted: report.comparability?.model?.scripted, model_label: report.comparability?.model_label ?? null, banner, outcomes: await text("#w-outcomes") });
}

/// While `run` is live the approval is locked, and says why.
async function liveLocked(run) {
  check(await page.locator("#approve").isDisabled(), "no second Approve and sign while a run is live");
  const note = await text("#live-note");
  check(note.includes(run) && /still live/.test(note), `the page says why: ${note}`);
}

/// The events' notices, each shown once however often it came: no two lines the same notice.
async function collapsed() {
  const lines = await page.locator("#events li[data-notice]").evaluateAll((items) => items.map((i) => [i.dataset.notice, i.textContent]));
  const distinct = new Set(lines.map((l) => l[0]));
  check(distinct.size === lines.length, `a repeated notice is one line: ${lines.map((l) => l[1]).join(" | ")}`);
  const waiting = (await page.locator("#events li").allInnerTexts()).filter((t) => /waiting for the settlement/.test(t));
  check(waiting.length <= 1, `"waiting for the settlement" is one line, not ${waiting.length}: ${waiting.join(" | ")}`);
  return lines.map((l) => l[1]);
}

async function quickstart() {
  // ---- the page loads under its CSP, finds the runner and the wallet ----
  const response = await page.goto(config.url);
  const csp = response.headers()["content-security-policy"] ?? "";
  check(csp.includes("default-src 'none'") && csp.includes("script-src 'self' 'wasm-unsafe-eval'"), `the CSP: ${csp}`);
  await page.getByRole("button", { name: "Connect SkillTrial Test Wallet" }).waitFor();
  check((await text("#runner-line")).includes("localnet"), "the runner line names the cluster");
  await snap("loaded");

  // ---- usable by everyone: contrast in both themes, visible focus, keyboard ----
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    const ratios = await page.evaluate(() => {
      const rgb = (c) => (c.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map(Number);
      const lum = ([r, g, b]) => {
        const f = (v) => {
          const s = v / 255;
          return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
        };
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
      };
      const ratio = (a, b) => {
        const [x, y] = [lum(rgb(a)), lum(rgb(b))].sort((p, q) => q - p);
        return (x + 0.05) / (y + 0.05);
      };
      const bg = getComputedStyle(document.body).backgroundColor;
      const out = {};
      for (const sel of ["h1", ".muted", "#drop-a-hint", "label[for=reps]", "button"]) {
        const node = document.querySelector(sel);
        const own = getComputedStyle(node);
        const behind = own.backgroundColor === "rgba(0, 0, 0, 0)" ? getComputedStyle(node.closest(".drop") ?? document.body).backgroundColor : own.backgroundColor;
        out[sel] = ratio(own.color, behind ?? bg);
      }
      const probe = document.createElement("span");
      for (const v of ["--error", "--ok", "--warn", "--accent"]) {
        probe.style.color = `var(${v})`;
        document.body.append(probe);
        out[v] = ratio(getComputedStyle(probe).color, bg);
        probe.remove();
      }
      return out;
    });
    for (const [what, ratio] of Object.entries(ratios)) {
      check(ratio >= 4.5, `${scheme} theme: ${what} has contrast ${ratio.toFixed(2)}, below WCAG AA's 4.5`);
    }
    said({ step: "contrast", scheme, ratios });
  }
  await page.emulateMedia({ colorScheme: "light" });
  // Keyboard: from the top, Tab reaches the wallet and the first drop zone's buttons, and the
  // focused control shows an outline.
  await page.keyboard.press("Tab");
  let reached = false;
  for (let i = 0; i < 12 && !reached; i += 1) {
    await page.keyboard.press("Tab");
    reached = await page.evaluate(() => document.activeElement?.id === "zip-a-btn");
  }
  check(reached, "Tab reaches the first drop zone's ZIP button");
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  check(outline !== "none", `the focused button shows its focus (outline ${outline})`);

  // ---- 1. a hostile ZIP is rejected with its codes and paths ----
  const [hostileChooser] = await Promise.all([page.waitForEvent("filechooser"), page.keyboard.press("Enter")]);
  await hostileChooser.setFiles(config.hostileZip);
  await page.locator("#verdict-a .status.bad").waitFor();
  const hostileCodes = await page.locator("#verdict-a tr.reject td:first-child").allInnerTexts();
  check(hostileCodes.length > 0, "the hostile ZIP's rejections are listed");
  said({ step: "hostile", codes: hostileCodes });
  await snap("hostile-zip-rejected");

  // ---- both versions: A as a folder (the directory picker, by keyboard), B as a ZIP dropped ----
  await page.locator("#dir-a-btn").focus();
  const [folderChooser] = await Promise.all([page.waitForEvent("filechooser"), page.keyboard.press("Enter")]);
  await folderChooser.setFiles(config.bundleA);
  await page.locator("#verdict-a .status.ok").waitFor();
  const zip = readFileSync(config.bundleBZip).toString("base64");
  const transfer = await page.evaluateHandle((b64) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], "solana-reader-1.5.0.zip", { type: "application/zip" }));
    return dt;
  }, zip);
  await page.dispatchEvent("#drop-b", "drop", { dataTransfer: transfer });
  await page.locator("#verdict-b .status.ok").waitFor();
  const digests = {
    a: await text("#verdict-a code.hash"),
    b: await text("#verdict-b code.hash"),
  };
  said({ step: "accepted", digests, flags_b: await page.locator("#verdict-b tr.flag").count() });

  // ---- connect the wallet (by keyboard, as every step of the first run), plan ----
  await page.getByRole("button", { name: "Connect SkillTrial Test Wallet" }).press("Enter");
  await page.locator("#wallet-status", { hasText: config.address }).waitFor();
  await page.selectOption("#profile", config.profile);
  await page.fill("#reps", "2");
  await page.fill("#cap", "abc");
  await page.locator("#plan-error", { hasText: "not an amount of SOL" }).waitFor();
  await page.fill("#cap", "");
  await page.locator("#plan-error", { hasText: "give a budget cap with Budget cap (SOL)" }).waitFor();
  // A cap that cannot even cover the runner's fees and the program's least per-request cap
  await page.fill("#cap", "0.000001");
  await page.locator("#plan-error", { hasText: "cannot cover this run's runner fees" }).waitFor();
  const tooSmall = await text("#plan-error");
  check(/minimum per-request cap/.test(tooSmall) && /give at least [\d.]+ SOL/.test(tooSmall), `the refusal says what to give: ${tooSmall}`);
  check(await page.locator("#plan-out").isHidden(), "nothing can be approved under a cap too small");
  said({ step: "cap-refused", message: tooSmall });
  await snap("cap-too-small");
  said({ step: "delivery", ...(await deliveries()) });
  await page.fill("#cap", "0.05");
  await page.locator("#plan-out").waitFor();
  await snap("planned");
  const first = {
    hash: await text("#p-hash"),
    trials: await text("#p-trials"),
    escrow: await escrowShown(),
  };
  said({ step: "planned", ...first });

  // ---- the user declines the escrow: nothing is escrowed, the page says so ----
  await page.evaluate(() => (globalThis.__testWallet.decline = "transaction"));
  await page.locator("#approve").press("Enter");
  await page.locator("#sign-error", { hasText: "declined" }).waitFor({ timeout: 120_000 });
  const declined = await text("#sign-error");
  check(declined.includes("Nothing was escrowed"), `the decline says nothing was escrowed: ${declined}`);
  check(await page.locator("#approve").isEnabled(), "approve can be pressed again after a decline");
  said({ step: "declined", hash: first.hash, message: declined });
  await snap("escrow-declined");

  // ---- approve again, by keyboard: one transaction, then the trials land ----
  await page.locator("#approve").focus();
  await page.keyboard.press("Enter");
  await page.locator("#watch-section").waitFor({ timeout: 180_000 });
  const run1 = await text("#w-run");
  said({ step: "opened", run: run1, hash: first.hash, escrow: first.escrow, signed: await page.evaluate(() => globalThis.__testWallet.signed.length) });
  // While it is live, no second escrow is one click away; the wallet's runs list it.
  await liveLocked(run1);
  await page.locator(`#my-runs-list li[data-run="${run1}"]`).waitFor();
  await page.waitForFunction(() => Number(document.querySelector("#w-progress")?.value ?? 0) >= 3, null, { timeout: 240_000 });
  await page.locator("#w-grid svg.live-grid").waitFor();
  await grid("trials-landing");
  await snap("trials-landing");
  await page.emulateMedia({ colorScheme: "dark" });
  await snap("trials-landing-dark");
  await page.emulateMedia({ colorScheme: "light" });
  await wide("trials-landing");

  // ---- cancel midway (on-chain, wallet-signed) ----
  await page.locator("#cancel").press("Enter");
  await page.locator("#events li", { hasText: "cancelled on-chain" }).waitFor({ timeout: 120_000 });
  said({ step: "cancelled", run: run1 });
  await snap("cancelled");
  await page.locator("#finish-section").waitFor({ timeout: 300_000 });
  await page.locator("#verification li.ok", { hasText: "Run account" }).waitFor({ timeout: 120_000 });
  check((await page.locator("#verification li.bad").count()) === 0, `the cancelled run verifies: ${await text("#verification")}`);
  const count = await text("#w-count");
  check(/^\d+ of 36 trials ran; \d+ will not run$/.test(count), `the cancelled run's count says what ran: ${count}`);
  // The test wallet counts what it signed since the page loaded (a reload follows).
  const signedBefore = await page.evaluate(() => globalThis.__testWallet.signed.length);
  await page.locator(`#my-runs-list li[data-run="${run1}"][data-phase="finalized"]`).waitFor({ timeout: 30_000 });
  check(await page.locator("#live-note").isHidden(), "a finalized run no longer locks the approval");
  const notices = await collapsed();
  said({ step: "cancelled-finalized", run: run1, count, outcomes: await text("#w-outcomes"), signed: signedBefore, deadline: await text("#w-deadline"), notices });
  const closedGrid = await grid("cancelled-run-finished");
  check(closedGrid.landed === closedGrid.total && closedGrid.outcomes.includes("o-not_run"), `every trial of the cancelled run has its outcome, the unsent ones not_run: ${JSON.stringify(closedGrid)}`);
  await snap("cancelled-run-finished");

  // ---- a reload comes back to the run; the wallet's runs are listed ----
  await page.reload();
  await page.locator("#w-run", { hasText: run1 }).waitFor();
  await page.locator("#finish-section").waitFor();
  check((await page.locator("#my-runs-list li").count()) === 1, "the wallet's one run is listed");

  // ---- a second run to the end, from the same page, reps 1 ----
  await page.getByRole("button", { name: "Connect SkillTrial Test Wallet" }).click();
  const [chooserA] = await Promise.all([page.waitForEvent("filechooser"), page.locator("#dir-a-btn").click()]);
  await chooserA.setFiles(config.bundleA);
  const [chooserB] = await Promise.all([page.waitForEvent("filechooser"), page.locator("#dir-b-btn").click()]);
  await chooserB.setFiles(config.bundleBFolder);
  await page.selectOption("#profile", config.profile);
  await page.fill("#reps", "1");
  await page.fill("#cap", "1");
  await page.locator("#plan-out").waitFor();
  const second = { hash: await text("#p-hash") };
  await page.locator("#approve").click();
  await page.waitForFunction((r) => document.querySelector("#w-run")?.textContent !== r, run1, { timeout: 180_000 });
  const run2 = await text("#w-run");
  said({ step: "opened", run: run2, hash: second.hash });
  await liveLocked(run2);
  await page.locator("#finish-section").waitFor({ timeout: 300_000 });
  await page.locator("#verification li.ok", { hasText: "Run account" }).waitFor({ timeout: 120_000 });
  const finishedGrid = await grid("run-finished");
  check(finishedGrid.landed === finishedGrid.total && !finishedGrid.outcomes.includes("o-pending"), `every trial of the finished run is coloured: ${JSON.stringify(finishedGrid)}`);
  await snap("run-finished");
  await wide("run-finished");

  // ---- open the report, export the JSON, anchor it, verified on-chain in the page ----
  const [report] = await Promise.all([context.waitForEvent("page"), page.locator("#open-report").click()]);
  await report.waitForLoadState();
  const title = await report.title();
  check(/SkillTrial/.test(title), `the report opens: ${title}`);
  await report.screenshot({ path: join(config.shots, `${String(++shot).padStart(2, "0")}-report.png`), fullPage: false });
  await report.close();
  const [download] = await Promise.all([page.waitForEvent("download"), page.locator("#export-json").click()]);
  const exported = join(config.shots, download.suggestedFilename());
  await download.saveAs(exported);
  await page.locator("#anchor").click();
  await page.locator("#verification li.ok", { hasText: /^✓ anchor: transaction \w+ is finalized/ }).waitFor({ timeout: 300_000 });
  const verification = await page.locator("#verification li").allInnerTexts();
  check(verification.every((v) => v.startsWith("✓")), `every check passes: ${verification.join(" | ")}`);
  const anchor = (await text("#f-anchor")).match(/in transaction (\w+)/)?.[1];
  check(anchor, "the page shows the anchor's transaction");
  await page.locator("#f-funds", { hasText: "still held" }).waitFor();
  const held = (await text("#f-funds")).match(/\((\d+) lamports\) still held/)?.[1];
  check(held, `the finish shows what the Run still holds: ${await text("#f-funds")}`);
  const command = await text("#verify-cmd");
  check(command === `skilltrial verify skilltrial-report-${run2}.json --run ${run2} -u l`, `the verify command names the cluster: ${command}`);
  said({ step: "finished", run: run2, hash: second.hash, exported, anchor, verification, held, command, notices: await collapsed() });
  await snap("anchored-and-verified");
  await page.emulateMedia({ colorScheme: "dark" });
  await snap("anchored-dark");
  await page.emulateMedia({ colorScheme: "light" });

  // ---- take back the remainder: run_close, signed by the wallet (once the test has kept a
  // copy of the Run account, which the close deletes) ----
  await nextLine();
  await page.locator("#close").press("Enter");
  await page.locator("#f-closed", { hasText: "Closed in transaction" }).waitFor({ timeout: 120_000 });
  await page.locator("#f-returned", { hasText: "Returned to your wallet" }).waitFor({ timeout: 120_000 });
  const returned = (await text("#f-returned")).match(/\((\d+) lamports\)/)?.[1];
  await page.locator(`#my-runs-list li[data-run="${run2}"][data-phase="closed"]`).waitFor({ timeout: 30_000 });
  check((await text("#verify-cmd")) === command, "after the close the page prints the same verify command");
  said({ step: "closed", run: run2, returned, command: await text("#verify-cmd") });
  await snap("closed");
}
