//! Sign-In With Solana: the daemon builds the message, the wallet signs its bytes, the daemon
//! verifies the signature over **the exact bytes it received** and only then reads them,
//! leniently (wallets lay the same fields out differently), and checks every field against its
//! own: domain, URI origin, chain, a single-use nonce it issued, the times.
//!
//! The text follows the Sign-In With Solana layout (Phantom's ABNF; the Wallet Standard's
//! `solana:signIn` produces it):
//!
//! ```text
//! runner.example wants you to sign in with your Solana account:
//! <base58 address>
//!
//! <statement>
//!
//! URI: https://runner.example
//! Version: 1
//! Chain ID: localnet
//! Nonce: <alphanumerics>
//! Issued At: 2026-12-01T10:00:00Z
//! Expiration Time: 2026-12-01T10:10:00Z
//! ```

use skilltrial_core::time::{parse_rfc3339, rfc3339};
use solana_pubkey::Pubkey;
use solana_signature::Signature;

/// What the daemon tells wallets they are signing.
pub const STATEMENT: &str =
    "Sign in to the SkillTrial runner to upload runs and read your own runs' reports.";
/// How long a challenge may wait for its signature.
pub const CHALLENGE_TTL_SECS: i64 = 10 * 60;
/// How far `Issued At` may be from the daemon's clock, either way (Phantom's own threshold).
pub const CLOCK_SKEW_SECS: i64 = 10 * 60;
/// The longest message the daemon reads.
pub const MAX_MESSAGE_BYTES: usize = 4096;

const HEADER_SUFFIX: &str = " wants you to sign in with your Solana account:";

/// The daemon's side of a sign-in: who it is and where.
#[derive(Debug, Clone)]
pub struct Expect {
    /// `host[:port]` of the public origin.
    pub domain: String,
    /// The public origin, `scheme://host[:port]`, no trailing slash.
    pub origin: String,
    /// `mainnet`, `devnet`, `testnet` or `localnet`.
    pub chain_id: String,
}

impl Expect {
    /// The expectations of a daemon whose public origin is `origin` (`http://127.0.0.1:8787`).
    pub fn new(origin: &url::Url, chain_id: &str) -> Result<Self, String> {
        let host = origin
            .host_str()
            .ok_or_else(|| format!("public origin {origin}: it has no host"))?;
        if !matches!(origin.scheme(), "http" | "https") {
            return Err(format!("public origin {origin}: not http or https"));
        }
        if origin.path() != "/" || origin.query().is_some() || origin.fragment().is_some() {
            return Err(format!(
                "public origin {origin}: an origin is scheme, host and port only (no path, query or fragment)"
            ));
        }
        let domain = match origin.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        Ok(Self {
            origin: format!("{}://{domain}", origin.scheme()),
            domain,
            chain_id: chain_id.to_owned(),
        })
    }
}

/// The text `address`'s wallet signs, built by the daemon.
pub fn message(expect: &Expect, address: &Pubkey, nonce: &str, issued_at: i64) -> String {
    format!(
        "{domain}{HEADER_SUFFIX}\n{address}\n\n{STATEMENT}\n\nURI: {origin}\nVersion: 1\nChain ID: {chain}\nNonce: {nonce}\nIssued At: {issued}\nExpiration Time: {expires}",
        domain = expect.domain,
        origin = expect.origin,
        chain = expect.chain_id,
        issued = rfc3339(issued_at),
        expires = rfc3339(issued_at.saturating_add(CHALLENGE_TTL_SECS)),
    )
}

/// The fields of a sign-in message, as read (not yet checked).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fields {
    pub domain: String,
    pub address: String,
    pub uri: Option<String>,
    pub version: Option<String>,
    pub chain_id: Option<String>,
    pub nonce: Option<String>,
    pub issued_at: Option<String>,
    pub expiration_time: Option<String>,
    pub not_before: Option<String>,
}

