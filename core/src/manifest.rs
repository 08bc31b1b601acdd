//! The run manifest (docs/runs.md) and the one function that computes a plan from it.
//!
//! A manifest pins everything a run depends on: the A/B bundle digests and the baseline, the pack
//! and checker hashes, the prompt template (text and hash), the model (provider, name, revision,
//! endpoint), sampling and output limits, repetitions, the arm-order seed, the budget, the
//! environment and the app version. Never a key. Its hash is SHA-256 over its RFC 8785 canonical
//! JSON ([`crate::canonical`]); the run id is that hash.
//!
//! Trial order (reproducible from the manifest alone): repetitions outermost, then tasks in the
//! manifest's order; within each (repetition, task) the arms are shuffled by Fisher–Yates driven
//! by one SplitMix64 stream seeded with `order.seed`, drawing `next() % (i + 1)` for
//! `i = len-1 .. 1`.

use serde::{Deserialize, Serialize};

use crate::bundle::Bundle;
use crate::canonical;
use crate::checker;
use crate::digest::Sha256Digest;
use crate::money::{MicroUsd, MoneyError};
use crate::pack::Pack;
use crate::profile::{Price, Profile, ProviderKind};
use crate::prompt;

/// The manifest format name.
pub const FORMAT: &str = "skilltrial-manifest-v1";
/// The order algorithm's name.
pub const ORDER_ALGORITHM: &str = "splitmix64-fisher-yates-v1";

/// One arm.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    Baseline,
    A,
    B,
}

