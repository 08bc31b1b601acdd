//! The model profiles a daemon serves, decided once at start: a profile is served only when the
//! daemon can call it — it has a price, its endpoint resolves, the operator's key for its
//! provider is held (environment or OS keychain) and may travel to that endpoint, and its
//! provider builds. Every other profile (a built-in one whose provider has no key here, above all)
//! is skipped with its reason, so that no user escrows a run the daemon could never execute.
//!
//! **Invariant:** nothing here reads or keeps a key's value: only whether one is held, and where.

use std::path::Path;
use std::time::Duration;

use skilltrial_core::profile::{Profile, ProfileError, ProviderKind};
use skilltrial_engine::keys::{self, KeySource};
use skilltrial_engine::provider;

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
}

impl Profiles {
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
