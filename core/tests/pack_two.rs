//! `solana-core@2.0.0`, the larger pack: every claim it makes, its variety, where each input
//! came from, and that every transaction in both released packs is exactly the bytes that were
//! signed. (The canonical-crate checks of its golden records are in decoder_vs_canonical.rs.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/claims.rs"]
mod claims;

use std::collections::BTreeSet;

use base64::Engine as _;
use serde_json::Value;
use skilltrial_core::checker::{Expected, Family};
use skilltrial_core::pack::{self, Pack};
use skilltrial_core::stats;

const ID: &str = "solana-core@2.0.0";

fn pack() -> Pack {
    pack::open(ID).unwrap()
}

fn golden(task: &pack::Task) -> Value {
    match task.reveal_expected() {
        Expected::Golden(v) => v.clone(),
        Expected::Excluded { .. } => panic!("{} is excluded", task.id),
    }
}

#[test]
fn the_pack_is_pinned_and_verifies_every_claim() {
    let p = pack();
    assert!(p.tasks.len() >= 30, "{} tasks", p.tasks.len());
    let count = |f: Family| p.tasks.iter().filter(|t| t.family == f).count();
    assert!(count(Family::Account) >= 12);
    assert!(count(Family::Transaction) >= 12);
    assert!(count(Family::TransferPlan) >= 6);
    assert_eq!(p.pinned_hash(), Some(p.hash.to_string().as_str()));
    let report = pack::verify(&p);
    let failed = claims::failed(&report);
    assert!(failed.is_empty(), "{failed:#?}");
    for task in &p.tasks {
        assert!(
            task.known_wrong.len() >= pack::MIN_KNOWN_WRONG,
            "{}",
            task.id
        );
        let outcomes: BTreeSet<String> = task
            .known_wrong
            .iter()
            .map(|w| w.outcome.to_string())
            .collect();
        assert!(
            outcomes.len() >= 3,
            "{}: known-wrong answers of one kind only: {outcomes:?}",
            task.id
        );
    }
    let folder = pack::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/packs/solana-core@2.0.0"
    ))
    .unwrap();
    assert_eq!(
        folder.hash, p.hash,
        "rebuild to re-embed the pack after editing fixtures"
    );
}

#[test]
fn both_released_packs_open_and_the_first_is_unchanged() {
    let ids = pack::embedded_ids();
    assert!(ids.contains(&"solana-core@1.0.3".to_owned()), "{ids:?}");
    assert!(ids.contains(&ID.to_owned()), "{ids:?}");
    let first = pack::open("solana-core@1.0.3").unwrap();
    assert_eq!(
        first.hash.to_string(),
        "sha256:713b6396507b1f798557cae1155e727dc0696b774605a26e65cdcb58eeda2958",
        "solana-core@1.0.3 is immutable"
    );
    assert_eq!(first.checker.version, "1.0.0", "built for checker 1.0.0");
    assert!(
        pack::verify(&first).ok,
        "this checker re-proves every claim of 1.0.3"
    );
}

#[test]
fn every_task_says_where_its_data_came_from_and_on_which_network() {
    for task in &pack().tasks {
        let p = &task.provenance;
        for key in ["repository", "license", "note"] {
            assert!(
                p.get(key)
                    .and_then(Value::as_str)
                    .is_some_and(|v| !v.is_empty()),
                "{}: provenance has no {key}",
                task.id
            );
        }
        assert!(
            p.get("data_file").is_some(),
            "{}: names its file in the shared data",
            task.id
        );
        assert_eq!(task.input_ref.sha256.len(), 64);
        match task.network.as_str() {
            "mainnet" => {}
            "devnet" => assert!(task.prompt.contains("devnet"), "{} says devnet", task.id),
            "local" => assert!(
                task.prompt.contains("local Solana test validator"),
                "{} says it is a local fixture",
                task.id
            ),
            "unknown" => assert!(
                task.prompt.contains("cluster its source does not name"),
                "{} says its cluster is unknown",
                task.id
            ),
            other => panic!("{}: network `{other}`", task.id),
        }
    }
}

