//! The New-run page's validation, in the browser: the bundle a user drops is read by
//! `skilltrial-core`, the same code `skilltrial validate` and the runner run, so the page shows
//! the same verdict, flags, rejections and digest. Nothing here uploads anything.
//!
//! Each export answers one JSON document, a [`BundleReport`] (the objects of `validate --json`),
//! so that the page and the CLI can be compared byte for byte on the same bundle.

//! Besides validation it plans (the manifest and its hash, computed here from the same inputs
//! the CLI's `plan` takes, so a daemon cannot show one hash and escrow another) and builds the
//! page's transactions from the committed IDL ([`tx`]) for the wallet to sign.

pub mod tx;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use skilltrial_core::bundle::verdict::BundleReport;
use skilltrial_core::bundle::{self, Bundle, Limits, Rejection, SourceKind};
use skilltrial_core::delivery::{self, Mode};
use skilltrial_core::hosted::{MIN_PER_REQUEST_CAP, Terms};
use skilltrial_core::manifest::{self, PlanOptions, SolUsd};
use skilltrial_core::money::{LAMPORTS_PER_SOL, MicroUsd};
use skilltrial_core::pack;
use skilltrial_core::profile::Profile;
use skilltrial_core::solana::Address;
use wasm_bindgen::prelude::{JsError, wasm_bindgen};

/// A bundle dropped on the page: its verdict, and its files for the upload once approved.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Dropped {
    name: String,
    result: Result<Bundle, Vec<Rejection>>,
}

#[wasm_bindgen]
impl Dropped {
    /// A ZIP (`name` is how the page shows it).
    #[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
    #[wasm_bindgen(js_name = fromZip)]
    pub fn from_zip(name: &str, bytes: &[u8]) -> Dropped {
        Dropped {
            name: name.to_owned(),
            result: bundle::import_zip_bytes(bytes, &Limits::default()),
        }
    }

    /// A folder: `paths` relative to its root (`SKILL.md`, `references/x.md`), and each file's
    /// bytes, in order, in `data` (`lengths[i]` bytes each), as a browser hands them over
    /// without one copy per file.
    #[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
    #[wasm_bindgen(js_name = fromFolder)]
    pub fn from_folder(name: &str, paths: Vec<String>, lengths: Vec<u32>, data: &[u8]) -> Dropped {
        Dropped {
            name: name.to_owned(),
            result: folder(paths, &lengths, data).and_then(|files| {
                bundle::from_files(files, SourceKind::Folder, &Limits::default())
            }),
        }
    }

    /// The `validate --json` bundle object.
    #[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
    pub fn report(&self) -> String {
        verdict_json(&self.name, self.result.as_ref().map_err(Vec::as_slice))
    }

    /// Whether it was accepted.
    #[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
    pub fn accepted(&self) -> bool {
        self.result.is_ok()
    }

    /// The body of its upload (`POST /v1/trees?kind=bundle`), or an error for a rejected one.
    #[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
    pub fn tree(&self) -> Result<String, JsError> {
        self.tree_json().map_err(|e| JsError::new(&e))
    }
}

impl Dropped {
    /// The accepted bundle.
    pub fn bundle(&self) -> Result<&Bundle, String> {
        self.result.as_ref().map_err(|_| {
            format!(
                "bundle {} was rejected: fix it and drop it again",
                self.name
            )
        })
    }

    /// [`Dropped::tree`], for native callers.
    pub fn tree_json(&self) -> Result<String, String> {
        let bundle = self.bundle()?;
        Ok(tree_body(
            bundle
                .files
                .iter()
                .map(|f| (f.path.as_str(), f.bytes.as_slice())),
        ))
    }
}

/// A ZIP dropped on the page, as the `validate --json` bundle object.
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn validate_zip(name: &str, bytes: &[u8]) -> String {
    Dropped::from_zip(name, bytes).report()
}

/// A folder dropped or picked on the page (see [`Dropped::from_folder`]), as the
/// `validate --json` bundle object.
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn validate_folder(name: &str, paths: Vec<String>, lengths: Vec<u32>, data: &[u8]) -> String {
    Dropped::from_folder(name, paths, lengths, data).report()
}

fn tree_body<'a>(files: impl Iterator<Item = (&'a str, &'a [u8])>) -> String {
    let files: Vec<Value> = files
        .map(|(path, bytes)| {
            json!({
                "path": path,
                "base64": base64::engine::general_purpose::STANDARD.encode(bytes),
            })
        })
        .collect();
    json!({ "files": files }).to_string()
}

/// The body of an embedded pack's upload (`POST /v1/trees?kind=pack&id=<id>`).
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn pack_tree(id: &str) -> Result<String, JsError> {
    pack_tree_json(id).map_err(|e| JsError::new(&e))
}

