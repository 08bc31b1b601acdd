//! Hosted runs end to end on a real local validator over JSON-RPC.
//!
//! One validator — the real `skilltrial localnet` (Agave 4.2.2's test validator, the sBPF
//! `.so`, the config initialized) — serves every scenario in turn. The user is the real
//! `skilltrial` binary, driven as a person would (`open`, `chain-status`, `cancel --chain`,
//! `refund`, `close`, `anchor`, `verify`, `submit`, `status --remote`, `report --remote`); the
//! runner is either this test, through the same chain client (`skilltrial_chain`: its outbox,
//! its sender, the program's own instruction builders), or the real daemon
//! (`skilltrial runner serve`, `daemon.rs`). Balances are compared to the lamport, fees read from the
//! transactions themselves.
//!
//! Needs `--features validator` (scripts/test.sh builds the CLI with `skilltrial-cli/localnet`
//! in the same invocation) and target/deploy/skilltrial.so (scripts/build-sbf.sh).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod anchor_client;
mod buyback;
mod daemon;
mod harness;
mod localnet;
mod page;
mod progressive;
#[path = "../../cli/tests/support/pty.rs"]
mod pty;
mod refusals;
mod scenarios;
mod workers;

/// One validator at a time: the tests below each start one, and two validators (with a daemon
/// and a browser) on a 2-core machine slow each other more than running one after the other.
static ONE_VALIDATOR: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_validator() -> std::sync::MutexGuard<'static, ()> {
    // A test that panicked while holding it poisoned nothing the next one uses.
    ONE_VALIDATOR
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `scenarios` on a fresh local validator (`skilltrial localnet` with `extra` flags), and
/// once more on another fresh one when — and only when — the validator itself died under them.
///
/// Agave 4.2.2's test validator can panic in its broadcast stage ("All banks frozen … must have
/// a block id", a race upstream fixed after 4.2) on a loaded 2-core machine; `skilltrial localnet`
/// then reports the panic and exits with an error (as it does after 30 s without a new slot). That is not a failure of
/// SkillTrial's code, so the scenarios start over on a new ledger, loudly. A failure with the
/// validator still alive is ours and fails the test at once, as does a second crash.
fn on_a_validator(extra: &[&str], scenarios: impl Fn(&harness::Localnet)) {
    let _one = one_validator();
    for attempt in 1..=2 {
        let mut net = harness::Localnet::start_with(extra);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| scenarios(&net)));
        let Err(panic) = outcome else {
            net.stop();
            return;
        };
        match net.validator_died() {
            Some(status) if attempt == 1 => {
                #[allow(clippy::print_stderr)]
                {
                    eprintln!(
                        "!!! the local validator died under the scenarios (`skilltrial localnet` exited with {status}): \
                         starting them over on a fresh validator, once"
                    );
                }
            }
            _ => std::panic::resume_unwind(panic),
        }
    }
}

#[test]
fn hosted_runs_end_to_end_on_a_local_validator() {
    // Where the sBPF toolchain cannot be installed there is no .so to load (scripts/test.sh's
    // native fallback, announced loudly there): the validator cannot run the program.
    if std::env::var("SKILLTRIAL_PROGRAM_LAYER").as_deref() == Ok("native") {
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "!!! the hosted end-to-end tests did NOT run: no sBPF .so on this machine (native program layer)"
            );
        }
        return;
    }
    let in_turn: [(&str, Scenario); 13] = [
        (
            "escrow, settle, cancel, finalize, close, anchor, verify",
            scenarios::escrow_settle_cancel_finalize_close_then_anchor_and_verify,
        ),
        (
            "refund after a short deadline",
            scenarios::refund_after_a_short_deadline,
        ),
        (
            "open asks",
            scenarios::open_asks_and_says_what_an_escrow_alone_leads_to,
        ),
        ("a second wallet", scenarios::a_second_wallet_is_refused),
        (
            "the outbox resumes",
            scenarios::the_outbox_resumes_and_never_signs_twice,
        ),
        (
            "a killed open",
            scenarios::a_killed_open_is_resumed_not_repeated,
        ),
        ("operator commands", scenarios::operator_commands),
        (
            "a pack from the validator",
            scenarios::a_pack_from_the_local_validator,
        ),
        ("buybacks", buyback::buybacks_burn_what_the_fees_buy),
        (
            "the runner daemon",
            daemon::the_runner_daemon_serves_a_hosted_run,
        ),
        (
            "a progressive run on the daemon",
            progressive::a_progressive_run_is_charged_per_turn_and_settled_per_trial,
        ),
        (
            "three workers on one database",
            workers::three_workers_share_thirty_runs_of_ten_wallets,
        ),
        (
            "takeovers on one database",
            workers::dead_and_cut_off_workers_are_taken_over_with_nothing_sent_or_charged_twice,
        ),
    ];
    // `SKILLTRIAL_HOSTED_ONLY=<words>` runs only the scenarios whose name contains them (for
    // working on one; the suite sets nothing and runs all).
    let only = std::env::var("SKILLTRIAL_HOSTED_ONLY").ok();
    on_a_validator(&[], |net| {
        for (what, scenario) in in_turn {
            if only.as_deref().is_some_and(|words| !what.contains(words)) {
                #[allow(clippy::print_stderr)]
                {
                    eprintln!("hosted scenario \"{what}\": skipped (SKILLTRIAL_HOSTED_ONLY)");
                }
                continue;
            }
            timed(what, || scenario(net));
        }
    });
}

