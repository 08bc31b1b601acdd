//! The scenarios, in the order one validator serves them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use skilltrial_chain::Pubkey;
use skilltrial_chain::anchor::AnchorMemo;
use skilltrial_chain::constants::MIN_PER_REQUEST_CAP;
use skilltrial_chain::ix::{self, RunFinalizeArgs, RunSettleArgs, TrialCharge};
use skilltrial_chain::outbox::{Claim, EntryState, Outbox, Signed};
use skilltrial_chain::send::{Fees, Sender};
use skilltrial_core::report::Report;
use skilltrial_core::settlement::{EvidenceRecord, SettledBatch, Settlement, batch_evidence_hash};
use solana_signer::Signer;

use crate::harness::{Localnet, said};

/// The SOL/USD rate every plan pins: $150 per SOL.
const SOL_USD: &str = "150";
const USD_MICROS_PER_SOL: u128 = 150_000_000;

/// A planned, locally executed run: its id (manifest hash, hex), its report, and the largest
/// per-trial reserve in µUSD.
struct Planned {
    run: String,
    report: Report,
    largest_reserve: u64,
}

fn plan_and_run(net: &Localnet, seed: &str) -> Planned {
    let profiles = net.dir.path().join("profiles.toml");
    let out = net.local(&[
        "plan",
        "--model",
        "loopback",
        "--profiles",
        profiles.to_str().unwrap(),
        "--a",
        "fixtures/bundles/solana-reader-1.4.2",
        "--b",
        "fixtures/bundles/solana-reader-1.5.0",
        "--reps",
        "1",
        "--cap-usd",
        "4",
        "--seed",
        seed,
        "--sol-usd",
        SOL_USD,
        "--sol-usd-source",
        "the test's own rate",
        "--json",
    ]);
    assert!(out.status.success(), "plan: {}", said(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = plan["run"].as_str().unwrap().to_owned();
    assert_eq!(
        plan["manifest"]["sol_usd"]["usd_micros_per_sol"],
        150_000_000
    );
    let dry = net.local(&["run", "--manifest", &run, "--dry-run", "--json"]);
    assert!(dry.status.success(), "{}", said(&dry));
    let dry: Value = serde_json::from_slice(&dry.stdout).unwrap();
    let largest_reserve = dry["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["reserve"].as_u64().unwrap())
        .max()
        .unwrap();
    let asked = net.server.requests().len();
    let ran = net.local(&["run", "--manifest", &run, "--json"]);
    assert!(ran.status.success(), "run: {}", said(&ran));
    assert_eq!(
        net.server.requests().len() - asked,
        18,
        "every trial was a real request to the loopback model server"
    );
    let out_dir = net.dir.path().join(format!("report-{seed}"));
    let reported = net.local(&["report", &run, "--out", out_dir.to_str().unwrap()]);
    assert!(reported.status.success(), "report: {}", said(&reported));
    let doc: Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("report.json")).unwrap()).unwrap();
    Planned {
        run,
        report: Report::from_value(&doc).unwrap(),
        largest_reserve,
    }
}

/// Evidence for trials `range` of `report`, trial `i` charged `5_000 + i` lamports.
fn evidence(report: &Report, range: std::ops::Range<usize>) -> Vec<EvidenceRecord> {
    range
        .map(|i| {
            let index = u64::from(report.trials[i].index);
            report.evidence_of(i, 5_000 + index).unwrap().unwrap()
        })
        .collect()
}

/// The runner settles one batch; returns its signature.
fn settle(net: &Localnet, run: &Pubkey, run_id: u64, records: &[EvidenceRecord]) -> String {
    let args = RunSettleArgs {
        expected_run_id: run_id,
        evidence_hash: batch_evidence_hash(records),
        trials: records
            .iter()
            .map(|r| TrialCharge {
                index: r.trial(),
                usage: r.usage_lamports(),
            })
            .collect(),
    };
    let sent = net
        .send_as(
            &net.runner,
            &format!("settle:{run}:{}", records[0].trial()),
            &[ix::run_settle(&net.runner.pubkey(), run, &net.payout, args)],
        )
        .unwrap();
    sent.signature.to_string()
}

fn write_report(net: &Localnet, name: &str, report: &Report) -> PathBuf {
    let path = net.dir.path().join(name);
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&report.to_value().unwrap()).unwrap(),
    )
    .unwrap();
    path
}

fn verify(net: &Localnet, report: &Path, extra: &[&str]) -> (Option<i32>, Value, String) {
    let mut args = vec!["verify", report.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let out = net.cli(&net.user_keypair, &args);
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), doc, said(&out))
}

/// `verify --signature <signature> --signer <signer>`, waiting for finality.
fn verify_anchor(
    net: &Localnet,
    report: &Path,
    signature: &str,
    signer: &str,
) -> (Option<i32>, Value, String) {
    verify(
        net,
        report,
        &[
            "--signature",
            signature,
            "--signer",
            signer,
            "--wait-secs",
            "90",
        ],
    )
}

