//! The Solana CLI's conventions, so a Solana developer's habits carry over (docs/program.md;
//! hosted-design §5, from anza-xyz/agave `cli-config` and `clap-utils`):
//!
//! - `--url`/`-u`: a URL or a moniker — `m`/`mainnet-beta`, `d`/`devnet`, `t`/`testnet`,
//!   `l`/`localhost` (`http://localhost:8899`);
//! - `--keypair`/`-k`: a keypair file; by default the Solana CLI's own, `keypair_path` in
//!   `~/.config/solana/cli/config.yml`, else `~/.config/solana/id.json`;
//! - `--commitment`: `processed`, `confirmed` (the default) or `finalized`;
//! - keypair files in solana-keygen's format: a JSON array of 64 numbers, the 32-byte secret seed
//!   then the 32-byte public key.
//!
//! Precedence: the flag, then config.yml, then the default. Nothing here ever prints a keypair
//! file's contents: errors name the file and the rule it breaks, never its numbers.

use std::path::{Path, PathBuf};

use solana_keypair::Keypair;
use yaml_rust2::{Yaml, YamlLoader};

/// Where the Solana CLI keeps its config, under the home directory.
pub const CONFIG_FILE: &str = ".config/solana/cli/config.yml";
/// The Solana CLI's default keypair, under the home directory.
pub const DEFAULT_KEYPAIR: &str = ".config/solana/id.json";
/// The Solana CLI's default RPC URL (`json_rpc_url` when config.yml names none).
pub const DEFAULT_URL: &str = "https://api.mainnet-beta.solana.com";
/// The local validator's RPC URL (`-u l`).
pub const LOCALHOST_URL: &str = "http://localhost:8899";
/// The largest keypair file read: 64 numbers of at most three digits with separators and
/// whitespace fit in well under 1 KiB.
const MAX_KEYPAIR_FILE_BYTES: u64 = 4 * 1024;
/// The largest config.yml read (address labels can make it long, not megabytes).
const MAX_CONFIG_FILE_BYTES: u64 = 1024 * 1024;

/// Why a convention's input is refused; every message names the input.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConventionError {
    #[error(
        "--url {0:?} is neither a URL (http:// or https://) nor a moniker (m, mainnet-beta, d, devnet, t, testnet, l, localhost)"
    )]
    Url(String),
    #[error("--commitment {0:?}: expected processed, confirmed or finalized")]
    Commitment(String),
    #[error("cannot read {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{path} is not a Solana CLI config file: {reason}")]
    Config { path: String, reason: String },
    #[error(
        "{path} is not a solana-keygen keypair file: {reason} (expected a JSON array of 64 numbers from 0 to 255)"
    )]
    Keypair { path: String, reason: String },
    #[error(
        "the signer {0:?} is not a keypair file; hardware wallets, prompt:// and stdin are not supported yet: give the path of a keypair file"
    )]
    UnsupportedSigner(String),
    #[error(
        "no keypair given and no home directory to find the Solana CLI's default: pass --keypair FILE"
    )]
    NoHome,
}

/// A URL for `input`: a moniker's URL, or `input` itself when it is an http(s) URL.
pub fn normalize_url(input: &str) -> Result<String, ConventionError> {
    let moniker = match input {
        "m" | "mainnet-beta" => Some(DEFAULT_URL),
        "d" | "devnet" => Some("https://api.devnet.solana.com"),
        "t" | "testnet" => Some("https://api.testnet.solana.com"),
        "l" | "localhost" => Some(LOCALHOST_URL),
        _ => None,
    };
    if let Some(url) = moniker {
        return Ok(url.to_owned());
    }
    match url::Url::parse(input) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
            Ok(input.to_owned())
        }
        _ => Err(ConventionError::Url(input.to_owned())),
    }
}

/// How settled a read or a confirmation must be.
/// Ordered: a status at a higher level satisfies every lower one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Commitment {
    Processed,
    /// The Solana CLI's default.
    #[default]
    Confirmed,
    Finalized,
}

impl Commitment {
    /// The name JSON-RPC and the Solana CLI use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Processed => "processed",
            Self::Confirmed => "confirmed",
            Self::Finalized => "finalized",
        }
    }
}

