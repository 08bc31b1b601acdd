//! The official Anchor TypeScript client (`@anchor-lang/core` 1.2 with `@solana/web3.js` 1.99,
//! pinned by tests/anchor-client/package-lock.json) against `skilltrial localnet` and the committed
//! IDL: what a Solana developer's own client sees.

use std::process::Command;

use serde_json::Value;
use skilltrial_chain::Pubkey;

use crate::harness::Localnet;

/// Runs tests/anchor-client/roundtrip.mjs as the validator's user (its runner finalizes) and
/// returns what it printed.
fn run_the_script(net: &Localnet) -> Value {
    let root = skilltrial_e2e::workspace_root();
    let folder = root.join("tests/anchor-client");
    assert!(
        folder.join("node_modules/@anchor-lang/core").is_dir(),
        "tests/anchor-client/node_modules is missing: scripts/test.sh installs it (npm ci in that folder)"
    );
    let out = Command::new("node")
        .arg("roundtrip.mjs")
        .current_dir(&folder)
        .env("SKILLTRIAL_RPC_URL", &net.url)
        .env(
            "SKILLTRIAL_WS_URL",
            net.info["websocket_url"].as_str().unwrap(),
        )
        .env("SKILLTRIAL_WALLET", &net.user_keypair)
        .env("SKILLTRIAL_RUNNER", &net.runner_keypair)
        .env("SKILLTRIAL_IDL", root.join("idl/skilltrial.json"))
        .output()
        .unwrap_or_else(|e| panic!("cannot start node (scripts/web.sh installs it): {e}"));
    assert!(
        out.status.success(),
        "roundtrip.mjs failed ({}):\n{}",
        out.status,
        crate::harness::said(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "roundtrip.mjs printed no JSON ({e}):\n{}",
            crate::harness::said(&out)
        )
    })
}

/// The events Anchor's EventParser found in one step's `getTransaction` logs: (name, run).
fn parsed_events(out: &Value, step: &str) -> Vec<(String, String)> {
    let tx = &out["transactions"][step];
    assert!(
        tx["log_messages"].as_u64().is_some_and(|n| n > 0),
        "getTransaction served no log messages for {step} (meta.logMessages null?): {tx}"
    );
    tx["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["data"]["run"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

pub fn open_cancel_finalize_close_with_the_official_client(net: &Localnet) {
    // Given a local validator with the config initialized, when the official client opens,
    // cancels, has the runner finalize, and closes a run through `new Program(idl, provider)`,
    let out = run_the_script(net);
    let run = out["run"].as_str().unwrap().to_owned();
    let user = net.user();
    let user_key = solana_signer::Signer::pubkey(&user).to_string();

    // then it decodes the accounts by name, as the chain client does,
    let config = net.chain.config().unwrap().unwrap();
    assert_eq!(out["program_id"], skilltrial_chain::PROGRAM_ID.to_string());
    assert_eq!(out["config"]["runner"], config.runner.to_string());
    assert_eq!(out["config"]["runnerPayout"], net.payout.to_string());
    assert_eq!(
        out["config"]["feePerTrial"],
        config.fee_per_trial.to_string()
    );
    assert_eq!(out["config_by_coder_name"], config.runner.to_string());
    let opened = &out["run_after_open"];
    assert_eq!(opened["user"], user_key);
    assert_eq!(opened["status"], serde_json::json!({"open": {}}));
    assert_eq!(opened["plannedTrials"], 2);
    assert_eq!(opened["perRequestCap"], "5000");
    let escrow = 2 * (5_000 + config.fee_per_trial);
    assert_eq!(opened["escrowed"], escrow.to_string());
    assert!(out["run_after_cancel"]["status"]["cancelled"]["at"].is_string());
    assert!(out["run_after_finalize"]["status"]["finalized"]["at"].is_string());
    assert!(
        out["run_after_close"].is_null(),
        "{}",
        out["run_after_close"]
    );
    let run_key: Pubkey = run.parse().unwrap();
    assert_eq!(net.chain.account(&run_key).unwrap(), None, "closed");
    let run_id: u64 = opened["runId"].as_str().unwrap().parse().unwrap();
    let next: u64 = out["fee_vault"]["nextRunId"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(next > run_id, "fee vault next_run_id {next}, run {run_id}");

    // parses each step's event from the logs `getTransaction` serves,
    for (step, event) in [
        ("open", "runOpened"),
        ("cancel", "runCancelled"),
        ("finalize", "runFinalized"),
        ("close", "runClosed"),
    ] {
        assert_eq!(
            parsed_events(&out, step),
            [(event.to_owned(), run.clone())],
            "{step}"
        );
    }
    let open_event = &out["transactions"]["open"]["events"][0]["data"];
    assert_eq!(open_event["user"], user_key);
    assert_eq!(open_event["escrowed"], escrow.to_string());

    // receives the events pushed over the websocket (logsSubscribe), each with its transaction,
    let pushed = out["subscribed"].as_array().unwrap();
    assert!(!pushed.is_empty(), "no event came over logsSubscribe");
    for event in pushed {
        let step = match event["name"].as_str().unwrap() {
            "runOpened" => "open",
            "runCancelled" => "cancel",
            "runClosed" => "close",
            other => panic!("an event nobody listened to: {other}"),
        };
        assert_eq!(event["run"], run, "{event}");
        assert_eq!(
            event["signature"], out["transactions"][step]["signature"],
            "{event}"
        );
    }

    // and gets refused instructions' errors by the IDL's names.
    for (call, code, number) in [
        ("run_open_cap_1", "RequestCapTooLow", 6043),
        ("run_close_while_open", "RunNotFinished", 6009),
    ] {
        let error = &out["errors"][call];
        assert_eq!(error["anchor_error"], true, "{call}: {error}");
        assert_eq!(error["code"], code, "{call}: {error}");
        assert_eq!(error["number"], number, "{call}: {error}");
    }
}
