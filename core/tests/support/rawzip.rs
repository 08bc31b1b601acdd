//! A byte-exact ZIP writer for tests and benchmarks. Unlike a real archiver it lets a test lie:
//! sizes that differ from the data, names no archiver would write (`..\..\x`, `C:\x`), symlink
//! and encryption bits, duplicate entries. Shared by the runner's tests, the CLI's tests and the
//! bundle benchmark through `#[path]`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;

use flate2::Compression;
use flate2::write::DeflateEncoder;

/// One entry, with every header field a test may want to falsify.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: Vec<u8>,
    pub method: u16,
    pub payload: Vec<u8>,
    pub crc: u32,
    /// Uncompressed size written to the local header.
    pub local_size: u32,
    /// Uncompressed size written to the central directory.
    pub central_size: u32,
    pub flags: u16,
    pub made_by: u16,
    pub external_attr: u32,
    pub extra: Vec<u8>,
}

/// Unix (3) in the high byte of "version made by", spec version 2.0 in the low byte.
const MADE_BY_UNIX: u16 = (3 << 8) | 20;

fn crc32(data: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(data);
    crc.sum()
}

impl Entry {
    /// A stored (uncompressed) regular file with honest headers.
    pub fn stored(name: &str, data: &[u8]) -> Self {
        Self {
            name: name.as_bytes().to_vec(),
            method: 0,
            payload: data.to_vec(),
            crc: crc32(data),
            local_size: u32::try_from(data.len()).unwrap(),
            central_size: u32::try_from(data.len()).unwrap(),
            flags: 0,
            made_by: MADE_BY_UNIX,
            external_attr: 0o100_644 << 16,
            extra: Vec::new(),
        }
    }

    /// A Deflate-compressed regular file with honest headers.
    pub fn deflated(name: &str, data: &[u8]) -> Self {
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::best());
        encoder.write_all(data).unwrap();
        let payload = encoder.finish().unwrap();
        Self {
            method: 8,
            payload,
            ..Self::stored(name, data)
        }
    }

    /// A Deflate stream of `len` zero bytes, compressed chunk by chunk so a test or benchmark can
    /// build a gigabyte bomb without holding a gigabyte. The CRC is computed honestly.
    pub fn deflated_zeros(name: &str, len: u64) -> Self {
        let chunk = vec![0u8; 1 << 20];
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::best());
        let mut crc = flate2::Crc::new();
        let mut left = len;
        while left > 0 {
            let n = usize::try_from(left.min(chunk.len() as u64)).unwrap();
            encoder.write_all(&chunk[..n]).unwrap();
            crc.update(&chunk[..n]);
            left -= n as u64;
        }
        let payload = encoder.finish().unwrap();
        let size = u32::try_from(len).unwrap_or(u32::MAX);
        Self {
            method: 8,
            payload,
            crc: crc.sum(),
            local_size: size,
            central_size: size,
            ..Self::stored(name, b"")
        }
    }

    /// A symbolic link entry pointing at `target`.
    pub fn symlink(name: &str, target: &str) -> Self {
        Self {
            external_attr: 0o120_777 << 16,
            ..Self::stored(name, target.as_bytes())
        }
    }

    /// A directory entry.
    pub fn dir(name: &str) -> Self {
        Self {
            external_attr: (0o040_755 << 16) | 0x10,
            ..Self::stored(name, b"")
        }
    }

    /// Both headers claim `size` uncompressed bytes, whatever the data inflates to.
    pub fn claiming(mut self, size: u32) -> Self {
        self.local_size = size;
        self.central_size = size;
        self
    }

    /// Sets the "traditional PKWARE encryption" flag bit.
    pub fn encrypted(mut self) -> Self {
        self.flags |= 1;
        self
    }

    /// Marks the entry as WinZip AES (method 99 with its 0x9901 extra field).
    pub fn aes(mut self) -> Self {
        self.method = 99;
        self.flags |= 1;
        // header id, size 7, vendor version 2 (AE-2), "AE", strength 3 (256-bit), real method 8
        self.extra = vec![0x01, 0x99, 7, 0, 2, 0, b'A', b'E', 3, 8, 0];
        self
    }

    /// Replaces the CRC with a wrong one.
    pub fn bad_crc(mut self) -> Self {
        self.crc ^= 0xdead_beef;
        self
    }
}