/// One scenario on a shared validator.
type Scenario = fn(&harness::Localnet);

/// Runs one scenario and prints how long it took (the suite's time is mostly these).
fn timed(what: &str, scenario: impl FnOnce()) {
    let started = std::time::Instant::now();
    scenario();
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "hosted scenario \"{what}\": {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
}

/// The New-run page in Debian's Chromium (`web/tests/e2e.mjs`) against the daemon, this
/// validator and a loopback model server.
#[test]
fn the_new_run_page_in_a_real_browser() {
    if std::env::var("SKILLTRIAL_PROGRAM_LAYER").as_deref() == Ok("native") {
        return;
    }
    on_a_validator(&[], page::the_new_run_page_in_a_real_browser);
}

/// The page against a daemon started with `--demo-model`: no key, no model server; only the
/// labelled scripted profile is offered, a run completes, its report says so.
#[test]
fn the_new_run_page_on_a_demo_model_daemon() {
    if std::env::var("SKILLTRIAL_PROGRAM_LAYER").as_deref() == Ok("native") {
        return;
    }
    on_a_validator(&[], page::the_page_on_a_demo_model_daemon);
}

/// The daemon where it cannot do what was asked: profiles it cannot call, a model it can no longer
/// call, a settlement refused for the spending limit.
#[test]
fn the_runner_daemon_serves_what_it_can_and_settles_through_refusals() {
    if std::env::var("SKILLTRIAL_PROGRAM_LAYER").as_deref() == Ok("native") {
        return;
    }
    on_a_validator(&["--no-init"], |net| {
        refusals::init_config(net);
        refusals::only_the_profiles_it_can_call_are_offered(net);
        refusals::a_run_whose_model_cannot_be_called_is_finalized(net);
        refusals::a_spent_limit_pauses_dispatch_and_the_run_settles_after(net);
    });
}

/// The official Anchor TypeScript client (tests/anchor-client) opens, cancels, closes a run,
/// decodes accounts, events (from `getTransaction` logs and `logsSubscribe`) and errors by name.
#[test]
fn the_official_anchor_client_round_trips_on_localnet() {
    if std::env::var("SKILLTRIAL_PROGRAM_LAYER").as_deref() == Ok("native") {
        return;
    }
    on_a_validator(
        &[],
        anchor_client::open_cancel_finalize_close_with_the_official_client,
    );
}

/// `localnet --bind`, a pause that is no crash, and a real validator crash reported. Not retried on
/// a crash: crashing it is the point.
#[test]
fn localnet_binds_where_told_and_reports_a_crashed_validator() {
    if std::env::var("SKILLTRIAL_PROGRAM_LAYER").as_deref() == Ok("native") {
        return;
    }
    let _one = one_validator();
    localnet::binds_survives_a_pause_and_reports_a_crash();
}

/// A settlement refused for good (the Run's deadline passed first). Apart from the rest: it waits
/// about four minutes for the shortest deadline `submit` accepts.
#[test]
fn the_runner_daemon_finalizes_a_run_whose_deadline_passed_before_it_settled() {
    if std::env::var("SKILLTRIAL_PROGRAM_LAYER").as_deref() == Ok("native") {
        return;
    }
    on_a_validator(&["--no-init"], |net| {
        refusals::init_config(net);
        refusals::a_run_past_its_deadline_keeps_what_settled_and_the_daemon_goes_on(net);
    });
}

#[test]
fn an_operator_initializes_the_config_and_hands_over_the_admin_role() {
    if std::env::var("SKILLTRIAL_PROGRAM_LAYER").as_deref() == Ok("native") {
        return;
    }
    on_a_validator(&["--no-init"], scenarios::admin_init_and_handover);
}

/// A benchmark, not a check: `cargo test --features skilltrial-e2e/validator --features
/// skilltrial-cli/localnet --test hosted -- --ignored --nocapture bench` prints the daemon's
/// throughput with 20 concurrent hosted runs.
#[test]
#[ignore = "a benchmark: prints numbers; run it with --ignored --nocapture"]
fn bench_the_runner_daemon_with_twenty_concurrent_runs() {
    if std::env::var("SKILLTRIAL_PROGRAM_LAYER").as_deref() == Ok("native") {
        return;
    }
    let _one = one_validator();
    let net = harness::Localnet::start();
    daemon::bench_twenty_concurrent_runs(&net);
    net.stop();
}

/// A benchmark, not a check: `cargo test --features skilltrial-e2e/validator --features
/// skilltrial-cli/localnet --test hosted -- --ignored --nocapture bench_workers` prints trials/s
/// with 1, 2 and 3 workers on one PostgreSQL and the takeover time after a SIGKILL (docs/runner.md).
#[test]
#[ignore = "a benchmark: prints numbers; run it with --ignored --nocapture"]
fn bench_workers_on_one_database() {
    if std::env::var("SKILLTRIAL_PROGRAM_LAYER").as_deref() == Ok("native") {
        return;
    }
    let _one = one_validator();
    let net = harness::Localnet::start();
    workers::bench_workers_on_one_database(&net);
    net.stop();
}
