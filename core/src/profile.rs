//! Model profiles: which provider and model a run uses, its limits and its verifiable price.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::money::{MicroUsd, PerMtok};

/// The built-in table (`core/profiles.toml`).
const BUILTIN: &str = include_str!("../profiles.toml");

/// Which wire format a profile speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Anthropic Messages (`POST /v1/messages`).
    Anthropic,
    /// OpenAI-compatible chat completions (`POST /v1/chat/completions`).
    Openai,
}

impl ProviderKind {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::Openai => "openai",
        }
    }

    /// The default API base URL.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Anthropic => "https://api.anthropic.com",
            Self::Openai => "https://api.openai.com",
        }
    }

    /// The environment variable that overrides the base URL.
    pub fn base_url_env(self) -> &'static str {
        match self {
            Self::Anthropic => "ANTHROPIC_BASE_URL",
            Self::Openai => "OPENAI_BASE_URL",
        }
    }

    /// The environment variable that holds the key.
    pub fn key_env(self) -> &'static str {
        match self {
            Self::Anthropic => "ANTHROPIC_API_KEY",
            Self::Openai => "OPENAI_API_KEY",
        }
    }
}

/// A verifiable price.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Price {
    /// µUSD per million input tokens.
    pub input: PerMtok,
    /// µUSD per million output tokens.
    pub output: PerMtok,
    /// Where the price was read.
    pub source: String,
    /// When.
    pub as_of: String,
    /// Prompt-caching prices, when the provider states them. In a manifest only when the plan
    /// asked for caching (`plan --cache`): absent, every inline manifest keeps its bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CachePrice>,
}

/// What cached input costs: a token written to the cache and a token read from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CachePrice {
    /// µUSD per million input tokens written to the cache (Anthropic: 1.25× input for a
    /// 5-minute entry).
    pub write: PerMtok,
    /// µUSD per million input tokens read from the cache (Anthropic: 0.1× input).
    pub read: PerMtok,
}

/// What a provider reported one request used, its input split by how it was billed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Every input token, however billed (cached ones included).
    pub input: u64,
    /// Of `input`, the tokens written to the cache.
    pub cache_write: u64,
    /// Of `input`, the tokens read from the cache.
    pub cache_read: u64,
    pub output: u64,
}

impl Price {
    /// The most one input token can cost under this price: the dearest of the input price, a
    /// cache write and a cache read (no provider charges a read above its input price, but a
    /// profile may say so). A reservation prices every input token at it, so that what a
    /// request spends never passes what it reserved, whatever the cache does.
    pub fn worst_input(&self) -> PerMtok {
        match self.cache {
            Some(cache) => PerMtok(self.input.0.max(cache.write.0).max(cache.read.0)),
            None => self.input,
        }
    }

    /// The cost of `usage`: uncached input at the input price, cache writes and reads at theirs
    /// (at the input price when the plan pinned no cache prices: never under-counted), output
    /// at the output price. Cache counts above the input are taken as the input (a provider's
    /// inconsistent report is charged at its dearest reading).
    pub fn cost(&self, usage: &Usage) -> Result<MicroUsd, crate::money::MoneyError> {
        let (write_price, read_price) = match self.cache {
            Some(cache) => (cache.write, cache.read),
            None => (self.input, self.input),
        };
        let write = usage.cache_write.min(usage.input);
        let read = usage.cache_read.min(usage.input - write);
        let plain = usage.input - write - read;
        // A write is never charged below the input price, whatever a profile says.
        let write_price = if write_price.0 < self.input.0 {
            self.input
        } else {
            write_price
        };
        self.input
            .cost(plain)?
            .checked_add(write_price.cost(write)?)?
            .checked_add(read_price.cost(read)?)?
            .checked_add(self.output.cost(usage.output)?)
    }
}

/// A model profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    pub id: String,
    pub provider: ProviderKind,
    pub model: String,
    pub revision: Option<String>,
    pub base_url: Option<String>,
    pub context_tokens: u64,
    pub max_output_tokens: u64,
    pub price: Option<Price>,
    /// Where the profile came from: `builtin` or a file path.
    pub origin: String,
}

