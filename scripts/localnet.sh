#!/usr/bin/env bash
# A real local validator with the SkillTrial program, for trying hosted runs: builds the program
# .so (scripts/build-sbf.sh) and the CLI with its `localnet` feature (the first build compiles
# Agave's validator and rocksdb: about 20 minutes on 2 cores; libclang-dev is installed if
# missing), then runs `skilltrial localnet`. Arguments go to `skilltrial localnet`
# (see `skilltrial localnet --help`). Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! dpkg -s libclang-dev >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libclang-dev >/dev/null
fi
bash scripts/build-sbf.sh >&2
cargo build --locked -p skilltrial-cli --features localnet >&2
# Where cargo put it: CARGO_TARGET_DIR when set, else ./target.
bin="${CARGO_TARGET_DIR:-target}/debug/skilltrial"
echo "==> the binary is $bin (with localnet)" >&2
exec "$bin" localnet "$@"
