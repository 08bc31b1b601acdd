//! Helpers for SkillTrial's end-to-end tests: where the workspace and the built binary are.
//!
//! The optional dependencies of this crate (feature `chain`) pin the Solana host cohort in
//! Cargo.lock; see ARCHITECTURE.md.

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The `skilltrial` binary built by the same `cargo test --workspace` invocation.
///
/// Test executables live in `target/<profile>/deps/`; binaries one level up. `cargo test
/// --workspace` builds the CLI's binary before any test runs (its own integration tests need it).
pub fn skilltrial_bin() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate the test binary: {e}"))?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("unexpected test binary location {}", exe.display()))?;
    let bin = profile_dir.join(format!("skilltrial{}", std::env::consts::EXE_SUFFIX));
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "{} is not built; run the suite with `cargo test --workspace` (or `cargo build -p skilltrial-cli` first)",
            bin.display()
        ))
    }
}