fn u16le(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn u32le(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Writes the archive: local headers and data, central directory, end record.
pub fn build(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut offsets = Vec::new();
    for e in entries {
        offsets.push(u32::try_from(out.len()).unwrap());
        u32le(&mut out, 0x0403_4b50);
        u16le(&mut out, 20);
        u16le(&mut out, e.flags);
        u16le(&mut out, e.method);
        u16le(&mut out, 0); // time
        u16le(&mut out, 0x21); // 1980-01-01
        u32le(&mut out, e.crc);
        u32le(&mut out, u32::try_from(e.payload.len()).unwrap());
        u32le(&mut out, e.local_size);
        u16le(&mut out, u16::try_from(e.name.len()).unwrap());
        u16le(&mut out, u16::try_from(e.extra.len()).unwrap());
        out.extend_from_slice(&e.name);
        out.extend_from_slice(&e.extra);
        out.extend_from_slice(&e.payload);
    }
    let cd_start = u32::try_from(out.len()).unwrap();
    for (e, offset) in entries.iter().zip(&offsets) {
        u32le(&mut out, 0x0201_4b50);
        u16le(&mut out, e.made_by);
        u16le(&mut out, 20);
        u16le(&mut out, e.flags);
        u16le(&mut out, e.method);
        u16le(&mut out, 0);
        u16le(&mut out, 0x21);
        u32le(&mut out, e.crc);
        u32le(&mut out, u32::try_from(e.payload.len()).unwrap());
        u32le(&mut out, e.central_size);
        u16le(&mut out, u16::try_from(e.name.len()).unwrap());
        u16le(&mut out, u16::try_from(e.extra.len()).unwrap());
        u16le(&mut out, 0); // comment
        u16le(&mut out, 0); // disk
        u16le(&mut out, 0); // internal attributes
        u32le(&mut out, e.external_attr);
        u32le(&mut out, *offset);
        out.extend_from_slice(&e.name);
        out.extend_from_slice(&e.extra);
    }
    let cd_size = u32::try_from(out.len()).unwrap() - cd_start;
    let count = u16::try_from(entries.len()).unwrap();
    u32le(&mut out, 0x0605_4b50);
    u16le(&mut out, 0);
    u16le(&mut out, 0);
    u16le(&mut out, count);
    u16le(&mut out, count);
    u32le(&mut out, cd_size);
    u32le(&mut out, cd_start);
    u16le(&mut out, 0);
    out
}

/// A minimal valid SKILL.md.
pub fn skill_md(name: &str, version: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: A test skill.\nversion: {version}\n---\n# {name}\n\nRead the tag first.\n"
    )
}

/// A ZIP with one of nearly everything that gets a bundle rejected: traversal, Windows and
/// drive paths, a symlink, names that collide by case, a nested archive, an encrypted entry.
pub fn hostile_bundle() -> Vec<u8> {
    build(&[
        Entry::deflated("SKILL.md", skill_md("hostile", "6.6.6").as_bytes()),
        Entry::stored("../../etc/cron.d/evil", b"* * * * * root sh"),
        Entry::stored("..\\..\\evil.md", b"x"),
        Entry::stored("C:\\Windows\\evil.md", b"x"),
        Entry::symlink("refs/passwd.md", "/etc/passwd"),
        Entry::stored("refs/Notes.md", b"1"),
        Entry::stored("refs/notes.md", b"2"),
        Entry::stored("refs/inner.md", &build(&[Entry::stored("x.md", b"x")])),
        Entry::stored("refs/secret.md", b"x").encrypted(),
    ])
}

/// Every regular file under `root` with its `/`-separated path relative to it, sorted by path.
pub fn folder_files(root: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_str().unwrap();
                out.push((relative.replace('\\', "/"), std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// A folder zipped as an archiver would (deflated entries, sorted paths).
pub fn zip_folder(root: &std::path::Path) -> Vec<u8> {
    let files = folder_files(root);
    let entries: Vec<Entry> = files
        .iter()
        .map(|(path, bytes)| Entry::deflated(path, bytes))
        .collect();
    build(&entries)
}
