//! The model profiles a daemon serves, decided once at start: a profile is served only when the
//! daemon can call it — it has a price, its endpoint resolves, the operator's key for its
//! provider is held (environment or OS keychain) and may travel to that endpoint, and its
//! provider builds. Every other profile (a built-in one whose provider has no key here, above all)
//! is skipped with its reason, so that no user escrows a run the daemon could never execute.
//!
//!
//! A daemon started with `--demo-model` ([`Profiles::demo_model`]) serves the built-in scripted
//! model instead, and nothing else: no key, no model server, free usage, every manifest and
//! report of it marked `scripted`. Never mixed with real profiles, so that no one mistakes its
//! answers for a model's.
//!
//! **Invariant:** nothing here reads or keeps a key's value: only whether one is held, and where.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use skilltrial_core::profile::{Profile, ProfileError, ProviderKind};
use skilltrial_engine::demo;
use skilltrial_engine::engine::Inputs;
use skilltrial_engine::keys::{self, KeySource};
use skilltrial_engine::provider;
use skilltrial_engine::scripted::{Reply, ScriptedServer, ServerRequest};

/// A profile the daemon serves, with the endpoint its runs are pinned to (resolved at start).
#[derive(Debug, Clone)]
pub struct ServedProfile {
    pub profile: Profile,
    pub endpoint: String,
}

/// The daemon's profiles: those it serves, and those it skipped with why.
#[derive(Debug, Clone, Default)]
pub struct Profiles {
    pub served: Vec<ServedProfile>,
    /// `(profile id, why it is not served)`.
    pub skipped: Vec<(String, String)>,
    /// The scripted demo model, when the daemon serves it (then it is all it serves).
    pub demo: Option<Arc<DemoModel>>,
}

/// The scripted demo model of `runner serve --demo-model`: the CLI demo's script, served on a
/// loopback port of the daemon's own over the OpenAI wire format. The script places each
/// request by its run's plan, which the worker hands over before the run's first request
/// ([`DemoModel::prepare`]).
pub struct DemoModel {
    server: ScriptedServer,
    plans: demo::Plans,
    /// Each prepared run's pack, by the run key the attempt ids carry (12 hex of its hash).
    packs: Arc<Mutex<HashMap<String, String>>>,
}

impl std::fmt::Debug for DemoModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoModel")
            .field("url", &self.server.url())
            .finish_non_exhaustive()
    }
}

impl DemoModel {
    /// Starts the script for every embedded pack on a loopback port.
    fn start() -> Result<Self, String> {
        let plans = demo::Plans::default();
        let mut responders = HashMap::new();
        for id in skilltrial_core::pack::embedded_ids() {
            let pack = skilltrial_core::pack::open(&id).map_err(|e| format!("pack {id}: {e}"))?;
            responders.insert(id, demo::responder(pack, plans.clone()));
        }
        let packs: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let placed = Arc::clone(&packs);
        let server = ScriptedServer::start(move |request: &ServerRequest| {
            let run = request
                .header(provider::ATTEMPT_HEADER)
                .and_then(|a| a.split('-').next())
                .unwrap_or_default();
            let pack = placed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(run)
                .cloned();
            match pack.and_then(|p| responders.get(&p)) {
                Some(respond) => respond(request),
                // Never guessed: an error status, so the trial is retried or errs, never scored.
                None => Reply::Verbatim {
                    status: 400,
                    headers: vec![("content-type".to_owned(), "application/json".to_owned())],
                    body: serde_json::json!({"error": {"type": "invalid_request_error",
                        "message": format!("scripted demo model: run `{run}` was not prepared")}})
                    .to_string(),
                },
            }
        })
        .map_err(|e| format!("the scripted demo model cannot listen on loopback: {e}"))?;
        Ok(Self {
            server,
            plans,
            packs,
        })
    }

    /// Hands the script the plan of the run of `inputs`, before its first request.
    pub fn prepare(&self, inputs: &Inputs) -> Result<(), String> {
        let (trials, _) = skilltrial_core::manifest::trials(
            &inputs.manifest,
            &inputs.pack,
            inputs.a.as_ref(),
            inputs.b.as_ref(),
        )
        .map_err(|e| e.to_string())?;
        let run = inputs.hash.hex();
        self.plans.add(&run, &trials);
        self.packs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                skilltrial_core::state::short_id(&run).to_owned(),
                inputs.pack.id(),
            );
        Ok(())
    }
}

impl Profiles {
    /// The scripted demo model alone (`runner serve --demo-model`): profile `scripted@1`, free,
    /// on a loopback port of this daemon. A run of it is `scripted` in its manifest and report.
    pub fn demo_model() -> Result<Self, String> {
        let model = DemoModel::start()?;
        let profile = demo::profile(&model.server.url());
        let endpoint = profile.endpoint().map_err(|e| e.to_string())?;
        Ok(Self {
            served: vec![ServedProfile { profile, endpoint }],
            skipped: Vec::new(),
            demo: Some(Arc::new(model)),
        })
    }

