//! The canonical content digest: one definition, used for skill bundles and fixture packs.
//!
//! A digest identifies *content*, not packaging. It is SHA-256 over this exact text:
//!
//! ```text
//! skilltrial-content-v1\n
//! <sha256 hex of file 1> <size in bytes of file 1> <path of file 1>\n
//! <sha256 hex of file 2> <size in bytes of file 2> <path of file 2>\n
//! ...
//! ```
//!
//! with one line per regular file, sorted by the path's UTF-8 bytes. Paths are relative to the
//! bundle root, use `/` as the separator and never contain a control character or a `\`
//! (importing a bundle or a pack, from a folder, a ZIP or an upload, rejects those), so a line
//! can never be forged by a file name. The listing does not rely on its callers for that: a path
//! holding one anyway is listed escaped (`\` as `\\`, a control character as `\u{..}`), which
//! leaves every valid path, and so every digest, as it was. Directories, timestamps,
//! permissions, compression method and archive order never enter it: the same files as a folder
//! and as a ZIP give the same digest. The format string MUST NOT change without bumping `v1`,
//! since manifests pin digests.

use std::fmt;

use sha2::{Digest as _, Sha256};

/// The first line of the canonical form; names the format version.
pub const CONTENT_DIGEST_DOMAIN: &str = "skilltrial-content-v1";

/// A SHA-256 value, displayed as `sha256:<64 hex>`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256Digest(pub [u8; 32]);

impl Sha256Digest {
    /// SHA-256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// Lowercase hex without a prefix.
    pub fn hex(&self) -> String {
        let mut out = String::with_capacity(64);
        for byte in self.0 {
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        out
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl serde::Serialize for Sha256Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One file as it enters the canonical form.
#[derive(Debug, Clone, Copy)]
pub struct DigestEntry<'a> {
    /// Relative `/`-separated path with no control characters.
    pub path: &'a str,
    /// The file's size in bytes.
    pub size: u64,
    /// SHA-256 of the file's content.
    pub sha256: Sha256Digest,
}

/// The canonical text that [`content_digest`] hashes, exposed so that documentation and tests
/// can show exactly what is hashed.
pub fn canonical_listing(entries: &[DigestEntry<'_>]) -> String {
    let mut sorted: Vec<&DigestEntry<'_>> = entries.iter().collect();
    sorted.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let mut text = String::from(CONTENT_DIGEST_DOMAIN);
    text.push('\n');
    for entry in sorted {
        text.push_str(&entry.sha256.hex());
        text.push(' ');
        text.push_str(&entry.size.to_string());
        text.push(' ');
        push_path(&mut text, entry.path);
        text.push('\n');
    }
    text
}

/// Appends `path` as its listing line shows it: unchanged when valid, escaped otherwise, so that
/// no path ends its line or forges another, and two paths never list alike.
fn push_path(text: &mut String, path: &str) {
    for c in path.chars() {
        if c == '\\' {
            text.push_str("\\\\");
        } else if c.is_control() {
            text.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            text.push(c);
        }
    }
}

/// The content digest of a set of files: SHA-256 of [`canonical_listing`].
pub fn content_digest(entries: &[DigestEntry<'_>]) -> Sha256Digest {
    Sha256Digest::of(canonical_listing(entries).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_ignores_input_order() {
        let a = DigestEntry {
            path: "a.md",
            size: 1,
            sha256: Sha256Digest::of(b"a"),
        };
        let b = DigestEntry {
            path: "b/c.md",
            size: 1,
            sha256: Sha256Digest::of(b"c"),
        };
        assert_eq!(content_digest(&[a, b]), content_digest(&[b, a]));
    }

    #[test]
    fn digest_changes_with_path_content_or_size() {
        let base = DigestEntry {
            path: "a.md",
            size: 1,
            sha256: Sha256Digest::of(b"a"),
        };
        let renamed = DigestEntry {
            path: "A.md",
            ..base
        };
        let edited = DigestEntry {
            sha256: Sha256Digest::of(b"b"),
            ..base
        };
        let resized = DigestEntry { size: 2, ..base };
        let d = content_digest(&[base]);
        assert_ne!(d, content_digest(&[renamed]));
        assert_ne!(d, content_digest(&[edited]));
        assert_ne!(d, content_digest(&[resized]));
    }

    #[test]
    fn canonical_listing_is_the_documented_text() {
        // Given one file "x" containing "x"
        let entry = DigestEntry {
            path: "x",
            size: 1,
            sha256: Sha256Digest::of(b"x"),
        };
        // Then the listing is the domain line plus "<hex> <size> <path>"
        assert_eq!(
            canonical_listing(&[entry]),
            "skilltrial-content-v1\n\
             2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881 1 x\n"
        );
    }

    /// Regression: a path holding a newline forged a line of the listing (a pack upload
    /// with `x\n<hex> <size> golden.json` listed a file it did not hold). Import refuses such
    /// paths; the listing escapes them anyway, one line per file.
    #[test]
    fn a_path_cannot_forge_a_listing_line() {
        let sha256 = Sha256Digest::of(b"x");
        let forged = format!("a\n{} 1 b", sha256.hex());
        let entries = [
            DigestEntry {
                path: &forged,
                size: 1,
                sha256,
            },
            DigestEntry {
                path: "c\r\0\u{1b}\\d",
                size: 1,
                sha256,
            },
        ];
        let listing = canonical_listing(&entries);
        assert_eq!(listing.lines().count(), 3, "{listing}");
        assert!(listing.contains(" 1 a\\u{a}"), "{listing}");
        assert!(
            listing.contains(" 1 c\\u{d}\\u{0}\\u{1b}\\\\d\n"),
            "{listing}"
        );
        // An escaped path and the text of its escape list apart.
        let literal = DigestEntry {
            path: "a\\u{a}",
            size: 1,
            sha256,
        };
        let newline = DigestEntry {
            path: "a\n",
            size: 1,
            sha256,
        };
        assert_ne!(content_digest(&[literal]), content_digest(&[newline]));
    }

    #[test]
    fn display_has_prefix_and_lowercase_hex() {
        let d = Sha256Digest::of(b"");
        assert_eq!(
            d.to_string(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
