//! An uploaded tree (`POST /v1/trees`), read within the limits `validate` applies before any of
//! it is decoded or stored: the JSON is read entry by entry and refused at the first entry over
//! the count, and a file's size is known from its base64 length before it is decoded, so the
//! work of one request is bounded by the limits, not by what a client sends.

use std::cell::RefCell;
use std::fmt;

use base64::Engine as _;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use skilltrial_core::bundle;

use crate::api::TreeFile;

/// The most files a pack upload may hold (the embedded packs hold a few dozen).
pub const PACK_MAX_FILES: usize = 1000;
/// The most bytes a pack upload's files may hold together (the embedded packs hold about 140 KB).
pub const PACK_MAX_BYTES: u64 = 16 * 1024 * 1024;

/// What one tree may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeLimits {
    /// `bundle` or `pack`, for the messages.
    pub kind: &'static str,
    pub max_files: usize,
    /// The most bytes one file may hold, decoded.
    pub max_file_bytes: u64,
    /// The most bytes all files may hold together, decoded.
    pub max_total_bytes: u64,
}

impl TreeLimits {
    /// A bundle's: `bundle::Limits::default()`, the limits `validate` and `plan` import a folder
    /// with (a file count, and the bytes a folder may hold, which bound one file too).
    pub fn bundle() -> Self {
        let limits = bundle::Limits::default();
        Self {
            kind: "bundle",
            max_files: limits.max_files,
            max_file_bytes: limits.max_archive_bytes,
            max_total_bytes: limits.max_archive_bytes,
        }
    }

    pub fn pack() -> Self {
        Self {
            kind: "pack",
            max_files: PACK_MAX_FILES,
            max_file_bytes: PACK_MAX_BYTES,
            max_total_bytes: PACK_MAX_BYTES,
        }
    }

    /// The largest body a tree within these limits can take: base64 (4 bytes per 3) plus a
    /// generous 1 KiB per file for its path and the JSON around it.
    pub fn max_body(&self) -> usize {
        let encoded = self.max_total_bytes.div_ceil(3).saturating_mul(4);
        let framing = u64::try_from(self.max_files)
            .unwrap_or(u64::MAX)
            .saturating_mul(1024);
        usize::try_from(encoded.saturating_add(framing)).unwrap_or(usize::MAX)
    }
}

/// Why a tree was refused before it was validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeRefusal {
    /// Over a limit: `413`.
    TooLarge(String),
    /// Not a tree, or not base64: `400`.
    Invalid(String),
}

impl fmt::Display for TreeRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge(m) | Self::Invalid(m) => f.write_str(m),
        }
    }
}

/// The decoded size of a padded standard base64 text, from its length alone (an upper bound
/// for a malformed one, which the decoder then refuses).
fn decoded_len(base64: &str) -> u64 {
    let len = u64::try_from(base64.len()).unwrap_or(u64::MAX);
    let padding = u64::try_from(
        base64
            .bytes()
            .rev()
            .take_while(|b| *b == b'=')
            .count()
            .min(2),
    )
    .unwrap_or(0);
    len.div_ceil(4).saturating_mul(3).saturating_sub(padding)
}

/// Reads `{files: [{path, base64}]}` within `limits` and decodes it.
pub fn parse(body: &[u8], limits: &TreeLimits) -> Result<Vec<(String, Vec<u8>)>, TreeRefusal> {
    let over = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(body);
    let parsed = Body {
        limits,
        over: &over,
    }
    .deserialize(&mut de)
    .and_then(|files| de.end().map(|()| files));
    let files = match parsed {
        Ok(files) => files,
        Err(e) => {
            return Err(over.into_inner().map_or_else(
                || {
                    TreeRefusal::Invalid(format!(
                        "the body is not a tree ({{files: [{{path, base64}}]}}): {e}"
                    ))
                },
                TreeRefusal::TooLarge,
            ));
        }
    };
    files
        .into_iter()
        .map(|f| {
            base64::engine::general_purpose::STANDARD
                .decode(&f.base64)
                .map(|bytes| (f.path.clone(), bytes))
                .map_err(|e| TreeRefusal::Invalid(format!("file `{}`: not base64: {e}", f.path)))
        })
        .collect()
}