impl Arm {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Baseline => "baseline",
            Self::A => "a",
            Self::B => "b",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppInfo {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    pub os: String,
    pub arch: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackRef {
    pub id: String,
    pub hash: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckerRef {
    pub name: String,
    pub version: String,
    pub source_sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BundleRef {
    pub name: String,
    pub version: Option<String>,
    pub digest: String,
    /// `full`, or `partial` when the bundle holds scripts or binaries.
    pub coverage: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArmSpec {
    pub arm: Arm,
    /// `null` for the baseline.
    pub bundle: Option<BundleRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptInfo {
    pub template_id: String,
    pub template_sha256: String,
    pub template: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelInfo {
    pub profile: String,
    pub provider: ProviderKind,
    pub model: String,
    pub revision: Option<String>,
    /// Scheme, host, port and path: never credentials, query or fragment.
    pub endpoint: String,
    /// A scripted local model (the demo): never comparable with a real one.
    pub scripted: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sampling {
    /// Decimal string, e.g. "0".
    pub temperature: String,
    pub max_output_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Order {
    /// The seed, as a decimal string (a u64 does not fit JSON's safe integers).
    pub seed: String,
    pub algorithm: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// The monetary cap in µUSD; `None` when the profile has no verifiable price.
    pub cap_usd_micros: Option<u64>,
    /// The price the reservations use.
    pub price: Option<Price>,
    /// Hard cap on requests sent.
    pub max_requests: u32,
    /// Hard cap on tokens (input bound + output limit) reserved over the run, if set.
    pub max_tokens: Option<u64>,
    /// A run without a verifiable price must be confirmed by a person (CLI only).
    pub requires_confirmation: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub request_timeout_ms: u64,
    pub run_timeout_ms: u64,
    pub checker_timeout_ms: u64,
}

/// The manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: String,
    pub app: AppInfo,
    pub environment: Environment,
    pub pack: PackRef,
    pub tasks: Vec<String>,
    pub checker: CheckerRef,
    pub arms: Vec<ArmSpec>,
    pub prompt: PromptInfo,
    pub model: ModelInfo,
    pub sampling: Sampling,
    pub repetitions: u32,
    pub order: Order,
    pub budget: Budget,
    pub limits: Limits,
    /// The SOL/USD rate a hosted run is charged at (SPEC §9), pinned at plan time with
    /// `--sol-usd`. Absent from a local run's manifest, whose hash it then leaves unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sol_usd: Option<SolUsd>,
    /// The release-gate policy written before the run (`plan --gate`): its text and hash, so that
    /// `skilltrial gate` judges by it and no edit made after seeing the results goes unnoticed.
    /// Absent when none was pinned, leaving the hash of such a manifest unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GatePin>,
    /// How the skill reaches the model when it is not pasted inline (`plan --delivery
    /// progressive`): the turn limit and the tool definitions. Absent for inline delivery, so
    /// the bytes and hash of every inline manifest are what they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<crate::delivery::DeliveryPin>,
}

/// A pinned SOL/USD rate: what a hosted run's upper cost in lamports is computed at, and where
/// the rate came from, so the person approving the escrow sees both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SolUsd {
    /// µUSD per SOL: 151.25 USD/SOL is 151_250_000.
    pub usd_micros_per_sol: u64,
    /// Where the rate came from, as the planner stated it.
    pub source: String,
    /// When it was pinned, RFC 3339 UTC.
    pub at: String,
}

impl SolUsd {
    /// The highest rate a pin takes: $1,000,000 per SOL, far above any price seen and well
    /// inside the integers a canonical JSON manifest may hold exactly.
    pub const MAX_USD_MICROS_PER_SOL: u64 = 1_000_000 * 1_000_000;

    /// The SOL/USD pin of a hosted run's manifest, `at` Unix seconds: a positive rate, on a priced
    /// profile (an unpriced one has no upper cost to convert). `flag` names the input in errors
    /// (`--sol-usd` for the CLI, the page's field for the page). `plan` and the New-run page pin
    /// with this one function, so that the same inputs give the same manifest.
    pub fn pin(
        rate: MicroUsd,
        source: &str,
        at: i64,
        manifest: &Manifest,
        flag: &str,
    ) -> Result<Self, PlanError> {
        if rate.0 == 0 || rate.0 > Self::MAX_USD_MICROS_PER_SOL {
            return Err(PlanError::Invalid(format!(
                "{flag} {rate}: a SOL/USD rate must be more than 0 and at most {}",
                MicroUsd(Self::MAX_USD_MICROS_PER_SOL)
            )));
        }
        if manifest.budget.price.is_none() {
            return Err(PlanError::Invalid(format!(
                "{flag}: profile {} has no verifiable price, so a hosted run has no upper cost to escrow; choose a priced profile",
                manifest.model.profile
            )));
        }
        Ok(Self {
            usd_micros_per_sol: rate.0,
            source: source.to_owned(),
            at: crate::time::rfc3339(at),
        })
    }

    /// `cost` in lamports at this rate, rounded up to the next lamport: an escrow computed
    /// with it never falls short of the USD amount.
    pub fn lamports(&self, cost: MicroUsd) -> Result<crate::money::Lamports, PlanError> {
        if self.usd_micros_per_sol == 0 {
            return Err(PlanError::Invalid(
                "the pinned SOL/USD rate is 0: no amount of SOL pays for anything".to_owned(),
            ));
        }
        let lamports = u128::from(cost.0)
            .checked_mul(u128::from(crate::money::LAMPORTS_PER_SOL))
            .map(|n| n.div_ceil(u128::from(self.usd_micros_per_sol)))
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| {
                PlanError::Invalid(format!("{cost} at the pinned rate overflows u64 lamports"))
            })?;
        Ok(crate::money::Lamports(lamports))
    }
}

impl Manifest {
    /// The canonical JSON text.
    pub fn canonical(&self) -> Result<String, PlanError> {
        let value = serde_json::to_value(self).map_err(|e| PlanError::Invalid(e.to_string()))?;
        canonical::to_string(&value).map_err(|e| PlanError::Invalid(e.to_string()))
    }

    /// SHA-256 of the canonical JSON: the manifest hash and run id.
    pub fn hash(&self) -> Result<Sha256Digest, PlanError> {
        Ok(Sha256Digest::of(self.canonical()?.as_bytes()))
    }

    /// The seed as a number.
    pub fn seed(&self) -> Result<u64, PlanError> {
        self.order.seed.parse().map_err(|_| {
            PlanError::Invalid(format!("order.seed `{}` is not a u64", self.order.seed))
        })
    }
}

/// What a plan needs that is not in the pack or bundles.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub repetitions: u32,
    pub seed: u64,
    pub cap: Option<MicroUsd>,
    pub max_requests: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub endpoint: String,
    pub scripted: bool,
}

/// Defaults of docs/runs.md.
pub const DEFAULT_MAX_REQUESTS: u32 = 100;
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 60_000;
pub const DEFAULT_RUN_TIMEOUT_MS: u64 = 60 * 60_000;
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 2048;
pub const DEFAULT_REPETITIONS: u32 = 3;

/// Why a plan cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Invalid(String),
    #[error("money: {0}")]
    Money(#[from] MoneyError),
}

/// One trial, in execution order, with its reservation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PlannedTrial {
    pub index: u32,
    pub task: String,
    pub arm: Arm,
    pub repetition: u32,
    pub input_token_bound: u64,
    pub max_output_tokens: u64,
    /// The upper cost reserved before dispatch (zero without a price): for a progressive trial,
    /// the whole trial's, every turn at its bound.
    pub reserve: MicroUsd,
    /// A progressive trial's bounds per turn; absent inline (one request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<crate::delivery::TurnBounds>,
}

impl PlannedTrial {
    /// The most requests the trial sends.
    pub fn max_turns(&self) -> u32 {
        self.turns.map_or(1, |t| t.turns)
    }

    /// The tokens reserved from turn `from` (1-based) on: the input bounds of those turns plus
    /// their output limits. Turn 1 gives the whole trial's.
    pub fn tokens_from(&self, from: u32) -> u64 {
        match self.turns {
            None if from > 1 => 0,
            None => self
                .input_token_bound
                .saturating_add(self.max_output_tokens),
            Some(bounds) => bounds.input_from(from).saturating_add(
                u64::from(bounds.turns.saturating_sub(from.max(1) - 1))
                    .saturating_mul(self.max_output_tokens),
            ),
        }
    }

    /// The money reserved from turn `from` (1-based) on, at `price` (an inline trial has one
    /// turn: nothing after it): each remaining turn's input
    /// bound and output limit, priced turn by turn, so that what turn `t` may spend is exactly
    /// `reserve_from(t) - reserve_from(t + 1)`.
    pub fn reserve_from(&self, price: Option<&Price>, from: u32) -> Result<MicroUsd, PlanError> {
        let Some(price) = price else {
            return Ok(MicroUsd::ZERO);
        };
        match self.turns {
            None if from > 1 => Ok(MicroUsd::ZERO),
            None => Ok(price
                .worst_input()
                .cost(self.input_token_bound)?
                .checked_add(price.output.cost(self.max_output_tokens)?)?),
            Some(bounds) => {
                let mut sum = MicroUsd::ZERO;
                for turn in from.max(1)..=bounds.turns {
                    sum = sum
                        .checked_add(price.worst_input().cost(bounds.input_of(turn))?)?
                        .checked_add(price.output.cost(self.max_output_tokens)?)?;
                }
                Ok(sum)
            }
        }
    }
}

/// Totals of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Totals {
    pub trials: u32,
    /// The most requests the run can send: min(the cap, trials × (1 + automatic retries)).
    pub max_requests: u32,
    pub max_input_tokens: u64,
    pub max_output_tokens: u64,
    /// Sum of every trial's reservation: the most the run could cost if every request used its
    /// whole bound (the cap may stop it sooner). One reservation per trial, not per request: an
    /// automatic retry follows only a rate-limited or overloaded answer, which the provider
    /// turned away unbilled, so a trial makes at most one billed request unless the user
    /// retries it with `resolve --retry` (which reserves again).
    pub upper_cost: Option<MicroUsd>,
}

/// SplitMix64: tiny, fully specified, and the same on every platform and version.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The trial order: `(repetition, task, arm)` in execution order.
pub fn order(
    tasks: &[String],
    arms: &[Arm],
    repetitions: u32,
    seed: u64,
) -> Vec<(u32, String, Arm)> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::new();
    for repetition in 1..=repetitions {
        for task in tasks {
            let mut shuffled = arms.to_vec();
            for i in (1..shuffled.len()).rev() {
                let j = usize::try_from(rng.next_u64() % (i as u64 + 1)).unwrap_or(0);
                shuffled.swap(i, j);
            }
            out.extend(
                shuffled
                    .into_iter()
                    .map(|arm| (repetition, task.clone(), arm)),
            );
        }
    }
    out
}

/// The endpoint as recorded: scheme, host, port and path, never credentials, query or fragment.
pub fn endpoint_of(url: &str) -> Result<String, PlanError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| PlanError::Invalid(format!("`{url}` is not an http(s) URL")))?;
    if scheme != "http" && scheme != "https" {
        return Err(PlanError::Invalid(format!("`{url}` is not an http(s) URL")));
    }
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    let host = authority.rsplit('@').next().unwrap_or(authority);
    if host.is_empty() {
        return Err(PlanError::Invalid(format!("`{url}` has no host")));
    }
    let path = path.trim_end_matches('/');
    Ok(if path.is_empty() {
        format!("{scheme}://{host}")
    } else {
        format!("{scheme}://{host}/{path}")
    })
}