    /// Whether `profile` is the daemon's scripted demo model.
    pub fn is_demo(&self, profile: &str) -> bool {
        self.demo.is_some() && self.served.iter().any(|s| s.profile.id == profile)
    }

    /// The built-in profiles and the operator's `file`, each checked with [`callable`] against
    /// the keys this daemon holds (environment or OS keychain).
    pub fn load(file: Option<&Path>) -> Result<Self, String> {
        Self::load_with(file, |kind| keys::lookup(kind).is_some())
    }

    /// As [`Profiles::load`], with `held` saying whether a key for a provider is held: the one
    /// seam for a test daemon that serves a loopback model without putting a key in its
    /// process environment; every other check is the real one.
    pub fn load_with(
        file: Option<&Path>,
        held: impl Fn(ProviderKind) -> bool,
    ) -> Result<Self, String> {
        let all = skilltrial_core::profile::all(file).map_err(|e| e.to_string())?;
        let mut out = Self::default();
        for profile in all {
            match callable(&profile, &held) {
                Ok(endpoint) => out.served.push(ServedProfile { profile, endpoint }),
                Err(why) => out.skipped.push((profile.id, why)),
            }
        }
        Ok(out)
    }

    /// The ids served, in order.
    pub fn ids(&self) -> Vec<String> {
        self.served.iter().map(|s| s.profile.id.clone()).collect()
    }

    /// The served profile `id`, or why there is none (the reason it was skipped, if it was).
    pub fn find(&self, id: &str) -> Result<&ServedProfile, String> {
        if let Some(served) = self.served.iter().find(|s| s.profile.id == id) {
            return Ok(served);
        }
        let serves = if self.served.is_empty() {
            "none".to_owned()
        } else {
            self.ids().join(", ")
        };
        Err(
            match self.skipped.iter().find(|(skipped, _)| skipped == id) {
                Some((_, why)) => format!(
                    "model profile `{id}` is not served by this runner: {why} (it serves: {serves})"
                ),
                None => format!(
                    "model profile `{id}` is not served by this runner (it serves: {serves})"
                ),
            },
        )
    }

    /// One log line per profile: served (provider, endpoint without credentials, where its key
    /// is held) or skipped (why).
    pub fn describe(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .served
            .iter()
            .map(|s| {
                let endpoint = skilltrial_core::manifest::endpoint_of(&s.endpoint)
                    .unwrap_or_else(|_| "<endpoint>".to_owned());
                if self.demo.is_some() {
                    return format!(
                        "serving ONLY the scripted demo model {} ({} at {endpoint}, --demo-model): its answers are scripted, not a real model's, and its usage is free",
                        s.profile.id, s.profile.model
                    );
                }
                let source = match keys::lookup(s.profile.provider).map(|(_, source)| source) {
                    Some(KeySource::Env) => s.profile.provider.key_env().to_owned(),
                    Some(KeySource::Keychain) => "the OS keychain".to_owned(),
                    None => "no key".to_owned(),
                };
                format!(
                    "serving model profile {} ({} at {endpoint}, key from {source})",
                    s.profile.id,
                    s.profile.provider.as_str()
                )
            })
            .collect();
        lines.extend(
            self.skipped
                .iter()
                .map(|(id, why)| format!("not serving model profile {id}: {why}")),
        );
        if self.served.is_empty() {
            lines.push(
                "warning: no model profile is served: every run is refused until a key is set and the daemon restarted"
                    .to_owned(),
            );
        }
        lines
    }
}

/// The endpoint `profile`'s runs call, when this daemon can call it; why not otherwise.
pub fn callable(profile: &Profile, held: impl Fn(ProviderKind) -> bool) -> Result<String, String> {
    if profile.price.is_none() {
        return Err(
            "it has no price (a hosted run charges usage at a verifiable price)".to_owned(),
        );
    }
    let endpoint = profile.endpoint().map_err(|e| match e {
        // Said without the URL: it may carry credentials, and the reason is public.
        ProfileError::BadEndpoint { from, reason, .. } => {
            format!("{from} is not a usable http(s) URL: {reason}")
        }
        other => other.to_string(),
    })?;
    let kind = profile.provider;
    if !held(kind) {
        return Err(format!(
            "this daemon holds no {} key ({} is unset and the OS keychain has none)",
            kind.as_str(),
            kind.key_env()
        ));
    }
    if !provider::may_carry_key(&endpoint) {
        return Err(
            "its endpoint is plain http to another machine, where the key would travel in cleartext"
                .to_owned(),
        );
    }
    // The timeout only shapes the client built here and dropped; each run builds its own.
    // (Built only with a key really held: a test's `held` that says yes without one skips it.)
    if keys::lookup(kind).is_some() {
        provider::for_model(kind, &endpoint, Duration::from_secs(60)).map_err(|e| e.to_string())?;
    }
    Ok(endpoint)
}