impl Profile {
    /// Where requests go: the profile's `base_url`, else the provider's base-URL environment
    /// variable (e.g. `OPENAI_BASE_URL`) when set and not empty, else the provider's default.
    ///
    /// A profile without a price is refused the provider's default: the public endpoints all
    /// charge, and an unpriced run has no monetary cap, so falling back there would spend real
    /// money unbounded (the `openai-compatible-local` profile is meant for a server of one's own).
    pub fn endpoint(&self) -> Result<String, ProfileError> {
        let configured = self.base_url.clone().or_else(|| {
            std::env::var(self.provider.base_url_env())
                .ok()
                .filter(|v| !v.trim().is_empty())
        });
        match configured {
            Some(url) => {
                // Checked here, at plan time, so a URL the HTTP client cannot use is refused
                // naming where it came from, not turned into one infrastructure error per trial.
                let from = if self.base_url.is_some() {
                    format!("base_url of profile {}", self.id)
                } else {
                    self.provider.base_url_env().to_owned()
                };
                let bad = |reason: String| ProfileError::BadEndpoint {
                    from: from.clone(),
                    url: url.clone(),
                    reason,
                };
                let parsed = url::Url::parse(&url).map_err(|e| bad(e.to_string()))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(bad(format!("the scheme is {}", parsed.scheme())));
                }
                if parsed.host_str().is_none_or(str::is_empty) {
                    return Err(bad("it has no host".to_owned()));
                }
                Ok(url)
            }
            None if self.price.is_none() => Err(ProfileError::NeedsEndpoint {
                id: self.id.clone(),
                env: self.provider.base_url_env(),
            }),
            None => Ok(self.provider.default_base_url().to_owned()),
        }
    }

    /// The same profile asking the server for model `name` (a local server's own model name,
    /// e.g. from `--model-name` or `SKILLTRIAL_MODEL_NAME`). Only a profile without a price
    /// takes one: a price belongs to the model it was read for.
    pub fn with_model_name(mut self, name: &str) -> Result<Self, ProfileError> {
        let refuse = |reason: String| ProfileError::ModelName {
            id: self.id.clone(),
            reason,
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(refuse("it is empty".to_owned()));
        }
        // A model name is an identifier, echoed by `plan`, `status` and reports: a control
        // character (a newline, an escape sequence) could rewrite what a terminal shows.
        if name.chars().any(char::is_control) {
            return Err(refuse(
                "it contains a control character (a model name is an identifier)".to_owned(),
            ));
        }
        if self.price.is_some() {
            return Err(refuse(format!(
                "only a profile without a price (a server of your own) takes a model name; this one is priced for {}",
                self.model
            )));
        }
        name.clone_into(&mut self.model);
        Ok(self)
    }
}

/// A profile entry as written in TOML.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    id: String,
    provider: ProviderKind,
    model: String,
    revision: Option<String>,
    base_url: Option<String>,
    context_tokens: u64,
    max_output_tokens: u64,
    input_usd_per_mtok: Option<String>,
    output_usd_per_mtok: Option<String>,
    price_source: Option<String>,
    price_as_of: Option<String>,
    cache_write_usd_per_mtok: Option<String>,
    cache_read_usd_per_mtok: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    profile: Vec<Entry>,
}

/// Why profiles could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
    #[error("cannot read profiles file {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no model profile `{id}`; known: {known}")]
    Unknown { id: String, known: String },
    #[error(
        "profile {id} has no price, so it never calls a provider's public endpoint: set {env} to your server (e.g. http://127.0.0.1:8000/v1), or give the profile a base_url"
    )]
    NeedsEndpoint { id: String, env: &'static str },
    #[error("{from} `{url}` is not a usable http(s) URL: {reason}")]
    BadEndpoint {
        from: String,
        url: String,
        reason: String,
    },
    #[error("model name for profile {id}: {reason}")]
    ModelName { id: String, reason: String },
}

