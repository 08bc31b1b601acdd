//! Reading a bundle's raw entries from a folder or a ZIP, entirely in memory and under limits.
//!
//! Readers only gather entries and reject what cannot be read safely (symlinks, encryption,
//! bombs, unsafe names, too much data). The bundle rules that need the whole picture (duplicates,
//! case conflicts, nested archives, SKILL.md) live in the parent module.

use std::collections::HashMap;
use std::fs;
use std::io::{Cursor, Read};
use std::path::Path;

use flate2::read::DeflateDecoder;

use super::path::normalize;
use super::{Limits, RejectCode, Rejection};

/// What a reader gathered: the files it could read safely, and the entries it rejected. Errors
/// here are not fatal: the whole-bundle rules still run on `files` so that one report lists every
/// problem. Fatal problems (too large, too many files, a bomb) come back as `Err` instead.
#[derive(Debug, Default)]
pub struct Gathered {
    /// Regular files that passed every per-entry rule.
    pub files: Vec<RawFile>,
    /// Per-entry rejections.
    pub errors: Vec<Rejection>,
}

/// One regular file, its path already normalized.
#[derive(Debug, Clone)]
pub struct RawFile {
    /// Normalized relative path.
    pub path: String,
    /// Full content.
    pub bytes: Vec<u8>,
}

/// Reads a folder. Symlinks are never followed (the root itself may be one).
pub fn read_folder(root: &Path, limits: &Limits) -> Result<Gathered, Vec<Rejection>> {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    let mut total_bytes: u64 = 0;
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| {
            vec![Rejection::new(
                RejectCode::Unreadable,
                Some(prefix.clone()),
                format!("cannot list folder: {e}"),
            )]
        })?;
        let mut entries: Vec<_> = entries.collect::<Result<_, _>>().map_err(|e| {
            vec![Rejection::new(
                RejectCode::Unreadable,
                Some(prefix.clone()),
                format!("cannot list folder: {e}"),
            )]
        })?;
        entries.sort_by_key(fs::DirEntry::file_name);
        for entry in entries {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                let shown = entry.file_name().to_string_lossy().into_owned();
                errors.push(Rejection::new(
                    RejectCode::InvalidPath,
                    Some(join(&prefix, &shown)),
                    "file name is not valid UTF-8",
                ));
                continue;
            };
            let rel = join(&prefix, &name);
            if let Err((code, message)) = normalize(&rel) {
                errors.push(Rejection::new(code, Some(rel), message));
                continue;
            }
            let meta = entry.metadata().map_err(|e| {
                vec![Rejection::new(
                    RejectCode::Unreadable,
                    Some(rel.clone()),
                    format!("cannot stat: {e}"),
                )]
            })?;
            let file_type = meta.file_type();
            if file_type.is_symlink() {
                errors.push(Rejection::new(
                    RejectCode::Symlink,
                    Some(rel),
                    "symbolic links are not allowed in a bundle (it could point anywhere)",
                ));
            } else if file_type.is_dir() {
                stack.push((entry.path(), rel));
            } else if file_type.is_file() {
                if files.len() >= limits.max_files {
                    errors.push(too_many_files(limits));
                    return Err(errors);
                }
                total_bytes = total_bytes.saturating_add(meta.len());
                if total_bytes > limits.max_archive_bytes {
                    errors.push(Rejection::new(
                        RejectCode::ZipTooLarge,
                        Some(rel),
                        format!(
                            "the folder holds more than {} bytes; a bundle, zipped or not, may hold at most that",
                            limits.max_archive_bytes
                        ),
                    ));
                    return Err(errors);
                }
                // Read at most what is left of the budget plus one byte: a file that grows while
                // we read it cannot push us past the limit.
                let budget = limits
                    .max_archive_bytes
                    .saturating_sub(total_bytes.saturating_sub(meta.len()));
                let mut bytes = Vec::new();
                let read = fs::File::open(entry.path()).and_then(|f| {
                    // The entry was a regular file when listed; make sure the file we opened is
                    // that same file and not a symlink swapped in since (same device and inode).
                    let opened = f.metadata()?;
                    if !opened.is_file() || !same_file(&opened, &meta) {
                        return Err(std::io::Error::other(
                            "the file changed while the bundle was read",
                        ));
                    }
                    f.take(budget.saturating_add(1)).read_to_end(&mut bytes)
                });
                if let Err(e) = read {
                    return Err(vec![Rejection::new(
                        RejectCode::Unreadable,
                        Some(rel),
                        format!("cannot read: {e}"),
                    )]);
                }
                if bytes.len() as u64 > budget {
                    errors.push(Rejection::new(
                        RejectCode::ZipTooLarge,
                        Some(rel),
                        "file grew past the bundle size limit while being read",
                    ));
                    return Err(errors);
                }
                files.push(RawFile {
                    path: normalized(&rel),
                    bytes,
                });
            } else {
                errors.push(Rejection::new(
                    RejectCode::InvalidPath,
                    Some(rel),
                    "not a regular file or folder (device, socket or pipe)",
                ));
            }
        }
    }
    Ok(Gathered { files, errors })
}

