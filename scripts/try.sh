#!/usr/bin/env bash
# The main job on embedded defaults: no account, no key. Builds the CLI and validates the two
# example bundles shipped in fixtures/bundles/.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked -p skilltrial-cli
./target/release/skilltrial validate \
    fixtures/bundles/solana-reader-1.4.2 \
    fixtures/bundles/solana-reader-1.5.0 "$@"
