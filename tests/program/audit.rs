//! A hosted report audited against the real Run account: a run settled in the program with real
//! evidence records (core's) and finalized with a report hash; the account's raw bytes, as the
//! Solana CLI would print them, agree field by field with the settlement section built from the
//! same records (`skilltrial_chain::account::compare`, what `skilltrial verify --run-account`
//! runs); a report that charges one lamport differently does not.

use base64::Engine as _;
use skilltrial_chain::account::{compare, run_from_cli_json};
use skilltrial_chain::ix::{self, RunFinalizeArgs};
use skilltrial_chain::{PROGRAM_ID, anchor_key, pda};
use skilltrial_core::settlement::{EvidenceRecord, SettledBatch, Settlement, batch_evidence_hash};
use solana_signer::Signer;

use crate::harness::{MIN_DEADLINE, start, upper};

fn record(trial: u16, usage: u64) -> EvidenceRecord {
    EvidenceRecord::new(
        trial,
        format!("r-{trial:03}-1"),
        Some(format!("req_{trial}")),
        usage,
        format!("{:064x}", u64::from(trial) + 1),
    )
    .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn a_hosted_report_agrees_with_the_run_account_it_was_settled_into() {
    let mut env = start().await;
    env.config_init().await;
    let (user, runner) = (env.user.insecure_clone(), env.runner.insecure_clone());
    let manifest = [21u8; 32];
    let run = pda::run(&user.pubkey(), &manifest);
    let deadline = env.now().await + MIN_DEADLINE + 60;
    env.open(&user, manifest, 6, upper(6), deadline)
        .await
        .unwrap();
    let run_id = env.run_id(&run).await;

    let batches = [
        vec![record(4, 1_000), record(0, 2_500), record(2, 0)],
        vec![record(5, 49_999)],
    ];
    for records in &batches {
        let charges: Vec<(u16, u64)> = records
            .iter()
            .map(|r| (r.trial(), r.usage_lamports()))
            .collect();
        let i = env.settle_ix_with(
            &runner,
            &run,
            run_id,
            batch_evidence_hash(records),
            &charges,
        );
        env.send_settle(&runner, &run, &charges, vec![i])
            .await
            .unwrap();
    }
    let report_hash = [0x5au8; 32];
    let i = ix::run_finalize(
        &runner.pubkey(),
        &run,
        RunFinalizeArgs {
            expected_run_id: run_id,
            report_hash,
        },
    );
    env.send("run_finalize", vec![i], &[&runner], vec![])
        .await
        .unwrap();

    // The account's bytes, exactly as the bank holds them, in the Solana CLI's JSON.
    let raw = env
        .ctx
        .banks_client
        .get_account(run)
        .await
        .unwrap()
        .unwrap();
    let json = serde_json::json!({
        "pubkey": run.to_string(),
        "account": {
            "lamports": raw.lamports,
            "data": [base64::engine::general_purpose::STANDARD.encode(&raw.data), "base64"],
            "owner": raw.owner.to_string(),
            "executable": false,
            "space": raw.data.len(),
        }
    });
    let account = run_from_cli_json(&json.to_string()).unwrap();
    assert_eq!(account.run.runner, anchor_key(&runner.pubkey()));

    let settlement = |batches: &[Vec<EvidenceRecord>]| {
        Settlement::new(
            PROGRAM_ID.to_string(),
            run.to_string(),
            run_id,
            batches
                .iter()
                .map(|b| SettledBatch::new(b.clone(), None))
                .collect(),
        )
    };
    let honest = settlement(&batches);
    let check = honest.verify().unwrap();
    assert_eq!(
        compare(&honest, &check, &manifest, &report_hash, &account),
        []
    );

    // A report that says trial 2 cost one lamport (it was settled at 0) is not this account's.
    let mut edited = batches.clone();
    edited[0][2] = record(2, 1);
    let lying = settlement(&edited);
    let check = lying.verify().unwrap();
    let fields: Vec<&str> = compare(&lying, &check, &manifest, &report_hash, &account)
        .iter()
        .map(|d| d.field)
        .collect();
    assert_eq!(fields, ["settlement digest", "usage settled, lamports"]);
    // And a report whose hash is not the one anchored.
    let fields: Vec<&str> = compare(
        &honest,
        &honest.verify().unwrap(),
        &manifest,
        &[0; 32],
        &account,
    )
    .iter()
    .map(|d| d.field)
    .collect();
    assert_eq!(fields, ["report hash"]);
}

/// The anchor memo (what `skilltrial anchor` sends) as the real SPL Memo v3 program executes it:
/// signed by the user, logged with its exact bytes, at a measured cost (printed). Its bytes parse
/// back to the two hashes, and nothing but the fee moves.
#[tokio::test(flavor = "current_thread")]
async fn an_anchor_memo_runs_in_the_real_memo_program_and_parses_back() {
    use skilltrial_chain::anchor::AnchorMemo;
    let mut env = start().await;
    let user = env.user.insecure_clone();
    let memo = AnchorMemo {
        manifest_hash: [0x11; 32],
        report_hash: [0xee; 32],
    };
    let text = memo.text();
    let (result, logs) = env
        .send_logged(
            "anchor memo",
            vec![memo.instruction(&user.pubkey())],
            &[&user],
            vec![],
        )
        .await;
    let cu = result.unwrap();
    println!(
        "\nanchor memo ({} bytes, 1 signer): {cu} CU in SPL Memo v3",
        text.len()
    );
    // The memo program logs its signer and the text (Rust-escaped, here plain base58 and ':').
    assert!(
        logs.iter()
            .any(|l| l == &format!("Program log: Signed by {}", user.pubkey())),
        "{logs:?}"
    );
    assert!(
        logs.iter()
            .any(|l| l == &format!("Program log: Memo (len {}): {:?}", text.len(), text)),
        "{logs:?}"
    );
    assert_eq!(AnchorMemo::parse(text.as_bytes()), Ok(memo));
}