impl std::str::FromStr for Commitment {
    type Err = ConventionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "processed" => Ok(Self::Processed),
            "confirmed" => Ok(Self::Confirmed),
            "finalized" => Ok(Self::Finalized),
            other => Err(ConventionError::Commitment(other.to_owned())),
        }
    }
}

/// What the Solana CLI's config.yml says (each field absent when it does not say it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SolanaConfig {
    pub json_rpc_url: Option<String>,
    pub keypair_path: Option<PathBuf>,
    pub commitment: Option<Commitment>,
}

impl SolanaConfig {
    /// Reads `path`; a missing file is an empty config (the Solana CLI's defaults apply), any
    /// other problem is an error naming the file.
    pub fn read(path: &Path) -> Result<Self, ConventionError> {
        let shown = path.display().to_string();
        let text = match read_small(path, MAX_CONFIG_FILE_BYTES) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => {
                return Err(ConventionError::Unreadable {
                    path: shown,
                    reason: e.to_string(),
                });
            }
        };
        Self::parse(&text).map_err(|reason| ConventionError::Config {
            path: shown,
            reason,
        })
    }

    /// Parses config.yml's text: a YAML mapping whose `json_rpc_url`, `keypair_path` and
    /// `commitment` are strings (an empty string is unset, as the Solana CLI treats it).
    pub fn parse(text: &str) -> Result<Self, String> {
        let docs = YamlLoader::load_from_str(text).map_err(|e| format!("not YAML: {e}"))?;
        let Some(doc) = docs.first() else {
            return Ok(Self::default());
        };
        if !matches!(doc, Yaml::Hash(_)) {
            return Err("not a mapping of settings".to_owned());
        }
        let text_of = |key: &str| -> Result<Option<String>, String> {
            match &doc[key] {
                Yaml::BadValue | Yaml::Null => Ok(None),
                Yaml::String(s) if s.is_empty() => Ok(None),
                Yaml::String(s) => Ok(Some(s.clone())),
                _ => Err(format!("{key} is not a string")),
            }
        };
        let commitment = text_of("commitment")?
            .map(|c| {
                c.parse::<Commitment>().map_err(|_| {
                    format!("commitment {c:?}: expected processed, confirmed or finalized")
                })
            })
            .transpose()?;
        Ok(Self {
            json_rpc_url: text_of("json_rpc_url")?,
            keypair_path: text_of("keypair_path")?.map(PathBuf::from),
            commitment,
        })
    }
}

/// The URL, keypair path and commitment a command uses: each flag when given, else config.yml's,
/// else the Solana CLI's default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub url: String,
    pub keypair_path: PathBuf,
    pub commitment: Commitment,
}

/// Resolves `--url`, `--keypair` and `--commitment` against `config` (read from the home
/// directory's config.yml) and the defaults under `home`.
pub fn resolve(
    url: Option<&str>,
    keypair: Option<&Path>,
    commitment: Option<&str>,
    config: &SolanaConfig,
    home: Option<&Path>,
) -> Result<Resolved, ConventionError> {
    let url = match url.or(config.json_rpc_url.as_deref()) {
        Some(given) => normalize_url(given)?,
        None => DEFAULT_URL.to_owned(),
    };
    let keypair_path = match keypair.or(config.keypair_path.as_deref()) {
        Some(path) => signer_path(path)?,
        None => home.ok_or(ConventionError::NoHome)?.join(DEFAULT_KEYPAIR),
    };
    let commitment = match commitment {
        Some(c) => c.parse()?,
        None => config.commitment.unwrap_or_default(),
    };
    Ok(Resolved {
        url,
        keypair_path,
        commitment,
    })
}

/// A signer path that is a keypair file; the Solana CLI's other signer kinds are refused by
/// name.
fn signer_path(path: &Path) -> Result<PathBuf, ConventionError> {
    let text = path.to_string_lossy();
    if let Some(file) = text.strip_prefix("file://") {
        return Ok(PathBuf::from(file));
    }
    if text == "stdin"
        || text == "ASK"
        || text.starts_with("usb://")
        || text.starts_with("prompt://")
    {
        return Err(ConventionError::UnsupportedSigner(text.into_owned()));
    }
    Ok(path.to_path_buf())
}

