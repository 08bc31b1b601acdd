//! Model API keys: from the environment, else from the OS keychain. Never stored by SkillTrial
//! anywhere else, never logged, never returned in output.
//!
//! Keychain entries use service `skilltrial` and the provider name (`anthropic`, `openai`) as the
//! account. On Linux the keychain is the kernel's keyutils session keyring, so a key stored there
//! lasts for the login session.

use skilltrial_core::profile::ProviderKind;

const SERVICE: &str = "skilltrial";

/// A model API key. Its `Debug` and `Display` never print it, so no error message, log line or
/// `{:?}` of a struct holding one can leak it; [`Secret::expose`] is the one way to read it, used
/// where the key goes into a request header and where provider text is scrubbed of it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a key (surrounding whitespace, such as a pasted newline, removed).
    pub fn new(key: &str) -> Self {
        Self(key.trim().to_owned())
    }

    /// The key itself. Only for a request header or a scrubber; never for output.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the key is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<&str> for Secret {
    fn from(key: &str) -> Self {
        Self::new(key)
    }
}

/// Where a key was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    /// `ANTHROPIC_API_KEY` / `OPENAI_API_KEY`.
    Env,
    /// The OS keychain.
    Keychain,
}

fn entry(kind: ProviderKind) -> Result<keyring::Entry, String> {
    keyring::Entry::new(SERVICE, kind.as_str())
        .map_err(|e| format!("the OS keychain is not available: {e}"))
}

/// The key for a provider and where it came from: the environment first, then the keychain.
pub fn lookup(kind: ProviderKind) -> Option<(Secret, KeySource)> {
    if let Some(key) = std::env::var(kind.key_env())
        .ok()
        .filter(|k| !k.trim().is_empty())
    {
        return Some((Secret::new(&key), KeySource::Env));
    }
    let key = Secret::new(&entry(kind).ok()?.get_password().ok()?);
    (!key.is_empty()).then_some((key, KeySource::Keychain))
}

/// Stores a key in the keychain.
pub fn store(kind: ProviderKind, key: &Secret) -> Result<(), String> {
    if key.is_empty() {
        return Err("the key is empty".to_owned());
    }
    entry(kind)?.set_password(key.expose()).map_err(|e| {
        let hint = if cfg!(target_os = "linux") {
            " (on Linux the keychain is the session keyring of a login session; without one, use the environment variable)"
        } else {
            ""
        };
        format!("cannot store the key in the OS keychain: {e}{hint}")
    })
}

/// Removes a key from the keychain; `Ok(false)` when there was none.
pub fn remove(kind: ProviderKind) -> Result<bool, String> {
    match entry(kind)?.delete_credential() {
        Ok(()) => Ok(true),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(e) => Err(format!("cannot remove the key from the OS keychain: {e}")),
    }
}