/// Builds the manifest for a pack, up to two bundles and a profile.
pub fn build(
    pack: &Pack,
    a: Option<&Bundle>,
    b: Option<&Bundle>,
    profile: &Profile,
    options: &PlanOptions,
) -> Result<Manifest, PlanError> {
    build_named(pack, a, b, profile, options, Naming::Flags)
}

/// [`build`], its errors naming the options as `naming` says (the page's fields, not the
/// CLI's flags).
pub fn build_named(
    pack: &Pack,
    a: Option<&Bundle>,
    b: Option<&Bundle>,
    profile: &Profile,
    options: &PlanOptions,
    naming: Naming,
) -> Result<Manifest, PlanError> {
    if b.is_some() && a.is_none() {
        return Err(PlanError::Invalid(
            "--b needs --a: B is compared with A".to_owned(),
        ));
    }
    let bundle_ref = |bundle: &Bundle| BundleRef {
        name: bundle.name.clone(),
        version: bundle.version.clone(),
        digest: bundle.digest.to_string(),
        coverage: if bundle.has_non_executable() {
            "partial"
        } else {
            "full"
        }
        .to_owned(),
    };
    let mut arms = vec![ArmSpec {
        arm: Arm::Baseline,
        bundle: None,
    }];
    if let Some(a) = a {
        arms.push(ArmSpec {
            arm: Arm::A,
            bundle: Some(bundle_ref(a)),
        });
    }
    if let Some(b) = b {
        arms.push(ArmSpec {
            arm: Arm::B,
            bundle: Some(bundle_ref(b)),
        });
    }
    let max_output_tokens = options
        .max_output_tokens
        .unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS.min(profile.max_output_tokens));
    let priced = profile.price.is_some();
    let cap = if priced {
        options.cap.map(|c| c.0)
    } else {
        None
    };
    check_bounds(
        &Bounds {
            repetitions: options.repetitions,
            max_output_tokens,
            cap: options.cap.map(|c| c.0),
            max_requests: options.max_requests,
            max_tokens: options.max_tokens,
        },
        profile,
        naming.names(),
    )?;
    Ok(Manifest {
        format: FORMAT.to_owned(),
        app: AppInfo {
            name: "skilltrial".to_owned(),
            version: crate::APP_VERSION.to_owned(),
        },
        environment: Environment {
            os: std::env::consts::OS.to_owned(),
            arch: std::env::consts::ARCH.to_owned(),
        },
        pack: PackRef {
            id: pack.id(),
            hash: pack.hash.to_string(),
        },
        tasks: pack.tasks.iter().map(|t| t.id.clone()).collect(),
        checker: CheckerRef {
            name: pack.checker.name.clone(),
            version: checker::CHECKER_VERSION.to_owned(),
            source_sha256: checker::source_sha256().to_owned(),
        },
        arms,
        prompt: PromptInfo {
            template_id: prompt::TEMPLATE_ID.to_owned(),
            template_sha256: prompt::template_sha256().to_string(),
            template: prompt::TEMPLATE.to_owned(),
        },
        model: ModelInfo {
            profile: profile.id.clone(),
            provider: profile.provider,
            model: profile.model.clone(),
            revision: profile.revision.clone(),
            endpoint: endpoint_of(&options.endpoint)?,
            scripted: options.scripted,
        },
        sampling: Sampling {
            temperature: TEMPERATURE.to_owned(),
            max_output_tokens,
        },
        repetitions: options.repetitions,
        order: Order {
            seed: options.seed.to_string(),
            algorithm: ORDER_ALGORITHM.to_owned(),
        },
        budget: Budget {
            cap_usd_micros: cap,
            // Cache prices only with `--cache` ([`Manifest::enable_cache`]).
            price: profile.price.clone().map(|p| Price { cache: None, ..p }),
            max_requests: options.max_requests.unwrap_or(DEFAULT_MAX_REQUESTS),
            max_tokens: options.max_tokens,
            requires_confirmation: !priced,
        },
        limits: plan_limits(),
        sol_usd: None,
        gate: None,
        delivery: None,
    })
}

impl Manifest {
    /// The delivery mode this manifest pins.
    pub fn delivery_mode(&self) -> crate::delivery::Mode {
        self.delivery
            .as_ref()
            .map_or(crate::delivery::Mode::Inline, |d| d.mode)
    }

    /// K: the most requests one trial sends (1 inline).
    pub fn max_turns(&self) -> u32 {
        self.delivery.as_ref().map_or(1, |d| d.max_turns)
    }

    /// Makes this plan progressive with turn limit `max_turns`: pins the progressive template in
    /// `prompt` and the tools in `delivery`. `plan --delivery progressive` and the page call it
    /// after [`build`].
    pub fn make_progressive(&mut self, max_turns: u32) -> Result<(), PlanError> {
        if !(2..=crate::delivery::MAX_TURNS).contains(&max_turns) {
            return Err(PlanError::Invalid(format!(
                "--max-turns {max_turns} is outside 2 to {}",
                crate::delivery::MAX_TURNS
            )));
        }
        self.prompt = PromptInfo {
            template_id: crate::delivery::TEMPLATE_ID.to_owned(),
            template_sha256: crate::delivery::template_sha256().to_string(),
            template: crate::delivery::TEMPLATE.to_owned(),
        };
        self.delivery = Some(crate::delivery::DeliveryPin::progressive(max_turns));
        Ok(())
    }

