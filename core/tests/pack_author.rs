//! Authoring a pack from chain data (core::pack::author), on the real mainnet bytes the embedded
//! pack holds: a task made from the same data as an embedded task gets the same golden record,
//! every known-wrong answer carries the checker's exact verdict, and a pack built from the data
//! passes `verify`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use serde_json::Value;
use skilltrial_core::pack::author::{self, Account, Source, Transfer};
use skilltrial_core::pack::{self, MIN_KNOWN_WRONG};

fn source() -> Source {
    Source {
        rpc: "http://127.0.0.1:1/".to_owned(),
        call: "test".to_owned(),
        commitment: "finalized".to_owned(),
        fetched_at: "2026-12-02T00:00:00Z".to_owned(),
    }
}

fn embedded() -> pack::Pack {
    pack::open("solana-core@1.0.3").unwrap()
}

fn write_task(dir: &Path, task: &author::NewTask) {
    let folder = dir.join("tasks").join(&task.id);
    std::fs::create_dir_all(&folder).unwrap();
    for (name, bytes) in &task.files {
        std::fs::write(folder.join(name), bytes).unwrap();
    }
    let meta = std::fs::read(dir.join("pack.json")).unwrap();
    std::fs::write(
        dir.join("pack.json"),
        author::add_to_pack_json(&meta, &task.id).unwrap(),
    )
    .unwrap();
}

#[test]
fn tasks_from_real_data_get_the_decoder_s_golden_and_verified_known_wrong_answers() {
    let base = embedded();
    let usdc = base.task("acct-usdc-mint").unwrap();
    let tx = base.task("tx-v0-alt-usdc").unwrap();
    let fzy = base.task("acct-t22-fzyeg-mint").unwrap();

    // Given the same raw data the embedded tasks hold ...
    let account = author::account_task(
        "my-usdc",
        "mainnet",
        &Account {
            address: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
            owner: "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
            lamports: 1,
            data: &usdc.input,
            slot: 7,
        },
        &source(),
    )
    .unwrap();
    let result: Value = serde_json::from_slice(&tx.input).unwrap();
    let transaction = author::transaction_task(
        "my-tx",
        "mainnet",
        "2aoWC4uMT9zznC5m3ALE45Rb9YtmD6sNCabSgz4vACC9fKmwjaTooKVsn7mgoJ2Er3pa2xi8rbLcPzogNVwV5KSv",
        &result,
        &source(),
    )
    .unwrap();
    let plan = author::transfer_task(
        "my-plan",
        "mainnet",
        &Transfer {
            mint: "FZYEgCWzzedxcmxYvGXSkMrj7TaA3bXoaEv6XMnwtLKh",
            mint_owner: "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",
            mint_data: &fzy.input,
            slot: 9,
            epoch: 612,
            sender_owner: "12VFrc1dFynPzs4HBRdRoMKNm1jca2S2uhaNKCkdffwy",
            recipient_owner: "9RvNi4pPm8euMuPGPNQVjR8wWTPawZMvqfqA2QQmwVHC",
            amount: "1234.56",
            memo: Some("invoice 2026-117"),
        },
        &source(),
    )
    .unwrap();

    // ... the golden records are the embedded ones, byte for byte ...
    assert_eq!(account.files["golden.json"], usdc.golden_bytes);
    assert_eq!(transaction.files["golden.json"], tx.golden_bytes);
    let t22_plan = base.task("plan-t22-fee-memo").unwrap();
    assert_eq!(plan.files["golden.json"], t22_plan.golden_bytes);
    // ... and each task has at least the pack's minimum of known-wrong answers.
    for t in [&account, &transaction, &plan] {
        assert!(
            t.known_wrong >= MIN_KNOWN_WRONG,
            "{}: {}",
            t.id,
            t.known_wrong
        );
    }

    // Written into a new pack folder, the pack opens like any pack and verifies.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-pack");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("pack.json"),
        author::pack_json("my-pack", "0.1.0", "mine").unwrap(),
    )
    .unwrap();
    for t in [&account, &transaction, &plan] {
        write_task(&dir, t);
    }
    let mine = pack::open(dir.to_str().unwrap()).unwrap();
    assert_eq!(mine.id(), "my-pack@0.1.0");
    assert_eq!(mine.tasks.len(), 3);
    let report = pack::verify(&mine);
    let failed: Vec<_> = report.items.iter().filter(|i| !i.ok).collect();
    assert!(report.ok, "{failed:#?}");
    // The task records where its data came from and at which slot.
    let task = mine.task("my-usdc").unwrap();
    assert_eq!(task.slot, Some(7));
    assert_eq!(task.provenance["commitment"], "finalized");
    // The prompt asks what the larger embedded pack's task of its family and owner asks.
    let tail = |p: &str| p.split_once("\n\n").unwrap().1.to_owned();
    let larger = pack::open("solana-core@2.0.0").unwrap();
    let usdt = larger.task("acct-usdt-mint").unwrap();
    assert_eq!(tail(&task.prompt), tail(&usdt.prompt));
    assert_eq!(task.reason_codes, usdt.reason_codes);
    let my_tx = mine.task("my-tx").unwrap();
    let their_tx = larger.task("tx-v0-alt-usdc").unwrap();
    assert_eq!(tail(&my_tx.prompt), tail(&their_tx.prompt));

    // An edited known-wrong verdict is caught by verify.
    let wrong_path = dir.join("tasks/my-usdc/wrong.json");
    let mut wrong: Value = serde_json::from_slice(&std::fs::read(&wrong_path).unwrap()).unwrap();
    wrong[0]["outcome"] = Value::from("pass");
    std::fs::write(&wrong_path, serde_json::to_vec_pretty(&wrong).unwrap()).unwrap();
    let edited = pack::open(dir.to_str().unwrap()).unwrap();
    assert!(!pack::verify(&edited).ok);
}