/// Whether two metadata records describe the same file: same device and inode on Unix. Elsewhere
/// (no inode in `std`) the size and modification time must agree, which still catches a file
/// swapped for another between listing and opening in all but contrived cases.
#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    a.len() == b.len() && a.modified().ok() == b.modified().ok()
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}

fn normalized(rel: &str) -> String {
    normalize(rel).unwrap_or_else(|_| rel.to_owned())
}

fn too_many_files(limits: &Limits) -> Rejection {
    Rejection::new(
        RejectCode::TooManyFiles,
        None,
        format!("the bundle has more than {} files", limits.max_files),
    )
}

/// The Unix file-type bits of a ZIP entry's external attributes.
const S_IFMT: u32 = 0o170_000;
const S_IFLNK: u32 = 0o120_000;

use zip::CompressionMethod;

/// Reads a ZIP held in memory. Entry contents are inflated here, by us, under a byte budget: a
/// bomb is judged by the bytes it actually produces, never by what its headers claim, and memory
/// never grows with the claim.
pub fn read_zip(archive_bytes: &[u8], limits: &Limits) -> Result<Gathered, Vec<Rejection>> {
    if !archive_bytes.starts_with(b"PK") {
        return Err(vec![Rejection::new(
            RejectCode::InvalidZip,
            None,
            "not a ZIP archive (no `PK` signature at the start); pass a folder or a .zip",
        )]);
    }
    let mut archive = zip::ZipArchive::new(Cursor::new(archive_bytes)).map_err(|e| {
        vec![Rejection::new(
            RejectCode::InvalidZip,
            None,
            format!("cannot read the ZIP: {e}"),
        )]
    })?;
    let mut errors = Vec::new();
    // The names exactly as the central directory spells them. The zip crate replaces a name by
    // its Info-ZIP Unicode Path field when one is present; other tools extract by the raw name,
    // so the raw names must be safe too, and they are what duplicates are judged on.
    let raw_names = central_names(archive_bytes, archive.central_directory_start());
    let mut raw_bad = Vec::with_capacity(raw_names.len());
    for raw in &raw_names {
        let name = String::from_utf8_lossy(raw).into_owned();
        let result = normalize(&name);
        raw_bad.push(result.is_err());
        if let Err((code, message)) = result {
            errors.push(Rejection::new(code, Some(name), message));
        }
    }
    let mut counts: HashMap<&[u8], usize> = HashMap::new();
    for raw in &raw_names {
        *counts.entry(raw.as_slice()).or_default() += 1;
    }
    let mut duplicates: Vec<String> = counts
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(name, _)| String::from_utf8_lossy(name).into_owned())
        .collect();
    duplicates.sort();
    for name in duplicates {
        errors.push(Rejection::new(
            RejectCode::DuplicatePath,
            Some(name),
            "the ZIP holds two entries with this exact name",
        ));
    }
    if archive.has_duplicate_names() {
        if !errors.iter().any(|e| e.code == RejectCode::DuplicatePath) {
            errors.push(Rejection::new(
                RejectCode::DuplicatePath,
                None,
                "the ZIP holds two entries with the same name",
            ));
        }
        // Entry indexes no longer line up with the directory: stop here.
        return Err(errors);
    }
    // Local headers that disagree with the central directory are a smuggling trick: one tool
    // sees one file, another tool another.
    if errors.is_empty()
        && let Err(e) = archive.validate_header_consistency()
    {
        return Err(vec![Rejection::new(
            RejectCode::InvalidZip,
            None,
            format!("local and central headers disagree: {e}"),
        )]);
    }

    let mut files = Vec::new();
    let mut inflated_total: u64 = 0;
    for index in 0..archive.len() {
        if raw_bad.get(index) == Some(&true) {
            continue; // already rejected by its raw name
        }
        let mut entry = match archive.by_index_raw(index) {
            Ok(entry) => entry,
            Err(e) => {
                errors.push(Rejection::new(
                    RejectCode::InvalidZip,
                    None,
                    format!("entry {index} cannot be read: {e}"),
                ));
                continue;
            }
        };
        let name = match entry.name() {
            Ok(name) => name.into_owned(),
            Err(e) => {
                errors.push(Rejection::new(
                    RejectCode::InvalidPath,
                    None,
                    format!("entry {index} has an unreadable name: {e}"),
                ));
                continue;
            }
        };
        let path = match normalize(&name) {
            Ok(path) => path,
            Err((code, message)) => {
                errors.push(Rejection::new(code, Some(name), message));
                continue;
            }
        };
        let mode = entry.unix_mode().unwrap_or(0);
        if mode & S_IFMT == S_IFLNK || entry.is_symlink() {
            errors.push(Rejection::new(
                RejectCode::Symlink,
                Some(path),
                "the ZIP entry is a symbolic link (it could point anywhere)",
            ));
            continue;
        }
        let method = entry.compression();
        // WinZip AES marks encryption through the method field (99), not only the flag bit.
        if entry.encrypted() || method == CompressionMethod::AES {
            errors.push(Rejection::new(
                RejectCode::EncryptedEntry,
                Some(path),
                "the ZIP entry is encrypted; bundles must be readable as they are",
            ));
            continue;
        }
        if entry.is_dir() {
            continue;
        }
        if files.len() >= limits.max_files {
            errors.push(too_many_files(limits));
            return Err(errors);
        }
        // Only Store and Deflate are inflated, always by us (see `inflate`).
        if method != CompressionMethod::STORE && method != CompressionMethod::DEFLATE {
            errors.push(Rejection::new(
                RejectCode::InvalidZip,
                Some(path),
                format!("compression method {method:?} is not supported; re-create the ZIP with Deflate or Store"),
            ));
            continue;
        }
        let budget = limits.max_unpacked_bytes.saturating_sub(inflated_total);
        let declared = entry.size();
        let expected_crc = entry.crc32();
        match inflate(&mut entry, method, declared, budget) {
            Ok(bytes) => {
                if flate2::Crc::new().tap_update(&bytes) != expected_crc {
                    errors.push(Rejection::new(
                        RejectCode::InvalidZip,
                        Some(path),
                        "the entry's content does not match its CRC-32 (corrupt or tampered ZIP)",
                    ));
                    continue;
                }
                inflated_total = inflated_total.saturating_add(bytes.len() as u64);
                files.push(RawFile { path, bytes });
            }
            Err(failure) => {
                let (code, message) = match failure {
                    Inflate::PastDeclared => (
                        RejectCode::DecompressionBomb,
                        format!(
                            "inflates past the {declared} bytes its headers claim: a decompression bomb"
                        ),
                    ),
                    Inflate::PastBudget => (
                        RejectCode::DecompressionBomb,
                        format!(
                            "inflating it passes the {} bytes a whole bundle may unpack to: a decompression bomb",
                            limits.max_unpacked_bytes
                        ),
                    ),
                    Inflate::Short(got) => (
                        RejectCode::InvalidZip,
                        format!(
                            "inflates to {got} bytes, fewer than the {declared} its headers claim (truncated or corrupt)"
                        ),
                    ),
                    Inflate::Corrupt(e) => (
                        RejectCode::InvalidZip,
                        format!("the compressed data is corrupt: {e}"),
                    ),
                };
                let fatal = code == RejectCode::DecompressionBomb;
                errors.push(Rejection::new(code, Some(path), message));
                if fatal {
                    // Stop at once: no more inflating for a hostile archive.
                    return Err(errors);
                }
            }
        }
    }
    Ok(Gathered { files, errors })
}