/// Reads a solana-keygen keypair file: a JSON array of 64 numbers (0–255) whose last 32 are the
/// public key of the first 32. Errors name the file, never its contents.
pub fn read_keypair_file(path: &Path) -> Result<Keypair, ConventionError> {
    let shown = path.display().to_string();
    let refused = |reason: &str| ConventionError::Keypair {
        path: shown.clone(),
        reason: reason.to_owned(),
    };
    let meta = std::fs::metadata(path).map_err(|e| ConventionError::Unreadable {
        path: shown.clone(),
        reason: e.to_string(),
    })?;
    if !meta.is_file() {
        return Err(refused("not a regular file"));
    }
    let text = read_small(path, MAX_KEYPAIR_FILE_BYTES).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            refused("larger than any keypair file")
        } else {
            ConventionError::Unreadable {
                path: shown.clone(),
                reason: e.to_string(),
            }
        }
    })?;
    let numbers: Vec<serde_json::Value> = match serde_json::from_str(&text) {
        Ok(serde_json::Value::Array(items)) => items,
        _ => return Err(refused("not a JSON array")),
    };
    if numbers.len() != 64 {
        return Err(refused(&format!("{} numbers", numbers.len())));
    }
    let bytes: Vec<u8> = numbers
        .iter()
        .map(|n| n.as_u64().and_then(|n| u8::try_from(n).ok()))
        .collect::<Option<_>>()
        .ok_or_else(|| refused("a member is not a number from 0 to 255"))?;
    Keypair::try_from(bytes.as_slice())
        .map_err(|_| refused("its public key is not the one its secret key derives"))
}