/// [`pack_tree`], for native callers.
pub fn pack_tree_json(id: &str) -> Result<String, String> {
    let pack = open_pack(id)?;
    Ok(tree_body(
        pack.files().iter().map(|(p, b)| (p.as_str(), b.as_slice())),
    ))
}

fn open_pack(id: &str) -> Result<pack::Pack, String> {
    if pack::is_path_spec(id) {
        return Err(format!(
            "pack `{id}`: the page runs the embedded packs only"
        ));
    }
    pack::open(id).map_err(|e| format!("pack `{id}`: {e}"))
}

/// A number the page sends as text, since JavaScript's numbers hold integers exactly only up
/// to 2^53.
fn integer<T: std::str::FromStr>(text: &str, field: &str) -> Result<T, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("{field} `{text}` is not a whole number in range"))
}

/// What the page plans with: the inputs `skilltrial plan` takes, as the page's form holds them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanRequest {
    /// An embedded pack's id.
    pub pack: String,
    /// The runner's profile, exactly as it runs it (`GET /v1/profiles`).
    pub profile: Profile,
    /// Where the runner sends its requests (the same answer).
    pub endpoint: String,
    pub repetitions: u32,
    /// Decimal text.
    pub seed: String,
    /// The budget cap in SOL as the user typed it (`0.05`). With `fee_per_trial_lamports` it
    /// bounds what leaves the wallet, the runner's fees included: the run's escrow (model cap
    /// plus fees) must fit under it, and what is left after the fees is the manifest's model
    /// budget, converted to µUSD at the pinned rate, rounded down. Without a fee, it is the
    /// model budget alone (the CLI's `--cap-usd`). None: no cap beyond the plan's upper cost.
    pub cap_sol: Option<String>,
    /// The program's fee per executed trial, lamports as decimal text (the runner's offer).
    #[serde(default)]
    pub fee_per_trial_lamports: Option<String>,
    /// The profile is the daemon's scripted demo model (`runner serve --demo-model`): the
    /// manifest says so, and so does every report of it.
    #[serde(default)]
    pub scripted: bool,
    /// µUSD per SOL, decimal text: the runner's rate.
    pub usd_micros_per_sol: String,
    pub sol_usd_source: String,
    /// When the rate is pinned, Unix seconds.
    pub pinned_at: i64,
    /// How the skill reaches the model (`plan --delivery`): `inline` (absent) or `progressive`.
    #[serde(default)]
    pub delivery: Mode,
    /// K, the most turns of a progressive trial (`plan --max-turns`), 2 to 12; absent:
    /// [`delivery::DEFAULT_MAX_TURNS`]. Refused with inline delivery.
    #[serde(default)]
    pub max_turns: Option<u32>,
    /// Prompt caching at the profile's cache prices (`plan --cache`), in either delivery.
    #[serde(default)]
    pub cache: bool,
}

/// What the escrow is made of, in lamports, when the cap includes the runner's fees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Escrow {
    /// The budget cap the user typed.
    pub cap: u64,
    /// The model cap: planned trials × the per-request cap.
    pub model: u64,
    /// The runner's fees: planned trials × the fee per executed trial.
    pub fees: u64,
    /// `model + fees`: what `run_open` moves out of the wallet.
    pub total: u64,
}

/// The manifest the page approves and uploads, and what it means.
#[derive(Debug)]
pub struct Planned {
    pub manifest: manifest::Manifest,
    /// Its canonical JSON text: what is uploaded and hashed.
    pub text: String,
    pub hash: [u8; 32],
    pub totals: manifest::Totals,
    pub terms: Terms,
    /// Set when the cap includes the runner's fees.
    pub escrow: Option<Escrow>,
}