fn open(net: &Localnet, run: &str, deadline: &str) -> Value {
    net.cli_json(
        &net.user_keypair,
        &[
            "open",
            "--manifest",
            run,
            "--runner",
            &net.runner.pubkey().to_string(),
            "--deadline",
            deadline,
            "--yes",
        ],
    )
}

/// The full cycle with exact balances: open (escrow), the runner settles 10 trials, the user
/// cancels, the runner settles the 8 it already ran within the cancel window and finalizes with
/// the report hash, the user closes; then anchor and verify, passing and failing.
pub fn escrow_settle_cancel_finalize_close_then_anchor_and_verify(net: &Localnet) {
    let planned = plan_and_run(net, "1");
    let user = net.user();
    let fee_vault = skilltrial_chain::pda::fee_vault();
    let (user_0, payout_0, vault_0) = (
        net.balance(&user.pubkey()),
        net.balance(&net.payout),
        net.balance(&fee_vault),
    );

    // --- open: the escrow is planned × (cap + fee), the cap the largest reserve at $150/SOL.
    let opened = open(net, &planned.run, "10m");
    let address: Pubkey = opened["run"].as_str().unwrap().parse().unwrap();
    let cap = (u128::from(planned.largest_reserve) * 1_000_000_000).div_ceil(USD_MICROS_PER_SOL);
    assert_eq!(
        opened["per_request_cap_lamports"],
        u64::try_from(cap).unwrap()
    );
    assert_eq!(opened["planned_trials"], 18);
    let fee = opened["fee_per_trial_lamports"].as_u64().unwrap();
    assert_eq!(fee, 200_000);
    let escrow = opened["escrow_lamports"].as_u64().unwrap();
    assert_eq!(u128::from(escrow), 18 * (cap + u128::from(fee)));
    let open_fee = net.cost("open", opened["signature"].as_str().unwrap());
    let run_lamports = net.balance(&address);
    let rent = run_lamports - escrow;
    assert_eq!(
        user_0 - net.balance(&user.pubkey()),
        escrow + rent + open_fee,
        "the user paid exactly the escrow, the Run's rent and the transaction fee"
    );
    // A second `open` of the same manifest signs nothing: it shows the Run.
    let again = open(net, &planned.run, "10m");
    assert_eq!(again["already_open"], true);
    assert_eq!(again["run"], opened["run"]);

    // --- chain-status decodes it.
    let status = net.cli_json(&net.user_keypair, &["chain-status", &address.to_string()]);
    assert_eq!(status["status"], "open");
    assert_eq!(status["escrowed_lamports"], escrow);
    assert_eq!(status["manifest_hash"], planned.run.as_str());
    assert_eq!(status["planned_trials"], 18);
    let run_id = status["run_id"].as_u64().unwrap();

    // --- the runner settles trials 0..10; the user cancels; the runner settles 10..18.
    let first = evidence(&planned.report, 0..10);
    let second = evidence(&planned.report, 10..18);
    let s1 = settle(net, &address, run_id, &first);
    net.cost("(runner) settle 10 trials", &s1);
    let cancelled = net.cli_json(
        &net.user_keypair,
        &["cancel", "--chain", &address.to_string()],
    );
    assert_eq!(cancelled["cancelled"], true);
    let cancel_fee = net.cost("cancel --chain", cancelled["signature"].as_str().unwrap());
    let s2 = settle(net, &address, run_id, &second);
    net.cost("(runner) settle 8 trials", &s2);
    let status = net.cli_json(&net.user_keypair, &["chain-status", &address.to_string()]);
    assert_eq!(status["status"], "cancelled");
    assert_eq!(status["settled_trials"], 18);
    assert_eq!(status["settle_batches"], 2);
    let usage: u64 = (0..18).map(|i| 5_000 + i).sum();
    assert_eq!(status["settled_usage_lamports"], usage);
    assert_eq!(status["settled_fees_lamports"], 18 * fee);

    // --- the report carries the settlement and is sealed; the runner finalizes with its hash.
    let mut report = planned.report.clone();
    report.settlement = Some(Settlement::new(
        skilltrial_chain::PROGRAM_ID.to_string(),
        address.to_string(),
        run_id,
        vec![
            SettledBatch::new(first, Some(s1)),
            SettledBatch::new(second, Some(s2)),
        ],
    ));
    let report_hash = report.seal().unwrap();
    let finalized = net
        .send_as(
            &net.runner,
            &format!("finalize:{address}"),
            &[ix::run_finalize(
                &net.runner.pubkey(),
                &address,
                RunFinalizeArgs {
                    expected_run_id: run_id,
                    report_hash: report_hash.0,
                },
            )],
        )
        .unwrap();
    net.cost("(runner) finalize", &finalized.signature.to_string());
    let report_path = write_report(net, "hosted-report.json", &report);
    let (code, doc, text) = verify(net, &report_path, &["--run", &address.to_string()]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(doc["run_account"]["ok"], true, "{doc}");

    // --- close: everything the Run holds comes back, to the lamport.
    let user_before_close = net.balance(&user.pubkey());
    let held = net.balance(&address);
    assert_eq!(held, escrow - usage - 18 * fee + rent);
    let closed = net.cli_json(&net.user_keypair, &["close", &address.to_string()]);
    let close_fee = net.cost("close", closed["signature"].as_str().unwrap());
    assert_eq!(closed["returned_lamports"], held);
    assert_eq!(net.balance(&address), 0, "the Run account is gone");
    assert_eq!(
        net.balance(&user.pubkey()),
        user_before_close + held - close_fee
    );
    // Conservation: the user's loss is exactly usage, fees and their own transaction fees.
    assert_eq!(
        user_0 - net.balance(&user.pubkey()),
        usage + 18 * fee + open_fee + cancel_fee + close_fee
    );
    assert_eq!(
        net.balance(&net.payout) - payout_0,
        usage,
        "the payout got the usage"
    );
    assert_eq!(
        net.balance(&fee_vault) - vault_0,
        18 * fee,
        "the vault got the fees"
    );

    // --- after the close, `verify --run` answers from the chain's history alone: the finalize
    // transaction's `RunFinalized` event.
    let (code, doc, text) = verify(net, &report_path, &["--run", &address.to_string()]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(doc["run_account"]["ok"], true, "{doc}");
    assert_eq!(
        doc["run_account"]["source"], "finalize_transaction",
        "{doc}"
    );
    assert_eq!(
        doc["run_account"]["finalize_signature"],
        finalized.signature.to_string()
    );
    let out = net.cli(
        &net.user_keypair,
        &[
            "verify",
            report_path.to_str().unwrap(),
            "--run",
            &address.to_string(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains(&format!(
            "run {address} (closed): its finalize transaction {} agrees",
            finalized.signature
        )),
        "{text}"
    );
    // Another report of the same run (its answers edited, sealed again, its settlement intact):
    // the report hash the finalization anchored is named.
    let mut other = report.clone();
    other.trials[0].attempts.last_mut().unwrap().error = Some("edited".to_owned());
    other.seal().unwrap();
    let other_path = write_report(net, "other-report.json", &other);
    let (code, doc, text) = verify(net, &other_path, &["--run", &address.to_string()]);
    assert_eq!(code, Some(1), "{text}");
    let fields: Vec<&str> = doc["run_account"]["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["report hash"], "{doc}");
    // A run id the address never had: nothing in its history finalized it, and that is said.
    let mut stranger = report.clone();
    stranger.settlement.as_mut().unwrap().run_id = run_id + 1_000;
    stranger.seal().unwrap();
    let stranger_path = write_report(net, "stranger-report.json", &stranger);
    let (code, _, text) = verify(net, &stranger_path, &["--run", &address.to_string()]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains(&format!("no Run account for run id {}", run_id + 1_000)),
        "{text}"
    );

    anchor_and_verify(net, &report, &report_path);
}

fn anchor_and_verify(net: &Localnet, report: &Report, report_path: &Path) {
    let user = net.user().pubkey().to_string();
    let other = net.other().pubkey().to_string();
    // --- anchor, then verify from the file and the cluster.
    let anchored = net.cli_json(
        &net.user_keypair,
        &["anchor", report_path.to_str().unwrap()],
    );
    let signature = anchored["signature"].as_str().unwrap().to_owned();
    // Landed, not yet final (a local validator finalizes some 13 s after confirming): not a
    // mismatch, its own exit code, and nothing printed as a failure.
    let at_once = [
        "--signature",
        signature.as_str(),
        "--signer",
        user.as_str(),
        "--wait-secs",
        "0",
    ];
    let (code, doc, text) = verify(net, report_path, &at_once);
    assert_eq!(code, Some(75), "{text}");
    assert_eq!(
        (&doc["ok"], &doc["pending"]),
        (&Value::Bool(false), &Value::Bool(true))
    );
    assert!(
        matches!(
            doc["anchor"]["pending"].as_str(),
            Some("processed" | "confirmed")
        ),
        "{doc}"
    );
    assert_eq!(doc["anchor"]["problems"], serde_json::json!([]), "{doc}");
    let mut args = vec!["verify", report_path.to_str().unwrap()];
    args.extend_from_slice(&at_once);
    let out = net.cli(&net.user_keypair, &args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(75), "{}", said(&out));
    assert!(
        !text.contains("MISMATCH") && text.contains(&format!("PENDING: anchor {signature} is ")),
        "{text}"
    );
    assert_eq!(
        net.cost("anchor", &signature),
        5_000,
        "one signature, no priority fee"
    );
    // With --with-compute-unit-price the transaction carries that price: the fee is the
    // signature's plus ceil(limit × price / 10^6), the limit sized by simulation.
    // Anchoring the same report again shows the anchor and signs nothing ...
    let again = net.cli_json(
        &net.user_keypair,
        &["anchor", report_path.to_str().unwrap()],
    );
    assert_eq!(again["already_anchored"], true);
    assert_eq!(again["signature"], anchored["signature"]);
    // ... unless asked to.
    let priced = net.cli_json(
        &net.user_keypair,
        &[
            "anchor",
            report_path.to_str().unwrap(),
            "--again",
            "--with-compute-unit-price",
            "1000",
        ],
    );
    let priced_signature = priced["signature"].as_str().unwrap();
    let (limit, price) = compute_budget(&net.transaction(priced_signature));
    assert_eq!(price, Some(1_000));
    let units = net.transaction(priced_signature)["meta"]["computeUnitsConsumed"]
        .as_u64()
        .unwrap();
    let limit = u64::from(limit.unwrap());
    assert!(
        limit >= units && limit <= units * 6 / 5 + 1_000 + 300,
        "{limit} for {units} CU"
    );
    assert_eq!(
        net.cost("anchor --with-compute-unit-price 1000", priced_signature),
        5_000 + (limit * 1_000).div_ceil(1_000_000)
    );
    assert!(anchored["memo"].as_str().unwrap().starts_with("st1:"));
    let (code, doc, text) = verify_anchor(net, report_path, &signature, &user);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(doc["anchor"]["ok"], true, "{doc}");
    assert_eq!(doc["anchor"]["memo"], anchored["memo"]);

    // A memo from another wallet: the expected signer is not among its signers.
    let (code, doc, text) = verify_anchor(net, report_path, &signature, &other);
    assert_eq!(code, Some(1), "{text}");
    let problems = doc["anchor"]["problems"].to_string();
    assert!(problems.contains(&format!("not by {other}")), "{problems}");
    // The same report anchored by the other wallet does not anchor it for the user.
    let theirs = net.cli_json(
        &net.other_keypair,
        &["anchor", report_path.to_str().unwrap()],
    );
    let (code, doc, text) = verify_anchor(
        net,
        report_path,
        theirs["signature"].as_str().unwrap(),
        &user,
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(
        doc["anchor"]["problems"].to_string().contains("not by"),
        "{doc}"
    );

    // A memo with other bytes, signed by the user: named with both texts.
    let mut wrong = AnchorMemo::parse(anchored["memo"].as_str().unwrap().as_bytes()).unwrap();
    wrong.report_hash[0] ^= 1;
    let sent = net
        .send_as(
            &net.user(),
            "other bytes",
            &[wrong.instruction(&net.user().pubkey())],
        )
        .unwrap();
    let (code, doc, text) = verify_anchor(net, report_path, &sent.signature.to_string(), &user);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        doc["anchor"]["problems"]
            .to_string()
            .contains("its memo says"),
        "{doc}"
    );

    // A tampered report, even re-sealed so its own hash recomputes, no longer matches the memo.
    let mut tampered = report.clone();
    tampered.trials[0]
        .attempts
        .last_mut()
        .unwrap()
        .answer_sha256 = Some("0".repeat(64));
    tampered.seal().unwrap();
    let tampered_path = write_report(net, "tampered.json", &tampered);
    let (code, doc, text) = verify_anchor(net, &tampered_path, &signature, &user);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        doc["anchor"]["problems"]
            .to_string()
            .contains("its memo says"),
        "{doc}"
    );
    // Whose anchor it must be is required: a usage error.
    let out = net.cli(
        &net.user_keypair,
        &[
            "verify",
            report_path.to_str().unwrap(),
            "--signature",
            &signature,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    // And edited without re-sealing, its own report hash fails first.
    let mut doc_edit = report.to_value().unwrap();
    doc_edit["trials"][0]["task"] = Value::from("edited");
    let edited = net.dir.path().join("edited.json");
    std::fs::write(&edited, doc_edit.to_string()).unwrap();
    let out = net.cli(&net.user_keypair, &["verify", edited.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0), "{}", said(&out));
    // `anchor` refuses a report whose hash does not recompute: it would vouch for another.
    let out = net.cli(&net.user_keypair, &["anchor", edited.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0));
}

/// The compute-unit limit and price a transaction's Compute Budget instructions set.
fn compute_budget(tx: &Value) -> (Option<u32>, Option<u64>) {
    let decoded = skilltrial_core::solana::transaction::decode_response(tx).unwrap();
    let budget: Pubkey = "ComputeBudget111111111111111111111111111111"
        .parse()
        .unwrap();
    let (mut limit, mut price) = (None, None);
    for ix in &decoded.wire.instructions {
        if decoded.account_keys[usize::from(ix.program_index)].0 != budget.to_bytes() {
            continue;
        }
        match ix.data.split_first() {
            Some((2, rest)) => limit = Some(u32::from_le_bytes(rest.try_into().unwrap())),
            Some((3, rest)) => price = Some(u64::from_le_bytes(rest.try_into().unwrap())),
            _ => {}
        }
    }
    (limit, price)
}

/// The operator's commands: `admin show`, `update`, `propose` (time-locked: `apply` refused
/// before its time), a stranger refused, and `buyback-log`. The localnet wallet is the admin.
pub fn operator_commands(net: &Localnet) {
    let user = &net.user_keypair;
    let shown = net.cli_json(user, &["admin", "show"]);
    assert_eq!(shown["admin"], net.user().pubkey().to_string());
    assert_eq!(shown["runner"], net.runner.pubkey().to_string());
    assert_eq!(shown["fee_per_trial_lamports"], 200_000);
    assert_eq!(shown["min_deadline_secs"], 10);
    assert!(shown["pending"].is_null());

    let updated = net.cli_json(user, &["admin", "update", "--fee-lamports", "250000"]);
    net.cost("admin update", updated["signature"].as_str().unwrap());
    let shown = net.cli_json(user, &["admin", "show"]);
    assert_eq!(shown["fee_per_trial_lamports"], 250_000);
    // The program's own bound: a fee above 0.01 SOL is refused, by name.
    let out = net.cli(user, &["admin", "update", "--fee-lamports", "10000001"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("refused"), "{}", said(&out));

    let proposed = net.cli_json(
        user,
        &["admin", "propose", "--max-buyback-lamports", "5000000000"],
    );
    assert!(proposed["effective_at"].is_string(), "{proposed}");
    let shown = net.cli_json(user, &["admin", "show"]);
    assert_eq!(
        shown["pending"]["change"]["max_buyback_lamports"],
        5_000_000_000u64
    );
    let out = net.cli(user, &["admin", "apply"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        said(&out).contains("time lock has not passed"),
        "{}",
        said(&out)
    );

    let out = net.cli(
        &net.other_keypair,
        &["admin", "update", "--fee-lamports", "1"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        said(&out).contains("not the program's admin"),
        "{}",
        said(&out)
    );
    // Sent anyway, the program refuses the stranger.
    let other = net.other();
    let refused = net
        .send_as(
            &other,
            "stranger update",
            &[ix::config_update(
                &other.pubkey(),
                ix::ConfigUpdateArgs {
                    fee_per_trial: Some(1),
                    min_deadline_secs: None,
                    revoke_runner: false,
                    propose_admin: None,
                },
            )],
        )
        .unwrap_err();
    assert!(refused.to_string().contains("refused"), "{refused}");

    let log = net.cli_json(user, &["buyback-log"]);
    assert_eq!(log["count"], 0);
    assert_eq!(log["entries"], serde_json::json!([]));
    net.print_costs();
}

/// A run opened with the shortest deadline `open` allows on localnet (the config's minimum of
/// 10 s plus `core::hosted::LANDING_ALLOWANCE_SECS` for landing): refund is refused before it,
/// and after it returns
/// everything the Run held (escrow and rent), to the lamport. Then a Run with another digest
/// fails `verify --run` against the first report.
pub fn refund_after_a_short_deadline(net: &Localnet) {
    let planned = plan_and_run(net, "2");
    let user = net.user();
    let shortest = 10 + skilltrial_core::hosted::LANDING_ALLOWANCE_SECS;
    let opened = open(net, &planned.run, &format!("{shortest}s"));
    let address = opened["run"].as_str().unwrap().to_owned();
    let out = net.cli(&net.user_keypair, &["refund", &address]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        said(&out).contains("can be refunded only after"),
        "{}",
        said(&out)
    );

    // A Run with another manifest and digest is not this report's Run.
    let first_report = net.dir.path().join("hosted-report.json");
    let (code, doc, text) = verify(net, &first_report, &["--run", &address]);
    assert_eq!(code, Some(1), "{text}");
    let disagreements = doc["run_account"]["disagreements"].to_string();
    assert!(disagreements.contains("manifest"), "{disagreements}");

    let started = Instant::now();
    loop {
        let status = net.cli_json(&net.user_keypair, &["chain-status", &address]);
        if status["refundable_now"] == true {
            break;
        }
        // The local validator's clock lags the wall clock under load.
        assert!(started.elapsed() < Duration::from_secs(300), "{status}");
        std::thread::sleep(Duration::from_secs(1));
    }
    let key: Pubkey = address.parse().unwrap();
    let held = net.balance(&key);
    let before = net.balance(&user.pubkey());
    let refunded = net.cli_json(&net.user_keypair, &["refund", &address]);
    let fee = net.cost("refund", refunded["signature"].as_str().unwrap());
    assert_eq!(refunded["returned_lamports"], held);
    assert_eq!(net.balance(&user.pubkey()), before + held - fee);
    assert_eq!(net.balance(&key), 0);
    let out = net.cli(&net.user_keypair, &["chain-status", &address]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
}

/// `open --manifest <run> --runner <config's runner>` as the user on a real pty, `answer`
/// typed at its prompt; `None` where `script` is missing.
fn open_on_a_pty(net: &Localnet, run: &str, answer: &str) -> Option<std::process::Output> {
    let command = format!(
        "{} open --manifest {run} --runner {} --deadline 10m --home {} --url {} --keypair {}",
        skilltrial_e2e::skilltrial_bin().unwrap().display(),
        net.runner.pubkey(),
        net.home().display(),
        net.url,
        net.user_keypair.display()
    );
    let home = net.dir.path().display().to_string();
    crate::pty::typed(
        &command,
        &skilltrial_e2e::workspace_root(),
        &[("HOME", home.as_str())],
        answer,
    )
}

/// `open` asks before it signs, a "n" there exits 0 having sent nothing, a "y" approves as "yes"
/// does, and what `open` prints after escrowing promises no runner: a run is executed only once it
/// is registered with one (`submit`).
pub fn open_asks_and_says_what_an_escrow_alone_leads_to(net: &Localnet) {
    let planned = plan_and_run(net, "6");
    let user = net.user().pubkey();
    let address = skilltrial_chain::pda::run(
        &user,
        &skilltrial_engine::store::parse_hex(&planned.run).unwrap().0,
    );
    let before = net.balance(&user);
    // When the user answers "n" at the prompt: exit 0, said, nothing signed or sent
    let Some(out) = open_on_a_pty(net, &planned.run, "n\n") else {
        return;
    };
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert!(
        said(&out).contains("Type y (or yes) to sign"),
        "{}",
        said(&out)
    );
    assert!(
        said(&out).contains("not approved: nothing signed, nothing sent"),
        "{}",
        said(&out)
    );
    assert_eq!(net.balance(&user), before, "nothing was paid");
    assert!(net.chain.run(&address).unwrap().is_none(), "no Run exists");
    // When the user answers "y": the escrow is opened, and the text says what comes next
    let out = open_on_a_pty(net, &planned.run, "y\n").unwrap();
    let text = said(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(net.chain.run(&address).unwrap().is_some(), "{text}");
    assert!(text.contains(&format!("opened run {address}")), "{text}");
    assert!(
        text.contains("escrowed only: no runner executes it until it is registered with one"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "skilltrial submit --manifest {} --runner <runner URL>",
            planned.run
        )),
        "{text}"
    );
    assert!(!text.contains("the runner executes it"), "{text}");
}

/// Another wallet cannot cancel, refund or close the user's run — refused by the CLI before
/// signing, and by the program when sent anyway — and `open` with a runner the config does not
/// name signs nothing.
pub fn a_second_wallet_is_refused(net: &Localnet) {
    let planned = plan_and_run(net, "3");
    let opened = open(net, &planned.run, "10m");
    let address = opened["run"].as_str().unwrap().to_owned();
    for args in [
        vec!["cancel", "--chain", address.as_str()],
        vec!["refund", address.as_str()],
        vec!["close", address.as_str()],
    ] {
        let out = net.cli(&net.other_keypair, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", said(&out));
        assert!(
            said(&out).contains("belongs to"),
            "{args:?}: {}",
            said(&out)
        );
    }
    // Sent anyway, the program refuses it.
    let other = net.other();
    let key: Pubkey = address.parse().unwrap();
    let refused = net
        .send_as(
            &other,
            "stranger cancel",
            &[ix::run_cancel(&other.pubkey(), &key)],
        )
        .unwrap_err();
    assert!(
        refused.to_string().contains("refused"),
        "the program refused the stranger: {refused}"
    );
    let status = net.cli_json(&net.user_keypair, &["chain-status", &address]);
    assert_eq!(status["status"], "open", "nothing changed");
    // A stranger runner is refused before anything is signed.
    let planned = plan_and_run(net, "4");
    let out = net.cli(
        &net.user_keypair,
        &[
            "open",
            "--manifest",
            &planned.run,
            "--runner",
            &other.pubkey().to_string(),
            "--yes",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("names runner"), "{}", said(&out));
}

/// The outbox against the real cluster: a transaction recorded but never sent (a command killed
/// right after journaling it) is resumed — the same signature lands, nothing is signed again —
/// and one whose blockhash already expired unseen is marked expired and replaced by a new one.
pub fn the_outbox_resumes_and_never_signs_twice(net: &Localnet) {
    let path = net.dir.path().join("resume-outbox.sqlite");
    let user = net.user();
    let cluster = net.chain.genesis_hash().unwrap();
    let to = Pubkey::new_unique();
    let transfer = crate::harness::system_transfer(&user.pubkey(), &to, 1_000_000);

    // Signed and recorded by "an earlier command", never sent.
    let (blockhash, height) = latest_blockhash(net);
    let signed = sign_legacy(&user, std::slice::from_ref(&transfer), blockhash, height);
    let recorded = signed.signature.clone();
    let mut outbox = Outbox::open(&path).unwrap();
    let claim = outbox
        .claim::<()>(&cluster, "pay:resume", || Ok(signed))
        .unwrap()
        .unwrap();
    assert!(matches!(claim, Claim::New(_)));
    let progress = |_: &str| {};
    let mut sender = Sender::new(&net.chain, &mut outbox, &progress).unwrap();
    let sent = sender
        .send(
            "pay:resume",
            &user,
            &[],
            std::slice::from_ref(&transfer),
            Fees::default(),
        )
        .unwrap();
    assert_eq!(
        sent.signature.to_string(),
        recorded,
        "the recorded bytes landed"
    );
    assert!(sent.resumed);
    assert_eq!(net.balance(&to), 1_000_000, "paid once");
    drop(sender);
    assert_eq!(
        outbox
            .latest(&cluster, "pay:resume")
            .unwrap()
            .unwrap()
            .state,
        EntryState::Landed
    );

    // Recorded with a blockhash that can no longer land (its last valid height passed) and
    // never seen: expired, then a new transaction is signed and lands once.
    let to2 = Pubkey::new_unique();
    let transfer2 = crate::harness::system_transfer(&user.pubkey(), &to2, 2_000_000);
    let (blockhash, height) = latest_blockhash(net);
    let stale = sign_legacy(
        &user,
        std::slice::from_ref(&transfer2),
        blockhash,
        height.saturating_sub(1_000),
    );
    let stale_signature = stale.signature.clone();
    outbox
        .claim::<()>(&cluster, "pay:expired", || Ok(stale))
        .unwrap()
        .unwrap();
    let mut sender = Sender::new(&net.chain, &mut outbox, &progress).unwrap();
    let sent = sender
        .send("pay:expired", &user, &[], &[transfer2], Fees::default())
        .unwrap();
    assert_ne!(sent.signature.to_string(), stale_signature);
    assert_eq!(
        net.balance(&to2),
        2_000_000,
        "paid once, by the new transaction"
    );
    drop(sender);
    let conn = rusqlite_states(&path);
    assert!(
        conn.contains(&(stale_signature, "expired".to_owned())),
        "{conn:?}"
    );
}

fn latest_blockhash(net: &Localnet) -> (String, u64) {
    net.chain.latest_blockhash().unwrap()
}

fn sign_legacy(
    payer: &solana_keypair::Keypair,
    instructions: &[skilltrial_chain::Instruction],
    blockhash: String,
    last_valid_block_height: u64,
) -> Signed {
    skilltrial_chain::send::sign_with_blockhash(
        payer,
        &[],
        instructions,
        &blockhash,
        last_valid_block_height,
    )
    .unwrap()
}

/// (signature, state) of every outbox row.
fn rusqlite_states(path: &Path) -> Vec<(String, String)> {
    skilltrial_chain::outbox::Outbox::open(path)
        .unwrap()
        .rows()
        .unwrap()
        .into_iter()
        .map(|e| (e.signature, format!("{:?}", e.state).to_lowercase()))
        .collect()
}

/// On a cluster without a config: `open` says so; `admin init` (by the upgrade authority) creates
/// it as asked; a second `init` is refused; the admin role moves in two steps (`update
/// --propose-admin`, then `accept` by the proposed wallet, and only by it).
pub fn admin_init_and_handover(net: &Localnet) {
    let user = &net.user_keypair;
    let out = net.cli(user, &["admin", "show"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("no config"), "{}", said(&out));
    let runner = net.runner.pubkey().to_string();
    let payout = net.payout.to_string();
    let mint = Pubkey::new_unique().to_string();
    let init = [
        "admin",
        "init",
        "--runner",
        runner.as_str(),
        "--runner-payout",
        payout.as_str(),
        "--mint",
        mint.as_str(),
        "--buyback-rate",
        "1000:1",
        "--fee-lamports",
        "150000",
        "--min-deadline-secs",
        "60",
        "--yes",
    ];
    // The other wallet is not the upgrade authority: the program refuses it.
    let out = net.cli(&net.other_keypair, &init);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("refused"), "{}", said(&out));
    let done = net.cli_json(user, &init);
    net.cost("admin init", done["signature"].as_str().unwrap());
    let shown = net.cli_json(user, &["admin", "show"]);
    assert_eq!(shown["admin"], net.user().pubkey().to_string());
    assert_eq!(shown["runner"], runner);
    assert_eq!(shown["runner_payout"], payout);
    assert_eq!(shown["sktrial_mint"], mint);
    assert_eq!(shown["fee_per_trial_lamports"], 150_000);
    assert_eq!(shown["min_deadline_secs"], 60);
    assert_eq!(shown["buyback_rate"], "1000:1");
    let out = net.cli(user, &init);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("already exists"), "{}", said(&out));

    let other = net.other().pubkey().to_string();
    net.cli_json(user, &["admin", "update", "--propose-admin", &other]);
    // Only the proposed wallet accepts.
    let out = net.cli(user, &["admin", "accept"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    net.cli_json(&net.other_keypair, &["admin", "accept"]);
    let shown = net.cli_json(user, &["admin", "show"]);
    assert_eq!(shown["admin"], other);
    assert!(shown["pending_admin"].is_null());
    let out = net.cli(user, &["admin", "update", "--fee-lamports", "1"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the old admin is no longer one: {}",
        said(&out)
    );
    net.print_costs();
}

/// `open` killed after it recorded its transaction (here: the transaction is recorded in the
/// CLI's own outbox and never sent, as a SIGKILL right after the write leaves it). Running
/// `open` again resumes that transaction — the escrow happens once — and reports the Run as the
/// chain holds it; once that Run is refunded, a new `open` escrows afresh.
pub fn a_killed_open_is_resumed_not_repeated(net: &Localnet) {
    let planned = plan_and_run(net, "5");
    let user = net.user();
    let manifest: [u8; 32] = (0..32)
        .map(|i| u8::from_str_radix(&planned.run[2 * i..2 * i + 2], 16).unwrap())
        .collect::<Vec<_>>()
        .try_into()
        .unwrap();
    let address = skilltrial_chain::pda::run(&user.pubkey(), &manifest);
    let deadline = net.chain.cluster_time().unwrap() + 40;
    let fee = 200_000;
    let instruction = ix::run_open(
        &user.pubkey(),
        ix::RunOpenArgs {
            manifest_hash: manifest,
            planned_trials: 18,
            per_request_cap: MIN_PER_REQUEST_CAP,
            escrow: 18 * (MIN_PER_REQUEST_CAP + fee),
            deadline,
            expected_fee_per_trial: fee,
            expected_runner: net.runner.pubkey(),
        },
    );
    let (blockhash, height) = latest_blockhash(net);
    let signed = sign_legacy(&user, &[instruction], blockhash, height);
    let recorded = signed.signature.clone();
    let cluster = net.chain.genesis_hash().unwrap();
    let mut outbox = Outbox::open(&net.home().join("chain-outbox.sqlite")).unwrap();
    outbox
        .claim::<()>(&cluster, &format!("run_open:{address}"), || Ok(signed))
        .unwrap()
        .unwrap();
    drop(outbox);
    let before = net.balance(&user.pubkey());

    let reopened = open(net, &planned.run, "10m");
    assert_eq!(reopened["already_open"], true, "{reopened}");
    assert_eq!(reopened["run"], address.to_string());
    let status = net.cli_json(&net.user_keypair, &["chain-status", &address.to_string()]);
    assert_eq!(
        status["escrowed_lamports"],
        18 * (MIN_PER_REQUEST_CAP + fee),
        "the recorded escrow, once"
    );
    assert_eq!(status["deadline_unix"], deadline);
    let rent = net.balance(&address) - 18 * (MIN_PER_REQUEST_CAP + fee);
    assert_eq!(
        before - net.balance(&user.pubkey()),
        18 * (MIN_PER_REQUEST_CAP + fee) + rent + net.fee_of(&recorded),
        "one escrow, one fee: the recorded transaction landed and nothing else was signed"
    );
    let outbox = Outbox::open(&net.home().join("chain-outbox.sqlite")).unwrap();
    let entry = outbox
        .latest(&cluster, &format!("run_open:{address}"))
        .unwrap()
        .unwrap();
    assert_eq!(entry.signature, recorded);
    assert_eq!(entry.state, EntryState::Landed);

    // Refunded after its deadline, the manifest can be opened again: a new escrow, not the old
    // signature reported anew.
    let started = Instant::now();
    while net.cli_json(&net.user_keypair, &["chain-status", &address.to_string()])["refundable_now"]
        != true
    {
        assert!(started.elapsed() < Duration::from_secs(120));
        std::thread::sleep(Duration::from_secs(1));
    }
    net.cli_json(&net.user_keypair, &["refund", &address.to_string()]);
    let fresh = open(net, &planned.run, "10m");
    assert_eq!(fresh["already_open"], false);
    assert_ne!(fresh["signature"], Value::from(recorded));
    let status = net.cli_json(&net.user_keypair, &["chain-status", &address.to_string()]);
    assert_eq!(status["escrowed_lamports"], fresh["escrow_lamports"]);
}

/// `pack new` / `add-task` / `build` against the real validator: the $SKTRIAL mint, read at
/// `finalized`, becomes an account task and a transfer-plan task (its decimals from the mint's
/// own bytes); the pack is tagged `localnet` (an unknown genesis hash) and seals.
pub fn a_pack_from_the_local_validator(net: &Localnet) {
    let mint = net
        .chain
        .config()
        .unwrap()
        .unwrap()
        .sktrial_mint
        .to_string();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("local-pack");
    let d = dir.to_str().unwrap();
    let json = |args: &[&str]| -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = net.local(&all);
        assert!(out.status.success(), "{args:?}: {}", said(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    json(&["pack", "new", d, "--name", "local-pack"]);
    let account = json(&["pack", "add-task", d, "--account", &mint, "--url", &net.url]);
    assert_eq!(account["network"], "localnet");
    assert!(account["known_wrong"].as_u64().unwrap() >= 5, "{account}");
    let user = net.user().pubkey().to_string();
    let other = net.other().pubkey().to_string();
    let plan = json(&[
        "pack",
        "add-task",
        d,
        "--transfer",
        "--mint",
        &mint,
        "--from",
        &user,
        "--to",
        &other,
        "--amount",
        "2.5",
        "--url",
        &net.url,
    ]);
    assert_eq!(plan["family"], "transfer_plan");
    let sealed = net.local(&["pack", "build", d]);
    assert!(sealed.status.success(), "{}", said(&sealed));
    let pack = skilltrial_core::pack::open_folder(&dir).unwrap();
    let task = pack.task(account["task"].as_str().unwrap()).unwrap();
    assert!(task.slot.is_some_and(|s| s > 0));
    assert_eq!(task.provenance["commitment"], "finalized");
}
