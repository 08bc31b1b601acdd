#!/usr/bin/env bash
# Builds the New-run page into web/dist, which is committed and embedded in the runner daemon
# (so that `cargo build` needs neither Node nor wasm-bindgen):
#   1. web/wasm (skilltrial-core's validation, planning and transactions) for
#      wasm32-unknown-unknown, then its JS glue with wasm-bindgen-cli at the version Cargo.lock
#      pins (installed under the target dir on first use);
#   2. the TypeScript, type-checked (tsc) and bundled (esbuild) from the committed lockfile.
# `--check` builds into a temporary folder and fails if web/dist differs: CI runs it, so the
# committed page is always the one its sources build.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
target="${CARGO_TARGET_DIR:-$root/target}"
check=false
[ "${1:-}" = "--check" ] && check=true

step() { printf '\n==> %s\n' "$*"; }

version="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)"
[ -n "$version" ] || { echo "!!! Cargo.lock pins no wasm-bindgen" >&2; exit 1; }
tools="$target/tools/wasm-bindgen-$version"
if ! "$tools/bin/wasm-bindgen" --version 2>/dev/null | grep -qF " $version"; then
    step "wasm-bindgen-cli $version (once; about 3 minutes on 2 cores)"
    # Only the `wasm-bindgen` binary, without the TLS its test runner downloads with. Not
    # --locked: its own lockfile names a webpki-roots release the registry here lacks.
    cargo install wasm-bindgen-cli --version "=$version" --no-default-features --bin wasm-bindgen \
        --root "$tools" --target-dir "$target/tools/build" --quiet
fi

if ! command -v npm >/dev/null 2>&1; then
    step "Node.js and npm from Debian"
    if [ "$(id -u)" -eq 0 ]; then apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
    else sudo apt-get update -qq && sudo apt-get install -y -qq nodejs npm >/dev/null; fi
fi

step "web/wasm for wasm32-unknown-unknown (profile web)"
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
# Paths in the binary are the same on every machine: the checkout and the registry are renamed.
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="--remap-path-prefix=$root=/skilltrial --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"
cargo build -p skilltrial-web --profile web --target wasm32-unknown-unknown --locked --quiet
rm -rf web/pkg
"$tools/bin/wasm-bindgen" --target web --out-dir web/pkg \
    "$target/wasm32-unknown-unknown/web/skilltrial_web.wasm"

step "the page: npm ci, tsc --noEmit, esbuild"
cd web
npm ci --no-audit --no-fund --loglevel=error
npx --no-install tsc -p tsconfig.json
if $check; then
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    node build.mjs "$out"
    if ! diff -r "$root/web/dist" "$out" >/dev/null; then
        diff -rq "$root/web/dist" "$out" >&2 || true
        echo "!!! web/dist is not what its sources build: run bash scripts/web.sh and commit web/dist" >&2
        exit 1
    fi
    echo "web/dist is current"
else
    rm -rf dist
    node build.mjs dist
    ls -l dist
fi
