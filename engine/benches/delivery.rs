//! What a skill trial's input costs in each delivery mode, with and without prompt caching: the
//! real engine runs `solana-core@2.0.0` (1 repetition) with the large example bundle
//! `examples/skills/solana-field-manual` as arm A (no B) against the billing loopback server
//! (`ScriptedServer::start_billing`: prompt caching simulated and reported as each provider
//! does), inline and progressive, each with and without `--cache`, in both wire formats. Prints
//! numbers, asserts nothing about them.
//!
//! What makes the figures mean what they say:
//! - The requests are the engine's own, built from the pinned plan: the bodies a provider would
//!   receive, cache markers included when the plan caches.
//! - Tokens and money are read back from the journal the run wrote (each attempt's billed input
//!   tokens and spend at the plan's pinned prices), and the journal's input tokens must equal what
//!   the server billed, request by request, or the bench fails.
//! - The scripted agent is fixed, not tuned: inline it answers at once; progressive, on its first
//!   turn it loads the skill its catalog lists (none on the baseline), on its second it reads the
//!   first file the skill lists under the task family's folder (`acct-` → `references/accounts/`,
//!   `tx-` → `references/transactions/`, `plan-` → `references/plans/`), then it answers. Its
//!   answer is a fixed text: scores do not matter here.
//! - Runs are sequential (one request in flight), so "after the first" skill trial is well
//!   defined: every later one could find what the first wrote.
//! - A run that fails, ends other than `finished`, or leaves a trial unscored fails the bench.
//!
//! Run: `cargo bench -p skilltrial-engine --bench delivery` (about a minute).
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::cast_precision_loss
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use skilltrial_core::bundle::{self, Bundle};
use skilltrial_core::manifest::{self, PlanOptions};
use skilltrial_core::money::{MicroUsd, PerMtok};
use skilltrial_core::pack::{self, Pack};
use skilltrial_core::profile::{CachePrice, Price, Profile, ProviderKind};
use skilltrial_engine::engine::{self, RunOptions};
use skilltrial_engine::home::Layout;
use skilltrial_engine::journal::Journal;
use skilltrial_engine::provider::{Anthropic, OpenAi, Provider};
use skilltrial_engine::scripted::{Bill, Reply, ScriptedServer, ServerRequest};
use skilltrial_engine::store::Store;

mod support;

use support::{BenchDir, ctx};

const PACK: &str = "solana-core@2.0.0";
const BUNDLE: &str = "examples/skills/solana-field-manual";
/// K, the turn limit of the progressive plans (the default).
const MAX_TURNS: u32 = 4;
/// The agent's every answer.
const ANSWER: &str = "I decoded it as best I could: no confident answer.";

/// One way of running the plan.
#[derive(Clone, Copy)]
struct Mode {
    provider: ProviderKind,
    progressive: bool,
    cache: bool,
}

impl Mode {
    fn name(self) -> String {
        format!(
            "{} {}{}",
            self.provider.as_str(),
            if self.progressive {
                "progressive"
            } else {
                "inline"
            },
            if self.cache { " +cache" } else { "" }
        )
    }
}

/// The four modes of each wire format, Anthropic first.
fn modes() -> Vec<Mode> {
    let mut modes = Vec::new();
    for provider in [ProviderKind::Anthropic, ProviderKind::Openai] {
        for progressive in [false, true] {
            for cache in [false, true] {
                modes.push(Mode {
                    provider,
                    progressive,
                    cache,
                });
            }
        }
    }
    modes
}

/// A priced profile with cache prices: Anthropic as claude-sonnet-4-5 (input $3, output $15,
/// cache write 1.25×, read 0.1×), OpenAI as gpt-4.1 (input $2, output $8, no write surcharge,
/// read 0.25×).
fn profile(provider: ProviderKind, url: &str) -> Profile {
    let (input, output, write, read) = match provider {
        ProviderKind::Anthropic => (3_000_000, 15_000_000, 3_750_000, 300_000),
        ProviderKind::Openai => (2_000_000, 8_000_000, 2_000_000, 500_000),
    };
    Profile {
        id: "bench-delivery".into(),
        provider,
        model: "bench-model".into(),
        revision: None,
        base_url: Some(url.to_owned()),
        context_tokens: 1_000_000,
        max_output_tokens: 1024,
        price: Some(Price {
            input: PerMtok(input),
            output: PerMtok(output),
            source: "bench".into(),
            as_of: "2026-12-05".into(),
            cache: Some(CachePrice {
                write: PerMtok(write),
                read: PerMtok(read),
            }),
        }),
        origin: "bench".into(),
    }
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let len = text.get(from..)?.find(end)?;
    text.get(from..from + len)
}

