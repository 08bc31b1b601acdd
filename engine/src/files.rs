//! Files a person names on the command line, read with the checks every command shares: a FIFO,
//! socket or device is refused by name before it is opened (reading one whole either blocks
//! forever, a FIFO nobody writes, or never ends, `/dev/zero`), and a report file is read under a
//! size bound and typed only if it writes back exactly as read.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use skilltrial_core::report::Report;

/// Why a named file cannot be used. [`FileError::is_environment`] tells a file that is not there
/// or cannot be read (the machine) from one that was read and refused (the input).
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot read {}: {cause}", path.display())]
    Unreadable {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{} is a directory: give {wanted}", path.display())]
    Directory { path: PathBuf, wanted: String },
    #[error("{} is not a regular file (a FIFO, socket or device): give {wanted}", path.display())]
    NotRegular { path: PathBuf, wanted: String },
    #[error("{} is not a regular file or a folder (a FIFO, socket or device): give {wanted}", path.display())]
    NotFileOrFolder { path: PathBuf, wanted: String },
    #[error("{} is larger than {} MiB, more than any report holds: not a report", path.display(), MAX_REPORT_BYTES / (1024 * 1024))]
    TooLarge { path: PathBuf },
    #[error("{} is not JSON: not UTF-8 at byte {at}", path.display())]
    NotUtf8 { path: PathBuf, at: usize },
    #[error("{} is not JSON: {cause}", path.display())]
    NotJson {
        path: PathBuf,
        cause: serde_json::Error,
    },
    #[error("{} is not a report: not a JSON object", path.display())]
    NotAnObject { path: PathBuf },
    #[error("cannot create {}: {cause}", path.display())]
    CannotCreate {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot write {}: {cause}", path.display())]
    CannotWrite {
        path: PathBuf,
        cause: crate::store::StoreError,
    },
    #[error("{}: {cause}", path.display())]
    NotAReport {
        path: PathBuf,
        cause: skilltrial_core::report::ReportError,
    },
}

impl FileError {
    /// The file is missing, unreadable or not a regular file (exit 2), rather than read and
    /// refused (exit 1).
    pub fn is_environment(&self) -> bool {
        matches!(
            self,
            FileError::Unreadable { .. }
                | FileError::CannotCreate { .. }
                | FileError::CannotWrite { .. }
                | FileError::Directory { .. }
                | FileError::NotRegular { .. }
                | FileError::NotFileOrFolder { .. }
        )
    }
}

/// `path` must be a regular file (symlinks followed); `wanted` completes "give …".
pub fn regular_file(path: &Path, wanted: &str) -> Result<std::fs::Metadata, FileError> {
    let meta = std::fs::metadata(path).map_err(|cause| FileError::Unreadable {
        path: path.to_owned(),
        cause,
    })?;
    if meta.is_dir() {
        return Err(FileError::Directory {
            path: path.to_owned(),
            wanted: wanted.to_owned(),
        });
    }
    if !meta.is_file() {
        return Err(FileError::NotRegular {
            path: path.to_owned(),
            wanted: wanted.to_owned(),
        });
    }
    Ok(meta)
}

/// `path` must be a regular file or a directory, when it exists at all (a missing one is left
/// to the command, which says so in its own terms).
pub fn file_or_folder(path: &Path, wanted: &str) -> Result<(), FileError> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_dir() && !meta.is_file() => Err(FileError::NotFileOrFolder {
            path: path.to_owned(),
            wanted: wanted.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// The largest report file read. A report holds every answer: 100 requests of at most 256 KiB
/// each is 25 MiB, and JSON may escape a byte as six (`\u0001`), so 150 MiB at worst, plus the
/// manifest and the verdicts. 256 MiB is above that and far below what would exhaust memory.
pub const MAX_REPORT_BYTES: u64 = 256 * 1024 * 1024;

/// Reads and types a report file: refused (naming the file) unless it is a report of this
/// format that writes back exactly as read (`verify`, `gate --report`, `ledger --report`,
/// `anchor`).
pub fn read_report(path: &Path) -> Result<Report, FileError> {
    let meta = regular_file(path, "a report.json file")?;
    let too_large = || FileError::TooLarge {
        path: path.to_owned(),
    };
    if meta.len() > MAX_REPORT_BYTES {
        return Err(too_large());
    }
    // Read through `take` too: the file may grow between the check and the read.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_REPORT_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|cause| FileError::Unreadable {
            path: path.to_owned(),
            cause,
        })?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_REPORT_BYTES {
        return Err(too_large());
    }
    let text = String::from_utf8(bytes).map_err(|e| FileError::NotUtf8 {
        path: path.to_owned(),
        at: e.utf8_error().valid_up_to(),
    })?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|cause| FileError::NotJson {
            path: path.to_owned(),
            cause,
        })?;
    if !doc.is_object() {
        return Err(FileError::NotAnObject {
            path: path.to_owned(),
        });
    }
    // Typed, and only if the type writes back exactly this document: the hashes of the typed
    // report are then the hashes of the file's content.
    Report::from_value(&doc).map_err(|cause| FileError::NotAReport {
        path: path.to_owned(),
        cause,
    })
}

/// Writes `bytes` to `path` durably (`store::write_durably`: a temporary file, fsync, rename),
/// creating its folder first (`report --remote`, `ledger --out`).
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|cause| FileError::CannotCreate {
            path: parent.to_owned(),
            cause,
        })?;
    }
    crate::store::write_durably(path, bytes).map_err(|cause| FileError::CannotWrite {
        path: path.to_owned(),
        cause,
    })
}