    /// Lists `others` in every arm's catalog (`--with-skills`), pinned by digest like A and B.
    /// Needs progressive delivery; each name must differ from A's, B's and each other's (a
    /// catalog lists each name once).
    pub fn add_skills(
        &mut self,
        others: &[Bundle],
        a: Option<&Bundle>,
        b: Option<&Bundle>,
    ) -> Result<(), PlanError> {
        let Some(pin) = self.delivery.as_mut() else {
            return Err(PlanError::Invalid(
                "--with-skills: other skills are listed in a catalog, which only --delivery progressive has".to_owned(),
            ));
        };
        if others.len() > MAX_WITH_SKILLS {
            return Err(PlanError::Invalid(format!(
                "--with-skills: {} other skills, more than the {MAX_WITH_SKILLS} a catalog lists",
                others.len()
            )));
        }
        let mut names: Vec<(&str, String)> = Vec::new();
        for (label, bundle) in [("A", a), ("B", b)] {
            if let Some(bundle) = bundle {
                names.push((bundle.name.as_str(), format!("bundle {label}")));
            }
        }
        let mut refs = Vec::with_capacity(others.len());
        for (i, other) in others.iter().enumerate() {
            if let Some((_, taken)) = names.iter().find(|(n, _)| *n == other.name) {
                // A and B may share their name (two versions of one skill), never another.
                return Err(PlanError::Invalid(format!(
                    "--with-skills: skill {} (the {} given) has the name of {taken}: a catalog lists each name once",
                    other.name,
                    ordinal(i + 1)
                )));
            }
            names.push((
                other.name.as_str(),
                format!("the {} other skill", ordinal(i + 1)),
            ));
            refs.push(BundleRef {
                name: other.name.clone(),
                version: other.version.clone(),
                digest: other.digest.to_string(),
                coverage: if other.has_non_executable() {
                    "partial"
                } else {
                    "full"
                }
                .to_owned(),
            });
        }
        pin.with_skills = refs;
        Ok(())
    }

    /// Whether the plan asked for prompt caching: its price carries the cache prices.
    pub fn caches(&self) -> bool {
        self.budget
            .price
            .as_ref()
            .is_some_and(|p| p.cache.is_some())
    }

    /// Asks for prompt caching (`plan --cache`): the profile's cache prices go into the pinned
    /// price, the requests mark their stable prefix for the provider's cache, spend is computed
    /// from the cached tokens the provider reports, and every reservation prices each input token
    /// as the dearer of an input token and a cache write.
    pub fn enable_cache(&mut self, profile: &Profile) -> Result<(), PlanError> {
        let Some(cache) = profile.price.as_ref().and_then(|p| p.cache) else {
            return Err(PlanError::Invalid(format!(
                "--cache: profile {} states no cache prices (cache_write_usd_per_mtok and cache_read_usd_per_mtok in its profile); without them cached tokens could not be priced",
                profile.id
            )));
        };
        if let Some(price) = self.budget.price.as_mut() {
            price.cache = Some(cache);
        }
        Ok(())
    }

    /// Refuses a manifest whose prompt or delivery pin this build would not have written: a run
    /// never goes out with another template or other tools than its manifest names.
    pub fn check_delivery(&self) -> Result<(), PlanError> {
        let (id, sha, template) = match &self.delivery {
            None => (
                prompt::TEMPLATE_ID,
                prompt::template_sha256().to_string(),
                prompt::TEMPLATE,
            ),
            Some(pin) => {
                if !pin.is_current() {
                    return Err(PlanError::Invalid(format!(
                        "delivery: this build of skilltrial does not speak the pinned delivery (mode {}, max_turns {}, tools {}); plan again with this version",
                        pin.mode.as_str(),
                        pin.max_turns,
                        pin.tools_sha256
                    )));
                }
                (
                    crate::delivery::TEMPLATE_ID,
                    crate::delivery::template_sha256().to_string(),
                    crate::delivery::TEMPLATE,
                )
            }
        };
        if self.prompt.template_id != id
            || self.prompt.template_sha256 != sha
            || self.prompt.template != template
        {
            return Err(PlanError::Invalid(format!(
                "prompt: template {} does not match the {} delivery of this build ({id}); plan again with this version",
                self.prompt.template_id,
                self.delivery_mode().as_str()
            )));
        }
        Ok(())
    }
}

/// The sampling temperature every plan pins.
pub const TEMPERATURE: &str = "0";

/// The limits every plan pins (docs/runs.md).
pub fn plan_limits() -> Limits {
    Limits {
        request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
        run_timeout_ms: DEFAULT_RUN_TIMEOUT_MS,
        checker_timeout_ms: u64::try_from(checker::CHECK_LIMIT.as_millis()).unwrap_or(5_000),
    }
}

/// The values a plan's bounds apply to.
struct Bounds {
    repetitions: u32,
    max_output_tokens: u64,
    cap: Option<u64>,
    max_requests: Option<u32>,
    max_tokens: Option<u64>,
}

/// What a bound's message calls each value: `plan`'s flags, or a manifest's fields.
struct Names {
    repetitions: &'static str,
    max_output_tokens: &'static str,
    cap: &'static str,
    max_requests: &'static str,
    max_tokens: &'static str,
}

const FLAGS: Names = Names {
    repetitions: "--reps",
    max_output_tokens: "--max-output-tokens",
    cap: "--cap-usd",
    max_requests: "--max-requests",
    max_tokens: "--max-tokens",
};

const PAGE: Names = Names {
    repetitions: "Repetitions",
    max_output_tokens: "the output limit",
    cap: "Budget cap (SOL)",
    max_requests: "a request limit",
    max_tokens: "a token limit",
};

const FIELDS: Names = Names {
    repetitions: "repetitions",
    max_output_tokens: "sampling.max_output_tokens",
    cap: "budget.cap_usd_micros",
    max_requests: "budget.max_requests",
    max_tokens: "budget.max_tokens",
};

