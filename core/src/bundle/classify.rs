//! What a file is: its kind (skill, reference, script, binary) and whether it is an archive.
//!
//! Kinds decide what a model may ever see: only `skill` and `reference` text is sent; scripts and
//! binaries are listed by name as not executable and never run.

use serde::Serialize;

/// The kind of a bundle file.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// `SKILL.md` at the bundle root.
    Skill,
    /// Any other text file: Markdown, plain text, data.
    Reference,
    /// Text meant to be executed: known script extension or a `#!` first line. Never run.
    Script,
    /// Not UTF-8 text. Never run, never sent.
    Binary,
}

impl FileKind {
    /// Whether the file counts as text (toward the text limit, scanned for flags).
    pub fn is_text(self) -> bool {
        !matches!(self, FileKind::Binary)
    }

    /// Whether a model may be shown the file's content.
    pub fn is_prompt_text(self) -> bool {
        matches!(self, FileKind::Skill | FileKind::Reference)
    }

    /// Lowercase name as used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Skill => "skill",
            FileKind::Reference => "reference",
            FileKind::Script => "script",
            FileKind::Binary => "binary",
        }
    }
}

/// Extensions that mark a file as a script, whatever its content.
const SCRIPT_EXTENSIONS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "fish",
    "ksh",
    "csh",
    "py",
    "pyw",
    "js",
    "mjs",
    "cjs",
    "ts",
    "mts",
    "cts",
    "rb",
    "pl",
    "pm",
    "php",
    "ps1",
    "psm1",
    "bat",
    "cmd",
    "vbs",
    "lua",
    "tcl",
    "awk",
    "applescript",
];

/// Classifies a file from its bundle path and content.
pub fn classify(path: &str, bytes: &[u8]) -> FileKind {
    if path == super::SKILL_FILE {
        // SKILL.md is the skill even if it is not valid UTF-8; front matter parsing rejects it then.
        return FileKind::Skill;
    }
    if !is_text(bytes) {
        return FileKind::Binary;
    }
    let has_script_extension = extension(path).is_some_and(|ext| {
        SCRIPT_EXTENSIONS
            .iter()
            .any(|s| s.eq_ignore_ascii_case(ext))
    });
    if has_script_extension || bytes.starts_with(b"#!") {
        return FileKind::Script;
    }
    FileKind::Reference
}

/// Text is valid UTF-8 (a BOM allowed) with no NUL byte.
pub fn is_text(bytes: &[u8]) -> bool {
    !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok()
}

fn extension(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let (stem, ext) = name.rsplit_once('.')?;
    (!stem.is_empty()).then_some(ext)
}

/// Archive formats recognised by their leading bytes, whatever the file is called.
const ARCHIVE_MAGIC: &[(&[u8], &str)] = &[
    (b"PK\x03\x04", "ZIP"),
    (b"PK\x05\x06", "ZIP (empty)"),
    (b"PK\x07\x08", "ZIP (spanned)"),
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"Rar!\x1a\x07", "RAR"),
    (b"\x04\x22\x4d\x18", "LZ4"),
    (b"MSCF", "CAB"),
    (b"\x1f\x9d", "compress (.Z)"),
    (b"!<arch>\n", "ar"),
    (b"xar!", "xar"),
    (b"LZIP", "lzip"),
    (b"070701", "cpio"),
    (b"070702", "cpio"),
    (b"070707", "cpio"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "OLE/MSI"),
];

/// Signatures that betray an archive anywhere in a file, not only at its start: ZIP readers find
/// the end-of-central-directory record from the end, so junk (or a whole document) in front of
/// a ZIP still opens as a ZIP. Likewise 7z and RAR self-extractors.
const EMBEDDED_MAGIC: &[(&[u8], &str)] = &[
    (b"PK\x03\x04", "ZIP (embedded)"),
    (b"PK\x05\x06", "ZIP (embedded)"),
    (b"7z\xbc\xaf\x27\x1c", "7z (embedded)"),
    (b"Rar!\x1a\x07", "RAR (embedded)"),
];

/// Extensions that name an archive, for files too short or too odd for their magic to show.
const ARCHIVE_EXTENSIONS: &[&str] = &[
    "zip", "jar", "war", "whl", "apk", "tar", "tgz", "gz", "bz2", "tbz2", "xz", "txz", "zst", "7z",
    "rar", "lz4", "cab", "ar", "deb", "rpm", "xar", "z",
];

/// If the file is an archive, names its format: by content first, then by extension.
pub fn archive_format(path: &str, bytes: &[u8]) -> Option<&'static str> {
    if let Some((_, name)) = ARCHIVE_MAGIC
        .iter()
        .find(|(magic, _)| bytes.starts_with(magic))
    {
        return Some(name);
    }
    // POSIX tar: "ustar" at offset 257 of the first header block.
    if bytes.get(257..262) == Some(b"ustar".as_slice()) {
        return Some("tar");
    }
    // ISO 9660: "CD001" at the first volume descriptor (sector 16).
    if bytes.get(0x8001..0x8006) == Some(b"CD001".as_slice()) {
        return Some("ISO 9660");
    }
    for (magic, name) in EMBEDDED_MAGIC {
        if memchr::memmem::find(bytes, magic).is_some() {
            return Some(name);
        }
    }
    let ext = extension(path)?;
    ARCHIVE_EXTENSIONS
        .iter()
        .any(|a| a.eq_ignore_ascii_case(ext))
        .then_some("archive (by file name)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_path_content_and_shebang() {
        assert_eq!(classify("SKILL.md", b"---"), FileKind::Skill);
        assert_eq!(classify("refs/a.md", b"# a"), FileKind::Reference);
        assert_eq!(classify("tools/run.py", b"print(1)"), FileKind::Script);
        assert_eq!(classify("tools/run", b"#!/bin/sh\necho"), FileKind::Script);
        assert_eq!(
            classify("img.png", b"\x89PNG\r\n\x1a\n\0\0"),
            FileKind::Binary
        );
        assert_eq!(classify("bad.md", &[0xff, 0xfe, 0x41]), FileKind::Binary);
    }

    #[test]
    fn archives_by_content_even_under_a_text_name() {
        assert_eq!(archive_format("notes.md", b"PK\x03\x04rest"), Some("ZIP"));
        assert_eq!(archive_format("notes.md", b"\x1f\x8b\x08"), Some("gzip"));
        let mut tar = vec![b'a'; 512];
        tar[257..262].copy_from_slice(b"ustar");
        assert_eq!(archive_format("notes.md", &tar), Some("tar"));
        assert_eq!(
            archive_format("x.tar.gz", b""),
            Some("archive (by file name)")
        );
        assert_eq!(archive_format("notes.md", b"# plain"), None);
        // Regression: a ZIP behind junk or text still opens as a ZIP.
        let mut polyglot = b"# notes\n\0JUNK".to_vec();
        polyglot.extend_from_slice(b"PK\x03\x04rest-of-zip");
        assert_eq!(
            archive_format("notes.md", &polyglot),
            Some("ZIP (embedded)")
        );
        let mut iso = vec![0u8; 0x8010];
        iso[0x8001..0x8006].copy_from_slice(b"CD001");
        assert_eq!(archive_format("disk.img", &iso), Some("ISO 9660"));
    }
}