fn parse(text: &str, origin: &str) -> Result<Vec<Profile>, ProfileError> {
    let invalid = |message: String| ProfileError::Invalid {
        origin: origin.to_owned(),
        message,
    };
    let file: File = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
    file.profile
        .into_iter()
        .map(|e| {
            let price = match (e.input_usd_per_mtok, e.output_usd_per_mtok) {
                (Some(i), Some(o)) => {
                    let input = MicroUsd::parse_usd(&i)
                        .map_err(|err| invalid(format!("{}: input price: {err}", e.id)))?;
                    let output = MicroUsd::parse_usd(&o)
                        .map_err(|err| invalid(format!("{}: output price: {err}", e.id)))?;
                    let source = e
                        .price_source
                        .ok_or_else(|| invalid(format!("{}: a price needs price_source", e.id)))?;
                    let as_of = e
                        .price_as_of
                        .ok_or_else(|| invalid(format!("{}: a price needs price_as_of", e.id)))?;
                    let cache = match (e.cache_write_usd_per_mtok, e.cache_read_usd_per_mtok) {
                        (Some(w), Some(r)) => Some(CachePrice {
                            write: PerMtok(
                                MicroUsd::parse_usd(&w)
                                    .map_err(|err| {
                                        invalid(format!("{}: cache write price: {err}", e.id))
                                    })?
                                    .0,
                            ),
                            read: PerMtok(
                                MicroUsd::parse_usd(&r)
                                    .map_err(|err| {
                                        invalid(format!("{}: cache read price: {err}", e.id))
                                    })?
                                    .0,
                            ),
                        }),
                        (None, None) => None,
                        _ => {
                            return Err(invalid(format!(
                                "{}: give both cache prices (cache_write_usd_per_mtok, cache_read_usd_per_mtok) or neither",
                                e.id
                            )));
                        }
                    };
                    Some(Price {
                        input: PerMtok(input.0),
                        output: PerMtok(output.0),
                        source,
                        as_of,
                        cache,
                    })
                }
                (None, None) => {
                    if e.cache_write_usd_per_mtok.is_some() || e.cache_read_usd_per_mtok.is_some() {
                        return Err(invalid(format!(
                            "{}: cache prices need the input and output prices",
                            e.id
                        )));
                    }
                    None
                }
                _ => return Err(invalid(format!("{}: give both prices or neither", e.id))),
            };
            if e.id.trim().is_empty() || e.model.trim().is_empty() {
                return Err(invalid("a profile needs an id and a model".to_owned()));
            }
            if e.max_output_tokens == 0 || e.max_output_tokens > e.context_tokens {
                return Err(invalid(format!(
                    "{}: max_output_tokens must be between 1 and context_tokens",
                    e.id
                )));
            }
            Ok(Profile {
                id: e.id,
                provider: e.provider,
                model: e.model,
                revision: e.revision,
                base_url: e.base_url,
                context_tokens: e.context_tokens,
                max_output_tokens: e.max_output_tokens,
                price,
                origin: origin.to_owned(),
            })
        })
        .collect()
}

/// The built-in profiles.
pub fn builtin() -> Vec<Profile> {
    // The built-in table is tested to parse; an error here is a build defect, shown as no profiles.
    parse(BUILTIN, "builtin").unwrap_or_default()
}

/// Built-in profiles overlaid with the user's file, if it exists.
pub fn all(user_file: Option<&Path>) -> Result<Vec<Profile>, ProfileError> {
    let mut profiles = builtin();
    if let Some(path) = user_file.filter(|p| p.exists()) {
        // A FIFO nobody writes would block the read forever, a device never end it.
        if !path.is_file() && !path.is_dir() {
            return Err(ProfileError::Io {
                path: path.display().to_string(),
                source: std::io::Error::other("not a regular file (a FIFO, socket or device)"),
            });
        }
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: path.display().to_string(),
            source,
        })?;
        for user in parse(&text, &path.display().to_string())? {
            profiles.retain(|p| p.id != user.id);
            profiles.push(user);
        }
    }
    Ok(profiles)
}

