#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (.ci/run calls this script).
# Installs what it needs; safe to run on a fresh machine with the preinstalled Rust toolchain.
#
# Env: SKILLTRIAL_REQUIRE_SBF=1 forbids the native fallback of the program tests: where the sBPF
# toolchain cannot be installed the suite fails (exit 3) instead of testing the program natively.
# Set it wherever the .so must be tested (a CI runner that can install the pinned nightly).
# `--program-layer-for STATUS` prints the program-test layer for build-sbf.sh's exit STATUS (or
# fails as the suite would) and exits; tests/lib.rs tests this policy.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says when it started (seconds into the suite); the last lines repeat how long each
# took, so a slow CI log shows where the time went even when only its tail is kept.
suite_start=$SECONDS
timings=()
last_step=""
last_start=$SECONDS
step() {
    if [ -n "$last_step" ]; then timings+=("$(printf '%5ds  %s' $((SECONDS - last_start)) "$last_step")"); fi
    last_step="$*"
    last_start=$SECONDS
    printf '\n==> [%ds] %s\n' $((SECONDS - suite_start)) "$*"
}
step_times() {
    if [ -n "$last_step" ]; then timings+=("$(printf '%5ds  %s' $((SECONDS - last_start)) "$last_step")"); fi
    last_step=""
    echo "==> time per step (total $((SECONDS - suite_start)) s):"
    printf '    %s\n' "${timings[@]}"
}

# The program-test layer for scripts/build-sbf.sh's exit status: sbf when the .so was built;
# native ONLY for exit 3 (the toolchain cannot be installed), and not even then under
# SKILLTRIAL_REQUIRE_SBF=1; any other status is a broken build and fails with that status.
program_layer() {
    case "$1" in
        0) echo sbf ;;
        3) if [ "${SKILLTRIAL_REQUIRE_SBF:-}" = 1 ]; then
               echo "!!! SKILLTRIAL_REQUIRE_SBF=1: the sBPF toolchain is unavailable, and the program tests may not fall back to the native layer" >&2
               return 3
           fi
           echo native ;;
        *) echo "!!! the sBPF build failed (exit $1): a broken build never falls back to the native layer" >&2
           return "$1" ;;
    esac
}
if [ "${1:-}" = --program-layer-for ]; then
    program_layer "${2:?usage: scripts/test.sh --program-layer-for STATUS}"
    exit 0
fi

# Loud, so a fallback is never mistaken for a tested .so: said when it happens and again last.
native_banner() {
    {
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo "!!! PROGRAM TESTS LAYER: NATIVE. The sBPF toolchain is unavailable on this machine,"
        echo "!!! so the program ran as a native builtin: the .so was NOT built or tested and"
        echo "!!! compute units were NOT measured, and the hosted end-to-end tests (which load the"
        echo "!!! .so into a local validator) did NOT run. SKILLTRIAL_REQUIRE_SBF=1 makes this an error."
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    } >&2
}

step "toolchain: $(rustc --version)"
rustup component add rustfmt clippy >/dev/null 2>&1 || true

# Debian packages the suite needs: Chromium (the HTML report is tested in a real browser),
# libclang (bindgen, for rocksdb under the local validator that `skilltrial localnet` and the
# hosted end-to-end tests run) and PostgreSQL's server binaries (skilltrial-pgtest starts a
# throwaway server per test from them; the `main` cluster the package may create is not used).
# The server counts as present where skilltrial-pgtest would find initdb.
have_postgres_server() {
    local bindir
    if [ -n "${SKILLTRIAL_PG_BINDIR:-}" ]; then [ -x "$SKILLTRIAL_PG_BINDIR/initdb" ]; return; fi
    bindir="$(pg_config --bindir 2>/dev/null)" && [ -x "$bindir/initdb" ] && return 0
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && return 0
    command -v initdb >/dev/null 2>&1
}
packages=()
command -v chromium >/dev/null 2>&1 || packages+=(chromium)
dpkg -s libclang-dev >/dev/null 2>&1 || packages+=(libclang-dev)
have_postgres_server || packages+=(postgresql)
if [ "${#packages[@]}" -gt 0 ]; then
    step "installing ${packages[*]}"
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${packages[@]}" >/dev/null
fi

# refuse_in_tree MESSAGE CRATES_REGEX CARGO_TREE_ARGS...: fails naming every crate of
# CRATES_REGEX found in the normal dependency tree that CARGO_TREE_ARGS select.
refuse_in_tree() {
    local message="$1" crates="$2"
    shift 2
    local tree found
    tree="$(cargo tree "$@" -e normal --prefix none --locked)"
    found="$(grep -E "^($crates) " <<<"$tree" | sort -u || true)"
    if [ -n "$found" ]; then
        echo "$message" >&2
        echo "$found" >&2
        exit 1
    fi
}

step "format"
cargo fmt --all --check