/// The scripted agent (see the module's doc): read from the request alone.
fn agent(request: &ServerRequest) -> Reply {
    let answer = || Reply::Answer(ANSWER.to_owned());
    if !request.has_tools() {
        return answer();
    }
    let system = request.system_text();
    let Some(skill) = between(&system, "<name>", "</name>") else {
        return answer();
    };
    match request.turn() {
        1 => Reply::Tools {
            text: String::new(),
            calls: vec![(
                "load_skill".to_owned(),
                serde_json::json!({ "name": skill }).to_string(),
            )],
        },
        2 => {
            let task = request.task_text();
            let family =
                match between(&task, "<task id=\"", "\"").and_then(|id| id.split('-').next()) {
                    Some("acct") => "references/accounts/",
                    Some("tx") => "references/transactions/",
                    Some("plan") => "references/plans/",
                    _ => return answer(),
                };
            let results = request.tool_results();
            let listed = results
                .iter()
                .filter(|(_, _, is_error)| !is_error)
                .find_map(|(_, content, _)| between(content, "<skill_files>\n", "</skill_files>"))
                .and_then(|files| {
                    files
                        .lines()
                        .find(|l| l.starts_with(family) && l.contains("readable"))
                        .and_then(|l| l.split(' ').next())
                });
            match listed {
                Some(path) => Reply::Tools {
                    text: String::new(),
                    calls: vec![(
                        "read_skill_resource".to_owned(),
                        serde_json::json!({ "name": skill, "path": path }).to_string(),
                    )],
                },
                None => answer(),
            }
        }
        _ => answer(),
    }
}

/// One trial's input, summed over its turns.
#[derive(Default, Clone, Copy)]
struct TrialInput {
    turns: u32,
    /// Billed input tokens, at any rate (the journal's `input_tokens`).
    tokens: u64,
    /// Of those, read from and written to the cache (the server's bills).
    read: u64,
    written: u64,
    /// Input cost: the attempt's spend less its output at the output price.
    cost: MicroUsd,
}

/// What one mode's run measured.
struct Measured {
    mode: Mode,
    requests: usize,
    counts: BTreeMap<String, u32>,
    /// The skill arm's trials, in execution order.
    skill: Vec<TrialInput>,
    baseline: Vec<TrialInput>,
    /// The skill arm's billed input tokens by turn number: (sum, turns).
    by_turn: BTreeMap<u32, (u64, u32)>,
}

