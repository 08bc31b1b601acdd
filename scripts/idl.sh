#!/usr/bin/env bash
# Generates idl/skilltrial.json from programs/skilltrial with Anchor's own IDL builder.
# `bash scripts/idl.sh` writes it; `bash scripts/idl.sh --check` fails if the committed file is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked -q -p skilltrial-e2e --features idl --bin skilltrial-idl
env -u RUSTUP_TOOLCHAIN CARGO_MANIFEST_DIR="$PWD/tests" "${CARGO_TARGET_DIR:-target}/debug/skilltrial-idl" "$@"
