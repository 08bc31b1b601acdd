//! Removing an API key from text a provider sent back, before anything is stored or truncated.
//!
//! Gateways and proxies sometimes quote the key they were given: whole ("invalid key sk-…"), in
//! part ("sk-ant-api03-abc…wxyz"), URL-encoded, or behind `Bearer`. So the scrubber removes every
//! run of bytes that is made of pieces of the key at least [`MIN_PIECE`] bytes long: any window of
//! that length which occurs in the key (or in its percent-encoded or JSON-escaped form) is
//! redacted wherever it appears, and overlapping windows merge into one `<redacted>`. A substring
//! of the key of length `MIN_PIECE` or more is a chain of such windows, so none survives. It runs
//! on the whole body before any truncation, so a key cut by a length limit cannot survive in part.

use std::collections::HashSet;

use crate::keys::Secret;

/// The shortest piece of a key that is scrubbed on its own. Shorter pieces are too common in
/// ordinary text to remove, and too short to help anyone guess a key.
pub const MIN_PIECE: usize = 8;

/// What replaces a scrubbed run.
pub const REDACTED: &str = "<redacted>";

/// Scrubs one key (in its known spellings) out of bytes and text.
#[derive(Clone, Default)]
pub struct Scrubber {
    /// Every spelling of the key: as is, percent-encoded (reserved characters only, or every
    /// byte, in either case of hex), JSON-escaped.
    spellings: Vec<Vec<u8>>,
    /// Every `MIN_PIECE`-byte window of every spelling.
    windows: HashSet<Vec<u8>>,
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scrubber(<redacted>)")
    }
}

impl Scrubber {
    /// A scrubber for `key`; one that changes nothing when there is no key.
    pub fn new(key: Option<&Secret>) -> Self {
        let Some(key) = key.filter(|k| !k.is_empty()) else {
            return Self::default();
        };
        let raw = key.expose().as_bytes().to_vec();
        let every_byte: String = raw.iter().map(|b| format!("%{b:02X}")).collect();
        let mut spellings = vec![
            raw.clone(),
            percent_encoded(&raw),
            every_byte.clone().into_bytes(),
            every_byte.to_lowercase().into_bytes(),
        ];
        if let Ok(json) = serde_json::to_string(key.expose()) {
            // Without the surrounding quotes.
            let inner = &json[1..json.len().saturating_sub(1)];
            spellings.push(inner.as_bytes().to_vec());
            // JSON may also escape `/`.
            spellings.push(inner.replace('/', "\\/").into_bytes());
        }
        spellings.sort();
        spellings.dedup();
        let windows = spellings
            .iter()
            .flat_map(|s| s.windows(MIN_PIECE).map(<[u8]>::to_vec))
            .collect();
        Self { spellings, windows }
    }

    /// `bytes` with every piece of the key replaced by [`REDACTED`].
    pub fn bytes(&self, bytes: &[u8]) -> Vec<u8> {
        if self.spellings.is_empty() {
            return bytes.to_vec();
        }
        let mut marked = vec![false; bytes.len()];
        for (i, window) in bytes.windows(MIN_PIECE).enumerate() {
            if self.windows.contains(window) {
                marked[i..i + MIN_PIECE].fill(true);
            }
        }
        // A key shorter than a window is matched whole.
        for spelling in self.spellings.iter().filter(|s| s.len() < MIN_PIECE) {
            if spelling.is_empty() {
                continue;
            }
            for (i, window) in bytes.windows(spelling.len()).enumerate() {
                if window == spelling.as_slice() {
                    marked[i..i + spelling.len()].fill(true);
                }
            }
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if marked[i] {
                out.extend_from_slice(REDACTED.as_bytes());
                while i < bytes.len() && marked[i] {
                    i += 1;
                }
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        out
    }

    /// `text` with every piece of the key replaced by [`REDACTED`].
    pub fn text(&self, text: &str) -> String {
        if self.spellings.is_empty() {
            return text.to_owned();
        }
        String::from_utf8_lossy(&self.bytes(text.as_bytes())).into_owned()
    }
}

/// RFC 3986 percent-encoding of everything but the unreserved characters.
fn percent_encoded(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const KEY: &str = "sk-ant-api03-Zx9QwErTy/UiOp+AsDf";

    fn scrub(text: &str) -> String {
        Scrubber::new(Some(&Secret::new(KEY))).text(text)
    }

    #[test]
    fn the_whole_key_its_pieces_and_its_spellings_are_redacted() {
        assert_eq!(
            scrub(&format!("invalid key {KEY}.")),
            "invalid key <redacted>."
        );
        assert_eq!(
            scrub(&format!("Authorization: Bearer {KEY}")),
            "Authorization: Bearer <redacted>"
        );
        // A partial echo, as gateways print it: head and tail of the key.
        assert_eq!(
            scrub("key sk-ant-api03-Zx9…iOp+AsDf rejected"),
            "key <redacted>…<redacted> rejected"
        );
        assert_eq!(
            scrub("?key=sk-ant-api03-Zx9QwErTy%2FUiOp%2BAsDf&x=1"),
            "?key=<redacted>&x=1"
        );
        assert_eq!(scrub("k=%73%6B%2D%61%6E%74%2D%61%70 x"), "k=<redacted> x");
        assert_eq!(scrub("k=%73%6b%2d%61%6e%74%2d%61%70 x"), "k=<redacted> x");
        assert_eq!(
            scrub("{\"key\":\"sk-ant-api03-Zx9QwErTy\\/UiOp+AsDf\"}"),
            "{\"key\":\"<redacted>\"}"
        );
    }

    #[test]
    fn every_piece_of_min_length_is_gone_and_shorter_text_is_kept() {
        for start in 0..=KEY.len() - MIN_PIECE {
            let piece = &KEY[start..start + MIN_PIECE];
            let out = scrub(&format!("before {piece} after"));
            assert_eq!(out, "before <redacted> after", "{piece}");
        }
        assert_eq!(scrub("sk-ant- is a prefix"), "sk-ant- is a prefix");
        assert_eq!(scrub("ordinary text"), "ordinary text");
    }

    #[test]
    fn no_key_changes_nothing_and_debug_never_prints_it() {
        assert_eq!(Scrubber::new(None).text(KEY), KEY);
        let s = Scrubber::new(Some(&Secret::new(KEY)));
        assert_eq!(format!("{s:?}"), "Scrubber(<redacted>)");
        let secret = Secret::new(KEY);
        assert_eq!(
            format!("{secret:?} {secret}"),
            "Secret(<redacted>) <redacted>"
        );
    }

    #[test]
    fn a_short_key_is_matched_whole() {
        let s = Scrubber::new(Some(&Secret::new("abc12")));
        assert_eq!(s.text("key abc12 bad"), "key <redacted> bad");
    }
}
