//! `skilltrial plan`: build the manifest, copy every input into the store, show the bounds.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;
use skilltrial_core::bundle::{self, Bundle};
use skilltrial_core::delivery;
use skilltrial_core::manifest::{self, PlanOptions, Totals};
use skilltrial_core::money::MicroUsd;
use skilltrial_core::profile;
use skilltrial_core::report::ExactFraction;
use skilltrial_core::stats;
use skilltrial_engine::engine;

use crate::cli::{Global, PlanArgs};
use crate::commands::pack::open_verified as open_pack;
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct PlanReport<'a> {
    manifest_hash: String,
    run: String,
    trials: u32,
    /// The smallest p the paired test can reach on this plan (`null` with a single arm).
    power: Option<PowerView>,
    totals: &'a Totals,
    cap_usd_micros: Option<u64>,
    /// The smallest upper cost of one trial (µUSD; `null` unpriced): a cap below it sends
    /// nothing.
    smallest_trial_usd_micros: Option<u64>,
    requires_confirmation: bool,
    manifest: &'a manifest::Manifest,
    out: Option<String>,
}

/// [`stats::Power`] in the report's fraction form.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct PowerView {
    tasks: usize,
    contrasts: usize,
    smallest_p: ExactFraction,
    smallest_holm_p: ExactFraction,
    /// `smallest_holm_p` as a float in scientific notation (the fraction's six-place `value`
    /// reads 0.000000 for the larger pack).
    smallest_holm_p_approx: String,
    /// Whether any contrast could read significant at 0.05 after Holm's adjustment.
    can_reach_0_05: bool,
}

impl PowerView {
    fn of(manifest: &manifest::Manifest) -> Option<Self> {
        let arms = manifest.arms.len();
        let power = stats::Power::of(manifest.tasks.len(), arms * arms.saturating_sub(1) / 2)?;
        Some(Self {
            tasks: power.tasks,
            contrasts: power.contrasts,
            smallest_p: ExactFraction::of(power.smallest_p),
            smallest_holm_p: ExactFraction::of(power.smallest_holm_p),
            smallest_holm_p_approx: format!("{:.3e}", power.smallest_holm_p.value()),
            can_reach_0_05: power.can_reach(0.05),
        })
    }
}

fn import(path: &std::path::Path, label: &str) -> Result<Bundle, CliError> {
    bundle::import(path)
        .map_err(|rejected| CliError::from(rejected).context(format!("bundle {label}")))
}

fn user_profiles(explicit: Option<&PathBuf>) -> Option<PathBuf> {
    if let Some(path) = explicit {
        return Some(path.clone());
    }
    let config = std::env::var("XDG_CONFIG_HOME")
        .ok()
        .filter(|v| std::path::Path::new(v).is_absolute())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var("HOME")
                .ok()
                .map(|h| PathBuf::from(h).join(".config"))
        })?;
    Some(config.join("skilltrial/profiles.toml"))
}

