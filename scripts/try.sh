#!/usr/bin/env bash
# The main job on embedded defaults: no account or key needed.
#
# Builds the CLI, validates the two example bundles, plans a 54-trial paired run (baseline,
# solana-reader 1.4.2, solana-reader 1.5.0; 6 tasks x 3 repetitions) on solana-core@1.0.3, runs
# it, and writes the JSON and HTML reports. Without a key it uses the built-in scripted model,
# labelled as such everywhere. With ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL set, the
# same command runs against the real model under a $4 cap (pass --scripted to keep the script).
# Extra arguments go to `skilltrial demo` (see `skilltrial demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked -p skilltrial-cli --no-default-features
echo "==> the binary is target/release/skilltrial (\`cargo install --locked --path cli\` puts it on PATH)" >&2
exec ./target/release/skilltrial demo "$@"