fn execute(dir: &Path, mode: Mode, pack: &Pack, a: &Bundle) -> Result<Measured, String> {
    let server = ctx(ScriptedServer::start_billing(agent), "billing server")?;
    let profile = profile(mode.provider, &server.url());
    let options = PlanOptions {
        repetitions: 1,
        seed: 1,
        cap: Some(ctx(MicroUsd::parse_usd("100000"), "cap")?),
        max_requests: Some(100_000),
        max_tokens: None,
        max_output_tokens: Some(1024),
        endpoint: server.url(),
        scripted: false,
    };
    let mut m = ctx(
        manifest::build(pack, Some(a), None, &profile, &options),
        "manifest",
    )?;
    if mode.progressive {
        ctx(m.make_progressive(MAX_TURNS), "progressive")?;
    }
    if mode.cache {
        ctx(m.enable_cache(&profile), "cache")?;
    }
    let layout = Layout::new(dir);
    let store = ctx(Store::open(&layout.store), "store")?;
    let payloads = ctx(Store::open(&layout.payloads), "payload store")?;
    let hash = ctx(
        engine::save_inputs(&store, &m, pack, Some(a), None),
        "save inputs",
    )?;
    let inputs = ctx(engine::load_inputs(&store, &hash.hex()), "load inputs")?;
    let mut journal = ctx(Journal::open(&layout.journal), "journal")?;
    let timeout = Duration::from_secs(60);
    let provider: Box<dyn Provider> = match mode.provider {
        ProviderKind::Anthropic => Box::new(ctx(
            Anthropic::new(&server.url(), "bench-key".into(), timeout),
            "provider",
        )?),
        ProviderKind::Openai => Box::new(ctx(
            OpenAi::new(&server.url(), Some("bench-key".into()), timeout),
            "provider",
        )?),
    };
    let summary = ctx(
        engine::run(
            &mut journal,
            &payloads,
            provider.as_ref(),
            &inputs,
            RunOptions::default(),
            &mut |_| {},
        ),
        "run",
    )?;
    if summary.status != "finished" {
        return Err(format!(
            "{}: run ended `{}`: {:?}",
            mode.name(),
            summary.status,
            summary.counts
        ));
    }
    let unscored: Vec<_> = summary
        .counts
        .keys()
        .filter(|k| !support::SCORED.contains(&k.as_str()))
        .collect();
    if !unscored.is_empty() {
        return Err(format!(
            "{}: trials left unscored: {unscored:?}",
            mode.name()
        ));
    }
    let price = m.budget.price.clone().ok_or("the plan pinned no price")?;
    let trials = ctx(journal.trials(&summary.run), "trials")?;
    let attempts = ctx(journal.attempts(&summary.run), "attempts")?;
    let bills: BTreeMap<String, Bill> = server
        .bills()
        .into_iter()
        .filter_map(|b| b.attempt.clone().map(|a| (a, b)))
        .collect();
    let mut per_trial: BTreeMap<u32, TrialInput> = BTreeMap::new();
    for attempt in &attempts {
        let (Some(tokens), Some(output), Some(spent)) = (
            attempt.input_tokens,
            attempt.output_tokens,
            attempt.spent_micros,
        ) else {
            return Err(format!(
                "{}: attempt {} has no usage or spend",
                mode.name(),
                attempt.id
            ));
        };
        let bill = bills
            .get(&attempt.id)
            .ok_or_else(|| format!("{}: the server billed no {}", mode.name(), attempt.id))?;
        if bill.input_tokens != tokens {
            return Err(format!(
                "{}: attempt {} journaled {tokens} input tokens, the server billed {}",
                mode.name(),
                attempt.id,
                bill.input_tokens
            ));
        }
        let output_cost = ctx(price.output.cost(output), "output cost")?;
        let input_cost = MicroUsd(spent)
            .checked_sub(output_cost)
            .ok_or_else(|| format!("{}: spend below the output's cost", mode.name()))?;
        let t = per_trial.entry(attempt.trial_idx).or_default();
        t.turns += 1;
        t.tokens += tokens;
        t.read += bill.cache_read_tokens;
        t.written += bill.cache_write_tokens;
        t.cost = ctx(t.cost.checked_add(input_cost), "input cost")?;
    }
    let arms: BTreeMap<u32, &str> = trials.iter().map(|t| (t.idx, t.arm.as_str())).collect();
    let mut by_turn: BTreeMap<u32, (u64, u32)> = BTreeMap::new();
    for attempt in &attempts {
        if arms.get(&attempt.trial_idx) == Some(&"a") {
            let entry = by_turn.entry(attempt.turn).or_default();
            entry.0 += attempt.input_tokens.unwrap_or(0);
            entry.1 += 1;
        }
    }
    let (mut skill, mut baseline) = (Vec::new(), Vec::new());
    for trial in &trials {
        let input = per_trial.get(&trial.idx).copied().unwrap_or_default();
        match trial.arm.as_str() {
            "a" => skill.push(input),
            "baseline" => baseline.push(input),
            other => return Err(format!("{}: unexpected arm `{other}`", mode.name())),
        }
    }
    Ok(Measured {
        mode,
        requests: server.requests().len(),
        counts: summary.counts,
        skill,
        baseline,
        by_turn,
    })
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (n, sum) = values.fold((0u32, 0.0), |(n, s), v| (n + 1, s + v));
    if n == 0 { 0.0 } else { sum / f64::from(n) }
}

struct Means {
    turns: f64,
    tokens: f64,
    read: f64,
    written: f64,
    cost: f64,
}

fn means(trials: &[TrialInput]) -> Means {
    Means {
        turns: mean(trials.iter().map(|t| f64::from(t.turns))),
        tokens: mean(trials.iter().map(|t| t.tokens as f64)),
        read: mean(trials.iter().map(|t| t.read as f64)),
        written: mean(trials.iter().map(|t| t.written as f64)),
        cost: mean(trials.iter().map(|t| t.cost.0 as f64)),
    }
}