# The pure core must stay pure: the web page runs it in the browser (wasm32), so nothing in its
# dependency tree may need SQLite, an HTTP client, an async runtime, a keychain or Solana RPC.
step "the New-run page: web/wasm for wasm32-unknown-unknown, its JS glue, the TypeScript; web/dist must be what they build"
bash scripts/web.sh --check
# The official Anchor TypeScript client (`@anchor-lang/core`, `@solana/web3.js`) that the hosted
# tests drive against the local validator (tests/hosted/anchor_client.rs). Installed from its
# lockfile once; kept while node_modules holds what that lockfile pins (npm came with the step
# above).
step "the Anchor TypeScript client test's packages (tests/anchor-client: npm ci unless current)"
anchor_client=tests/anchor-client
if ! cmp -s "$anchor_client/package-lock.json" "$anchor_client/node_modules/.installed-lock.json"; then
    (cd "$anchor_client" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$anchor_client/package-lock.json" "$anchor_client/node_modules/.installed-lock.json"
fi
step "core and the page's wasm have no I/O crate in their tree"
refuse_in_tree "skilltrial-core and skilltrial-web must not depend on these (they belong in skilltrial-engine or chain):" \
    'rusqlite|libsqlite3-sys|reqwest|hyper|tokio|mio|keyring|solana-rpc-client|solana-client|anchor-client' \
    -p skilltrial-core -p skilltrial-web --target all

# The on-chain program is tested as a real sBPF .so in a real Solana runtime. Building the .so
# needs a pinned nightly and sbpf-linker (scripts/build-sbf.sh installs both). Where they cannot
# be installed, the same tests run the program natively (a builtin in the same runtime), and the
# output says so loudly. Exit 3 from the build means "toolchain unavailable"; any other failure
# is a broken build and fails the suite.
step "program: build the sBPF .so"
FEATURES=(--features skilltrial-e2e/idl --features skilltrial-e2e/chain --features skilltrial-e2e/validator --features skilltrial-cli/localnet)
sbf_status=0
bash scripts/build-sbf.sh || sbf_status=$?
# Exits here (set -e) with program_layer's status when there is no layer to test.
SKILLTRIAL_PROGRAM_LAYER="$(program_layer "$sbf_status")"
export SKILLTRIAL_PROGRAM_LAYER
if [ "$SKILLTRIAL_PROGRAM_LAYER" = sbf ]; then
    echo "==> PROGRAM TESTS LAYER: the sBPF .so (target/deploy/skilltrial.so) in solana-program-test 4.2.2"
else
    native_banner
fi
# The last word of every run from here, passed or failed, names the layer the program ran on.
summary() {
    status=$?
    step_times
    if [ "$SKILLTRIAL_PROGRAM_LAYER" = sbf ]; then
        echo "==> program tests layer: sBPF .so; suite exit $status"
    else
        native_banner
        echo "!!! program tests layer: NATIVE only; suite exit $status" >&2
    fi
}
trap summary EXIT
# The Solana runtime logs every instruction at debug level; keep the CI log readable.
export RUST_LOG="${RUST_LOG:-error}"

# Clippy lints inside the test build: every cargo command from here compiles the workspace's own
# crates with clippy-driver (exactly as `cargo clippy` does: RUSTC_WORKSPACE_WRAPPER and
# CLIPPY_ARGS, here `-D warnings`), and `--all-targets` covers what `cargo clippy --all-targets`
# checks. Any clippy warning fails the build. The dependencies (rocksdb and Agave among them) are
# then compiled once, for the tests, instead of once more in check mode for a separate clippy run.
RUSTC_WORKSPACE_WRAPPER="$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver)"
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
step "lint (clippy, warnings are errors) while building every target"
cargo test --workspace --all-targets --locked "${FEATURES[@]}" --no-run
# The first-contact build (scripts/try.sh, the README's first command) is the CLI without its
# `chain` feature: it must compile, lint clean, and keep the Solana client graph, the runner and
# the wallet crates out of its tree.
step "the local-only build (try.sh's): no chain crate in its tree; it compiles, lint clean"
refuse_in_tree "skilltrial-cli without its chain feature must not depend on these (scripts/try.sh builds it so):" \
    'skilltrial-chain|skilltrial-runner|solana-rpc-client|solana-client|solana-keypair|anchor-client|anchor-lang|rocksdb|axum' \
    -p skilltrial-cli --no-default-features
cargo check -p skilltrial-cli --no-default-features --locked
step "tests"
cargo test --workspace --locked "${FEATURES[@]}"
if [ "$SKILLTRIAL_PROGRAM_LAYER" = sbf ]; then
    step "program tests again in the NATIVE layer (the fallback, kept working; same build)"
    SKILLTRIAL_PROGRAM_LAYER=native cargo test --workspace --locked "${FEATURES[@]}" --test program
fi
step "IDL: idl/skilltrial.json matches the program (scripts/idl.sh --check)"
bash scripts/idl.sh --check
step "program cost table (layer: $SKILLTRIAL_PROGRAM_LAYER; the same tests, printed)"
cargo test --workspace --locked "${FEATURES[@]}" --test program -- --nocapture --test-threads=1 2>/dev/null \
    | grep -E '^(on-chain cost|compute units|  )'

echo "report screenshots: target/report-screenshots/; the New-run page's: target/page-screenshots/"