/// The bounds of a plan on `profile`: `build` holds its options to them, and
/// [`check_planned`] a manifest someone else wrote (the runner daemon), so the two cannot
/// drift apart.
fn check_bounds(v: &Bounds, profile: &Profile, names: &Names) -> Result<(), PlanError> {
    let invalid = |message: String| Err(PlanError::Invalid(message));
    if v.repetitions == 0 || v.repetitions > 100 {
        return invalid(format!(
            "{} must be between 1 and 100, not {}",
            names.repetitions, v.repetitions
        ));
    }
    if v.max_output_tokens == 0 || v.max_output_tokens > profile.max_output_tokens {
        return invalid(format!(
            "{} must be between 1 and the profile's {}",
            names.max_output_tokens, profile.max_output_tokens
        ));
    }
    if v.max_requests == Some(0) {
        return invalid(format!(
            "{} must be at least 1: with a cap of 0 requests no trial can be sent",
            names.max_requests
        ));
    }
    let priced = profile.price.is_some();
    if !priced && (v.max_requests.is_none() || v.max_tokens.is_none()) {
        return invalid(format!(
            "profile `{}` has no verifiable price, so no monetary cap is possible: give {} and {}",
            profile.id, names.max_requests, names.max_tokens
        ));
    }
    if priced {
        match v.cap {
            None => return invalid(format!("give a budget cap with {}", names.cap)),
            // Every trial reserves its upper cost before it is sent, and no reserve fits a zero
            // cap: the run could send nothing at all.
            Some(0) => {
                return invalid(format!(
                    "{} must be more than 0: with a cap of $0 no trial can be sent",
                    names.cap
                ));
            }
            Some(cap) if cap > canonical::MAX_SAFE_INTEGER => {
                return invalid("the cap is too large".to_owned());
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// How a message names the values a bound applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// By `plan`'s flags (`--max-tokens`).
    Flags,
    /// By the manifest's fields (`budget.max_tokens`).
    Fields,
    /// By the New-run page's fields (`Budget cap (SOL)`).
    Page,
}

impl Naming {
    fn names(self) -> &'static Names {
        match self {
            Self::Flags => &FLAGS,
            Self::Fields => &FIELDS,
            Self::Page => &PAGE,
        }
    }
}

/// Refuses a token cap (`budget.max_tokens`) below the smallest
/// request of the plan: a trial reserves its prompt's input bound plus its output limit against
/// the cap before it is sent (engine), so such a cap leaves every trial unsendable. A cap that
/// fits some trials and not others is a choice the plan's totals show, and stays allowed.
pub fn check_token_cap(
    m: &Manifest,
    trials: &[PlannedTrial],
    naming: Naming,
) -> Result<(), PlanError> {
    let names = naming.names();
    let per_request = trials.iter().map(|t| t.tokens_from(1)).min().unwrap_or(0);
    match m.budget.max_tokens {
        Some(cap) if cap < per_request => Err(PlanError::Invalid(format!(
            "{} {cap} is below the {per_request} tokens the smallest request of this plan may use (its prompt's input bound plus {}): no trial could ever be sent; give at least that",
            names.max_tokens, names.max_output_tokens
        ))),
        _ => Ok(()),
    }
}

/// Refuses a manifest `plan` would never have written for `profile`: every bound `build`
/// applies to its options, and every value `build` copies from the profile or pins itself
/// (temperature, revision, price, limits). The runner daemon calls this on a manifest it is
/// given, so that a hand-edited one cannot ask for more than a plan could.
pub fn check_planned(m: &Manifest, profile: &Profile) -> Result<(), PlanError> {
    let priced = profile.price.is_some();
    check_bounds(
        &Bounds {
            repetitions: m.repetitions,
            max_output_tokens: m.sampling.max_output_tokens,
            cap: m.budget.cap_usd_micros,
            max_requests: Some(m.budget.max_requests),
            max_tokens: m.budget.max_tokens,
        },
        profile,
        &FIELDS,
    )?;
    let differs = |field: &str, found: String, planned: String| {
        Err(PlanError::Invalid(format!(
            "{field} is {found}; a plan on profile `{}` pins {planned}",
            profile.id
        )))
    };
    let shown = |v: &Option<String>| v.as_deref().map_or("none".to_owned(), |t| format!("`{t}`"));
    if m.sampling.temperature != TEMPERATURE {
        return differs(
            "sampling.temperature",
            format!("`{}`", m.sampling.temperature),
            format!("`{TEMPERATURE}`"),
        );
    }
    if m.model.revision != profile.revision {
        return differs(
            "model.revision",
            shown(&m.model.revision),
            shown(&profile.revision),
        );
    }
    let planned_price = |cache: bool| {
        profile.price.clone().map(|p| Price {
            cache: if cache { p.cache } else { None },
            ..p
        })
    };
    if m.budget.price != planned_price(false) && m.budget.price != planned_price(true) {
        return differs(
            "budget.price",
            "another price".to_owned(),
            "the profile's price".to_owned(),
        );
    }
    if !priced && m.budget.cap_usd_micros.is_some() {
        return differs(
            "budget.cap_usd_micros",
            "set".to_owned(),
            "none (the profile has no price)".to_owned(),
        );
    }
    if m.budget.requires_confirmation == priced {
        return differs(
            "budget.requires_confirmation",
            m.budget.requires_confirmation.to_string(),
            (!priced).to_string(),
        );
    }
    m.check_delivery()?;
    let limits = plan_limits();
    for (field, found, planned) in [
        (
            "limits.request_timeout_ms",
            m.limits.request_timeout_ms,
            limits.request_timeout_ms,
        ),
        (
            "limits.run_timeout_ms",
            m.limits.run_timeout_ms,
            limits.run_timeout_ms,
        ),
        (
            "limits.checker_timeout_ms",
            m.limits.checker_timeout_ms,
            limits.checker_timeout_ms,
        ),
    ] {
        if found != planned {
            return differs(field, found.to_string(), planned.to_string());
        }
    }
    if m.order.algorithm != ORDER_ALGORITHM {
        return differs(
            "order.algorithm",
            format!("`{}`", m.order.algorithm),
            format!("`{ORDER_ALGORITHM}`"),
        );
    }
    Ok(())
}

/// The bundle an arm uses, by arm.
pub fn bundle_for<'a>(
    arm: Arm,
    a: Option<&'a Bundle>,
    b: Option<&'a Bundle>,
) -> Option<&'a Bundle> {
    match arm {
        Arm::Baseline => None,
        Arm::A => a,
        Arm::B => b,
    }
}

/// The catalog of an arm in progressive delivery: its own skill (none for the baseline), then the
/// other skills every arm lists (`--with-skills`).
pub fn catalog_for<'a>(
    arm: Arm,
    a: Option<&'a Bundle>,
    b: Option<&'a Bundle>,
    others: &'a [Bundle],
) -> Vec<&'a Bundle> {
    bundle_for(arm, a, b)
        .into_iter()
        .chain(others.iter())
        .collect()
}

