#!/usr/bin/env bash
# Builds programs/skilltrial (and programs/venue, the localnet buyback pool) to real sBPF v3 .so files with upstream LLVM (no Solana platform-tools,
# which cannot be downloaded here): a pinned nightly with LLVM 23 and rust-src, sbpf-linker from
# crates.io, a custom target with target_os = "solana", and std built from a patched copy.
#
# Output: target/deploy/skilltrial.so, and beside it skilltrial.so.src-sha256, the hash of the
# inputs it was built from (sources, manifests, lockfile, this script) (tests/program/ refuses a .so built from other sources).
# Exit 0 when it was built; exit 3 (and a loud message) when the toolchain cannot be installed, so
# callers can fall back to native tests and say so; exit 1 when the build ran but produced no .so
# (a broken build must never pass as "toolchain unavailable").
#
# `--print-source-hash` prints that hash and exits (tests/lib.rs checks it computes the same).
#
# Env: SBF_HOME (default ~/.sbf-upstream), SBF_NIGHTLY, SBPF_LINKER_VERSION.
set -Eeuo pipefail
# Exit 3 is reserved for `unavailable` below: any other failing command (the build itself, a
# copy, a hash) exits 1, whatever its own status, so a broken build never reads as "no toolchain".
trap 'echo "!!! scripts/build-sbf.sh failed at line $LINENO (exit $?)" >&2; exit 1' ERR
cd "$(dirname "$0")/.."
ROOT="$PWD"

# SHA-256 over the `sha256sum` lines of every input of the build, sorted by path bytes: the
# program's crate (sources and manifest), the workspace manifest (the `sbf` profile) and lockfile,
# and this script with its target spec and std patch. tests/lib.rs (program_source_sha256)
# computes exactly this; change both together.
STAMPED=(Cargo.toml Cargo.lock programs/skilltrial programs/venue scripts/build-sbf.sh scripts/sbf)
source_hash() {
    find "${STAMPED[@]}" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum \
        | sha256sum | cut -d' ' -f1
}
if [ "${1:-}" = "--print-source-hash" ]; then
    source_hash
    exit 0
fi
SBF_HOME="${SBF_HOME:-$HOME/.sbf-upstream}"
NIGHTLY="${SBF_NIGHTLY:-nightly-2026-10-30}"      # rustc 1.101.0-nightly, LLVM 23.1.4
LINKER_VERSION="${SBPF_LINKER_VERSION:-0.2.6}"
TARGET_JSON="$ROOT/scripts/sbf/bpfel-solana-solana.json"
OUT="$ROOT/target/deploy"
mkdir -p "$SBF_HOME" "$OUT"

unavailable() {
    echo "!!! sBPF toolchain unavailable: $1" >&2
    echo "!!! the program cannot be built to a .so on this machine" >&2
    exit 3
}

if ! rustup run "$NIGHTLY" rustc --version >/dev/null 2>&1; then
    echo "==> installing $NIGHTLY with rust-src"
    rustup toolchain install "$NIGHTLY" --profile minimal --component rust-src --no-self-update \
        || unavailable "rustup could not install $NIGHTLY"
fi
if ! "$SBF_HOME/bin/sbpf-linker" --version >/dev/null 2>&1; then
    echo "==> installing sbpf-linker $LINKER_VERSION (a few minutes)"
    cargo +stable install "sbpf-linker@$LINKER_VERSION" --locked --root "$SBF_HOME" \
        || unavailable "cargo could not install sbpf-linker $LINKER_VERSION"
fi
SYSROOT="$(rustup run "$NIGHTLY" rustc --print sysroot)"
STAMP="$SBF_HOME/rust-src-$NIGHTLY.patched"
if [ ! -f "$STAMP" ]; then
    echo "==> patching a copy of $NIGHTLY's std for target_os = solana"
    rm -rf "$SBF_HOME/rust-src-$NIGHTLY"
    mkdir -p "$SBF_HOME/rust-src-$NIGHTLY"
    cp -a "$SYSROOT/lib/rustlib/src/rust/library" "$SBF_HOME/rust-src-$NIGHTLY/library"
    python3 "$ROOT/scripts/sbf/patch-std.py" "$SBF_HOME/rust-src-$NIGHTLY/library" \
        || unavailable "std of $NIGHTLY could not be patched"
    touch "$STAMP"
fi

echo "==> building programs/skilltrial and programs/venue to sBPF v3"
SRC_HASH="$(source_hash)"
export PATH="$SBF_HOME/bin:$PATH"
# Flags for the target only (host build scripts and proc-macros stay normal). Stack frames are
# 4 KiB; panics abort without a message (Anchor errors go through Result, unaffected).
export CARGO_TARGET_BPFEL_SOLANA_SOLANA_RUSTFLAGS="-C linker=sbpf-linker -Z unstable-options -C panic=immediate-abort -C relocation-model=static -C link-arg=--llvm-args=-bpf-stack-size=4096 -C link-arg=--arch=v3"
export __CARGO_TESTS_ONLY_SRC_ROOT="$SBF_HOME/rust-src-$NIGHTLY/library"
export CARGO_TARGET_DIR="${SBF_TARGET_DIR:-$ROOT/target/sbf}"
cargo +"$NIGHTLY" build --locked --profile sbf -p skilltrial -p skilltrial-venue \
    --target "$TARGET_JSON" -Z json-target-spec -Z build-std=std,panic_abort
SO="$(find "$CARGO_TARGET_DIR/bpfel-solana-solana/sbf" -maxdepth 1 -name '*skilltrial.so' | head -n1)"
if [ -z "$SO" ]; then
    echo "!!! the sBPF build ran but produced no .so" >&2
    exit 1
fi
VENUE="$(find "$CARGO_TARGET_DIR/bpfel-solana-solana/sbf" -maxdepth 1 -name '*skilltrial_venue.so' | head -n1)"
if [ -z "$VENUE" ]; then
    echo "!!! the sBPF build ran but produced no venue .so" >&2
    exit 1
fi
cp "$SO" "$OUT/skilltrial.so"
cp "$VENUE" "$OUT/skilltrial_venue.so"
echo "$SRC_HASH" > "$OUT/skilltrial.so.src-sha256"
echo "built $OUT/skilltrial_venue.so ($(stat -c %s "$OUT/skilltrial_venue.so") bytes), the localnet buyback venue"
echo "built $OUT/skilltrial.so ($(stat -c %s "$OUT/skilltrial.so") bytes, sha256 $(sha256sum "$OUT/skilltrial.so" | cut -c1-16)...)"