impl PlanRequest {
    /// The manifest for `a` and `b`, as `plan --a --b --sol-usd` builds it; with a fee, a cap
    /// that cannot hold the run's escrow is refused, saying what it must be.
    pub fn plan(&self, a: &Dropped, b: &Dropped) -> Result<Planned, String> {
        let (a, b) = (a.bundle()?, b.bundle()?);
        let pack = open_pack(&self.pack)?;
        let rate = MicroUsd(integer(&self.usd_micros_per_sol, "the SOL/USD rate")?);
        let cap = match self.cap_sol.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) => Some(lamports_of_sol(text, "the budget cap")?),
        };
        let fee = self
            .fee_per_trial_lamports
            .as_deref()
            .map(|f| integer::<u64>(f, "the fee per trial"))
            .transpose()?;
        let (cap, fee) = match (cap, fee) {
            (Some(cap), Some(fee)) => (cap, fee),
            (cap, _) => {
                let cap = cap.map(|c| usd_of_lamports(c, rate)).transpose()?;
                let built = self.build(&pack, a, b, rate, cap)?;
                return built.finish();
            }
        };
        // The trials do not depend on the cap: planned once to count them (with the whole cap,
        // so that the plan's own refusals come first), then with the model's share of it.
        let whole = self.build(&pack, a, b, rate, Some(usd_of_lamports(cap, rate)?))?;
        let trials = u64::try_from(whole.trials.len()).map_err(|_| "too many trials")?;
        let fees = trials
            .checked_mul(fee)
            .ok_or("the runner's fees overflow u64 lamports")?;
        let least = trials
            .checked_mul(MIN_PER_REQUEST_CAP)
            .and_then(|m| m.checked_add(fees))
            .ok_or("the least escrow overflows u64 lamports")?;
        if cap < least {
            return Err(format!(
                "a budget cap of {} cannot cover this run's runner fees ({}: {trials} trials × {}) plus the program's minimum per-request cap ({}: {trials} × {}); give at least {}, or fewer repetitions",
                sol_text(cap),
                sol_text(fees),
                sol_text(fee),
                sol_text(trials.saturating_mul(MIN_PER_REQUEST_CAP)),
                sol_text(MIN_PER_REQUEST_CAP),
                sol_text(least),
            ));
        }
        let model_usd = usd_of_lamports(cap - fees, rate)?;
        if model_usd.0 == 0 {
            return Err(format!(
                "a budget cap of {} leaves {} for the model after the runner's fees, less than $0.000001 at the runner's rate; give more",
                sol_text(cap),
                sol_text(cap - fees)
            ));
        }
        let planned = self.build(&pack, a, b, rate, Some(model_usd))?.finish()?;
        let model = planned
            .terms
            .per_request_cap
            .0
            .checked_mul(u64::from(planned.terms.planned_trials))
            .ok_or("the model cap overflows u64 lamports")?;
        let total = planned
            .terms
            .escrow(fee)
            .ok_or("the escrow overflows u64 lamports")?;
        if total > cap {
            return Err(format!(
                "this plan escrows {} (model cap {}: {} trials × {} at most each, plus runner fees {}), more than the budget cap of {}; give at least {}, or fewer repetitions",
                sol_text(total),
                sol_text(model),
                planned.terms.planned_trials,
                sol_text(planned.terms.per_request_cap.0),
                sol_text(fees),
                sol_text(cap),
                sol_text(total),
            ));
        }
        let escrow = Escrow {
            cap,
            model,
            fees,
            total,
        };
        Ok(Planned {
            escrow: Some(escrow),
            ..planned
        })
    }

    fn build(
        &self,
        pack: &pack::Pack,
        a: &Bundle,
        b: &Bundle,
        rate: MicroUsd,
        cap: Option<MicroUsd>,
    ) -> Result<Built, String> {
        let turns = self.turns()?;
        let options = PlanOptions {
            repetitions: self.repetitions,
            seed: integer(&self.seed, "the seed")?,
            cap,
            max_requests: turns.and_then(|k| progressive_request_cap(pack, self.repetitions, k)),
            max_tokens: None,
            max_output_tokens: None,
            endpoint: self.endpoint.clone(),
            scripted: self.scripted,
        };
        let mut manifest = manifest::build_named(
            pack,
            Some(a),
            Some(b),
            &self.profile,
            &options,
            manifest::Naming::Page,
        )
        .map_err(|e| e.to_string())?;
        if let Some(k) = turns {
            manifest.make_progressive(k).map_err(|e| e.to_string())?;
        }
        if self.cache {
            if self.profile.price.as_ref().and_then(|p| p.cache).is_none() {
                return Err(format!(
                    "Prompt caching: profile {} states no cache prices, so cached tokens could not be priced; plan without it",
                    self.profile.id
                ));
            }
            manifest
                .enable_cache(&self.profile)
                .map_err(|e| e.to_string())?;
        }
        manifest.sol_usd = Some(
            SolUsd::pin(
                rate,
                &self.sol_usd_source,
                self.pinned_at,
                &manifest,
                "the SOL/USD rate",
            )
            .map_err(|e| e.to_string())?,
        );
        let (trials, totals) =
            manifest::trials(&manifest, pack, Some(a), Some(b)).map_err(|e| e.to_string())?;
        manifest::check_token_cap(&manifest, &trials, manifest::Naming::Page)
            .map_err(|e| e.to_string())?;
        Ok(Built {
            manifest,
            trials,
            totals,
        })
    }

    /// K for a progressive plan, `None` for an inline one; a turn limit outside 2 to 12, or one
    /// given with inline delivery, is refused in the page's words.
    fn turns(&self) -> Result<Option<u32>, String> {
        match (self.delivery, self.max_turns) {
            (Mode::Inline, None) => Ok(None),
            (Mode::Inline, Some(_)) => Err(
                "Turns per trial: a turn limit needs progressive delivery (inline sends one request per trial)"
                    .to_owned(),
            ),
            (Mode::Progressive, None) => Ok(Some(delivery::DEFAULT_MAX_TURNS)),
            (Mode::Progressive, Some(k)) if (2..=delivery::MAX_TURNS).contains(&k) => Ok(Some(k)),
            (Mode::Progressive, Some(k)) => Err(format!(
                "Turns per trial {k} is outside 2 to {}: a progressive trial needs one turn to load the skill and one to answer",
                delivery::MAX_TURNS
            )),
        }
    }
}

