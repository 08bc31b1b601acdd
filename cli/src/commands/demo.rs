//! `skilltrial demo`: the whole local job on embedded defaults.
//!
//! Validates the two example bundles, plans a 54-trial paired run on `solana-core@1.0.3`, runs
//! it, writes the JSON and HTML reports and says what they found. Without a model key it runs
//! against the built-in scripted model (labelled as such everywhere); with `ANTHROPIC_API_KEY`,
//! `OPENAI_API_KEY` or `OPENAI_BASE_URL` it runs against the real model under a budget cap.

use std::fmt::Write as _;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use skilltrial_core::bundle::{self, examples};
use skilltrial_core::manifest::{self, PlanOptions};
use skilltrial_core::profile::{self, Profile};
use skilltrial_engine::demo;
use skilltrial_engine::engine::{self, RunOptions};
use skilltrial_engine::scripted::ScriptedServer;

use crate::cli::{DemoArgs, Global};
use crate::commands::pack::open_verified as open_pack;
use crate::commands::report;
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;

fn say(global: &Global, line: &str) {
    if !global.json {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// The profile the demo uses and whether it is the scripted one.
fn choose(args: &DemoArgs) -> Result<Option<Profile>, CliError> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let scripted = args.scripted || args.scripted_model.is_some();
    let id = match (&args.model, scripted) {
        (_, true) => return Ok(None),
        (Some(id), false) => id.clone(),
        (None, false) if env("ANTHROPIC_API_KEY").is_some() => {
            "claude-sonnet-5-5@2026-09-30".to_owned()
        }
        (None, false) if env("OPENAI_BASE_URL").is_some() => "openai-compatible-local".to_owned(),
        (None, false) if env("OPENAI_API_KEY").is_some() => "gpt-4.1@2025-04-14".to_owned(),
        (None, false) => return Ok(None),
    };
    let profile = profile::find(&id, None)?;
    Ok(Some(match &args.model_name {
        Some(name) => profile.with_model_name(name)?,
        None => profile,
    }))
}

/// The bounds of a demo against an unpriced profile, which has no monetary cap.
const DEMO_UNPRICED_MAX_REQUESTS: u32 = 100;
const DEMO_UNPRICED_MAX_TOKENS: u64 = 5_000_000;

pub fn run(args: &DemoArgs, global: &Global) -> Result<Status, CliError> {
    // A gate policy is read first: a bad one stops the demo before anything is planned.
    let gate = match &args.gate {
        Some(path) => Some(crate::commands::gate::pin_policy(path)?),
        None => None,
    };
    // 1. Validate the two bundles.
    let mut bundles = Vec::new();
    // The examples are built into the binary, so the default works from any directory.
    for (label, path, example) in [
        ("A", &args.a, examples::EXAMPLE_A),
        ("B", &args.b, examples::EXAMPLE_B),
    ] {
        let imported = match path {
            Some(path) => bundle::import(path),
            None => examples::example_bundle(example),
        };
        let b = imported.map_err(|rejected| {
            let hint = match path {
                Some(path) => format!(
                    " (run `skilltrial validate {}` for details)",
                    path.display()
                ),
                None => String::new(),
            };
            let message = format!("bundle {label}: {rejected}{hint}");
            CliError::from(rejected).reworded(message)
        })?;
        say(
            global,
            &format!(
                "validated {label}: {} {} {} ({} files, {} flags)",
                bundle::display_safe(&b.name),
                bundle::display_safe(b.version.as_deref().unwrap_or("unversioned")),
                b.digest,
                b.files.len(),
                b.flags.len()
            ),
        );
        bundles.push(b);
    }
    let (a, b) = (&bundles[0], &bundles[1]);
    // The demo's pack: the first released one by default, or any embedded pack or folder.
    let pack = open_pack(&args.pack)?;

    // 2. The model: real when a key is set, else the built-in scripted one.
    let chosen = choose(args)?;
    // The script places each request by the plan, which needs the server's port first.
    let plans = demo::Plans::default();
    let server = match chosen {
        Some(_) => None,
        None => Some(
            ScriptedServer::start(demo::responder(pack.clone(), plans.clone())).map_err(|e| {
                CliError::Environment(anyhow::anyhow!("cannot start the scripted model: {e}"))
            })?,
        ),
    };
    let (profile, scripted) = match (&chosen, &server) {
        (Some(p), _) => (p.clone(), false),
        (None, Some(s)) => {
            let model = args
                .scripted_model
                .and_then(demo::ScriptedModel::from_number)
                .unwrap_or_default();
            (demo::profile_of(model, &s.url()), true)
        }
        (None, None) => return Err(CliError::Environment(anyhow::anyhow!("no model"))),
    };
    if scripted {
        say(
            global,
            "model: the built-in SCRIPTED model (no key set): the results demonstrate the pipeline, not any real model",
        );
    } else {
        say(
            global,
            &format!(
                "model: {} ({}), {}",
                profile.id,
                profile.model,
                // What bounds this run: an unpriced profile has no monetary cap (the requests
                // and tokens caps below apply instead), whatever --cap-usd says.
                if profile.price.is_none() {
                    format!(
                        "no monetary cap (unpriced profile): at most {DEMO_UNPRICED_MAX_REQUESTS} requests and {DEMO_UNPRICED_MAX_TOKENS} tokens"
                    )
                } else {
                    format!("budget cap {}", args.cap_usd)
                }
            ),
        );
    }
    let endpoint = profile.endpoint()?;
    let cap = args.cap_usd;
    let unpriced = profile.price.is_none();
    if unpriced && !args.yes {
        return Err(CliError::Environment(anyhow::anyhow!(
            "profile {} has no verifiable price (no monetary cap): confirm with --yes",
            profile.id
        )));
    }
    // The request cap fits the pack at the default repetitions with a quarter to spare, so a
    // request left unknown by a crash can be retried (a larger pack needs more than the usual
    // 100); more repetitions than that are refused below with what to change.
    let per_rep = u32::try_from(pack.tasks.len().saturating_mul(3)).unwrap_or(u32::MAX);
    let trials = per_rep.saturating_mul(manifest::DEFAULT_REPETITIONS);
    let pack_cap = trials.saturating_add(trials.div_ceil(4));
    let max_requests = if unpriced {
        Some(DEMO_UNPRICED_MAX_REQUESTS.max(pack_cap))
    } else {
        (pack_cap > manifest::DEFAULT_MAX_REQUESTS).then_some(pack_cap)
    };
    let options = PlanOptions {
        repetitions: args.reps,
        seed: 20_261_129,
        cap: (!unpriced).then_some(cap),
        max_requests,
        max_tokens: unpriced.then_some(DEMO_UNPRICED_MAX_TOKENS),
        max_output_tokens: None,
        endpoint,
        scripted,
    };
    let mut m = manifest::build(&pack, Some(a), Some(b), &profile, &options)?;
    m.gate = gate;
    // The demo's request cap is its own (no --max-requests): say what to change here.
    let needed = u64::from(args.reps).saturating_mul(
        u64::try_from(m.tasks.len().saturating_mul(m.arms.len())).unwrap_or(u64::MAX),
    );
    if needed > u64::from(m.budget.max_requests) {
        let per_rep = u64::try_from(m.tasks.len().saturating_mul(m.arms.len()))
            .unwrap_or(1)
            .max(1);
        return Err(CliError::Environment(anyhow::anyhow!(
            "--reps {}: the demo would send {needed} requests, over its cap of {}: use --reps {} or fewer, or plan a larger run with `skilltrial plan --max-requests`",
            args.reps,
            m.budget.max_requests,
            u64::from(m.budget.max_requests) / per_rep
        )));
    }
    let (planned, totals) = manifest::trials(&m, &pack, Some(a), Some(b))?;

    // 3. Plan: inputs into the store.
    let mut opened = state::open(global)?;
    let hash = engine::save_inputs(&opened.store, &m, &pack, Some(a), Some(b))?;
    plans.add(&hash.hex(), &planned);
    say(
        global,
        &format!("planned {} trials, manifest {hash}", totals.trials),
    );

    // 4. Run.
    let inputs = engine::load_inputs(&opened.store, &hash.hex())?;
    let provider = skilltrial_engine::provider::for_manifest(&m)?;
    let mut show = crate::commands::progress::printer(global.json);
    // Ctrl-C as in `run`: the first stops after the request in flight (resumable), the second
    // exits at once.
    let stop = Arc::new(AtomicBool::new(false));
    crate::commands::run::on_interrupt(&stop)?;
    let notice = crate::commands::run::interrupt_notice(Arc::clone(&stop));
    let result = engine::run(
        &mut opened.journal,
        &opened.payloads,
        provider.as_ref(),
        &inputs,
        RunOptions {
            dispatch_limit: None,
            stop: Some(Arc::clone(&stop)),
            ..RunOptions::default()
        },
        &mut show,
    );
    notice.finish();
    let summary = result?;
    drop(show);
    drop(server);
    if stop.load(Ordering::SeqCst) && summary.status == "stopped" {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "stopped: resume with `skilltrial run --manifest {}`, then `skilltrial report`",
            hash.hex()
        );
        return Ok(Status::Interrupted);
    }

    // 5. Reports.
    let run = state::find_run(&opened.journal, Some(&summary.run))?;
    let written = report::write(&opened, &run, args.out.as_deref())?;
    if global.json {
        // The same document `report --json` prints for this run.
        output::json(&report::summary_json(&written))?;
    } else {
        let mut out = report::render(&written);
        let _ = writeln!(
            out,
            "\nopen the HTML report in a browser; `skilltrial status` and `skilltrial report` work on this run too"
        );
        let _ = writeln!(
            out,
            "note: {}",
            skilltrial_engine::report::SENSITIVE_WARNING
        );
        output::text(&out)?;
    }
    Ok(Status::Ok)
}