/// Finds a profile by id.
pub fn find(id: &str, user_file: Option<&Path>) -> Result<Profile, ProfileError> {
    let profiles = all(user_file)?;
    let known = profiles
        .iter()
        .map(|p| p.id.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    profiles
        .into_iter()
        .find(|p| p.id == id)
        .ok_or_else(|| ProfileError::Unknown {
            id: id.to_owned(),
            known,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_input_is_priced_by_how_it_was_billed_and_reserved_as_the_dearest() {
        let sonnet = find("claude-sonnet-4-5@2025-09-29", None).unwrap();
        let price = sonnet.price.unwrap();
        let cache = price.cache.unwrap();
        assert_eq!(
            (cache.write, cache.read),
            (PerMtok(3_750_000), PerMtok(300_000))
        );
        assert_eq!(price.worst_input(), PerMtok(3_750_000));
        // Anthropic's verbatim usage (prompt-caching docs): 2048 uncached + 1800 read + 248
        // written = 4096 input tokens, 503 output.
        let usage = Usage {
            input: 4_096,
            cache_write: 248,
            cache_read: 1_800,
            output: 503,
        };
        // 2048 × 3 + 248 × 3.75 + 1800 × 0.3 + 503 × 15 µUSD per token / 1e6 ... in µUSD:
        // 6144 + 930 + 540 + 7545 = 15159.
        assert_eq!(price.cost(&usage).unwrap(), MicroUsd(15_159));
        // Without cache prices every input token is charged in full: never under-counted.
        let plain = Price {
            cache: None,
            ..price.clone()
        };
        assert_eq!(plain.worst_input(), PerMtok(3_000_000));
        assert_eq!(plain.cost(&usage).unwrap(), MicroUsd(4_096 * 3 + 503 * 15));
        // Cache counts above the input are read as input (a provider's inconsistent report).
        let odd = Usage {
            input: 100,
            cache_write: 80,
            cache_read: 80,
            output: 0,
        };
        assert_eq!(
            price.cost(&odd).unwrap(),
            MicroUsd(80 * 375 / 100 + 20 * 3 / 10)
        );
        // The cost never passes the reservation at the worst input price.
        let worst = price.worst_input().cost(4_096).unwrap();
        assert!(price.cost(&Usage { output: 0, ..usage }).unwrap() <= worst);
        // A profile whose cache read is its dearest price (no provider's, but a file may say
        // so) reserves input at the read price: a request read from the cache whole still
        // spends no more than it reserved.
        let odd_price = Price {
            cache: Some(CachePrice {
                write: PerMtok(3_750_000),
                read: PerMtok(30_000_000),
            }),
            ..price.clone()
        };
        assert_eq!(odd_price.worst_input(), PerMtok(30_000_000));
        let all_read = Usage {
            input: 4_096,
            cache_write: 0,
            cache_read: 4_096,
            output: 0,
        };
        assert!(odd_price.cost(&all_read).unwrap() <= odd_price.worst_input().cost(4_096).unwrap());
    }

    #[test]
    fn cache_prices_come_in_pairs_and_only_with_prices() {
        let base = "[[profile]]\nid = \"x\"\nprovider = \"anthropic\"\nmodel = \"m\"\ncontext_tokens = 10\nmax_output_tokens = 5\n";
        let one = format!(
            "{base}input_usd_per_mtok = \"1\"\noutput_usd_per_mtok = \"2\"\nprice_source = \"s\"\nprice_as_of = \"d\"\ncache_write_usd_per_mtok = \"1.25\"\n"
        );
        assert!(
            parse(&one, "t")
                .unwrap_err()
                .to_string()
                .contains("both cache prices")
        );
        let unpriced =
            format!("{base}cache_write_usd_per_mtok = \"1\"\ncache_read_usd_per_mtok = \"1\"\n");
        assert!(
            parse(&unpriced, "t")
                .unwrap_err()
                .to_string()
                .contains("need the input and output prices")
        );
    }

    #[test]
    fn builtin_table_parses_and_prices_are_exact() {
        let profiles = parse(BUILTIN, "builtin").unwrap();
        assert!(profiles.len() >= 4);
        let sonnet = profiles
            .iter()
            .find(|p| p.id == "claude-sonnet-4-5@2025-09-29")
            .unwrap();
        let price = sonnet.price.as_ref().unwrap();
        assert_eq!(
            (price.input, price.output),
            (PerMtok(3_000_000), PerMtok(15_000_000))
        );
        let local = profiles
            .iter()
            .find(|p| p.id == "openai-compatible-local")
            .unwrap();
        assert!(
            local.price.is_none(),
            "a local server has no verifiable price"
        );
    }

    #[test]
    fn half_a_price_or_a_float_is_refused() {
        let head = "[[profile]]\nid='x'\nprovider='openai'\nmodel='m'\ncontext_tokens=10\nmax_output_tokens=5\n";
        let sourced = "price_source='s'\nprice_as_of='d'\n";
        // The control: the same profile with both prices as strings parses, so each refusal
        // below is about the one change it makes, not a typo elsewhere in the TOML.
        let whole = format!("{head}input_usd_per_mtok='1.5'\noutput_usd_per_mtok='1'\n{sourced}");
        let parsed = parse(&whole, "t").unwrap();
        assert_eq!(
            parsed[0].price.as_ref().map(|p| (p.input, p.output)),
            Some((PerMtok(1_500_000), PerMtok(1_000_000)))
        );
        let message = |text: &str| match parse(text, "t") {
            Err(ProfileError::Invalid { origin, message }) => {
                assert_eq!(origin, "t");
                message
            }
            other => panic!("{text}: {other:?}"),
        };
        let half = format!("{head}input_usd_per_mtok='1'\n");
        assert_eq!(message(&half), "x: give both prices or neither");
        let float = format!("{head}input_usd_per_mtok=1.5\noutput_usd_per_mtok='1'\n{sourced}");
        assert_eq!(
            message(&float),
            "TOML parse error at line 7, column 20\n  |\n7 | input_usd_per_mtok=1.5\n  |                    ^^^\ninvalid type: floating point `1.5`, expected a string\n"
        );
        let unsourced = format!("{head}input_usd_per_mtok='1.5'\noutput_usd_per_mtok='1'\n");
        assert_eq!(message(&unsourced), "x: a price needs price_source");
        let negative = format!("{head}input_usd_per_mtok='-1'\noutput_usd_per_mtok='1'\n{sourced}");
        assert_eq!(
            message(&negative),
            "x: input price: `-1` is not a USD amount (digits, optionally a point and up to 6 decimals, e.g. 4 or 0.25)"
        );
    }
}
