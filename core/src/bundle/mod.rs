//! Skill bundles (docs/bundles.md): a folder, or a ZIP of one, with `SKILL.md` at its root.
//!
//! [`import`] reads a bundle entirely in memory, enforces every rule, and returns either a
//! [`Bundle`] (possibly carrying [`Flag`]s) or a [`Rejected`] listing every [`Rejection`] with a
//! stable [`RejectCode`] and the offending path. Importing never writes to disk.

mod classify;
pub mod examples;
mod front_matter;
mod grader;
pub mod lint;
mod markdown;
pub(crate) mod path;
mod scan;
mod source;
mod text;
pub mod verdict;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::Serialize;

pub use classify::{FileKind, archive_format, classify};
pub use scan::{Flag, FlagKind};
pub use text::{display_safe, is_invisible};

use crate::digest::{DigestEntry, Sha256Digest, content_digest};

/// The file every bundle must hold at its root.
pub const SKILL_FILE: &str = "SKILL.md";

/// Size limits (docs/bundles.md). The defaults are the product's; tests may shrink them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest ZIP file accepted, and the most bytes a folder may hold.
    pub max_archive_bytes: u64,
    /// Most regular files in a bundle.
    pub max_files: usize,
    /// Most bytes of text (skill, reference and script files) in total.
    pub max_text_bytes: u64,
    /// Most bytes all ZIP entries may inflate to together. Above the text limit, since binaries
    /// may ride along; well below anything that would strain memory.
    pub max_unpacked_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_archive_bytes: 5 * 1024 * 1024,
            max_files: 100,
            max_text_bytes: 1024 * 1024,
            max_unpacked_bytes: 8 * 1024 * 1024,
        }
    }
}

/// Why a bundle was rejected. The names are stable: scripts match on them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RejectCode {
    /// Not a readable ZIP, a corrupt entry, or an unsupported compression method.
    InvalidZip,
    /// The ZIP (or the folder's total size) is over the archive limit.
    ZipTooLarge,
    /// More files than allowed.
    TooManyFiles,
    /// More text than allowed.
    TextTooLarge,
    /// A path with `..` in it.
    PathTraversal,
    /// `/x`, `C:\x`, `\\server\x`.
    AbsolutePath,
    /// A symbolic link, in a folder or as a ZIP entry.
    Symlink,
    /// Two entries with the same path (or a path used as both file and folder).
    DuplicatePath,
    /// Two paths that differ only in letter case.
    CaseConflict,
    /// An archive inside the bundle, recognised by content or name.
    NestedArchive,
    /// An entry inflates past what its headers claim or what a bundle may hold.
    DecompressionBomb,
    /// An encrypted ZIP entry.
    EncryptedEntry,
    /// No `SKILL.md` at the root.
    MissingSkillMd,
    /// SKILL.md's front matter is missing, unreadable or has no `name`.
    InvalidFrontMatter,
    /// A name that is no usable path: control characters, not UTF-8, special files.
    InvalidPath,
    /// The input does not exist.
    NotFound,
    /// The input exists but cannot be read (permissions, I/O error).
    Unreadable,
}

impl RejectCode {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectCode::InvalidZip => "invalid_zip",
            RejectCode::ZipTooLarge => "zip_too_large",
            RejectCode::TooManyFiles => "too_many_files",
            RejectCode::TextTooLarge => "text_too_large",
            RejectCode::PathTraversal => "path_traversal",
            RejectCode::AbsolutePath => "absolute_path",
            RejectCode::Symlink => "symlink",
            RejectCode::DuplicatePath => "duplicate_path",
            RejectCode::CaseConflict => "case_conflict",
            RejectCode::NestedArchive => "nested_archive",
            RejectCode::DecompressionBomb => "decompression_bomb",
            RejectCode::EncryptedEntry => "encrypted_entry",
            RejectCode::MissingSkillMd => "missing_skill_md",
            RejectCode::InvalidFrontMatter => "invalid_front_matter",
            RejectCode::InvalidPath => "invalid_path",
            RejectCode::NotFound => "not_found",
            RejectCode::Unreadable => "unreadable",
        }
    }

    /// True when the fault is the environment (a missing or unreadable input), not the bundle.
    pub fn is_environment(self) -> bool {
        matches!(self, RejectCode::NotFound | RejectCode::Unreadable)
    }
}

