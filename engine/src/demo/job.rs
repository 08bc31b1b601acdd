//! The whole local job behind `skilltrial demo`, as one operation ([`run`]): validate the two
//! bundles (the embedded examples by default), open the pack, choose the model (a real profile
//! when a key is in the environment, else the scripted model on a loopback port), plan, store the
//! inputs, run, and write both report files.
//!
//! It prints nothing: each step is told to the caller as an [`Event`] (a [`Step`] has the line a
//! person reads), and the caller renders the [`DemoOutcome`]. The steps run in a fixed order that
//! decides which refusal a person sees first, and nothing is written to the state directory
//! before the plan is made: a bad bundle, pack, model or repetition count leaves it untouched.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use skilltrial_core::bundle::{self, Bundle, examples};
use skilltrial_core::concurrency::Concurrency;
use skilltrial_core::digest::Sha256Digest;
use skilltrial_core::gate::Pin;
use skilltrial_core::manifest::{self, PlanError, PlanOptions};
use skilltrial_core::money::MicroUsd;
use skilltrial_core::profile::{self, Profile, ProfileError};

use super::{Plans, ScriptedModel, profile_of, responder};
use crate::engine::{self as runs, EngineError, Progress, RunOptions, RunSummary};
use crate::home::{HomeError, Layout, state_home};
use crate::journal::JournalError;
use crate::packs::{self, PackOpenError};
use crate::provider::SetupError;
use crate::report::{self, Targets, WriteError, Written};
use crate::scripted::ScriptedServer;
use crate::state::{self, StateError};

/// The bounds of a demo against an unpriced profile, which has no monetary cap.
pub const UNPRICED_MAX_REQUESTS: u32 = 100;
/// See [`UNPRICED_MAX_REQUESTS`].
pub const UNPRICED_MAX_TOKENS: u64 = 5_000_000;

/// The demo's arm-order seed: fixed, so every demo (and a resumed one) orders its arms alike.
const SEED: u64 = 20_261_129;

/// What to run: `skilltrial demo`'s flags, parsed.
#[derive(Debug, Clone)]
pub struct DemoRequest {
    /// Bundle A (a folder or ZIP); `None` for the embedded example solana-reader 1.4.2.
    pub a: Option<PathBuf>,
    /// Bundle B; `None` for the embedded example solana-reader 1.5.0.
    pub b: Option<PathBuf>,
    /// An embedded pack id or a pack folder.
    pub pack: String,
    /// A model profile to use instead of choosing by the keys in the environment.
    pub model: Option<String>,
    /// The model name to send, for a profile that takes one.
    pub model_name: Option<String>,
    /// Use the scripted model even when a key is set.
    pub scripted: bool,
    /// Which script the scripted model plays.
    pub scripted_model: ScriptedModel,
    /// Repetitions.
    pub reps: u32,
    /// The budget cap of a run on a priced profile.
    pub cap: MicroUsd,
    /// A run on an unpriced profile (no monetary cap) was confirmed.
    pub confirm_unpriced: bool,
    /// Where to write the reports (default: `<state dir>/reports/<run>`).
    pub out: Option<PathBuf>,
    /// A release-gate policy to pin in the manifest.
    pub gate: Option<Pin>,
    /// The state directory given explicitly (`--home`); else it is chosen from the environment.
    pub home: Option<PathBuf>,
    /// Set to stop the run after the request in flight, resumable (a Ctrl-C); see
    /// [`DemoOutcome::Stopped`].
    pub stop: Option<Arc<AtomicBool>>,
    /// Requests in flight at once.
    pub concurrency: Concurrency,
    /// Progressive delivery with this turn limit K (`--delivery progressive`); `None` inline.
    pub progressive: Option<u32>,
}

/// A step done, with the line a person reads for it ([`fmt::Display`]).
#[derive(Debug)]
pub enum Step<'a> {
    /// A bundle was read and passed validation (`label` is `A` or `B`).
    Validated { label: &'a str, bundle: &'a Bundle },
    /// The model was chosen; `scripted` when it is the built-in scripted one.
    Model {
        profile: &'a Profile,
        scripted: bool,
        cap: MicroUsd,
    },
    /// The inputs are stored under the manifest's hash (the run's id).
    Planned {
        trials: u32,
        manifest: &'a Sha256Digest,
        /// K, for a progressive plan.
        max_turns: Option<u32>,
    },
}

