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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    /// `ANTHROPIC_API_KEY` / `OPENAI_API_KEY`.
    Env,
    /// The OS keychain.
    Keychain,
}

/// Why a key could not be stored or removed.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Standard input held no key.
    #[error("the key is empty")]
    Empty,
    /// No keychain to talk to.
    #[error("the OS keychain is not available: {0}")]
    Unavailable(keyring::Error),
    /// The keychain refused to store the key; `hint` says what to do on this OS.
    #[error("cannot store the key in the OS keychain: {source}{hint}")]
    Store {
        source: keyring::Error,
        hint: &'static str,
    },
    /// The keychain refused to remove the key.
    #[error("cannot remove the key from the OS keychain: {0}")]
    Remove(keyring::Error),
}

fn entry(kind: ProviderKind) -> Result<keyring::Entry, KeyError> {
    keyring::Entry::new(SERVICE, kind.as_str()).map_err(KeyError::Unavailable)
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
pub fn store(kind: ProviderKind, key: &Secret) -> Result<(), KeyError> {
    if key.is_empty() {
        return Err(KeyError::Empty);
    }
    entry(kind)?
        .set_password(key.expose())
        .map_err(|source| KeyError::Store {
            source,
            hint: if cfg!(target_os = "linux") {
                " (on Linux the keychain is the session keyring of a login session; without one, use the environment variable)"
            } else {
                ""
            },
        })
}

/// Removes a key from the keychain; `Ok(false)` when there was none.
pub fn remove(kind: ProviderKind) -> Result<bool, KeyError> {
    match entry(kind)?.delete_credential() {
        Ok(()) => Ok(true),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(e) => Err(KeyError::Remove(e)),
    }
}