impl fmt::Display for RejectCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One reason a bundle was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Rejection {
    /// Stable code.
    pub code: RejectCode,
    /// The offending path inside the bundle (as written in the archive, made display-safe), if
    /// the rejection is about one entry.
    pub path: Option<String>,
    /// What is wrong and what to do, in one sentence.
    pub message: String,
}

impl Rejection {
    fn new(code: RejectCode, path: Option<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            path: path.map(|p| display_safe(&p)),
            message: message.into(),
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{}: {path}: {}", self.code, self.message),
            None => write!(f, "{}: {}", self.code, self.message),
        }
    }
}

/// A rejected bundle: every rejection found, in the order found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bundle {input} rejected: {}", .errors.first().map(ToString::to_string).unwrap_or_default())]
pub struct Rejected {
    /// The input as given.
    pub input: String,
    /// At least one rejection.
    pub errors: Vec<Rejection>,
}

/// How a bundle arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// A folder on disk.
    Folder,
    /// A ZIP archive.
    Zip,
}

/// One file of an accepted bundle.
#[derive(Clone, PartialEq, Eq)]
pub struct BundleFile {
    /// Relative `/`-separated path.
    pub path: String,
    /// Its kind.
    pub kind: FileKind,
    /// Its content.
    pub bytes: Vec<u8>,
    /// SHA-256 of the content.
    pub sha256: Sha256Digest,
}

impl fmt::Debug for BundleFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BundleFile")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .field("size", &self.bytes.len())
            .field("sha256", &self.sha256)
            .finish()
    }
}

impl BundleFile {
    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// The content as text, for text kinds.
    pub fn text(&self) -> Option<&str> {
        if self.kind.is_text() {
            std::str::from_utf8(&self.bytes).ok()
        } else {
            None
        }
    }
}

/// An accepted skill bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    /// From the front matter.
    pub name: String,
    /// From the front matter (top level or `metadata.version`).
    pub version: Option<String>,
    /// From the front matter.
    pub description: Option<String>,
    /// The canonical content digest (see [`crate::digest`]).
    pub digest: Sha256Digest,
    /// Every regular file, sorted by path.
    pub files: Vec<BundleFile>,
    /// Every flag, sorted by path, line, kind.
    pub flags: Vec<Flag>,
    /// Folder or ZIP.
    pub source: SourceKind,
}

impl Bundle {
    /// Whether the bundle carries files that are never run (scripts, binaries): a task that needs
    /// them cannot be fully covered.
    pub fn has_non_executable(&self) -> bool {
        self.files
            .iter()
            .any(|f| matches!(f.kind, FileKind::Script | FileKind::Binary))
    }
}

/// Imports a bundle from a folder or a ZIP file at `input`, with the default limits.
pub fn import(input: &Path) -> Result<Bundle, Rejected> {
    import_with(input, &Limits::default())
}

/// Imports a bundle with explicit limits.
pub fn import_with(input: &Path, limits: &Limits) -> Result<Bundle, Rejected> {
    let shown = input.display().to_string();
    let reject = |errors: Vec<Rejection>| Rejected {
        input: shown.clone(),
        errors,
    };
    let meta = std::fs::metadata(input).map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            RejectCode::NotFound
        } else {
            RejectCode::Unreadable
        };
        reject(vec![Rejection::new(
            code,
            None,
            format!("cannot open {shown}: {e}"),
        )])
    })?;
    if meta.is_dir() {
        let gathered = source::read_folder(input, limits).map_err(reject)?;
        assemble(gathered, SourceKind::Folder, limits).map_err(reject)
    } else {
        if meta.len() > limits.max_archive_bytes {
            return Err(reject(vec![zip_too_large(meta.len(), limits)]));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(input)
            .and_then(|f| {
                f.take(limits.max_archive_bytes.saturating_add(1))
                    .read_to_end(&mut bytes)
            })
            .map_err(|e| {
                reject(vec![Rejection::new(
                    RejectCode::Unreadable,
                    None,
                    format!("cannot read {shown}: {e}"),
                )])
            })?;
        import_zip_bytes(&bytes, limits).map_err(reject)
    }
}

