//! Helpers for SkillTrial's end-to-end tests: where the workspace and the built binary are, and
//! which program sources a built `.so` came from.
//!
//! The optional dependencies of this crate (feature `chain`) pin the Solana host cohort in
//! Cargo.lock; see ARCHITECTURE.md.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

/// The workspace root: the parent of this crate's directory as cargo gives it at run time
/// (`cargo test` and scripts/idl.sh set `CARGO_MANIFEST_DIR`), else as it was at compile time.
/// Run time first because cargo fingerprints path crates by their path relative to the
/// workspace, so a target directory shared between two clones can hold a build compiled in the
/// other one.
pub fn workspace_root() -> PathBuf {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    dir.parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Every file under `root` (recursively), in no particular order.
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
    out
}

/// What the `skilltrial` binary is built from: a change to any of these makes it stale.
const CLI_INPUTS: &[&str] = &[
    "Cargo.lock",
    "cli/Cargo.toml",
    "cli/src",
    "core/Cargo.toml",
    "core/build.rs",
    "core/profiles.toml",
    "core/src",
    "engine/Cargo.toml",
    "engine/src",
    "migrations",
    "fixtures",
];

/// The newest modification time among the binary's inputs.
fn newest_cli_input() -> Option<SystemTime> {
    let root = workspace_root();
    CLI_INPUTS
        .iter()
        .flat_map(|rel| {
            let path = root.join(rel);
            if path.is_dir() {
                files_under(&path)
            } else {
                vec![path]
            }
        })
        .filter_map(|p| p.metadata().and_then(|m| m.modified()).ok())
        .max()
}

/// The `skilltrial` binary of the profile this test was built with, built first if it is
/// missing or older than its sources.
///
/// `cargo test --workspace` builds it before any test runs, but `cargo test -p skilltrial-e2e`
/// alone does not: without this check such a run would test whatever old binary was there.
pub fn skilltrial_bin() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate the test binary: {e}"))?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("unexpected test binary location {}", exe.display()))?;
    let bin = profile_dir.join(format!("skilltrial{}", std::env::consts::EXE_SUFFIX));
    let built = bin.metadata().and_then(|m| m.modified()).ok();
    let fresh = match (built, newest_cli_input()) {
        (Some(built), Some(newest)) => built >= newest,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if fresh {
        return Ok(bin);
    }
    build_cli(profile_dir)?;
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "{} is not built; run `cargo build -p skilltrial-cli` first",
            bin.display()
        ))
    }
}

/// Builds the CLI into the target directory and profile this test runs from.
fn build_cli(profile_dir: &Path) -> Result<(), String> {
    let target_dir = profile_dir
        .parent()
        .ok_or_else(|| format!("unexpected profile directory {}", profile_dir.display()))?;
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    // Cargo sets CARGO for the tests it runs; the same cargo builds the binary.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    // The hosted tests start `skilltrial localnet`: a binary rebuilt for them must have it (a
    // rebuild without it left every hosted test failing on a binary that cannot start one).
    let features: &[&str] = if cfg!(feature = "validator") {
        &["--features", "skilltrial-cli/localnet"]
    } else {
        &[]
    };
    let status = Command::new(&cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "skilltrial-cli",
            "--profile",
            profile,
        ])
        .args(features)
        .env("CARGO_TARGET_DIR", target_dir)
        .current_dir(workspace_root())
        .status()
        .map_err(|e| format!("cannot run {cargo} to build the skilltrial binary: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "`cargo build -p skilltrial-cli --profile {profile} {}` failed ({status})",
            features.join(" ")
        ))
    }
}

/// What the `.so` is built from, as scripts/build-sbf.sh stamps it (`STAMPED` there): the
/// program's crate, the workspace manifest and lockfile, the build script and its target spec.
const PROGRAM_BUILD_INPUTS: [&str; 6] = [
    "Cargo.toml",
    "Cargo.lock",
    "programs/skilltrial",
    "programs/venue",
    "scripts/build-sbf.sh",
    "scripts/sbf",
];

/// SHA-256 (hex) of the program's build inputs (`PROGRAM_BUILD_INPUTS`), exactly as
/// `scripts/build-sbf.sh --print-source-hash` computes it and writes it beside the `.so`: the
/// `sha256sum` line (`<hex>  <path>`) of every file, sorted by path bytes, hashed together.
pub fn program_source_sha256() -> Result<String, String> {
    let root = workspace_root();
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for stamped in PROGRAM_BUILD_INPUTS {
        let path = root.join(stamped);
        let found = if path.is_dir() {
            files_under(&path)
        } else {
            vec![path.clone()]
        };
        if found.is_empty() || !found.iter().all(|p| p.is_file()) {
            return Err(format!("missing program build input {}", path.display()));
        }
        for p in found {
            let rel = p
                .strip_prefix(&root)
                .unwrap_or(&p)
                .to_string_lossy()
                .replace('\\', "/");
            files.push((rel, p));
        }
    }
    files.sort();
    let mut listing = Sha256::new();
    for (rel, path) in files {
        let bytes =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        listing.update(format!("{}  {rel}\n", hex(&Sha256::digest(&bytes))));
    }
    Ok(hex(&listing.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_source_hash_matches_the_build_script() {
        // Given the hash the build script writes beside the .so
        let out = Command::new("bash")
            .arg(workspace_root().join("scripts/build-sbf.sh"))
            .arg("--print-source-hash")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");

        // Then the tests compute the very same hash
        assert_eq!(
            String::from_utf8(out.stdout).unwrap().trim(),
            program_source_sha256().unwrap()
        );
    }

    /// scripts/test.sh tests the program natively only when build-sbf.sh says the toolchain
    /// cannot be installed (exit 3), never under `SKILLTRIAL_REQUIRE_SBF=1`, and fails with the
    /// build's own status for any other failure (test-audit §10: no silent downgrade).
    #[test]
    fn the_suite_falls_back_to_native_only_when_the_toolchain_is_unavailable() {
        let layer = |status: &str, require_sbf: Option<&str>| {
            let mut cmd = Command::new("bash");
            cmd.arg(workspace_root().join("scripts/test.sh"))
                .args(["--program-layer-for", status])
                .env_remove("SKILLTRIAL_REQUIRE_SBF");
            if let Some(value) = require_sbf {
                cmd.env("SKILLTRIAL_REQUIRE_SBF", value);
            }
            let out = cmd.output().unwrap();
            let stdout = String::from_utf8(out.stdout).unwrap();
            (out.status.code(), stdout.trim().to_owned())
        };
        let ok = |layer: &str| (Some(0), layer.to_owned());
        let fails = |code: i32| (Some(code), String::new());
        assert_eq!(layer("0", None), ok("sbf"));
        assert_eq!(layer("3", None), ok("native"));
        assert_eq!(layer("3", Some("0")), ok("native"));
        assert_eq!(layer("3", Some("1")), fails(3));
        assert_eq!(layer("0", Some("1")), ok("sbf"));
        for broken in [1, 2, 4, 101] {
            assert_eq!(
                layer(&broken.to_string(), None),
                fails(broken),
                "exit {broken}"
            );
        }
    }
}