/// Ed25519 over the message bytes, with the first `num_required_signatures` static keys; the
/// first signature is the transaction id the task names.
#[test]
fn every_transaction_input_is_the_bytes_that_were_signed() {
    let mut checked = 0;
    for id in ["solana-core@1.0.3", ID] {
        for task in pack::open(id).unwrap().tasks {
            if task.family != Family::Transaction {
                continue;
            }
            let result: Value = serde_json::from_slice(&task.input).unwrap();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(result["transaction"][0].as_str().unwrap())
                .unwrap();
            let tx: solana_transaction_serde::versioned::VersionedTransaction =
                bincode::deserialize(&bytes).unwrap();
            let message = bincode::serialize(&tx.message).unwrap();
            assert!(bytes.ends_with(&message), "{}: message bytes", task.id);
            let signers = usize::from(tx.message.header().num_required_signatures);
            assert_eq!(tx.signatures.len(), signers, "{}", task.id);
            for (signature, key) in tx.signatures.iter().zip(tx.message.static_account_keys()) {
                let key = ed25519_dalek::VerifyingKey::from_bytes(&key.to_bytes()).unwrap();
                let signature = ed25519_dalek::Signature::from_bytes(&<[u8; 64]>::from(*signature));
                key.verify_strict(&message, &signature)
                    .unwrap_or_else(|e| panic!("{}: {e}", task.id));
            }
            assert_eq!(
                task.context["signature"].as_str(),
                Some(tx.signatures[0].to_string().as_str()),
                "{}",
                task.id
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} transactions");
}

#[test]
fn the_pack_holds_the_variety_real_skills_meet() {
    let p = pack();
    let goldens: Vec<(&pack::Task, Value)> = p.tasks.iter().map(|t| (t, golden(t))).collect();
    let of = |f: Family| goldens.iter().filter(move |(t, _)| t.family == f);

    let kinds: BTreeSet<&str> = of(Family::Account)
        .filter_map(|(_, g)| g["account_type"].as_str())
        .collect();
    for kind in [
        "mint",
        "token_account",
        "multisig",
        "nonce",
        "stake",
        "lookup_table",
    ] {
        assert!(kinds.contains(kind), "an account of type {kind}");
    }
    let extensions = |g: &Value| g["extensions"].as_array().map_or(0, Vec::len);
    assert!(
        of(Family::Account).any(|(_, g)| g["account_type"] == "mint" && extensions(g) >= 10),
        "a Token-2022 mint with many extensions"
    );
    assert!(
        of(Family::Account)
            .any(|(_, g)| g["account_type"] == "token_account" && g["program"] == "spl-token-2022"),
        "a Token-2022 token account"
    );
    assert!(
        of(Family::Account)
            .any(|(_, g)| g["account_type"] == "token_account" && g["delegate"].is_string()),
        "a delegated token account"
    );
    assert!(
        of(Family::Account).any(|(_, g)| g["deactivated"] == true),
        "a deactivated lookup table"
    );

    let instructions = |g: &Value| g["instructions"].as_array().cloned().unwrap_or_default();
    let names: BTreeSet<String> = of(Family::Transaction)
        .flat_map(|(_, g)| instructions(g))
        .filter_map(|i| i["instruction"].as_str().map(str::to_owned))
        .collect();
    for name in [
        "create",
        "create_idempotent",
        "memo",
        "set_compute_unit_limit",
        "set_compute_unit_price",
        "advance_nonce_account",
        "transfer_checked",
        "create_account_with_seed",
        "sync_native",
        "close_account",
    ] {
        assert!(names.contains(name), "a transaction with {name}");
    }
    assert!(
        of(Family::Transaction)
            .filter(|(_, g)| g["success"] == false)
            .count()
            >= 3,
        "failed transactions"
    );
    let lookups = |t: &pack::Task| {
        let result: Value = serde_json::from_slice(&t.input).unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(result["transaction"][0].as_str().unwrap())
            .unwrap();
        skilltrial_core::solana::transaction::decode_wire(&bytes)
            .unwrap()
            .lookups
            .len()
    };
    assert!(
        of(Family::Transaction).any(|(t, _)| lookups(t) >= 3),
        "a v0 transaction with three lookup tables"
    );
    assert!(
        of(Family::Transaction)
            .any(|(_, g)| g["version"] == 0
                && instructions(g).iter().any(|i| i["program"].is_null())),
        "a swap through a program the pack does not decode"
    );

    let plans: Vec<&Value> = of(Family::TransferPlan).map(|(_, g)| g).collect();
    let legacy = |g: &&Value| g["token_program"] == skilltrial_core::solana::program::TOKEN;
    assert!(
        plans
            .iter()
            .any(|g| legacy(g) && g.get("fee_atomic").is_none())
    );
    assert!(
        plans
            .iter()
            .any(|g| !legacy(g) && g.get("fee_atomic").is_some())
    );
    assert!(
        plans.iter().any(|g| !legacy(g)
            && instructions(g)
                .iter()
                .any(|i| i["instruction"] == "transfer_checked")),
        "a Token-2022 transfer_checked on a mint that charges a fee"
    );
}

/// No prompt carries what only the decoder derives: the golden record, the derived accounts,
/// the atomic amount or the fee.
#[test]
fn prompts_never_carry_the_expected_answer() {
    for task in &pack().tasks {
        let g = golden(task);
        let text = task.public().render();
        assert!(!text.contains(&g.to_string()), "{}", task.id);
        for key in [
            "source_token_account",
            "destination_token_account",
            "fee_atomic",
            "amount_atomic",
        ] {
            if let Some(v) = g.get(key).and_then(Value::as_str) {
                assert!(
                    !text.contains(&format!("\"{v}\"")),
                    "{} leaks {key}",
                    task.id
                );
            }
        }
    }
}

/// The point of the pack: with every task, the paired test can reach p far below 0.05 even
/// after Holm's adjustment over three contrasts, where six tasks could not.
#[test]
fn the_paired_test_can_reach_significance_on_this_pack_and_not_on_the_first() {
    let small = stats::smallest_two_sided_p(6).unwrap();
    assert!(3.0 * small.value() > 0.05, "1.0.3: 3/32 at best");
    let tasks = pack().tasks.len();
    let best = stats::smallest_two_sided_p(tasks).unwrap();
    assert!(3.0 * best.value() < 1e-6, "{tasks} tasks: {best:?}");
}