/// Why a sign-in was refused. Each names what the wallet or the page must do differently.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignInError {
    #[error("the signed message is longer than {MAX_MESSAGE_BYTES} bytes")]
    TooLong,
    #[error("`{0}` is not a Solana address (base58 of 32 bytes)")]
    BadAddress(String),
    #[error("the signature is not base58 of 64 bytes")]
    BadSignature,
    #[error("the signature does not verify: these exact bytes were not signed by {0}")]
    SignatureMismatch(String),
    #[error("the message is not UTF-8 text")]
    NotText,
    #[error("the message is not a Sign-In With Solana message: {0}")]
    Malformed(&'static str),
    #[error("the message signs in as {signed}, but the signature is {claimed}'s")]
    AddressMismatch { signed: String, claimed: String },
    #[error("the message is for domain `{found}`; this runner is `{expected}`")]
    WrongDomain { found: String, expected: String },
    #[error("the message's URI `{found}` is not under this runner's origin {expected}")]
    WrongUri { found: String, expected: String },
    #[error("the message is for chain `{found}`; this runner settles on `{expected}`")]
    WrongChain { found: String, expected: String },
    #[error("the message's version is `{0}`, not 1")]
    WrongVersion(String),
    #[error("the message has no `{0}` line")]
    Missing(&'static str),
    #[error("`{field}: {value}` is not an RFC 3339 time")]
    BadTime { field: &'static str, value: String },
    #[error("the message was issued at {0}, more than 10 minutes from this runner's clock")]
    IssuedAtOutOfRange(String),
    #[error("the message expired at {0}: ask for a new challenge")]
    Expired(String),
    #[error("the message is not valid before {0}")]
    NotYetValid(String),
    #[error("nonce `{0}` was not issued by this runner, or expired: ask for a new challenge")]
    UnknownNonce(String),
    #[error("nonce `{0}` was already used: ask for a new challenge")]
    NonceUsed(String),
    #[error("nonce `{0}` was issued to another wallet")]
    NonceForAnother(String),
}

/// Reads the fields of `text`, tolerating the layouts wallets produce (one or two blank lines
/// around the statement, no statement, fields in any order, `\r\n` line ends).
pub fn parse(text: &str) -> Result<Fields, SignInError> {
    let mut lines = text.lines().map(|l| l.strip_suffix('\r').unwrap_or(l));
    let header = lines.next().ok_or(SignInError::Malformed("it is empty"))?;
    let domain = header
        .strip_suffix(HEADER_SUFFIX)
        .filter(|d| !d.is_empty() && !d.contains(char::is_whitespace))
        .ok_or(SignInError::Malformed(
            "its first line is not `<domain> wants you to sign in with your Solana account:`",
        ))?;
    let address = lines
        .next()
        .filter(|a| !a.is_empty())
        .ok_or(SignInError::Malformed("its second line is not an address"))?;
    let mut fields = Fields {
        domain: domain.to_owned(),
        address: address.to_owned(),
        ..Fields::default()
    };
    for line in lines {
        let Some((key, value)) = line.split_once(": ") else {
            continue;
        };
        let slot = match key {
            "URI" => &mut fields.uri,
            "Version" => &mut fields.version,
            "Chain ID" => &mut fields.chain_id,
            "Nonce" => &mut fields.nonce,
            "Issued At" => &mut fields.issued_at,
            "Expiration Time" => &mut fields.expiration_time,
            "Not Before" => &mut fields.not_before,
            _ => continue,
        };
        if slot.is_some() {
            return Err(SignInError::Malformed("a field appears twice"));
        }
        *slot = Some(value.to_owned());
    }
    Ok(fields)
}

/// A signature that verified, with the fields of the text it signed. The nonce is still to be
/// consumed (single use) by the caller's store.
#[derive(Debug, Clone)]
pub struct Verified {
    pub address: Pubkey,
    pub nonce: String,
    /// The message's `Issued At`, unix seconds.
    pub issued_at: i64,
}

/// Verifies `signature` (base58) by `address` (base58) over exactly `signed` and checks every
/// field against `expect` at time `now`. The nonce's single use is the caller's (its store).
pub fn verify(
    expect: &Expect,
    signed: &[u8],
    signature: &str,
    address: &str,
    now: i64,
) -> Result<Verified, SignInError> {
    if signed.len() > MAX_MESSAGE_BYTES {
        return Err(SignInError::TooLong);
    }
    let key: Pubkey = address
        .parse()
        .map_err(|_| SignInError::BadAddress(address.to_owned()))?;
    let signature: Signature = signature.parse().map_err(|_| SignInError::BadSignature)?;
    // The bytes first: nothing of the text is believed before its signature holds.
    if !signature.verify(key.as_ref(), signed) {
        return Err(SignInError::SignatureMismatch(key.to_string()));
    }
    let text = std::str::from_utf8(signed).map_err(|_| SignInError::NotText)?;
    let fields = parse(text)?;
    if fields.address != key.to_string() {
        return Err(SignInError::AddressMismatch {
            signed: fields.address,
            claimed: key.to_string(),
        });
    }
    if fields.domain != expect.domain {
        return Err(SignInError::WrongDomain {
            found: fields.domain,
            expected: expect.domain.clone(),
        });
    }
    let uri = fields.uri.ok_or(SignInError::Missing("URI"))?;
    if !under_origin(&uri, &expect.origin) {
        return Err(SignInError::WrongUri {
            found: uri,
            expected: expect.origin.clone(),
        });
    }
    let version = fields.version.ok_or(SignInError::Missing("Version"))?;
    if version != "1" {
        return Err(SignInError::WrongVersion(version));
    }
    let chain = fields.chain_id.ok_or(SignInError::Missing("Chain ID"))?;
    if chain.strip_prefix("solana:").unwrap_or(&chain) != expect.chain_id {
        return Err(SignInError::WrongChain {
            found: chain,
            expected: expect.chain_id.clone(),
        });
    }
    let nonce = fields.nonce.ok_or(SignInError::Missing("Nonce"))?;
    let issued_text = fields.issued_at.ok_or(SignInError::Missing("Issued At"))?;
    let issued = time("Issued At", &issued_text)?;
    if issued.abs_diff(now) > CLOCK_SKEW_SECS.unsigned_abs() {
        return Err(SignInError::IssuedAtOutOfRange(issued_text));
    }
    if let Some(text) = fields.expiration_time
        && time("Expiration Time", &text)? <= now
    {
        return Err(SignInError::Expired(text));
    }
    if let Some(text) = fields.not_before
        && time("Not Before", &text)? > now
    {
        return Err(SignInError::NotYetValid(text));
    }
    Ok(Verified {
        address: key,
        nonce,
        issued_at: issued,
    })
}

fn time(field: &'static str, value: &str) -> Result<i64, SignInError> {
    parse_rfc3339(value).ok_or_else(|| SignInError::BadTime {
        field,
        value: value.to_owned(),
    })
}

/// `uri` is the origin itself or a path under it (`https://host` does not cover
/// `https://host.evil`).
fn under_origin(uri: &str, origin: &str) -> bool {
    match uri.strip_prefix(origin) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

/// Issues and recognises sign-in nonces without storing them: a nonce is 16 random bytes and the
/// first 16 bytes of HMAC-SHA256 over the wallet, those bytes and the issue time, under a key
/// this process drew at start. Asking for challenges therefore writes nothing (a flood of them
/// fills no table and locks nobody out); only a nonce spent by a valid signature is recorded,
/// for its single use. A restart forgets the key: a challenge not yet signed is asked for again.
pub struct Challenges {
    key: [u8; 32],
}

impl std::fmt::Debug for Challenges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Challenges { key: <secret> }")
    }
}

impl Challenges {
    /// With a key from the OS's CSPRNG.
    pub fn new() -> Result<Self, String> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| format!("cannot draw the challenge key: {e}"))?;
        Ok(Self { key })
    }

    /// With `key`: the key every worker on one database shares ([`crate::pg::Pg::shared_key`]).
    pub fn with_key(key: [u8; 32]) -> Self {
        Self { key }
    }

    /// HMAC-SHA256 over the wallet, the random bytes and the issue time, fed and ready.
    fn mac(
        &self,
        address: &Pubkey,
        random: &[u8],
        issued_at: i64,
    ) -> Option<hmac::Hmac<sha2::Sha256>> {
        use hmac::Mac as _;
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.key).ok()?;
        mac.update(address.as_ref());
        mac.update(random);
        mac.update(&issued_at.to_be_bytes());
        Some(mac)
    }

    /// A nonce for `address`'s challenge issued at `issued_at`, from 16 `random` bytes.
    pub fn nonce(&self, address: &Pubkey, random: &[u8; 16], issued_at: i64) -> String {
        use hmac::Mac as _;
        let mut bytes = random.to_vec();
        if let Some(mac) = self.mac(address, random, issued_at) {
            bytes.extend_from_slice(&mac.finalize().into_bytes()[..16]);
        }
        bs58::encode(bytes).into_string()
    }

    /// Whether `nonce` is one this process issued to `address` at `issued_at` (the tag compared
    /// in constant time by the `hmac` crate).
    pub fn issued(&self, nonce: &str, address: &Pubkey, issued_at: i64) -> bool {
        use hmac::Mac as _;
        let Ok(bytes) = bs58::decode(nonce).into_vec() else {
            return false;
        };
        let Some((random, tag)) = bytes.split_at_checked(16) else {
            return false;
        };
        tag.len() == 16
            && self
                .mac(address, random, issued_at)
                .is_some_and(|mac| mac.verify_truncated_left(tag).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use solana_keypair::Keypair;
    use solana_signer::Signer;

    const NOW: i64 = 1_796_100_000;

    fn expect() -> Expect {
        Expect::new(&"http://127.0.0.1:8787".parse().unwrap(), "localnet").unwrap()
    }

    fn sign(key: &Keypair, text: &str) -> String {
        key.sign_message(text.as_bytes()).to_string()
    }

    fn check(key: &Keypair, text: &str) -> Result<Verified, SignInError> {
        verify(
            &expect(),
            text.as_bytes(),
            &sign(key, text),
            &key.pubkey().to_string(),
            NOW,
        )
    }

    #[test]
    fn the_daemons_own_message_verifies() {
        let key = Keypair::new();
        let text = message(&expect(), &key.pubkey(), "abcdEFGH1234", NOW);
        let ok = check(&key, &text).unwrap();
        assert_eq!(ok.address, key.pubkey());
        assert_eq!(ok.nonce, "abcdEFGH1234");
    }

    /// Three layouts seen in wallets: two blank lines around the statement (the daemon's), one
    /// after the address and one before the fields, and no statement at all; `\r\n` too.
    #[test]
    fn the_layouts_wallets_produce_all_verify() {
        let key = Keypair::new();
        let a = key.pubkey();
        let tail = format!(
            "URI: http://127.0.0.1:8787/\nVersion: 1\nChain ID: solana:localnet\nNonce: n0nce123\nIssued At: {}",
            rfc3339(NOW - 5)
        );
        for text in [
            format!("127.0.0.1:8787{HEADER_SUFFIX}\n{a}\n\n{STATEMENT}\n\n{tail}"),
            format!("127.0.0.1:8787{HEADER_SUFFIX}\n{a}\n\n{STATEMENT}\n{tail}"),
            format!("127.0.0.1:8787{HEADER_SUFFIX}\n{a}\n\n{tail}"),
            format!("127.0.0.1:8787{HEADER_SUFFIX}\r\n{a}\r\n\r\n{tail}")
                .replace('\n', "\r\n")
                .replace("\r\r", "\r"),
        ] {
            check(&key, &text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        }
    }

    /// A tampered message and the refusal it must meet.
    type Case = (String, fn(&SignInError) -> bool);

    #[test]
    fn every_field_is_checked() {
        let key = Keypair::new();
        let good = message(&expect(), &key.pubkey(), "abcdEFGH1234", NOW);
        let cases: Vec<Case> = vec![
            (
                good.replace("127.0.0.1:8787 wants", "evil.example wants"),
                |e| matches!(e, SignInError::WrongDomain { .. }),
            ),
            (
                good.replace("URI: http://127.0.0.1:8787", "URI: http://127.0.0.1:87870"),
                |e| matches!(e, SignInError::WrongUri { .. }),
            ),
            (
                good.replace("Chain ID: localnet", "Chain ID: mainnet"),
                |e| matches!(e, SignInError::WrongChain { .. }),
            ),
            (good.replace("Version: 1", "Version: 2"), |e| {
                matches!(e, SignInError::WrongVersion(_))
            }),
            (good.replace(&rfc3339(NOW), &rfc3339(NOW - 3600)), |e| {
                matches!(e, SignInError::IssuedAtOutOfRange(_))
            }),
            (good.replace(&rfc3339(NOW), &rfc3339(NOW + 3600)), |e| {
                matches!(e, SignInError::IssuedAtOutOfRange(_))
            }),
            (
                good.replace(&rfc3339(NOW + CHALLENGE_TTL_SECS), &rfc3339(NOW - 1)),
                |e| matches!(e, SignInError::Expired(_)),
            ),
            (
                good.replace(
                    &format!("\n{}\n", key.pubkey()),
                    &format!("\n{}\n", Keypair::new().pubkey()),
                ),
                |e| matches!(e, SignInError::AddressMismatch { .. }),
            ),
            (good.replace("Nonce: abcdEFGH1234\n", ""), |e| {
                matches!(e, SignInError::Missing("Nonce"))
            }),
            (format!("{good}\nNonce: again"), |e| {
                matches!(e, SignInError::Malformed(_))
            }),
            ("hello".to_owned(), |e| {
                matches!(e, SignInError::Malformed(_))
            }),
        ];
        for (text, want) in cases {
            let err = check(&key, &text).unwrap_err();
            assert!(want(&err), "{text:?}: {err}");
        }
    }

    #[test]
    fn the_signature_covers_the_exact_bytes() {
        let key = Keypair::new();
        let text = message(&expect(), &key.pubkey(), "abcdEFGH1234", NOW);
        let signature = sign(&key, &text);
        let address = key.pubkey().to_string();
        // One flipped byte.
        let mut flipped = text.clone().into_bytes();
        flipped[0] ^= 0x20;
        let err = verify(&expect(), &flipped, &signature, &address, NOW).unwrap_err();
        assert!(matches!(err, SignInError::SignatureMismatch(_)), "{err}");
        // Another key's signature over the same text.
        let other = Keypair::new();
        let err = verify(
            &expect(),
            text.as_bytes(),
            &sign(&other, &text),
            &address,
            NOW,
        )
        .unwrap_err();
        assert!(matches!(err, SignInError::SignatureMismatch(_)), "{err}");
        // Junk in the address and the signature.
        assert!(matches!(
            verify(&expect(), text.as_bytes(), &signature, "nope", NOW),
            Err(SignInError::BadAddress(_))
        ));
        assert!(matches!(
            verify(&expect(), text.as_bytes(), "0OIl", &address, NOW),
            Err(SignInError::BadSignature)
        ));
        let long = "x".repeat(MAX_MESSAGE_BYTES + 1);
        assert!(matches!(
            verify(&expect(), long.as_bytes(), &signature, &address, NOW),
            Err(SignInError::TooLong)
        ));
    }

    #[test]
    fn an_origin_is_scheme_host_and_port_only() {
        let e = expect();
        assert_eq!(e.domain, "127.0.0.1:8787");
        assert_eq!(e.origin, "http://127.0.0.1:8787");
        let https = Expect::new(&"https://runner.example".parse().unwrap(), "devnet").unwrap();
        assert_eq!(https.domain, "runner.example");
        assert!(Expect::new(&"https://runner.example/app".parse().unwrap(), "devnet").is_err());
        assert!(Expect::new(&"ftp://runner.example".parse().unwrap(), "devnet").is_err());
        assert!(!under_origin(
            "http://127.0.0.1:87870",
            "http://127.0.0.1:8787"
        ));
        assert!(under_origin(
            "http://127.0.0.1:8787/runs",
            "http://127.0.0.1:8787"
        ));
    }
}