enum Inflate {
    /// More bytes than the headers claim.
    PastDeclared,
    /// More bytes than the whole bundle may unpack to.
    PastBudget,
    /// Fewer bytes than claimed.
    Short(u64),
    /// The Deflate stream is broken.
    Corrupt(std::io::Error),
}

fn inflate(
    raw: &mut dyn Read,
    method: CompressionMethod,
    declared: u64,
    budget: u64,
) -> Result<Vec<u8>, Inflate> {
    // Never allocate by the header's word: start small and let real bytes grow the buffer.
    let cap = usize::try_from(declared.min(budget).min(64 * 1024)).unwrap_or(64 * 1024);
    let mut out = Vec::with_capacity(cap);
    // One byte beyond the smaller of the two limits tells us a limit was crossed.
    let limit = declared.min(budget).saturating_add(1);
    let result = if method == CompressionMethod::DEFLATE {
        DeflateDecoder::new(raw).take(limit).read_to_end(&mut out)
    } else {
        raw.take(limit).read_to_end(&mut out)
    };
    result.map_err(Inflate::Corrupt)?;
    let got = out.len() as u64;
    if got > declared {
        return Err(Inflate::PastDeclared);
    }
    if got > budget {
        return Err(Inflate::PastBudget);
    }
    if got < declared {
        return Err(Inflate::Short(got));
    }
    Ok(out)
}

trait CrcExt {
    fn tap_update(self, bytes: &[u8]) -> u32;
}

impl CrcExt for flate2::Crc {
    fn tap_update(mut self, bytes: &[u8]) -> u32 {
        self.update(bytes);
        self.sum()
    }
}

/// Every entry name exactly as the central directory spells it (signature `PK\x01\x02`, name
/// length at +28, extra length at +30, comment length at +32, name at +46).
fn central_names(bytes: &[u8], start: u64) -> Vec<Vec<u8>> {
    let mut names = Vec::new();
    let mut at = usize::try_from(start).unwrap_or(usize::MAX);
    while let Some(record) = bytes.get(at..at.saturating_add(46)) {
        if &record[..4] != b"PK\x01\x02" {
            break;
        }
        let name_len = usize::from(u16::from_le_bytes([record[28], record[29]]));
        let extra_len = usize::from(u16::from_le_bytes([record[30], record[31]]));
        let comment_len = usize::from(u16::from_le_bytes([record[32], record[33]]));
        let name_start = at.saturating_add(46);
        let Some(name) = bytes.get(name_start..name_start.saturating_add(name_len)) else {
            break;
        };
        names.push(name.to_vec());
        at = name_start
            .saturating_add(name_len)
            .saturating_add(extra_len)
            .saturating_add(comment_len);
    }
    names
}
