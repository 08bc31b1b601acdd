//! The content-addressed store: every run input (manifests, bundle files, pack files) and every
//! raw model payload lives under its SHA-256, so a run never re-reads a changed file by path.
//!
//! Layout: `<root>/sha256/<first two hex>/<64 hex>`. Writes go to a temporary file in the same
//! directory, are fsynced, renamed into place and the directory is fsynced: after `put` returns,
//! the blob survives a crash. Reads verify the hash; a blob that does not match is an error,
//! never silently used.
//!
//! A *tree* (a bundle or a pack) is stored as its files plus its canonical listing
//! ([`skilltrial_core::digest::canonical_listing`]) under the tree's content digest, so the listing's own
//! hash is the bundle digest or pack hash the manifest pins.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use skilltrial_core::digest::{
    CONTENT_DIGEST_DOMAIN, DigestEntry, Sha256Digest, canonical_listing,
};

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Not in the store.
    #[error("{0} is not in the store")]
    Missing(Sha256Digest),
    /// In the store, but its bytes no longer hash to its name.
    #[error("{0} in the store is corrupt: its content no longer matches its hash")]
    Corrupt(Sha256Digest),
    /// A tree listing that does not parse.
    #[error("{0} is not a tree listing")]
    NotATree(Sha256Digest),
}

/// A content-addressed store rooted at a directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Fsyncs a directory so that a rename inside it is durable.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}

/// Writes `bytes` to `path` atomically and durably (temp file, fsync, rename, fsync dir). The
/// temp file is this call's own (process id and a per-process sequence number), so writers of
/// the same path in other processes or threads never share one: the last rename wins, whole.
pub fn write_durably(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(io(dir))?;
    let tmp = dir.join(format!(
        ".tmp-{}-{}-{}",
        std::process::id(),
        SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        path.file_name().and_then(|n| n.to_str()).unwrap_or("blob")
    ));
    {
        let mut file = fs::File::create(&tmp).map_err(io(&tmp))?;
        file.write_all(bytes).map_err(io(&tmp))?;
        file.sync_all().map_err(io(&tmp))?;
    }
    if let Err(e) = fs::rename(&tmp, path) {
        // Nothing half-done is left beside the target: the temporary file goes too.
        let _ = fs::remove_file(&tmp);
        return Err(io(path)(e));
    }
    sync_dir(dir)
}

impl Store {
    /// Opens (creating if needed) a store at `root`.
    pub fn open(root: &Path) -> Result<Self, StoreError> {
        fs::create_dir_all(root.join("sha256")).map_err(io(root))?;
        Ok(Self {
            root: root.to_path_buf(),
        })
    }

    /// Where a blob lives.
    pub fn path_of(&self, digest: &Sha256Digest) -> PathBuf {
        let hex = digest.hex();
        self.root.join("sha256").join(&hex[..2]).join(hex)
    }

    /// Whether a blob is present (not verified).
    pub fn contains(&self, digest: &Sha256Digest) -> bool {
        self.path_of(digest).is_file()
    }

    /// Stores `bytes`; idempotent. Durable when it returns.
    pub fn put(&self, bytes: &[u8]) -> Result<Sha256Digest, StoreError> {
        let digest = Sha256Digest::of(bytes);
        let path = self.path_of(&digest);
        // Same name and same size: the same bytes (the name is their hash; a blob cut short
        // by a crash has another size and is written again).
        let present =
            fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() == bytes.len() as u64);
        if !present {
            write_durably(&path, bytes)?;
        }
        Ok(digest)
    }

    /// Reads and verifies a blob.
    pub fn get(&self, digest: &Sha256Digest) -> Result<Vec<u8>, StoreError> {
        let path = self.path_of(digest);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::Missing(*digest));
            }
            Err(source) => return Err(StoreError::Io { path, source }),
        };
        if Sha256Digest::of(&bytes) != *digest {
            return Err(StoreError::Corrupt(*digest));
        }
        Ok(bytes)
    }

    /// Deletes a blob if present; returns the bytes freed.
    pub fn remove(&self, digest: &Sha256Digest) -> Result<u64, StoreError> {
        let path = self.path_of(digest);
        match fs::metadata(&path) {
            Ok(meta) => {
                fs::remove_file(&path).map_err(io(&path))?;
                Ok(meta.len())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(source) => Err(StoreError::Io { path, source }),
        }
    }

    /// Stores a tree of files and its canonical listing; returns the tree's content digest.
    pub fn put_tree<'a>(
        &self,
        files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> Result<Sha256Digest, StoreError> {
        let mut entries = Vec::new();
        for (path, bytes) in files {
            let sha256 = self.put(bytes)?;
            entries.push(DigestEntry {
                path,
                size: bytes.len() as u64,
                sha256,
            });
        }
        self.put(canonical_listing(&entries).as_bytes())
    }

    /// Reads a tree back: every file, verified, in listing order.
    pub fn get_tree(&self, digest: &Sha256Digest) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let listing =
            String::from_utf8(self.get(digest)?).map_err(|_| StoreError::NotATree(*digest))?;
        let mut lines = listing.lines();
        if lines.next() != Some(CONTENT_DIGEST_DOMAIN) {
            return Err(StoreError::NotATree(*digest));
        }
        let mut files = Vec::new();
        for line in lines {
            let mut parts = line.splitn(3, ' ');
            let (Some(hex), Some(size), Some(path)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(StoreError::NotATree(*digest));
            };
            let sha = parse_hex(hex).ok_or(StoreError::NotATree(*digest))?;
            let bytes = self.get(&sha)?;
            if size.parse::<u64>().ok() != Some(bytes.len() as u64) {
                return Err(StoreError::Corrupt(sha));
            }
            files.push((path.to_owned(), bytes));
        }
        Ok(files)
    }
}