/// The text of `path`, refused (`InvalidData`) when it is larger than `limit` bytes.
fn read_small(path: &Path, limit: u64) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(limit + 1)
        .read_to_string(&mut text)?;
    if u64::try_from(text.len()).unwrap_or(u64::MAX) > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "file too large",
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use solana_signer::Signer as _;

    use super::*;

    #[test]
    fn monikers_and_urls_resolve_as_the_solana_cli_does() {
        for (given, url) in [
            ("m", DEFAULT_URL),
            ("mainnet-beta", DEFAULT_URL),
            ("d", "https://api.devnet.solana.com"),
            ("devnet", "https://api.devnet.solana.com"),
            ("t", "https://api.testnet.solana.com"),
            ("testnet", "https://api.testnet.solana.com"),
            ("l", LOCALHOST_URL),
            ("localhost", LOCALHOST_URL),
            ("http://127.0.0.1:8899", "http://127.0.0.1:8899"),
            ("https://rpc.example.org/key", "https://rpc.example.org/key"),
        ] {
            assert_eq!(normalize_url(given).unwrap(), url, "{given}");
        }
        for bad in [
            "",
            "mainnet",
            "ftp://x.org",
            "localhost:8899",
            "http://",
            "x y",
        ] {
            assert_eq!(
                normalize_url(bad),
                Err(ConventionError::Url(bad.to_owned())),
                "{bad}"
            );
        }
    }

    #[test]
    fn config_yml_is_read_as_the_solana_cli_writes_it() {
        let text = "---\njson_rpc_url: \"https://api.devnet.solana.com\"\nwebsocket_url: \"\"\nkeypair_path: /home/u/.config/solana/id.json\naddress_labels:\n  \"11111111111111111111111111111111\": System Program\ncommitment: finalized\n";
        assert_eq!(
            SolanaConfig::parse(text).unwrap(),
            SolanaConfig {
                json_rpc_url: Some("https://api.devnet.solana.com".to_owned()),
                keypair_path: Some(PathBuf::from("/home/u/.config/solana/id.json")),
                commitment: Some(Commitment::Finalized),
            }
        );
        // Empty strings are unset; an empty file is the defaults.
        assert_eq!(
            SolanaConfig::parse("json_rpc_url: ''\nkeypair_path: ''\n").unwrap(),
            SolanaConfig::default()
        );
        assert_eq!(SolanaConfig::parse("").unwrap(), SolanaConfig::default());
        assert!(SolanaConfig::parse("- a list").is_err());
        assert!(SolanaConfig::parse("json_rpc_url: [1, 2]").is_err());
        assert!(SolanaConfig::parse("commitment: soon").is_err());
        assert!(SolanaConfig::parse("a: [unclosed").is_err());
    }

    #[test]
    fn a_flag_beats_config_yml_which_beats_the_default() {
        let home = Path::new("/home/u");
        let none = SolanaConfig::default();
        let r = resolve(None, None, None, &none, Some(home)).unwrap();
        assert_eq!(
            r,
            Resolved {
                url: DEFAULT_URL.to_owned(),
                keypair_path: home.join(DEFAULT_KEYPAIR),
                commitment: Commitment::Confirmed,
            }
        );
        let config = SolanaConfig {
            json_rpc_url: Some("d".to_owned()),
            keypair_path: Some(PathBuf::from("/keys/me.json")),
            commitment: Some(Commitment::Processed),
        };
        let r = resolve(None, None, None, &config, Some(home)).unwrap();
        assert_eq!(
            (r.url.as_str(), r.keypair_path.as_path(), r.commitment),
            (
                "https://api.devnet.solana.com",
                Path::new("/keys/me.json"),
                Commitment::Processed
            )
        );
        let r = resolve(
            Some("l"),
            Some(Path::new("file:///keys/other.json")),
            Some("finalized"),
            &config,
            None,
        )
        .unwrap();
        assert_eq!(
            (r.url.as_str(), r.keypair_path.as_path(), r.commitment),
            (
                LOCALHOST_URL,
                Path::new("/keys/other.json"),
                Commitment::Finalized
            )
        );
        assert_eq!(
            resolve(None, None, None, &none, None),
            Err(ConventionError::NoHome)
        );
        for signer in ["usb://ledger", "prompt://", "stdin", "ASK"] {
            assert_eq!(
                resolve(None, Some(Path::new(signer)), None, &none, Some(home)),
                Err(ConventionError::UnsupportedSigner(signer.to_owned()))
            );
        }
        assert!(resolve(None, None, Some("soon"), &none, Some(home)).is_err());
    }

    #[test]
    fn a_keypair_file_is_read_in_solana_keygens_format_and_never_echoed() {
        let dir = tempfile::tempdir().unwrap();
        let keypair = Keypair::new();
        let numbers: Vec<u8> = keypair.to_bytes().to_vec();
        let good = dir.path().join("id.json");
        std::fs::write(&good, serde_json::to_string(&numbers).unwrap()).unwrap();
        assert_eq!(read_keypair_file(&good).unwrap().pubkey(), keypair.pubkey());

        let secret = numbers[..32].to_vec();
        let write = |name: &str, text: String| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let mut wrong_pubkey = numbers.clone();
        wrong_pubkey[40] ^= 1;
        let mut over = serde_json::to_value(&numbers).unwrap();
        over[3] = 256.into();
        let cases = [
            (
                write("short.json", serde_json::to_string(&secret).unwrap()),
                "32 numbers",
            ),
            (
                write("over.json", over.to_string()),
                "not a number from 0 to 255",
            ),
            (
                write("text.json", "not json".to_owned()),
                "not a JSON array",
            ),
            (
                write("object.json", "{\"a\": 1}".to_owned()),
                "not a JSON array",
            ),
            (
                write(
                    "mismatch.json",
                    serde_json::to_string(&wrong_pubkey).unwrap(),
                ),
                "public key is not the one its secret key derives",
            ),
            (
                write("huge.json", " ".repeat(10_000)),
                "larger than any keypair file",
            ),
        ];
        for (path, reason) in cases {
            let message = read_keypair_file(&path).err().unwrap().to_string();
            assert!(message.contains(reason), "{message}");
            assert!(message.contains(&path.display().to_string()), "{message}");
            // Never the secret: no run of the file's numbers appears in the message.
            let leaked = format!("{}, {}", numbers[0], numbers[1]);
            assert!(!message.contains(&leaked), "{message}");
        }
        assert!(matches!(
            read_keypair_file(dir.path()),
            Err(ConventionError::Keypair { .. })
        ));
        assert!(matches!(
            read_keypair_file(&dir.path().join("missing.json")),
            Err(ConventionError::Unreadable { .. })
        ));
        assert_eq!(
            SolanaConfig::read(&dir.path().join("no-config.yml")).unwrap(),
            SolanaConfig::default()
        );
        let bad = write("config.yml", "- not a mapping".to_owned());
        let message = SolanaConfig::read(&bad).err().unwrap().to_string();
        assert!(message.contains("config.yml"), "{message}");
    }
}