/// The native accounts of the larger pack (nonce, stake, lookup table) and a multisig, authored
/// from the same bytes, get the embedded golden records and their program's answer format.
#[test]
fn native_accounts_are_authored_like_the_larger_pack_s() {
    let larger = pack::open("solana-core@2.0.0").unwrap();
    let tail = |p: &str| p.split_once("\n\n").unwrap().1.to_owned();
    for id in [
        "acct-nonce",
        "acct-stake-deactivated",
        "acct-alt-104",
        "acct-multisig-2of2",
    ] {
        let embedded = larger.task(id).unwrap();
        let owner = embedded.context["owner_program"].as_str().unwrap();
        let made = author::account_task(
            "mine",
            "localnet",
            &Account {
                address: "11111111111111111111111111111112",
                owner,
                lamports: 1,
                data: &embedded.input,
                slot: 3,
            },
            &source(),
        )
        .unwrap();
        assert_eq!(made.files["golden.json"], embedded.golden_bytes, "{id}");
        assert!(made.known_wrong >= MIN_KNOWN_WRONG, "{id}");
        let task: Value = serde_json::from_slice(&made.files["task.json"]).unwrap();
        assert_eq!(
            tail(task["prompt"].as_str().unwrap()),
            tail(&embedded.prompt),
            "{id}"
        );
    }
}

#[test]
fn bad_names_taken_ids_released_ids_and_data_the_decoder_cannot_read_are_refused() {
    assert!(author::pack_json("My Pack", "1", "").is_err());
    assert!(author::pack_json("ok", "../1", "").is_err());
    let released = author::pack_json("solana-core", "1.0.3", "").unwrap_err();
    assert!(released.to_string().contains("released"), "{released}");
    let meta = author::pack_json("p", "1", "").unwrap();
    let once = author::add_to_pack_json(&meta, "t").unwrap();
    let twice = author::add_to_pack_json(&once, "t").unwrap_err();
    assert!(
        twice.to_string().contains("already has a task `t`"),
        "{twice}"
    );
    // A system account is no token account: the decoder refuses it, naming why.
    let err = author::account_task(
        "sys",
        "localnet",
        &Account {
            address: "11111111111111111111111111111111",
            owner: "11111111111111111111111111111111",
            lamports: 1,
            data: &[],
            slot: 1,
        },
        &source(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("decoder"), "{err}");
    assert!(
        author::account_task(
            "../escape",
            "mainnet",
            &Account {
                address: "x",
                owner: "y",
                lamports: 0,
                data: &[],
                slot: 0
            },
            &source()
        )
        .is_err()
    );
}