/// Imports a bundle from ZIP bytes already in memory.
pub fn import_zip_bytes(bytes: &[u8], limits: &Limits) -> Result<Bundle, Vec<Rejection>> {
    if bytes.len() as u64 > limits.max_archive_bytes {
        return Err(vec![zip_too_large(bytes.len() as u64, limits)]);
    }
    let mut gathered = source::read_zip(bytes, limits)?;
    gathered.files = strip_single_root(gathered.files);
    assemble(gathered, SourceKind::Zip, limits)
}

fn zip_too_large(size: u64, limits: &Limits) -> Rejection {
    Rejection::new(
        RejectCode::ZipTooLarge,
        None,
        format!(
            "the ZIP is {size} bytes; a bundle may be at most {} bytes",
            limits.max_archive_bytes
        ),
    )
}

/// Rebuilds a bundle from files already stored (for example in the content-addressed store),
/// applying every rule again. `files` are `(relative path, bytes)`.
pub fn from_files(
    files: Vec<(String, Vec<u8>)>,
    source: SourceKind,
    limits: &Limits,
) -> Result<Bundle, Vec<Rejection>> {
    let mut gathered = source::Gathered::default();
    for (path, bytes) in files {
        match path::normalize(&path) {
            Ok(normal) if normal == path => gathered.files.push(source::RawFile { path, bytes }),
            Ok(_) => gathered.errors.push(Rejection::new(
                RejectCode::InvalidPath,
                Some(path),
                "not in normal form",
            )),
            Err((code, message)) => gathered
                .errors
                .push(Rejection::new(code, Some(path), message)),
        }
    }
    assemble(gathered, source, limits)
}

/// A ZIP whose files all sit under one top-level folder is read with that folder as its root
/// (what "Compress folder" produces on every desktop).
fn strip_single_root(mut files: Vec<source::RawFile>) -> Vec<source::RawFile> {
    let first = |p: &str| p.split_once('/').map(|(head, _)| head.to_owned());
    let Some(root) = files.first().and_then(|f| first(&f.path)) else {
        return files;
    };
    if files
        .iter()
        .all(|f| first(&f.path).as_deref() == Some(root.as_str()))
    {
        for file in &mut files {
            file.path = file.path[root.len() + 1..].to_owned();
        }
    }
    files
}