impl fmt::Display for Step<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Validated { label, bundle: b } => write!(
                f,
                "validated {label}: {} {} {} ({} files, {} flags)",
                bundle::display_safe(&b.name),
                bundle::display_safe(b.version.as_deref().unwrap_or("unversioned")),
                b.digest,
                b.files.len(),
                b.flags.len()
            ),
            Step::Model { scripted: true, .. } => f.write_str(
                "model: the built-in SCRIPTED model (no key set): the results demonstrate the pipeline, not any real model",
            ),
            Step::Model { profile, cap, .. } => {
                write!(f, "model: {} ({}), ", profile.id, profile.model)?;
                // What bounds this run: an unpriced profile has no monetary cap (the requests
                // and tokens caps apply instead), whatever the cap says.
                if profile.price.is_none() {
                    write!(
                        f,
                        "no monetary cap (unpriced profile): at most {UNPRICED_MAX_REQUESTS} requests and {UNPRICED_MAX_TOKENS} tokens"
                    )
                } else {
                    write!(f, "budget cap {cap}")
                }
            }
            Step::Planned {
                trials,
                manifest,
                max_turns,
            } => match max_turns {
                Some(k) => write!(
                    f,
                    "planned {trials} trials, progressive (the skill loaded with tools, up to {k} turns each; {} listed beside it), manifest {manifest}",
                    super::DISTRACTOR
                ),
                None => write!(f, "planned {trials} trials, manifest {manifest}"),
            },
        }
    }
}

/// What [`run`] tells its caller, in order.
#[derive(Debug)]
pub enum Event<'a> {
    /// A step done (see [`Step`]).
    Step(Step<'a>),
    /// The first request is about to be sent: the moment to start listening for a stop (a
    /// Ctrl-C handler setting [`DemoRequest::stop`]).
    Running,
    /// A trial closed (see [`crate::engine::run`]).
    Progress(&'a Progress),
    /// The run returned, whether it ended, stopped or failed: the moment to clear a progress
    /// display and stop listening.
    Ran,
}

/// An error of the caller's own, returned from its event handler: it stops the demo and comes
/// back from [`run`] unchanged, as [`DemoError::Caller`].
pub type CallerError = Box<dyn std::error::Error + Send + Sync>;

/// How the demo ended.
#[derive(Debug)]
pub enum DemoOutcome {
    /// The run returned and both report files are written.
    Reported(Box<Reported>),
    /// The stop flag stopped the run: resumable with `skilltrial run --manifest <manifest>`; no
    /// report was written.
    Stopped {
        /// The run's id (the manifest hash, hex).
        manifest: String,
    },
}

/// A demo run to its report.
#[derive(Debug)]
pub struct Reported {
    /// How the run ended.
    pub summary: RunSummary,
    /// Whether it ran on the built-in scripted model.
    pub scripted: bool,
    /// The report and where its files are.
    pub written: Written,
}

/// Why the demo stopped before its report. The variants wrap the library errors of the step
/// that failed, so a caller maps each as it maps that library's errors.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// Bundle `label` is missing, unreadable or breaks a rule.
    #[error("bundle {label}: {source}{}", match path {
        Some(path) => format!(" (run `skilltrial validate {}` for details)", path.display()),
        None => String::new(),
    })]
    Bundle {
        label: &'static str,
        /// The path given, `None` for the embedded example.
        path: Option<PathBuf>,
        #[source]
        source: bundle::Rejected,
    },
    #[error(transparent)]
    Pack(#[from] PackOpenError),
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error("cannot start the scripted model: {0}")]
    ScriptedModel(#[source] std::io::Error),
    /// The profile has no price, so no monetary cap bounds the run, and that was not confirmed.
    #[error("profile {profile} has no verifiable price (no monetary cap): confirm with --yes")]
    Unconfirmed { profile: String },
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The repetitions asked for would send more requests than the demo's cap.
    #[error(
        "--reps {reps}: the demo would send {needed} requests, over its cap of {cap}: use --reps {fits} or fewer, or plan a larger run with `skilltrial plan --max-requests`"
    )]
    OverCap {
        reps: u32,
        needed: u64,
        cap: u32,
        fits: u64,
    },
    #[error(transparent)]
    Home(#[from] HomeError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The journal has no row for the run just run (changed under it).
    #[error(
        "no run `{run}` in {}: give the manifest hash `skilltrial plan` printed, or a prefix of at least 8 characters",
        journal.display()
    )]
    RunMissing { run: String, journal: PathBuf },
    #[error(transparent)]
    Report(#[from] WriteError),
    /// The caller's event handler failed.
    #[error(transparent)]
    Caller(CallerError),
}

