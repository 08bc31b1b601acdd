//! Build script: embeds the fixture packs and example bundles into the library and hashes the
//! checker's source.
//!
//! - `embedded_packs.rs`: every file under `fixtures/packs/`, as `(relative path, bytes)`, so the
//!   binary carries `solana-core@1.0.3` and works from anywhere.
//! - `embedded_bundles.rs`: every file under `fixtures/bundles/`, the same way, so `demo` runs
//!   its two example bundles from any working directory.
//! - `CHECKER_SOURCE_SHA256`: SHA-256 over the checker's and decoder's source files (sorted by
//!   path, each as `path\0len\0bytes`). It enters manifests: a changed rule is a changed checker.

#![allow(clippy::expect_used)] // a build script that cannot read its inputs must stop loudly

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Writes `out` declaring `FILES`: every file under `root` as (path under `root`, bytes).
fn embed(root: &Path, what: &str, out: &Path) {
    println!("cargo:rerun-if-changed={}", root.display());
    let mut code = format!(
        "/// Every file of every embedded {what}: (path under fixtures/, bytes).\npub static FILES: &[(&str, &[u8])] = &[\n"
    );
    for path in files_under(root) {
        println!("cargo:rerun-if-changed={}", path.display());
        let rel = path
            .strip_prefix(root)
            .expect("under the embedded root")
            .to_string_lossy()
            .replace('\\', "/");
        if rel.ends_with(".gitkeep") {
            continue;
        }
        let _ = writeln!(
            code,
            "    ({rel:?}, include_bytes!({:?})),",
            path.display().to_string()
        );
    }
    code.push_str("];\n");
    std::fs::write(out, code).expect("write an embedded file table");
}

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));

    embed(
        &manifest.join("../fixtures/packs"),
        "pack",
        &out_dir.join("embedded_packs.rs"),
    );
    embed(
        &manifest.join("../fixtures/bundles"),
        "example bundle",
        &out_dir.join("embedded_bundles.rs"),
    );

    let mut hasher = Sha256::new();
    for dir in ["src/checker", "src/solana"] {
        let root = manifest.join(dir);
        println!("cargo:rerun-if-changed={}", root.display());
        for path in files_under(&root) {
            println!("cargo:rerun-if-changed={}", path.display());
            let bytes = std::fs::read(&path).expect("read checker source");
            let rel = path
                .strip_prefix(&manifest)
                .expect("under manifest")
                .to_string_lossy()
                .replace('\\', "/");
            hasher.update(rel.as_bytes());
            hasher.update([0]);
            hasher.update(bytes.len().to_string().as_bytes());
            hasher.update([0]);
            hasher.update(&bytes);
        }
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=CHECKER_SOURCE_SHA256={hex}");
}