/// Applies the whole-bundle rules and builds the [`Bundle`].
fn assemble(
    gathered: source::Gathered,
    source: SourceKind,
    limits: &Limits,
) -> Result<Bundle, Vec<Rejection>> {
    let source::Gathered { files, mut errors } = gathered;
    // When entries were already rejected, SKILL.md may be among them: judging its presence or
    // front matter then would only add noise.
    let entries_rejected = !errors.is_empty();

    // Duplicates and case conflicts, judged on normalized paths. Folders count too: `README`
    // and `readme/x.md` collide on a case-insensitive file system.
    let mut exact: HashMap<&str, usize> = HashMap::new();
    let mut folded: BTreeMap<String, String> = BTreeMap::new();
    for file in &files {
        if exact.insert(file.path.as_str(), 0).is_some() {
            errors.push(Rejection::new(
                RejectCode::DuplicatePath,
                Some(file.path.clone()),
                "two entries have this path",
            ));
            continue;
        }
        let mut prefixes: Vec<&str> = file
            .path
            .match_indices('/')
            .map(|(i, _)| &file.path[..i])
            .collect();
        prefixes.push(file.path.as_str());
        for name in prefixes {
            let key = name.to_lowercase();
            match folded.get(&key) {
                Some(other) if other != name => {
                    errors.push(Rejection::new(
                        RejectCode::CaseConflict,
                        Some(file.path.clone()),
                        format!("`{}` differs from `{}` only in letter case; they would collide on Windows and macOS", display_safe(name), display_safe(other)),
                    ));
                    break;
                }
                Some(_) => {}
                None => {
                    folded.insert(key, name.to_owned());
                }
            }
        }
    }
    // A path used as a file and as a folder ("a" and "a/b") cannot exist on any file system.
    for file in &files {
        let as_dir = format!("{}/", file.path);
        if files.iter().any(|other| other.path.starts_with(&as_dir)) {
            errors.push(Rejection::new(
                RejectCode::DuplicatePath,
                Some(file.path.clone()),
                "this path is both a file and a folder",
            ));
        }
    }

    let mut text_bytes: u64 = 0;
    let mut classified = Vec::with_capacity(files.len());
    for file in files {
        if let Some(format) = archive_format(&file.path, &file.bytes) {
            errors.push(Rejection::new(
                RejectCode::NestedArchive,
                Some(file.path.clone()),
                format!("holds a {format} archive; bundles may not nest archives"),
            ));
            continue;
        }
        let kind = classify(&file.path, &file.bytes);
        if kind.is_text() {
            text_bytes = text_bytes.saturating_add(file.bytes.len() as u64);
        }
        classified.push((file, kind));
    }
    if text_bytes > limits.max_text_bytes {
        errors.push(Rejection::new(
            RejectCode::TextTooLarge,
            None,
            format!(
                "the bundle holds {text_bytes} bytes of text; at most {} are allowed",
                limits.max_text_bytes
            ),
        ));
    }

    let skill = classified.iter().find(|(f, _)| f.path == SKILL_FILE);
    let front = match skill {
        _ if entries_rejected => None,
        None => {
            let hint = classified
                .iter()
                .find(|(f, _)| {
                    f.path.eq_ignore_ascii_case(SKILL_FILE) || f.path.ends_with("/SKILL.md")
                })
                .map(|(f, _)| {
                    format!(
                        " (found `{}`: it must be named exactly SKILL.md and sit at the root)",
                        display_safe(&f.path)
                    )
                })
                .unwrap_or_default();
            errors.push(Rejection::new(
                RejectCode::MissingSkillMd,
                None,
                format!("no SKILL.md at the bundle root{hint}"),
            ));
            None
        }
        Some((file, _)) => match std::str::from_utf8(&file.bytes) {
            Err(_) => {
                errors.push(Rejection::new(
                    RejectCode::InvalidFrontMatter,
                    Some(SKILL_FILE.to_owned()),
                    "SKILL.md is not UTF-8 text",
                ));
                None
            }
            Ok(text) => match front_matter::parse(text) {
                Ok(front) => Some(front),
                Err(front_matter::FrontMatterError(message)) => {
                    errors.push(Rejection::new(
                        RejectCode::InvalidFrontMatter,
                        Some(SKILL_FILE.to_owned()),
                        message,
                    ));
                    None
                }
            },
        },
    };
    let Some(front) = front.filter(|_| errors.is_empty()) else {
        return Err(errors);
    };

    let mut bundle_files: Vec<BundleFile> = classified
        .into_iter()
        .map(|(file, kind)| {
            let sha256 = Sha256Digest::of(&file.bytes);
            BundleFile {
                path: file.path,
                kind,
                bytes: file.bytes,
                sha256,
            }
        })
        .collect();
    bundle_files.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));

    let entries: Vec<DigestEntry<'_>> = bundle_files
        .iter()
        .map(|f| DigestEntry {
            path: &f.path,
            size: f.size(),
            sha256: f.sha256,
        })
        .collect();
    let digest = content_digest(&entries);

    let exists = |p: &str| {
        if let Some(dir) = p.strip_suffix('/') {
            let prefix = format!("{dir}/");
            bundle_files.iter().any(|f| f.path.starts_with(&prefix))
        } else {
            bundle_files.iter().any(|f| f.path == p)
        }
    };
    let mut flags: Vec<Flag> = front
        .lints
        .iter()
        .map(|(line, message)| Flag {
            kind: FlagKind::Lint,
            path: SKILL_FILE.to_owned(),
            line: *line,
            excerpt: message.clone(),
        })
        .chain(front.notes.iter().map(|(line, message)| Flag {
            kind: FlagKind::Note,
            path: SKILL_FILE.to_owned(),
            line: *line,
            excerpt: message.clone(),
        }))
        .collect();
    for file in &bundle_files {
        if let Some(text) = file.text() {
            flags.extend(scan::scan_text(&file.path, text, &exists));
        }
    }
    flags.sort();
    flags.dedup();

    Ok(Bundle {
        name: front.name,
        version: front.version,
        description: front.description,
        digest,
        files: bundle_files,
        flags,
        source,
    })
}