fn parent() -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pack = ctx(pack::open(PACK), PACK)?;
    let a = ctx(bundle::import(&root.join(BUNDLE)), BUNDLE)?;
    let (state, _) = support::state_dir()?;
    let bench = BenchDir::create(&state, "bench-delivery")?;
    let mut runs = Vec::new();
    for (i, mode) in modes().into_iter().enumerate() {
        let measured = execute(&bench.path.join(format!("run-{i}")), mode, &pack, &a)?;
        eprintln!("{}: {} requests", mode.name(), measured.requests);
        runs.push(measured);
    }
    let bundle_bytes: u64 = a.files.iter().map(|f| f.bytes.len() as u64).sum();
    println!(
        "delivery bench: {PACK}, 1 repetition, A = {BUNDLE} ({} files, {bundle_bytes} bytes), no B; K = {MAX_TURNS}; billing loopback server (tokens: a quarter per byte of the body); one request in flight",
        a.files.len()
    );
    if let Some(r) = runs.first() {
        println!(
            "skill trials per run: {}; baseline trials: {}; outcomes (inline): {}",
            r.skill.len(),
            r.baseline.len(),
            support::counts_line(&r.counts)
        );
    }
    println!(
        "\nper skill trial (mean over the A arm's trials; tokens billed at any rate, cost of the input in µUSD at the plan's prices)"
    );
    println!(
        "{:<28} {:>8} {:>6} {:>12} {:>11} {:>11} {:>12} {:>15} {:>14}",
        "mode",
        "requests",
        "turns",
        "input tok",
        "read",
        "written",
        "input µUSD",
        "µUSD after 1st",
        "baseline tok"
    );
    for r in &runs {
        let all = means(&r.skill);
        let later = means(r.skill.get(1..).unwrap_or_default());
        println!(
            "{:<28} {:>8} {:>6.2} {:>12.0} {:>11.0} {:>11.0} {:>12.0} {:>15.0} {:>14.0}",
            r.mode.name(),
            r.requests,
            all.turns,
            all.tokens,
            all.read,
            all.written,
            all.cost,
            later.cost,
            means(&r.baseline).tokens
        );
    }
    println!(
        "\nprogressive skill trials, billed input tokens per request by turn (mean; requests)"
    );
    for r in runs.iter().filter(|r| r.mode.progressive && !r.mode.cache) {
        let turns: Vec<String> = r
            .by_turn
            .iter()
            .map(|(turn, (sum, n))| {
                format!("turn {turn}: {:.0} ({n})", *sum as f64 / f64::from(*n))
            })
            .collect();
        println!("{:<28} {}", r.mode.name(), turns.join(", "));
    }
    let find = |provider: ProviderKind, progressive: bool, cache: bool| {
        runs.iter().find(|r| {
            r.mode.provider == provider
                && r.mode.progressive == progressive
                && r.mode.cache == cache
        })
    };
    println!();
    for provider in [ProviderKind::Anthropic, ProviderKind::Openai] {
        let label = provider.as_str();
        let (Some(inline), Some(progressive), Some(cached), Some(both)) = (
            find(provider, false, false),
            find(provider, true, false),
            find(provider, false, true),
            find(provider, true, true),
        ) else {
            continue;
        };
        let inline_all = means(&inline.skill);
        println!(
            "{label}: progressive / inline billed input tokens per skill trial: {:.3} (target <= 0.25)",
            means(&progressive.skill).tokens / inline_all.tokens
        );
        // The same trials on both sides: the skill trials after the first, in execution order
        // (the plan and its order are the same in both runs).
        let after_first = |r: &Measured| means(r.skill.get(1..).unwrap_or_default()).cost;
        let first = |r: &Measured| means(r.skill.get(..1).unwrap_or_default()).cost;
        println!(
            "{label}: inline +cache / inline input cost per skill trial after the first: {:.3} (target <= 0.2); the first skill trial: {:.3}",
            after_first(cached) / after_first(inline),
            first(cached) / first(inline)
        );
        println!(
            "{label}: input cost per skill trial against inline: progressive {:.3}, progressive +cache {:.3}",
            means(&progressive.skill).cost / inline_all.cost,
            means(&both.skill).cost / inline_all.cost
        );
        if provider == ProviderKind::Openai {
            // The same requests and the same cached tokens, priced at a cached-input rate of
            // 0.1× the input rate (OpenAI's discount for gpt-5.2, where gpt-4.1's is 0.25×),
            // against every input token at the full rate: in units of one uncached input token,
            // so no absolute price is assumed.
            let units = |trials: &[TrialInput]| {
                mean(
                    trials
                        .iter()
                        .map(|t| (t.tokens - t.read) as f64 + 0.1 * t.read as f64),
                )
            };
            let later = |r: &Measured| r.skill.get(1..).unwrap_or_default().to_vec();
            println!(
                "{label}: inline +cache / inline input cost per skill trial after the first, the same tokens re-priced with cached input at 0.1x: {:.3}",
                units(&later(cached)) / mean(later(inline).iter().map(|t| t.tokens as f64))
            );
        }
    }
    drop(bench);
    Ok(())
}

fn child(mode: &str) -> Result<(), String> {
    Err(format!("the delivery bench has no child mode (`{mode}`)"))
}

fn main() {
    support::main("delivery", child, parent);
}