/// "1st", "2nd", "3rd", "4th", …
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The most other skills a catalog lists beside the arm's own.
pub const MAX_WITH_SKILLS: usize = 32;

/// Automatic retries per trial after the first rejected attempt (so at most four requests): a
/// rate-limited or overloaded answer reached no model, so it may be sent again (the engine's
/// `provider::retry` policy). Planning needs the number to bound a run's requests.
pub const MAX_AUTO_RETRIES: u32 = 3;

/// The most requests a run of `trials` trials can send under a cap of `cap` requests: each trial
/// is sent once and may be retried automatically after a rate-limited or overloaded answer, and
/// every request counts against the cap. `plan` and `status` both print this bound.
pub fn request_bound(trials: u32, cap: u32) -> u32 {
    trials.saturating_mul(1 + MAX_AUTO_RETRIES).min(cap)
}

/// THE plan of a manifest without other skills: [`trials_with`] and none. A manifest that pins
/// other skills (`--with-skills`) is refused here: its catalogs need their bundles.
pub fn trials(
    manifest: &Manifest,
    pack: &Pack,
    a: Option<&Bundle>,
    b: Option<&Bundle>,
) -> Result<(Vec<PlannedTrial>, Totals), PlanError> {
    trials_with(manifest, pack, a, b, &[])
}

/// THE plan: every trial in execution order with its token bounds and reservation, and the
/// totals. Shared by `plan`, `run --dry-run` and the real run. `others` are the bundles of the
/// skills every progressive catalog lists beside the arm's own, exactly those the manifest pins.
pub fn trials_with(
    manifest: &Manifest,
    pack: &Pack,
    a: Option<&Bundle>,
    b: Option<&Bundle>,
    others: &[Bundle],
) -> Result<(Vec<PlannedTrial>, Totals), PlanError> {
    let pinned = manifest
        .delivery
        .as_ref()
        .map_or(&[][..], |d| d.with_skills.as_slice());
    if pinned.len() != others.len()
        || pinned
            .iter()
            .zip(others)
            .any(|(p, o)| p.digest != o.digest.to_string())
    {
        return Err(PlanError::Invalid(format!(
            "delivery.with_skills: the manifest lists {} other skills, and {} bundles with other digests were given",
            pinned.len(),
            others.len()
        )));
    }
    let arms: Vec<Arm> = manifest.arms.iter().map(|s| s.arm).collect();
    let order = order(
        &manifest.tasks,
        &arms,
        manifest.repetitions,
        manifest.seed()?,
    );
    let mut planned = Vec::with_capacity(order.len());
    for (index, (repetition, task_id, arm)) in order.into_iter().enumerate() {
        let task = pack
            .task(&task_id)
            .map_err(|e| PlanError::Invalid(e.to_string()))?;
        let max_output_tokens = manifest.sampling.max_output_tokens;
        let (input_token_bound, turns) = match &manifest.delivery {
            None => (
                prompt::build(&task.public(), bundle_for(arm, a, b)).input_token_bound(),
                None,
            ),
            Some(pin) => {
                let catalog = catalog_for(arm, a, b, others);
                let bounds = crate::delivery::TurnBounds::of(
                    &catalog,
                    &crate::delivery::system_text(&catalog),
                    &prompt::task_text(&task.public()),
                    max_output_tokens,
                    pin.max_turns,
                );
                (bounds.input_total(), Some(bounds))
            }
        };
        let mut trial = PlannedTrial {
            index: u32::try_from(index)
                .map_err(|_| PlanError::Invalid("too many trials".to_owned()))?,
            task: task_id,
            arm,
            repetition,
            input_token_bound,
            max_output_tokens,
            reserve: MicroUsd::ZERO,
            turns,
        };
        trial.reserve = trial.reserve_from(manifest.budget.price.as_ref(), 1)?;
        planned.push(trial);
    }
    let count = u32::try_from(planned.len())
        .map_err(|_| PlanError::Invalid("too many trials".to_owned()))?;
    let turns = manifest.max_turns();
    let needed = count.saturating_mul(turns);
    if needed > manifest.budget.max_requests {
        let per = if turns == 1 {
            String::new()
        } else {
            format!(" (up to {turns} turns each)")
        };
        return Err(PlanError::Invalid(format!(
            "{count} trials{per} need {needed} requests, over the cap of {} per run; raise --max-requests or lower --reps",
            manifest.budget.max_requests
        )));
    }
    // The true hard bound on requests: each request of a trial may be sent once and then retried
    // automatically after a rate-limited or overloaded answer, and every request, retries
    // included, counts against the cap, which stops the run when reached.
    let max_requests = request_bound(needed, manifest.budget.max_requests);
    let totals = Totals {
        trials: count,
        max_requests,
        max_input_tokens: planned.iter().map(|t| t.input_token_bound).sum(),
        max_output_tokens: planned
            .iter()
            .map(|t| u64::from(t.max_turns()).saturating_mul(t.max_output_tokens))
            .sum(),
        upper_cost: match manifest.budget.price {
            Some(_) => Some(MicroUsd::sum(planned.iter().map(|t| t.reserve))?),
            None => None,
        },
    };
    Ok((planned, totals))
}