/// The request cap of a progressive plan made on the page, which has no request field: every
/// request its trials could send, automatic retries included (`manifest::request_bound`), when
/// that is more than the default cap the CLI's `plan` writes (so a small plan is `plan
/// --delivery progressive` without `--max-requests`, and a larger one that with `--max-requests`
/// of this number). A hosted run is bounded by its escrow; a request cap below its turns would
/// refuse the plan (or stop the run at a retried turn) without saving anything. `None`: the
/// default.
pub fn progressive_request_cap(pack: &pack::Pack, repetitions: u32, turns: u32) -> Option<u32> {
    // The page plans baseline, A and B: three arms per task and repetition.
    let requests = u32::try_from(pack.tasks.len())
        .ok()
        .and_then(|tasks| tasks.checked_mul(3))
        .and_then(|trials| trials.checked_mul(repetitions))
        .and_then(|trials| trials.checked_mul(turns))
        .map_or(u32::MAX, |needed| manifest::request_bound(needed, u32::MAX));
    (requests > manifest::DEFAULT_MAX_REQUESTS).then_some(requests)
}

/// A manifest and its trials, before its terms.
struct Built {
    manifest: manifest::Manifest,
    trials: Vec<manifest::PlannedTrial>,
    totals: manifest::Totals,
}

impl Built {
    fn finish(self) -> Result<Planned, String> {
        let terms = Terms::of(&self.manifest, &self.trials).map_err(|e| e.to_string())?;
        let text = self.manifest.canonical().map_err(|e| e.to_string())?;
        let hash = self.manifest.hash().map_err(|e| e.to_string())?.0;
        Ok(Planned {
            manifest: self.manifest,
            text,
            hash,
            totals: self.totals,
            terms,
            escrow: None,
        })
    }
}