/// The files a tree listing names (its bytes as [`Store::put_tree`] stored them), or `None` when
/// `bytes` is not a listing: what a copy of the tree elsewhere must hold besides the listing.
pub fn listed(bytes: &[u8]) -> Option<Vec<Sha256Digest>> {
    let listing = std::str::from_utf8(bytes).ok()?;
    let mut lines = listing.lines();
    if lines.next() != Some(CONTENT_DIGEST_DOMAIN) {
        return None;
    }
    lines
        .map(|line| line.split(' ').next().and_then(parse_hex))
        .collect()
}

/// Parses 64 lowercase hex characters (optionally prefixed `sha256:`).
pub fn parse_hex(text: &str) -> Option<Sha256Digest> {
    let hex = text.strip_prefix("sha256:").unwrap_or(text);
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, chunk) in hex.as_bytes().chunks(2).enumerate() {
        let s = std::str::from_utf8(chunk).ok()?;
        out[i] = u8::from_str_radix(s, 16).ok()?;
    }
    Some(Sha256Digest(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads of one process storing the same blob and tree at once (the runner daemon's
    /// concurrent uploads) all succeed, and the result is whole.
    #[test]
    fn concurrent_writers_of_the_same_content_all_succeed() {
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(Store::open(dir.path()).unwrap());
        let blob = vec![7u8; 64 * 1024];
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (store, blob) = (std::sync::Arc::clone(&store), blob.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        store.put(&blob).unwrap();
                        store
                            .put_tree([("a.md", blob.as_slice()), ("b/c.md", b"x".as_slice())])
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(store.get(&Sha256Digest::of(&blob)).unwrap(), blob);
    }

    #[test]
    fn put_get_and_detect_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let d = store.put(b"hello").unwrap();
        assert_eq!(store.get(&d).unwrap(), b"hello");
        assert_eq!(store.put(b"hello").unwrap(), d, "idempotent");
        std::fs::write(store.path_of(&d), b"tampered").unwrap();
        assert!(matches!(store.get(&d), Err(StoreError::Corrupt(_))));
        let missing = Sha256Digest::of(b"nope");
        assert!(matches!(store.get(&missing), Err(StoreError::Missing(_))));
    }

    #[test]
    fn a_tree_is_addressed_by_its_content_digest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let files: Vec<(&str, &[u8])> = vec![("b.md", b"b"), ("SKILL.md", b"s")];
        let digest = store.put_tree(files.clone()).unwrap();
        // (That this is the bundle content digest is checked against an independent vector in
        // digest.rs.) The same files in another order are the same tree.
        let reversed: Vec<(&str, &[u8])> = files.iter().rev().copied().collect();
        assert_eq!(store.put_tree(reversed).unwrap(), digest);
        let changed: Vec<(&str, &[u8])> = vec![("b.md", b"B"), ("SKILL.md", b"s")];
        assert_ne!(store.put_tree(changed).unwrap(), digest);
        let back = store.get_tree(&digest).unwrap();
        assert_eq!(
            back,
            vec![
                ("SKILL.md".to_owned(), b"s".to_vec()),
                ("b.md".to_owned(), b"b".to_vec())
            ]
        );
    }

    #[test]
    fn a_blob_cut_short_is_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let d = store.put(b"request body").unwrap();
        // As a crash in the middle of a copy by hand may leave it: shorter, under its name.
        std::fs::write(store.path_of(&d), b"req").unwrap();
        assert_eq!(store.put(b"request body").unwrap(), d);
        assert_eq!(store.get(&d).unwrap(), b"request body", "rewritten");
    }

    #[test]
    fn parses_hex_digests() {
        let d = Sha256Digest::of(b"x");
        assert_eq!(parse_hex(&d.to_string()), Some(d));
        assert_eq!(parse_hex(&d.hex()), Some(d));
        assert_eq!(parse_hex("zz"), None);
    }
}