/// A gate policy pinned in a manifest: its text exactly as written and the SHA-256 of that text
/// (what `sha256sum gate.toml` prints), so that the gate judges with the policy written before the
/// run. `gate::Pin::of` makes one from a policy that parses; `gate::Pin::policy` reads it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatePin {
    /// `sha256:<hex>` of `text`'s UTF-8 bytes.
    pub sha256: String,
    pub text: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::PerMtok;

    #[test]
    fn usd_converts_to_lamports_rounding_up() {
        let rate = SolUsd {
            usd_micros_per_sol: 150_000_000,
            source: "test".to_owned(),
            at: "2026-11-30T00:00:00Z".to_owned(),
        };
        // $1.50 at $150/SOL is exactly 0.01 SOL.
        assert_eq!(rate.lamports(MicroUsd(1_500_000)).unwrap().0, 10_000_000);
        // 1 µUSD is 6.67 lamports: 7.
        assert_eq!(rate.lamports(MicroUsd(1)).unwrap().0, 7);
        assert_eq!(rate.lamports(MicroUsd(0)).unwrap().0, 0);
        let zero = SolUsd {
            usd_micros_per_sol: 0,
            ..rate.clone()
        };
        assert!(zero.lamports(MicroUsd(1)).is_err());
        let tiny = SolUsd {
            usd_micros_per_sol: 1,
            ..rate
        };
        assert!(
            tiny.lamports(MicroUsd(u64::MAX)).is_err(),
            "overflow is refused"
        );
    }

    fn example_plan(progressive: Option<u32>) -> (Manifest, Vec<PlannedTrial>, Totals) {
        use crate::bundle::examples::{EXAMPLE_A, EXAMPLE_B, example_bundle};
        let pack = crate::pack::open("solana-core@1.0.3").unwrap();
        let a = example_bundle(EXAMPLE_A).unwrap();
        let b = example_bundle(EXAMPLE_B).unwrap();
        let profile = crate::profile::find("claude-sonnet-4-5@2025-09-29", None).unwrap();
        let options = PlanOptions {
            repetitions: 1,
            seed: 7,
            cap: Some(MicroUsd(1_000_000_000)),
            max_requests: Some(1_000),
            max_tokens: None,
            max_output_tokens: Some(1_000),
            endpoint: "https://api.anthropic.com".to_owned(),
            scripted: false,
        };
        let mut m = build(&pack, Some(&a), Some(&b), &profile, &options).unwrap();
        if let Some(k) = progressive {
            m.make_progressive(k).unwrap();
        }
        let (trials, totals) = trials(&m, &pack, Some(&a), Some(&b)).unwrap();
        (m, trials, totals)
    }

    #[test]
    fn a_progressive_plan_pins_its_tools_and_reserves_every_turn_of_a_trial() {
        let (inline, inline_trials, _) = example_plan(None);
        assert!(inline.delivery.is_none());
        assert!(!inline.canonical().unwrap().contains("delivery"));
        inline.check_delivery().unwrap();
        let (m, planned, totals) = example_plan(Some(4));
        m.check_delivery().unwrap();
        assert_eq!(m.prompt.template_id, crate::delivery::TEMPLATE_ID);
        assert_ne!(m.hash().unwrap(), inline.hash().unwrap());
        let price = m.budget.price.clone().unwrap();
        for trial in &planned {
            let bounds = trial.turns.expect("progressive bounds");
            assert_eq!(bounds.turns, 4);
            assert_eq!(trial.input_token_bound, bounds.input_total());
            assert_eq!(trial.reserve, trial.reserve_from(Some(&price), 1).unwrap());
            // What turn t may spend is the difference of two reserves: they telescope.
            let mut sum = MicroUsd::ZERO;
            for t in 1..=4 {
                let turn = price
                    .input
                    .cost(bounds.input_of(t))
                    .unwrap()
                    .checked_add(price.output.cost(1_000).unwrap())
                    .unwrap();
                let rest = trial.reserve_from(Some(&price), t + 1).unwrap();
                assert_eq!(
                    trial.reserve_from(Some(&price), t).unwrap(),
                    turn.checked_add(rest).unwrap()
                );
                sum = sum.checked_add(turn).unwrap();
            }
            assert_eq!(sum, trial.reserve);
            assert_eq!(trial.reserve_from(Some(&price), 5).unwrap(), MicroUsd::ZERO);
            assert_eq!(trial.tokens_from(5), 0);
            assert_eq!(trial.tokens_from(1), bounds.input_total() + 4_000);
        }
        assert_eq!(totals.max_output_tokens, planned.len() as u64 * 4_000);
        // A skill arm's first request carries its catalog entry, the baseline's an empty one; an
        // inline skill arm carries the whole bundle instead.
        let first = |arm: Arm| {
            planned
                .iter()
                .find(|t| t.arm == arm && t.task == planned[0].task)
                .and_then(|t| t.turns)
                .unwrap()
                .first_input
        };
        assert!(first(Arm::A) > first(Arm::Baseline));
        let inline_a = inline_trials
            .iter()
            .find(|t| t.arm == Arm::B && t.task == planned[0].task)
            .unwrap();
        assert!(first(Arm::B) < inline_a.input_token_bound);
    }

    #[test]
    fn a_plan_with_cache_pins_the_cache_prices_and_reserves_input_as_cache_writes() {
        use crate::bundle::examples::{EXAMPLE_A, example_bundle};
        let pack = crate::pack::open("solana-core@1.0.3").unwrap();
        let a = example_bundle(EXAMPLE_A).unwrap();
        let profile = crate::profile::find("claude-sonnet-4-5@2025-09-29", None).unwrap();
        let options = PlanOptions {
            repetitions: 1,
            seed: 7,
            cap: Some(MicroUsd(1_000_000_000)),
            max_requests: None,
            max_tokens: None,
            max_output_tokens: Some(1_000),
            endpoint: "https://api.anthropic.com".to_owned(),
            scripted: false,
        };
        let plain = build(&pack, Some(&a), None, &profile, &options).unwrap();
        assert!(!plain.caches());
        assert!(!plain.canonical().unwrap().contains("cache"));
        check_planned(&plain, &profile).unwrap();
        let mut cached = plain.clone();
        cached.enable_cache(&profile).unwrap();
        assert!(cached.caches());
        check_planned(&cached, &profile).unwrap();
        let (p, _) = trials(&plain, &pack, Some(&a), None).unwrap();
        let (c, _) = trials(&cached, &pack, Some(&a), None).unwrap();
        let price = profile.price.clone().unwrap();
        for (p, c) in p.iter().zip(&c) {
            assert_eq!(
                c.reserve,
                PerMtok(3_750_000)
                    .cost(c.input_token_bound)
                    .unwrap()
                    .checked_add(price.output.cost(1_000).unwrap())
                    .unwrap()
            );
            assert!(c.reserve > p.reserve);
        }
        let unpriced = crate::profile::find("openai-compatible-local", None).unwrap();
        assert!(plain.clone().enable_cache(&unpriced).is_err());
        // A cache price the profile does not state is refused as another price.
        let mut edited = cached.clone();
        if let Some(price) = edited.budget.price.as_mut() {
            price.cache = Some(crate::profile::CachePrice {
                write: PerMtok(1),
                read: PerMtok(1),
            });
        }
        assert!(check_planned(&edited, &profile).is_err());
    }

    #[test]
    fn other_skills_are_pinned_listed_in_every_catalog_and_needed_to_plan() {
        use crate::bundle::examples::{EXAMPLE_A, EXAMPLE_B, example_bundle};
        let pack = crate::pack::open("solana-core@1.0.3").unwrap();
        let a = example_bundle(EXAMPLE_A).unwrap();
        let b = example_bundle(EXAMPLE_B).unwrap();
        let neighbour = crate::bundle::from_files(
            vec![(
                "SKILL.md".to_owned(),
                b"---\nname: solana-fees\ndescription: Explains Solana fees.\n---\n# fees\n"
                    .to_vec(),
            )],
            crate::bundle::SourceKind::Folder,
            &crate::bundle::Limits::default(),
        )
        .unwrap();
        let (mut m, alone, _) = example_plan(Some(4));
        let inline = example_plan(None).0;
        assert!(
            inline
                .clone()
                .add_skills(std::slice::from_ref(&neighbour), Some(&a), Some(&b))
                .unwrap_err()
                .to_string()
                .contains("only --delivery progressive")
        );
        // A name the arms already use is refused.
        assert!(
            m.clone()
                .add_skills(std::slice::from_ref(&b), Some(&a), Some(&b))
                .unwrap_err()
                .to_string()
                .contains("has the name of bundle A")
        );
        m.add_skills(std::slice::from_ref(&neighbour), Some(&a), Some(&b))
            .unwrap();
        let pin = m.delivery.as_ref().unwrap();
        assert_eq!(pin.with_skills[0].name, "solana-fees");
        assert_eq!(pin.with_skills[0].digest, neighbour.digest.to_string());
        // Planned only with the pinned bundles.
        assert!(trials(&m, &pack, Some(&a), Some(&b)).is_err());
        let (with, _) = trials_with(
            &m,
            &pack,
            Some(&a),
            Some(&b),
            std::slice::from_ref(&neighbour),
        )
        .unwrap();
        // Every arm's catalog grew by the neighbour's entry, the baseline's too.
        for (w, o) in with.iter().zip(&alone) {
            assert!(w.turns.unwrap().first_input > o.turns.unwrap().first_input);
        }
        let catalog = catalog_for(
            Arm::Baseline,
            Some(&a),
            Some(&b),
            std::slice::from_ref(&neighbour),
        );
        assert_eq!(catalog.len(), 1);
        assert_eq!(ordinal(2), "2nd");
        assert_eq!(ordinal(12), "12th");
    }

    #[test]
    fn a_manifest_with_tools_this_build_does_not_send_is_refused() {
        let (mut m, _, _) = example_plan(Some(4));
        if let Some(pin) = m.delivery.as_mut() {
            pin.tools = pin.tools.replace("load_skill", "load_any");
        }
        assert!(
            m.check_delivery()
                .unwrap_err()
                .to_string()
                .contains("does not speak")
        );
        let (mut m, _, _) = example_plan(Some(4));
        m.prompt.template = prompt::TEMPLATE.to_owned();
        assert!(
            m.check_delivery()
                .unwrap_err()
                .to_string()
                .contains("does not match")
        );
        let (mut m, _, _) = example_plan(None);
        assert!(m.make_progressive(1).is_err());
        assert!(m.make_progressive(13).is_err());
    }

    #[test]
    fn a_progressive_plan_counts_every_turn_against_the_request_cap() {
        use crate::bundle::examples::{EXAMPLE_A, example_bundle};
        let pack = crate::pack::open("solana-core@1.0.3").unwrap();
        let a = example_bundle(EXAMPLE_A).unwrap();
        let profile = crate::profile::find("claude-sonnet-4-5@2025-09-29", None).unwrap();
        let n = u32::try_from(pack.tasks.len()).unwrap();
        let options = PlanOptions {
            repetitions: 1,
            seed: 7,
            cap: Some(MicroUsd(1_000_000_000)),
            max_requests: Some(n * 2 * 3),
            max_tokens: None,
            max_output_tokens: None,
            endpoint: "https://api.anthropic.com".to_owned(),
            scripted: false,
        };
        let mut m = build(&pack, Some(&a), None, &profile, &options).unwrap();
        m.make_progressive(4).unwrap();
        let err = trials(&m, &pack, Some(&a), None).unwrap_err().to_string();
        assert!(err.contains("(up to 4 turns each)"), "{err}");
        m.make_progressive(3).unwrap();
        let (_, totals) = trials(&m, &pack, Some(&a), None).unwrap();
        assert_eq!(totals.max_requests, n * 2 * 3);
    }

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // First outputs for seed 0 (Vigna's reference implementation).
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn order_is_reproducible_and_shuffles_arms_per_task() {
        let tasks: Vec<String> = (0..6).map(|i| format!("t{i}")).collect();
        let arms = [Arm::Baseline, Arm::A, Arm::B];
        let one = order(&tasks, &arms, 3, 42);
        assert_eq!(one, order(&tasks, &arms, 3, 42));
        assert_ne!(one, order(&tasks, &arms, 3, 43));
        assert_eq!(one.len(), 54);
        // Every (rep, task) holds each arm exactly once.
        for chunk in one.chunks(3) {
            let mut got: Vec<Arm> = chunk.iter().map(|(_, _, a)| *a).collect();
            got.sort();
            assert_eq!(got, arms.to_vec());
        }
        let firsts: std::collections::BTreeSet<Arm> = one.chunks(3).map(|c| c[0].2).collect();
        assert!(firsts.len() > 1, "arm order varies between tasks");
    }

    #[test]
    fn endpoints_drop_credentials_query_and_fragment() {
        assert_eq!(
            endpoint_of("https://user:secret@api.example.com:8443/v1?key=x#f").unwrap(),
            "https://api.example.com:8443/v1"
        );
        assert_eq!(
            endpoint_of("http://127.0.0.1:9/").unwrap(),
            "http://127.0.0.1:9"
        );
        for (url, why) in [
            ("ftp://x", "is not an http(s) URL"),
            ("api.example.com/v1", "is not an http(s) URL"),
            ("https://user@/v1", "has no host"),
        ] {
            assert_eq!(
                endpoint_of(url),
                Err(PlanError::Invalid(format!("`{url}` {why}"))),
                "{url}"
            );
        }
    }
}
