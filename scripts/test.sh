#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (.ci/run calls this script).
# Installs what it needs; safe to run on a fresh machine with the preinstalled Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain: $(rustc --version)"
rustup component add rustfmt clippy >/dev/null 2>&1 || true

# The HTML report is tested in a real browser: Debian's Chromium.
if ! command -v chromium >/dev/null 2>&1; then
    step "installing chromium (browser test of the HTML report)"
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

step "format"
cargo fmt --all --check

step "lint (clippy, warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
cargo test --workspace --locked
echo "report screenshots: target/report-screenshots/"