impl Planned {
    /// What the page shows and keeps: the manifest text to upload, its hash, the bounds, the
    /// delivery (`inline` or `progressive`, K turns per trial at most, 1 inline, and whether
    /// the prompt cache is asked for), and the upper cost in µUSD and (at the pinned rate)
    /// lamports; integers as text.
    pub fn to_json(&self) -> Value {
        let rate = self.manifest.sol_usd.as_ref();
        let upper_lamports = self
            .totals
            .upper_cost
            .zip(rate)
            .and_then(|(cost, rate)| rate.lamports(cost).ok())
            .map(|l| l.0.to_string());
        let escrow = self.escrow.map(|e| {
            json!({
                "cap_lamports": e.cap.to_string(),
                "model_lamports": e.model.to_string(),
                "fees_lamports": e.fees.to_string(),
                "escrow_lamports": e.total.to_string(),
                "cap_sol": sol_text(e.cap),
                "model_sol": sol_text(e.model),
                "fees_sol": sol_text(e.fees),
                "escrow_sol": sol_text(e.total),
            })
        });
        json!({
            "manifest": self.text,
            "hash": hex(&self.hash),
            "pack": self.manifest.pack.id,
            "tasks": self.manifest.tasks.len(),
            "trials": self.totals.trials,
            "max_requests": self.totals.max_requests,
            "max_input_tokens": self.totals.max_input_tokens.to_string(),
            "max_output_tokens": self.totals.max_output_tokens.to_string(),
            "upper_cost_usd_micros": self.totals.upper_cost.map(|c| c.0.to_string()),
            "upper_cost_lamports": upper_lamports,
            "planned_trials": self.terms.planned_trials,
            "per_request_cap_lamports": self.terms.per_request_cap.0.to_string(),
            "usd_micros_per_sol": rate.map(|r| r.usd_micros_per_sol.to_string()),
            "cap_usd_micros": self.manifest.budget.cap_usd_micros.map(|c| c.to_string()),
            "pinned_at": rate.map(|r| r.at.clone()),
            "scripted": self.manifest.model.scripted,
            "delivery": self.manifest.delivery_mode().as_str(),
            "max_turns": self.manifest.max_turns(),
            "cache": self.manifest.caches(),
            "escrow": escrow,
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Plans the run of `a` against `b` (see [`PlanRequest`]): JSON of [`Planned::to_json`].
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn plan(request: &str, a: &Dropped, b: &Dropped) -> Result<String, JsError> {
    plan_json(request, a, b).map_err(|e| JsError::new(&e))
}

/// [`plan`], for native callers.
pub fn plan_json(request: &str, a: &Dropped, b: &Dropped) -> Result<String, String> {
    let request: PlanRequest = serde_json::from_str(request)
        .map_err(|e| format!("the page's plan request is malformed: {e}"))?;
    Ok(request.plan(a, b)?.to_json().to_string())
}

/// What `run_open` needs beyond the plan: the wallet, the runner's terms and the blockhash.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenRequest {
    pub user: String,
    /// The manifest hash the page computed (hex).
    pub manifest_hash: String,
    pub planned_trials: u16,
    pub per_request_cap_lamports: String,
    /// The program config's fee, as the runner reports it: the program refuses the escrow if
    /// it is not the config's.
    pub fee_per_trial_lamports: String,
    /// The runner the program's config names (likewise checked on-chain).
    pub runner: String,
    /// Unix seconds.
    pub deadline: i64,
    /// Base58.
    pub blockhash: String,
}

fn address(text: &str, field: &str) -> Result<Address, String> {
    text.parse()
        .map_err(|_| format!("{field} `{text}` is not a Solana address"))
}

fn hash32(text: &str, field: &str) -> Result<[u8; 32], String> {
    let bytes: Vec<u8> = (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect::<Option<_>>()
        .ok_or_else(|| format!("{field} `{text}` is not hex"))?;
    bytes
        .try_into()
        .map_err(|_| format!("{field} `{text}` is not 32 bytes"))
}

fn blockhash(text: &str) -> Result<[u8; 32], String> {
    bs58::decode(text)
        .into_vec()
        .ok()
        .and_then(|v| v.try_into().ok())
        .ok_or_else(|| format!("blockhash `{text}` is not 32 bytes of base58"))
}

fn transaction_json(message: &[u8], extra: Value) -> Result<String, String> {
    let transaction = tx::unsigned_transaction(message)?;
    let mut doc = json!({
        "transaction": base64::engine::general_purpose::STANDARD.encode(transaction),
    });
    if let (Some(doc), Value::Object(extra)) = (doc.as_object_mut(), extra) {
        doc.extend(extra);
    }
    Ok(doc.to_string())
}

/// The `run_open` transaction for the wallet to sign: `{transaction (base64, unsigned), run,
/// escrow_lamports}`.
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn open_transaction(request: &str) -> Result<String, JsError> {
    open_transaction_json(request).map_err(|e| JsError::new(&e))
}

/// [`open_transaction`], for native callers.
pub fn open_transaction_json(request: &str) -> Result<String, String> {
    let r: OpenRequest = serde_json::from_str(request)
        .map_err(|e| format!("the page's escrow request is malformed: {e}"))?;
    let idl = tx::Idl::committed()?;
    let user = address(&r.user, "the wallet")?;
    let per_request_cap: u64 = integer(&r.per_request_cap_lamports, "the per-trial cap")?;
    let fee_per_trial: u64 = integer(&r.fee_per_trial_lamports, "the fee per trial")?;
    let escrow = per_request_cap
        .checked_add(fee_per_trial)
        .and_then(|each| each.checked_mul(u64::from(r.planned_trials)))
        .ok_or("the escrow overflows u64 lamports")?;
    let args = tx::RunOpen {
        manifest_hash: hash32(&r.manifest_hash, "the manifest hash")?,
        planned_trials: r.planned_trials,
        per_request_cap,
        escrow,
        deadline: r.deadline,
        fee_per_trial,
        runner: address(&r.runner, "the runner")?,
    };
    let run = idl.run_address(&user, &args.manifest_hash)?;
    let ix = idl.run_open(&user, &args)?;
    let message = tx::legacy_message(&user, &[ix], &blockhash(&r.blockhash)?)?;
    transaction_json(
        &message,
        json!({
            "run": run.to_string(),
            "escrow_lamports": escrow.to_string(),
            "escrow_sol": sol_text(escrow),
        }),
    )
}

/// `text` SOL (`0.05`, `2`, up to nine decimals) in lamports, exactly.
pub fn lamports_of_sol(text: &str, field: &str) -> Result<u64, String> {
    let bad = || format!("{field} `{text}` is not an amount of SOL (like 0.05)");
    let text = text.trim();
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if (whole.is_empty() && frac.is_empty())
        || frac.len() > 9
        || !whole
            .bytes()
            .chain(frac.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let frac: u64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<9}").parse().map_err(|_| bad())?
    };
    whole
        .checked_mul(LAMPORTS_PER_SOL)
        .and_then(|w| w.checked_add(frac))
        .ok_or_else(|| format!("{field} `{text}` is more SOL than exists"))
}

/// `lamports` in µUSD at `rate` (µUSD per SOL), rounded down.
pub fn usd_of_lamports(lamports: u64, rate: MicroUsd) -> Result<MicroUsd, String> {
    let micros = u128::from(lamports) * u128::from(rate.0) / u128::from(LAMPORTS_PER_SOL);
    u64::try_from(micros)
        .map(MicroUsd)
        .map_err(|_| "the amount overflows u64 µUSD".to_owned())
}

/// An amount of µUSD as the page shows it: `{"usd": "$0.012300", "sol": "0.000081 SOL"}`,
/// the SOL at `usd_micros_per_sol`, rounded up to the lamport as escrows are.
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn money(usd_micros: &str, usd_micros_per_sol: &str) -> Result<String, JsError> {
    money_json(usd_micros, usd_micros_per_sol).map_err(|e| JsError::new(&e))
}

/// [`money`], for native callers.
pub fn money_json(usd_micros: &str, usd_micros_per_sol: &str) -> Result<String, String> {
    let usd = MicroUsd(integer(usd_micros, "the amount")?);
    let rate = SolUsd {
        usd_micros_per_sol: integer(usd_micros_per_sol, "the SOL/USD rate")?,
        source: String::new(),
        at: String::new(),
    };
    let lamports = rate.lamports(usd).map_err(|e| e.to_string())?;
    Ok(json!({ "usd": usd.to_string(), "sol": sol_text(lamports.0) }).to_string())
}

/// Lamports as SOL text (`{"sol": "0.000105 SOL"}`), for the page.
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn sol(lamports: &str) -> Result<String, JsError> {
    integer::<u64>(lamports, "the amount")
        .map(sol_text)
        .map_err(|e| JsError::new(&e))
}

/// What `run_open` escrows for `trials` trials at `per_request_cap` and `fee` lamports each:
/// `{"lamports": "...", "sol": "..."}`, checked.
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn escrow(per_request_cap: &str, fee: &str, trials: u16) -> Result<String, JsError> {
    escrow_json(per_request_cap, fee, trials).map_err(|e| JsError::new(&e))
}

/// [`escrow`], for native callers.
pub fn escrow_json(per_request_cap: &str, fee: &str, trials: u16) -> Result<String, String> {
    let cap: u64 = integer(per_request_cap, "the per-trial cap")?;
    let fee: u64 = integer(fee, "the fee per trial")?;
    let lamports = cap
        .checked_add(fee)
        .and_then(|each| each.checked_mul(u64::from(trials)))
        .ok_or("the escrow overflows u64 lamports")?;
    Ok(json!({ "lamports": lamports.to_string(), "sol": sol_text(lamports) }).to_string())
}

/// The hosted terms every client shares (`core::hosted`), so the page reads the CLI's values:
/// `{"landing_allowance_secs": 60, "default_deadline_secs": 86400, "max_deadline_secs": 604800}`.
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn hosted_terms() -> String {
    hosted_terms_json().to_string()
}

/// [`hosted_terms`], for native callers.
pub fn hosted_terms_json() -> Value {
    use skilltrial_core::hosted;
    json!({
        "landing_allowance_secs": hosted::LANDING_ALLOWANCE_SECS,
        "default_deadline_secs": hosted::DEFAULT_DEADLINE_SECS,
        "max_deadline_secs": hosted::MAX_DEADLINE_SECS,
    })
}

/// The live run's trials as an SVG grid (`core::live::grid_svg`): `trials` is a progress
/// event's `trials` member as JSON; `id` names the `<svg>` in the page. Every name in it is
/// escaped by the core; the page parses it as XML, never as HTML.
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn live_grid(trials: &str, id: &str) -> Result<String, JsError> {
    live_grid_svg(trials, id).map_err(|e| JsError::new(&e))
}

/// [`live_grid`], for native callers.
pub fn live_grid_svg(trials: &str, id: &str) -> Result<String, String> {
    let trials: skilltrial_core::live::LiveTrials = serde_json::from_str(trials)
        .map_err(|e| format!("the progress's trials are not readable: {e}"))?;
    skilltrial_core::live::grid_svg(&trials, id).map_err(|e| e.to_string())
}

/// Bytes in base58 (a signature a wallet sent itself).
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn to_base58(bytes: &[u8]) -> String {
    bs58::encode(bytes).into_string()
}

/// Bytes in standard base64 (a signed transaction for the relay).
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn to_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Standard base64 as bytes (the unsigned transaction for the wallet).
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn from_base64(text: &str) -> Result<Vec<u8>, JsError> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| JsError::new(&format!("not base64: {e}")))
}

/// Lamports as SOL text, exact (`0.000105` SOL), never through a float.
pub fn sol_text(lamports: u64) -> String {
    let whole = lamports / LAMPORTS_PER_SOL;
    let frac = lamports % LAMPORTS_PER_SOL;
    if frac == 0 {
        return format!("{whole} SOL");
    }
    let digits = format!("{frac:09}");
    format!("{whole}.{} SOL", digits.trim_end_matches('0'))
}

/// `run_cancel` or `run_close` of `run` by `user`, or the anchor memo of a finished run, for the
/// wallet to sign: `{"user", "blockhash", "cancel": "<run>"}`, `{…, "close": "<run>"}` or
/// `{…, "anchor": {"manifest": hex, "report": hex}}`.
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn user_transaction(request: &str) -> Result<String, JsError> {
    user_transaction_json(request).map_err(|e| JsError::new(&e))
}

/// [`user_transaction`], for native callers.
pub fn user_transaction_json(request: &str) -> Result<String, String> {
    let r: Value = serde_json::from_str(request)
        .map_err(|e| format!("the page's transaction request is malformed: {e}"))?;
    let text = |field: &str| {
        r[field]
            .as_str()
            .ok_or_else(|| format!("the page's transaction request has no {field}"))
    };
    let user = address(text("user")?, "the wallet")?;
    let hash = blockhash(text("blockhash")?)?;
    let ix = if let Some(run) = r["cancel"].as_str() {
        tx::Idl::committed()?.run_cancel(&user, &address(run, "the run")?)
    } else if let Some(run) = r["close"].as_str() {
        tx::Idl::committed()?.run_close(&user, &address(run, "the run")?)
    } else {
        let manifest = r["anchor"]["manifest"].as_str().unwrap_or_default();
        let report = r["anchor"]["report"].as_str().unwrap_or_default();
        tx::anchor_memo(
            &user,
            &hash32(manifest, "the manifest hash")?,
            &hash32(report, "the report hash")?,
        )
    };
    transaction_json(&tx::legacy_message(&user, &[ix], &hash)?, json!({}))
}

/// The files of a folder out of one buffer; a count or a length that does not add up is the
/// page's mistake, said as a rejection rather than a panic.
fn folder(
    paths: Vec<String>,
    lengths: &[u32],
    data: &[u8],
) -> Result<Vec<(String, Vec<u8>)>, Vec<Rejection>> {
    let broken = |why: String| {
        vec![Rejection {
            code: bundle::RejectCode::Unreadable,
            path: None,
            message: format!("the page handed over a broken folder: {why}"),
        }]
    };
    if paths.len() != lengths.len() {
        return Err(broken(format!(
            "{} paths and {} lengths",
            paths.len(),
            lengths.len()
        )));
    }
    let mut files = Vec::with_capacity(paths.len());
    let mut at = 0usize;
    for (path, length) in paths.into_iter().zip(lengths) {
        let end = usize::try_from(*length)
            .ok()
            .and_then(|n| at.checked_add(n))
            .filter(|end| *end <= data.len())
            .ok_or_else(|| broken(format!("{path}: past the end of the data")))?;
        files.push((path, data[at..end].to_vec()));
        at = end;
    }
    if at != data.len() {
        return Err(broken(format!(
            "{} bytes of data beyond the last file",
            data.len() - at
        )));
    }
    Ok(files)
}

fn verdict_json(name: &str, result: Result<&bundle::Bundle, &[Rejection]>) -> String {
    let report = BundleReport::of(name, result);
    serde_json::to_string(&report).unwrap_or_else(|e| {
        serde_json::json!({ "input": name, "ok": false, "errors": [{ "code": "internal", "message": e.to_string() }] })
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_whose_lengths_do_not_add_up_is_rejected_in_words() {
        let short = validate_folder("x", vec!["SKILL.md".into()], vec![10], b"abc");
        assert!(short.contains("past the end of the data"), "{short}");
        let long = validate_folder("x", vec!["SKILL.md".into()], vec![1], b"abc");
        assert!(long.contains("2 bytes of data beyond"), "{long}");
        let counts = validate_folder("x", vec!["SKILL.md".into()], vec![], b"");
        assert!(counts.contains("1 paths and 0 lengths"), "{counts}");
    }
}

#[cfg(test)]
mod money_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn sol_is_read_and_written_exactly_and_refused_in_words() {
        assert_eq!(lamports_of_sol("0.05", "x").unwrap(), 50_000_000);
        assert_eq!(lamports_of_sol(" 2 ", "x").unwrap(), 2_000_000_000);
        assert_eq!(lamports_of_sol(".000000001", "x").unwrap(), 1);
        assert_eq!(
            lamports_of_sol("18446744073.709551615", "x").unwrap(),
            u64::MAX
        );
        for bad in ["", ".", "1.0000000001", "-1", "1e3", "abc", "1,5", "0x10"] {
            let e = lamports_of_sol(bad, "the budget cap").unwrap_err();
            assert!(e.contains("is not an amount of SOL"), "{bad}: {e}");
        }
        assert!(
            lamports_of_sol("18446744074", "the budget cap")
                .unwrap_err()
                .contains("more SOL than exists")
        );
        assert_eq!(sol_text(0), "0 SOL");
        assert_eq!(sol_text(1), "0.000000001 SOL");
        assert_eq!(sol_text(1_500_000_000), "1.5 SOL");
        // 0.02 SOL at $150 is $3, rounded down: never more than the user said
        assert_eq!(
            usd_of_lamports(20_000_000, MicroUsd(150_000_000)).unwrap(),
            MicroUsd(3_000_000)
        );
        assert_eq!(
            usd_of_lamports(1, MicroUsd(150_000_000)).unwrap(),
            MicroUsd(0)
        );
    }

    #[test]
    fn the_escrow_is_checked_and_transactions_refuse_bad_inputs_in_words() {
        let e: Value = serde_json::from_str(&escrow_json("1000", "200", 3).unwrap()).unwrap();
        assert_eq!(e["lamports"], "3600");
        assert!(
            escrow_json(&u64::MAX.to_string(), "1", 1)
                .unwrap_err()
                .contains("overflows")
        );
        let request = json!({
            "user": "11111111111111111111111111111112",
            "manifest_hash": "ab".repeat(32),
            "planned_trials": 2,
            "per_request_cap_lamports": "1000",
            "fee_per_trial_lamports": "200",
            "runner": "11111111111111111111111111111113",
            "deadline": 1_800_000_000,
            "blockhash": "11111111111111111111111111111111",
        });
        let built: Value =
            serde_json::from_str(&open_transaction_json(&request.to_string()).unwrap()).unwrap();
        assert_eq!(built["escrow_lamports"], "2400");
        for (field, bad, words) in [
            ("manifest_hash", json!("zz"), "is not"),
            ("blockhash", json!("0OIl"), "blockhash"),
            ("user", json!("not-a-key"), "the wallet `not-a-key`"),
            (
                "per_request_cap_lamports",
                json!("-5"),
                "the per-trial cap `-5`",
            ),
        ] {
            let mut r = request.clone();
            r[field] = bad;
            let e = open_transaction_json(&r.to_string()).unwrap_err();
            assert!(e.contains(words), "{field}: {e}");
        }
        let e = user_transaction_json(r#"{"user":"11111111111111111111111111111112","blockhash":"11111111111111111111111111111111","anchor":{}}"#).unwrap_err();
        assert!(e.contains("the manifest hash"), "{e}");
    }
}

#[cfg(test)]
mod live_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_live_grid_is_drawn_from_a_progress_events_trials_and_refuses_a_broken_one() {
        let grid = live_grid_svg(
            r#"{"tasks":["t1","<b>t2</b>"],"arms":["baseline","a","b"],"repetitions":2,"outcomes":"pf........n."}"#,
            "live-grid",
        )
        .unwrap();
        assert!(grid.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"live-grid\""));
        assert_eq!(grid.matches("<rect class=\"cell ").count(), 12);
        assert_eq!(grid.matches("<rect class=\"cell o-pass\"").count(), 1);
        assert!(grid.contains("&lt;b&gt;t2&lt;/b&gt;") && !grid.contains("<b>"));
        let short = live_grid_svg(
            r#"{"tasks":["t1"],"arms":["a"],"repetitions":2,"outcomes":"p"}"#,
            "g",
        )
        .unwrap_err();
        assert!(short.contains("1 outcomes for 2 planned trials"), "{short}");
        assert!(
            live_grid_svg("{", "g")
                .unwrap_err()
                .contains("not readable")
        );
    }

    /// The page's stylesheet is served as a file (`style-src 'self'`), so the charts' colours
    /// are copied into it: the same rules as the report's, word for word.
    #[test]
    fn the_pages_stylesheet_holds_the_charts_colours() {
        let page = include_str!("../../static/style.css");
        assert!(
            page.contains(skilltrial_core::svg::STYLE.trim()),
            "web/static/style.css must hold core/src/svg.rs's STYLE verbatim (between its chart markers)"
        );
    }
}
