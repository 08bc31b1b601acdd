//! `skilltrial key set | remove | status`: keys in the OS keychain. A key is read from standard
//! input, stored, and never printed.

use std::io::Read;

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_core::profile::ProviderKind;
use skilltrial_engine::keys::{self, KeySource};

use crate::cli::{Global, KeyCommand};
use crate::exit::{CliError, Status};
use crate::output;

/// `key set --json`: the key was stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct KeyStored {
    /// The provider (`anthropic`, `openai`).
    pub provider: &'static str,
    /// Always `true` (a key that cannot be stored is an error).
    pub stored: bool,
}

/// `key remove --json`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct KeyRemoved {
    /// The provider (`anthropic`, `openai`).
    pub provider: &'static str,
    /// Whether the keychain held a key to remove.
    pub removed: bool,
}

/// `key status --json`: every provider and where its key comes from.
#[derive(Debug, Serialize, JsonSchema)]
pub struct KeyStatus {
    pub keys: Vec<KeyLine>,
}

/// One provider's key: where it is found (never the key itself).
#[derive(Debug, Serialize, JsonSchema)]
pub struct KeyLine {
    /// The provider (`anthropic`, `openai`).
    pub provider: &'static str,
    /// `env` (the environment variable wins), `keychain`, or null when there is no key.
    pub source: Option<KeySource>,
    /// The environment variable read first.
    pub env: &'static str,
}

pub fn run(command: &KeyCommand, global: &Global) -> Result<Status, CliError> {
    match command {
        KeyCommand::Set(p) => {
            let kind = ProviderKind::from(p.provider);
            let mut key = String::new();
            std::io::stdin().take(16 * 1024).read_to_string(&mut key)?;
            keys::store(kind, &keys::Secret::new(&key))?;
            if global.json {
                output::json(&KeyStored {
                    provider: kind.as_str(),
                    stored: true,
                })?;
            } else {
                output::text(&format!(
                    "stored the {} key in the OS keychain\n",
                    kind.as_str()
                ))?;
            }
        }
        KeyCommand::Remove(p) => {
            let kind = ProviderKind::from(p.provider);
            let removed = keys::remove(kind)?;
            if global.json {
                output::json(&KeyRemoved {
                    provider: kind.as_str(),
                    removed,
                })?;
            } else {
                let text = if removed { "removed" } else { "there was no" };
                output::text(&format!(
                    "{text} {} key in the OS keychain\n",
                    kind.as_str()
                ))?;
            }
        }
        KeyCommand::Status => {
            let keys: Vec<KeyLine> = [ProviderKind::Anthropic, ProviderKind::Openai]
                .into_iter()
                .map(|k| KeyLine {
                    provider: k.as_str(),
                    source: keys::lookup(k).map(|(_, s)| s),
                    env: k.key_env(),
                })
                .collect();
            if global.json {
                output::json(&KeyStatus { keys })?;
            } else {
                let mut out = String::new();
                for k in [ProviderKind::Anthropic, ProviderKind::Openai] {
                    let from = match keys::lookup(k).map(|(_, s)| s) {
                        Some(KeySource::Env) => format!("from {}", k.key_env()),
                        Some(KeySource::Keychain) => "from the OS keychain".to_owned(),
                        None => format!(
                            "none (set {} or `skilltrial key set {}`)",
                            k.key_env(),
                            k.as_str()
                        ),
                    };
                    out.push_str(&format!("{:<10} {from}\n", k.as_str()));
                }
                output::text(&out)?;
            }
        }
    }
    Ok(Status::Ok)
}