pub fn run(args: &PlanArgs, global: &Global) -> Result<Status, CliError> {
    if let Some(path) = &args.profiles
        && !path.is_file()
    {
        return Err(CliError::Environment(anyhow::anyhow!(
            "profiles file {} does not exist",
            path.display()
        )));
    }
    let profile = profile::find(
        &args.model,
        user_profiles(args.profiles.as_ref()).as_deref(),
    )
    .and_then(|p| match &args.model_name {
        Some(name) => p.with_model_name(name),
        None => Ok(p),
    })?;
    // Refuse an unusable endpoint before anything is imported or stored.
    let endpoint = profile.endpoint()?;
    if args.cap_usd.is_some() && profile.price.is_none() {
        // Dropped silently before: an unpriced run has no cost to hold against a cap.
        return Err(CliError::Environment(anyhow::anyhow!(
            "--cap-usd: profile {} has no price, so a money cap cannot be kept: bound the run with --max-requests and --max-tokens",
            profile.id
        )));
    }
    let pack = open_pack(&args.pack)?;
    let a = args.a.as_deref().map(|p| import(p, "A")).transpose()?;
    let b = args.b.as_deref().map(|p| import(p, "B")).transpose()?;
    let seed = args.seed.unwrap_or_else(random_seed);
    let options = PlanOptions {
        repetitions: args.reps,
        seed,
        cap: args.cap_usd,
        max_requests: args.max_requests,
        max_tokens: args.max_tokens,
        max_output_tokens: args.max_output_tokens,
        endpoint,
        scripted: false,
    };
    let mut manifest = manifest::build(&pack, a.as_ref(), b.as_ref(), &profile, &options)?;
    if let Some(rate) = args.sol_usd {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let source = args
            .sol_usd_source
            .as_deref()
            .unwrap_or("given with --sol-usd");
        manifest.sol_usd = Some(manifest::SolUsd::pin(
            rate,
            source,
            now,
            &manifest,
            "--sol-usd",
        )?);
    }
    if let Some(path) = &args.gate {
        let pin = crate::commands::gate::pin_policy(path)?;
        manifest.gate = Some(pin);
    }
    match (args.delivery, args.max_turns) {
        (delivery::Mode::Progressive, k) => {
            manifest.make_progressive(k.unwrap_or(delivery::DEFAULT_MAX_TURNS))?;
        }
        (delivery::Mode::Inline, Some(_)) => {
            return Err(CliError::Environment(anyhow::anyhow!(
                "--max-turns: a turn limit needs --delivery progressive (inline sends one request per trial)"
            )));
        }
        (delivery::Mode::Inline, None) => {}
    }
    let others = args
        .with_skills
        .iter()
        .enumerate()
        .map(|(i, path)| import(path, &format!("--with-skills {}", i + 1)))
        .collect::<Result<Vec<_>, _>>()?;
    if !others.is_empty() {
        manifest.add_skills(&others, a.as_ref(), b.as_ref())?;
    }
    if args.cache {
        manifest.enable_cache(&profile)?;
    }
    let (trials, totals) =
        manifest::trials_with(&manifest, &pack, a.as_ref(), b.as_ref(), &others)?;
    manifest::check_token_cap(&manifest, &trials, manifest::Naming::Flags)?;

    let layout = state::layout(global)?;
    let store = state::store(&layout)?;
    engine::save_bundles(&store, &others)?;
    let hash = engine::save_inputs(&store, &manifest, &pack, a.as_ref(), b.as_ref())?;
    // The run exists from now on (status `planned`), so `status`, `cancel` and `run` find it by
    // its id or a prefix before its first `run`.
    state::journal(&layout)?.create_run(&hash.hex(), &manifest, &trials)?;
    let out = match &args.out {
        Some(path) => {
            let mut text =
                serde_json::to_string_pretty(&manifest).context("cannot encode the manifest")?;
            text.push('\n');
            std::fs::write(path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            Some(path.display().to_string())
        }
        None => None,
    };

    let report = PlanReport {
        manifest_hash: hash.to_string(),
        run: hash.hex(),
        trials: totals.trials,
        power: PowerView::of(&manifest),
        totals: &totals,
        cap_usd_micros: manifest.budget.cap_usd_micros,
        smallest_trial_usd_micros: manifest
            .budget
            .price
            .as_ref()
            .and_then(|_| trials.iter().map(|t| t.reserve.0).min()),
        requires_confirmation: manifest.budget.requires_confirmation,
        manifest: &manifest,
        out,
    };
    if global.json {
        output::json(&report)?;
    } else {
        output::text(&render(&report))?;
    }
    Ok(Status::Ok)
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    hasher.finish()
}

fn render(r: &PlanReport<'_>) -> String {
    let m = r.manifest;
    let mut out = String::new();
    let _ = writeln!(out, "manifest  {}", r.manifest_hash);
    if let Some(path) = &r.out {
        let _ = writeln!(out, "          written to {path}");
    }
    let _ = writeln!(
        out,
        "pack      {} ({} tasks), checker {} {}",
        m.pack.id,
        m.tasks.len(),
        m.checker.name,
        m.checker.version
    );
    let arms: Vec<String> = m
        .arms
        .iter()
        .map(|a| match &a.bundle {
            None => "baseline (no skill)".to_owned(),
            Some(b) => format!(
                "{} = {} {} ({}{})",
                a.arm.as_str().to_uppercase(),
                b.name,
                b.version.as_deref().unwrap_or("unversioned"),
                &b.digest[..b.digest.len().min(19)],
                if b.coverage == "partial" {
                    ", coverage partial"
                } else {
                    ""
                }
            ),
        })
        .collect();
    let _ = writeln!(out, "arms      {}", arms.join("; "));
    let revision = m
        .model
        .revision
        .as_deref()
        .map(|r| format!(" rev {r}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "model     {} ({} {}{revision}) at {}",
        m.model.profile,
        m.model.provider.as_str(),
        m.model.model,
        m.model.endpoint
    );
    let _ = writeln!(
        out,
        "trials    {} = {} tasks x {} repetitions x {} arms, arm order seeded by {}",
        r.trials,
        m.tasks.len(),
        m.repetitions,
        m.arms.len(),
        m.order.seed
    );
    if let Some(p) = &r.power {
        let _ = writeln!(
            out,
            "power     the smallest p the paired test can reach over {} tasks is {} ({} after Holm over {}; exactly {} and {}), when every task moves the same way{}",
            p.tasks,
            p.smallest_p.readable(),
            p.smallest_holm_p.readable(),
            skilltrial_core::report::count_of(
                u64::try_from(p.contrasts).unwrap_or(u64::MAX),
                "contrast",
                "contrasts"
            ),
            p.smallest_p.text,
            p.smallest_holm_p.text,
            if p.can_reach_0_05 {
                String::new()
            } else {
                ": no contrast can read significant at 0.05 with this many tasks (solana-core@2.0.0 has 46)".to_owned()
            }
        );
    } else {
        let _ = writeln!(
            out,
            "power     no paired test: a plan with the baseline alone has no contrast (add --a)"
        );
    }
    if let Some(pin) = &m.delivery {
        let _ = writeln!(
            out,
            "delivery  progressive: each arm's catalog in the system prompt, load_skill and read_skill_resource as tools, at most {} turns per trial (each turn one request, reserved before it leaves)",
            pin.max_turns
        );
        if !pin.with_skills.is_empty() {
            let listed: Vec<String> = pin
                .with_skills
                .iter()
                .map(|s| {
                    format!(
                        "{} {}",
                        s.name,
                        s.version.as_deref().unwrap_or("unversioned")
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "          every catalog also lists: {}",
                listed.join(", ")
            );
        }
    } else {
        let _ = writeln!(
            out,
            "delivery  inline: the whole bundle in every skill arm's prompt (--delivery progressive lets the model load it)"
        );
    }
    if let Some(cache) = m.budget.price.as_ref().and_then(|p| p.cache) {
        let _ = writeln!(
            out,
            "cache     the stable prefix of every request is marked for the provider's cache; cached tokens are charged as reported (write {}/Mtok, read {}/Mtok), and every reservation prices input as a cache write",
            MicroUsd(cache.write.0),
            MicroUsd(cache.read.0)
        );
    }
    let _ = writeln!(
        out,
        "requests  at most {} (cap {} per run; up to {} automatic retries per {} of rate-limited or overloaded requests, which cost nothing, count against it)",
        r.totals.max_requests,
        m.budget.max_requests,
        skilltrial_engine::provider::retry::MAX_AUTO_RETRIES,
        if m.delivery.is_some() {
            "request (each turn of a trial)"
        } else {
            "trial"
        }
    );
    let _ = writeln!(
        out,
        "tokens    at most {} input + {} output",
        r.totals.max_input_tokens, r.totals.max_output_tokens
    );
    match (r.totals.upper_cost, m.budget.cap_usd_micros) {
        (Some(upper), Some(cap)) => {
            let _ = writeln!(
                out,
                "cost      upper bound {upper} if every request used its whole bound; cap {}",
                MicroUsd(cap)
            );
            match r.smallest_trial_usd_micros {
                Some(smallest) if smallest > cap => {
                    let _ = writeln!(
                        out,
                        "          no trial fits the cap: the smallest trial's upper cost is {}; every trial would end not_run_budget (raise --cap-usd, or lower --max-turns or --max-output-tokens)",
                        MicroUsd(smallest)
                    );
                }
                _ if upper.0 > cap => {
                    let _ = writeln!(
                        out,
                        "          the bound is over the cap: a trial whose upper cost could break it is not sent (not_run_budget)"
                    );
                }
                _ => {}
            }
        }
        _ => {
            let _ = writeln!(
                out,
                "cost      no verifiable price: no monetary cap; hard caps {} requests, {} tokens; `run` asks for confirmation",
                m.budget.max_requests,
                m.budget.max_tokens.unwrap_or(0)
            );
        }
    }
    if let Some(rate) = &m.sol_usd {
        // A hosted run needs a runner daemon to have it registered, which `submit` does (with
        // the escrow); `open` alone escrows a run no runner executes.
        let _ = writeln!(
            out,
            "SOL/USD   {} per SOL, pinned {} (source: {})\n\
             hosted    skilltrial submit --manifest {} --runner <runner URL>: uploads the inputs to the runner daemon, escrows (asks first) and registers the run",
            MicroUsd(rate.usd_micros_per_sol),
            rate.at,
            rate.source,
            r.run
        );
    }
    if let Some(pin) = &m.gate {
        let _ = writeln!(
            out,
            "gate      policy {} pinned; after the run: skilltrial gate {}",
            pin.sha256, r.run
        );
    }
    if m.sol_usd.is_some() {
        let _ = writeln!(
            out,
            "next      skilltrial submit --manifest {} --runner <runner URL> (hosted), or skilltrial run --manifest {} (on this machine)",
            r.run, r.run
        );
    } else {
        let _ = writeln!(out, "next      skilltrial run --manifest {}", r.run);
    }
    out
}