/// The profile `request` asks for, or `None` for the scripted model: a profile named, else the
/// first key set (`ANTHROPIC_API_KEY`, then `OPENAI_BASE_URL`, then `OPENAI_API_KEY`).
fn choose(
    request: &DemoRequest,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Profile>, ProfileError> {
    let set = |k: &str| env(k).is_some_and(|v| !v.trim().is_empty());
    let id = match &request.model {
        _ if request.scripted => return Ok(None),
        Some(id) => id.clone(),
        None if set("ANTHROPIC_API_KEY") => "claude-sonnet-5-5@2026-09-30".to_owned(),
        None if set("OPENAI_BASE_URL") => "openai-compatible-local".to_owned(),
        None if set("OPENAI_API_KEY") => "gpt-4.1@2025-04-14".to_owned(),
        None => return Ok(None),
    };
    let profile = profile::find(&id, None)?;
    Ok(Some(match &request.model_name {
        Some(name) => profile.with_model_name(name)?,
        None => profile,
    }))
}

/// Bundle `label`: the file at `path`, or the embedded `example`.
fn bundle_of(label: &'static str, path: Option<&Path>, example: &str) -> Result<Bundle, DemoError> {
    match path {
        Some(path) => bundle::import(path),
        None => examples::example_bundle(example),
    }
    .map_err(|source| DemoError::Bundle {
        label,
        path: path.map(Path::to_path_buf),
        source,
    })
}

/// Runs the demo `request` describes to its report, telling `on_event` each step. `env` looks up
/// the environment (the state directory's variables and the model keys that choose the profile).
///
/// An error returned by `on_event` stops the demo: before the run nothing more is done; during
/// it, the run stops after the request in flight (resumable) and the error is returned once it
/// has.
pub fn run(
    request: &DemoRequest,
    env: &dyn Fn(&str) -> Option<String>,
    on_event: &mut dyn FnMut(Event<'_>) -> Result<(), CallerError>,
) -> Result<DemoOutcome, DemoError> {
    // 1. The two bundles.
    let a = bundle_of("A", request.a.as_deref(), examples::EXAMPLE_A)?;
    on_event(Event::Step(Step::Validated {
        label: "A",
        bundle: &a,
    }))
    .map_err(DemoError::Caller)?;
    let b = bundle_of("B", request.b.as_deref(), examples::EXAMPLE_B)?;
    on_event(Event::Step(Step::Validated {
        label: "B",
        bundle: &b,
    }))
    .map_err(DemoError::Caller)?;
    let pack = packs::open_verified(&request.pack)?;

    // 2. The model: real when a key is set, else the built-in scripted one. The script places
    // each request by the plan, which needs the server's port first.
    let chosen = choose(request, env)?;
    let plans = Plans::default();
    let (profile, server) = match chosen {
        Some(profile) => (profile, None),
        None => {
            let server = ScriptedServer::start(responder(pack.clone(), plans.clone()))
                .map_err(DemoError::ScriptedModel)?;
            (
                profile_of(request.scripted_model, &server.url()),
                Some(server),
            )
        }
    };
    let scripted = server.is_some();
    on_event(Event::Step(Step::Model {
        profile: &profile,
        scripted,
        cap: request.cap,
    }))
    .map_err(DemoError::Caller)?;
    let endpoint = profile.endpoint()?;
    let unpriced = profile.price.is_none();
    if unpriced && !request.confirm_unpriced {
        return Err(DemoError::Unconfirmed {
            profile: profile.id.clone(),
        });
    }

    // 3. The plan. The request cap fits the pack at the default repetitions with a quarter to
    // spare, so a request left unknown by a crash can be retried (a larger pack needs more than
    // the usual 100); more repetitions than that are refused below with what to change.
    let turns = request.progressive.unwrap_or(1);
    let per_rep = u32::try_from(pack.tasks.len().saturating_mul(3))
        .unwrap_or(u32::MAX)
        .saturating_mul(turns);
    let trials = per_rep.saturating_mul(manifest::DEFAULT_REPETITIONS);
    let pack_cap = trials.saturating_add(trials.div_ceil(4));
    let max_requests = if unpriced {
        Some(UNPRICED_MAX_REQUESTS.max(pack_cap))
    } else {
        (pack_cap > manifest::DEFAULT_MAX_REQUESTS).then_some(pack_cap)
    };
    let options = PlanOptions {
        repetitions: request.reps,
        seed: SEED,
        cap: (!unpriced).then_some(request.cap),
        max_requests,
        max_tokens: unpriced.then_some(UNPRICED_MAX_TOKENS),
        max_output_tokens: None,
        endpoint,
        scripted,
    };
    let mut m = manifest::build(&pack, Some(&a), Some(&b), &profile, &options)?;
    m.gate = request.gate.clone();
    // Progressive: every catalog also lists the fee planner, a skill for another job, so the
    // report shows how often the model loads a neighbour instead.
    let others = match request.progressive {
        Some(k) => {
            m.make_progressive(k)?;
            let distractor =
                skilltrial_core::bundle::examples::example_bundle(super::DISTRACTOR_BUNDLE)
                    .map_err(|source| DemoError::Bundle {
                        label: "solana-fee-planner (the built-in other skill)",
                        path: None,
                        source,
                    })?;
            let others = vec![distractor];
            m.add_skills(&others, Some(&a), Some(&b))?;
            others
        }
        None => Vec::new(),
    };
    // The demo's request cap is its own (it takes no --max-requests): say what to change here.
    let per_rep = u64::try_from(m.tasks.len().saturating_mul(m.arms.len()))
        .unwrap_or(u64::MAX)
        .saturating_mul(u64::from(turns));
    let needed = u64::from(request.reps).saturating_mul(per_rep);
    if needed > u64::from(m.budget.max_requests) {
        return Err(DemoError::OverCap {
            reps: request.reps,
            needed,
            cap: m.budget.max_requests,
            fits: u64::from(m.budget.max_requests) / per_rep.max(1),
        });
    }
    let (planned, totals) = manifest::trials_with(&m, &pack, Some(&a), Some(&b), &others)?;

    // 4. The inputs into the store: the first write to the state directory.
    let home = state_home(request.home.as_deref(), env)?;
    let mut opened = state::open(Layout::new(&home.path))?;
    crate::engine::save_bundles(&opened.store, &others)?;
    let hash = runs::save_inputs(&opened.store, &m, &pack, Some(&a), Some(&b))?;
    plans.add(&hash.hex(), &planned);
    on_event(Event::Step(Step::Planned {
        trials: totals.trials,
        manifest: &hash,
        max_turns: request.progressive,
    }))
    .map_err(DemoError::Caller)?;

    // 5. The run.
    let inputs = runs::load_inputs(&opened.store, &hash.hex())?;
    let provider = crate::provider::for_manifest(&m)?;
    let stop = request.stop.clone().unwrap_or_default();
    on_event(Event::Running).map_err(DemoError::Caller)?;
    let mut failed: Option<CallerError> = None;
    let result = runs::run(
        &mut opened.journal,
        &opened.payloads,
        provider.as_ref(),
        &inputs,
        RunOptions {
            dispatch_limit: None,
            stop: Some(Arc::clone(&stop)),
            concurrency: request.concurrency,
            ..RunOptions::default()
        },
        &mut |p: &Progress| {
            if failed.is_none()
                && let Err(e) = on_event(Event::Progress(p))
            {
                failed = Some(e);
                stop.store(true, Ordering::SeqCst);
            }
        },
    );
    let ran = on_event(Event::Ran);
    let summary = result?;
    drop(server);
    if let Some(e) = failed {
        return Err(DemoError::Caller(e));
    }
    ran.map_err(DemoError::Caller)?;
    if stop.load(Ordering::SeqCst) && summary.status == "stopped" {
        return Ok(DemoOutcome::Stopped {
            manifest: hash.hex(),
        });
    }

    // 6. The reports.
    let row = opened
        .journal
        .find_run(&summary.run)?
        .ok_or_else(|| DemoError::RunMissing {
            run: summary.run.clone(),
            journal: opened.journal.path().to_path_buf(),
        })?;
    let written = report::write(
        &opened.journal,
        &opened.store,
        &opened.payloads,
        &opened.layout.root,
        &row,
        &Targets {
            dir: request.out.as_deref(),
            ..Targets::default()
        },
    )?;
    Ok(DemoOutcome::Reported(Box::new(Reported {
        summary,
        scripted,
        written,
    })))
}