/// The body object: its `files`, read by [`Files`]; anything else is skipped.
struct Body<'a> {
    limits: &'a TreeLimits,
    over: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for Body<'_> {
    type Value = Vec<TreeFile>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Body<'_> {
    type Value = Vec<TreeFile>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object with `files`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut files = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "files" && files.is_none() {
                files = Some(map.next_value_seed(Files {
                    limits: self.limits,
                    over: self.over,
                })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        files.ok_or_else(|| de::Error::missing_field("files"))
    }
}

/// The `files` array, refused at the first entry over a limit.
struct Files<'a> {
    limits: &'a TreeLimits,
    over: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for Files<'_> {
    type Value = Vec<TreeFile>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Files<'_> {
    type Value = Vec<TreeFile>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of {path, base64}")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let l = self.limits;
        let refuse = |message: String| {
            *self.over.borrow_mut() = Some(message.clone());
            de::Error::custom(message)
        };
        let mut files = Vec::new();
        let mut total = 0u64;
        while let Some(file) = seq.next_element::<TreeFile>()? {
            if files.len() >= l.max_files {
                return Err(refuse(format!(
                    "the {} has more than {} files; `skilltrial validate` accepts at most {} (too_many_files)",
                    l.kind, l.max_files, l.max_files
                )));
            }
            let size = decoded_len(&file.base64);
            if size > l.max_file_bytes {
                return Err(refuse(format!(
                    "{} file `{}` holds {size} bytes; one file may hold at most {}",
                    l.kind, file.path, l.max_file_bytes
                )));
            }
            total = total.saturating_add(size);
            if total > l.max_total_bytes {
                return Err(refuse(format!(
                    "the {}'s files hold more than {} bytes together, the most `skilltrial validate` accepts",
                    l.kind, l.max_total_bytes
                )));
            }
            files.push(file);
        }
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(files: usize, bytes_each: usize) -> Vec<u8> {
        let one = base64::engine::general_purpose::STANDARD.encode(vec![b'x'; bytes_each]);
        let entries: Vec<String> = (0..files)
            .map(|i| format!("{{\"path\": \"f{i}.md\", \"base64\": \"{one}\"}}"))
            .collect();
        format!("{{\"files\": [{}]}}", entries.join(",")).into_bytes()
    }

    #[test]
    fn base64_lengths_give_the_decoded_size() {
        for n in 0..10 {
            let text = base64::engine::general_purpose::STANDARD.encode(vec![0u8; n]);
            assert_eq!(decoded_len(&text), n as u64, "{text}");
        }
    }

    #[test]
    fn a_tree_within_the_limits_decodes() {
        let files = parse(&body(100, 10), &TreeLimits::bundle()).unwrap();
        assert_eq!(files.len(), 100);
        assert_eq!(files[0], ("f0.md".to_owned(), vec![b'x'; 10]));
    }

    #[test]
    fn a_tree_over_a_limit_is_refused_as_too_large() {
        let limits = TreeLimits::bundle();
        let TreeRefusal::TooLarge(why) = parse(&body(101, 0), &limits).unwrap_err() else {
            panic!("not too large");
        };
        assert!(why.contains("more than 100 files"), "{why}");
        let TreeRefusal::TooLarge(why) = parse(&body(1, 6_000_000), &limits).unwrap_err() else {
            panic!("not too large");
        };
        assert!(why.contains("6000000 bytes"), "{why}");
        let TreeRefusal::TooLarge(why) = parse(&body(3, 2_000_000), &limits).unwrap_err() else {
            panic!("not too large");
        };
        assert!(why.contains("together"), "{why}");
        assert!(limits.max_body() < 8 * 1024 * 1024);
        // docs/runner.md (Bodies) states both.
        assert_eq!(limits.max_body(), 7_092_908);
        assert_eq!(TreeLimits::pack().max_body(), 23_393_624);
    }

    #[test]
    fn junk_is_invalid() {
        for junk in [
            &b"[]"[..],
            b"{}",
            b"{\"files\": 3}",
            b"{\"files\": [{\"path\": \"a\", \"base64\": \"!!\"}]}",
        ] {
            assert!(matches!(
                parse(junk, &TreeLimits::bundle()),
                Err(TreeRefusal::Invalid(_))
            ));
        }
    }
}
