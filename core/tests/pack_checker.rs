//! The fixture pack and the checker, end to end inside the library: the embedded pack verifies,
//! equivalent correct answers pass, wrong ones fail with their reasons, a version-1 transaction is
//! excluded, overruns never pass, and no prompt ever carries an expected answer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/claims.rs"]
mod claims;

use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use skilltrial_core::checker::{self, Expected, Family};
use skilltrial_core::outcome::Outcome;
use skilltrial_core::pack::{self, Pack};

fn pack() -> Pack {
    pack::open("solana-core@1.0.3").unwrap()
}

fn golden(pack: &Pack, id: &str) -> Value {
    match pack.task(id).unwrap().reveal_expected() {
        Expected::Golden(v) => v.clone(),
        Expected::Excluded { .. } => panic!("{id} is excluded"),
    }
}

#[test]
fn the_embedded_pack_verifies_every_claim() {
    let p = pack();
    assert_eq!(p.tasks.len(), 6);
    let families: Vec<Family> = p.tasks.iter().map(|t| t.family).collect();
    for family in [Family::Account, Family::Transaction, Family::TransferPlan] {
        assert_eq!(
            families.iter().filter(|f| **f == family).count(),
            2,
            "two tasks per family"
        );
    }
    let report = pack::verify(&p);
    let failed = claims::failed(&report);
    assert!(failed.is_empty(), "{failed:#?}");
    assert!(report.items.iter().any(|i| i.check == "golden_regenerates"));
    assert_eq!(p.pinned_hash(), Some(p.hash.to_string().as_str()));
}

#[test]
fn the_folder_and_the_embedded_copy_are_the_same_pack() {
    let folder = pack::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/packs/solana-core@1.0.3"
    ))
    .unwrap();
    assert_eq!(
        folder.hash,
        pack().hash,
        "rebuild to re-embed the pack after editing fixtures"
    );
}

#[test]
fn each_task_has_provenance_network_and_input_hash() {
    for t in &pack().tasks {
        assert_eq!(t.network, "mainnet");
        assert!(t.provenance.get("repository").is_some(), "{}", t.id);
        assert!(t.provenance.get("license").is_some(), "{}", t.id);
        assert_eq!(t.input_ref.sha256.len(), 64);
        assert!(
            t.known_wrong.len() >= 5,
            "{} has {} known-wrong answers",
            t.id,
            t.known_wrong.len()
        );
    }
}

#[test]
fn equivalent_correct_answers_pass() {
    let p = pack();
    // Given the USDC mint's golden answer rewritten: integers for strings, keys reordered, extra
    // explanatory fields, inside a fenced block with prose around it
    let g = golden(&p, "acct-usdc-mint");
    let rewritten = json!({
        "notes": "COption tags are both 1",
        "freeze_authority": g["freeze_authority"],
        "is_initialized": true,
        "decimals": "6",
        "supply": g["supply"].as_str().unwrap().parse::<u64>().unwrap(),
        "mint_authority": g["mint_authority"],
        "program": "spl-token",
        "account_type": "mint",
    });
    let text = format!(
        "Decoded:\n\n```json\n{}\n```\nDone.",
        serde_json::to_string_pretty(&rewritten).unwrap()
    );
    let verdict = p.task("acct-usdc-mint").unwrap().check(&text);
    assert_eq!(verdict.outcome, Outcome::Pass, "{verdict:?}");

    // A transaction answer with version "0" as a string and signers in another order
    let mut tx = golden(&p, "tx-v0-alt-usdc");
    tx["version"] = json!("0");
    tx["signers"].as_array_mut().unwrap().reverse();
    tx["instructions"][0]["args"]["units"] = json!("93548");
    assert_eq!(
        p.task("tx-v0-alt-usdc")
            .unwrap()
            .check(&tx.to_string())
            .outcome,
        Outcome::Pass
    );

    // A plan with the memo after the transfer instead of before
    let mut plan = golden(&p, "plan-t22-fee-memo");
    plan["instructions"].as_array_mut().unwrap().reverse();
    plan["explanation"] = json!("fee = ceil(123456 * 300 / 10000) = 3704");
    assert_eq!(
        p.task("plan-t22-fee-memo")
            .unwrap()
            .check(&plan.to_string())
            .outcome,
        Outcome::Pass
    );
}

#[test]
fn every_golden_answer_passes_and_every_known_wrong_gets_its_reasons() {
    let p = pack();
    for t in &p.tasks {
        let g = golden(&p, &t.id);
        assert_eq!(t.check(&g.to_string()).outcome, Outcome::Pass, "{}", t.id);
        for wrong in &t.known_wrong {
            let verdict = t.check(&wrong.text());
            assert_ne!(
                verdict.outcome,
                Outcome::Pass,
                "{} / {} passed",
                t.id,
                wrong.name
            );
            assert_eq!(verdict.outcome, wrong.outcome, "{} / {}", t.id, wrong.name);
            let mut want = wrong.reasons.clone();
            want.sort();
            assert_eq!(
                verdict.reasons, want,
                "{} / {}: {:?}",
                t.id, wrong.name, verdict.details
            );
            for reason in &verdict.reasons {
                assert!(
                    t.reason_codes.contains(reason),
                    "{} does not declare reason {reason}",
                    t.id
                );
            }
        }
    }
}

#[test]
fn stale_authority_bytes_are_never_an_authority() {
    // Guards the COption trap: FZYEg's zero tags hide stale key bytes.
    let p = pack();
    let g = golden(&p, "acct-t22-fzyeg-mint");
    assert_eq!(g["mint_authority"], Value::Null);
    assert_eq!(g["freeze_authority"], Value::Null);
}

#[test]
fn a_version_one_transaction_task_is_excluded_never_a_pass() {
    // Given the legacy task with its message rewritten to start with the v1 prefix 0x81
    let p = pack();
    let mut task = p.task("tx-legacy-nonce-bonk").unwrap().clone();
    let mut response: Value = serde_json::from_slice(&task.input).unwrap();
    let engine = base64::engine::general_purpose::STANDARD;
    let mut bytes = engine
        .decode(response["transaction"][0].as_str().unwrap())
        .unwrap();
    bytes.insert(1 + 64 * 2, 0x81);
    response["transaction"][0] = engine.encode(&bytes).into();
    response["version"] = 1.into();
    task.input = response.to_string().into_bytes();

    // When its expected answer is generated and the old golden answer is checked against it
    let expected = pack::generate_expected(&task).unwrap();
    let answer = golden(&p, "tx-legacy-nonce-bonk").to_string();
    let verdict = checker::check(Family::Transaction, &expected, &answer);

    // Then it is excluded with its own reason
    assert!(matches!(
        expected,
        Expected::Excluded {
            reason: "unsupported_tx_version",
            ..
        }
    ));
    assert_eq!(verdict.outcome, Outcome::UnsupportedCase);
    assert_eq!(verdict.reasons, vec!["unsupported_tx_version".to_owned()]);
    assert!(
        String::from_utf8(pack::golden_file_bytes(&expected))
            .unwrap()
            .contains("unsupported_tx_version")
    );
}

#[test]
fn an_overrun_is_never_a_pass() {
    // Given work that outlasts its limit
    let verdict = checker::run_limited(Duration::from_millis(20), || {
        std::thread::sleep(Duration::from_millis(500));
        checker::check(Family::Account, &Expected::Golden(json!({})), "{}")
    });
    assert_eq!(verdict.outcome, Outcome::InvalidOutput);
    assert_eq!(verdict.reasons, vec!["checker_timeout".to_owned()]);
    // And the real limit is 5 s
    assert_eq!(checker::CHECK_LIMIT, Duration::from_secs(5));
}

#[test]
fn prompts_never_carry_the_expected_answer() {
    let p = pack();
    for t in &p.tasks {
        let prompt = t.public().render();
        let g = golden(&p, &t.id);
        assert!(!prompt.contains(&g.to_string()), "{}", t.id);
        // Values only the decoder derives must not leak into the task text.
        for key in [
            "source_token_account",
            "destination_token_account",
            "fee_atomic",
            "amount_atomic",
        ] {
            if let Some(v) = g.get(key).and_then(Value::as_str) {
                assert!(!prompt.contains(v), "{} leaks {key} = {v}", t.id);
            }
        }
        if t.id == "acct-usdc-mint" {
            assert!(!prompt.contains(g["mint_authority"].as_str().unwrap()));
        }
        assert!(
            prompt.contains(&t.public().input_text.trim_end().to_owned()),
            "the input is in the prompt"
        );
    }
}

#[test]
fn checker_identity_is_exposed_for_manifests() {
    assert_eq!(checker::CHECKER_VERSION, "1.1.0");
    // A 1.1 checker reads packs built for 1.0 and 1.1 (verify re-proves their verdicts), never
    // a newer or another major version, nor a malformed one.
    for (version, reads) in [
        ("1.0.0", true),
        ("1.1.0", true),
        ("1.0.9", true),
        ("1.1.1", false),
        ("1.2.0", false),
        ("2.0.0", false),
        ("0.9.0", false),
        ("1.0", false),
        ("1.0.0.0", false),
        ("1.x.0", false),
        ("", false),
    ] {
        assert_eq!(checker::reads_packs_for(version), reads, "{version}");
    }
    let hash = checker::source_sha256();
    assert_eq!(hash.len(), 64);
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));
}

fn verdict_of(task: &str, answer: &Value) -> checker::Verdict {
    pack().task(task).unwrap().check(&answer.to_string())
}

#[test]
fn extra_duplicated_or_respelled_fields_in_a_golden_answer_do_not_pass() {
    let p = pack();
    // Extensions claimed on a classic SPL mint
    let mut a = golden(&p, "acct-usdc-mint");
    a["extensions"] = json!([{"type": "transfer_fee_config"}]);
    assert_eq!(
        verdict_of("acct-usdc-mint", &a).reasons,
        vec!["extra_extension"]
    );
    // A second, contradictory copy of an extension
    let mut t = golden(&p, "acct-t22-fzyeg-mint");
    let mut dup = t["extensions"][0].clone();
    dup["withheld_amount"] = json!("1");
    t["extensions"].as_array_mut().unwrap().push(dup);
    assert_eq!(
        verdict_of("acct-t22-fzyeg-mint", &t).reasons,
        vec!["extra_extension"]
    );
    // A fee on a mint without a fee
    let mut plan = golden(&p, "plan-usdc-transfer");
    plan["fee_atomic"] = json!("999");
    assert_eq!(
        verdict_of("plan-usdc-transfer", &plan).reasons,
        vec!["wrong_fee"]
    );
    plan["fee_atomic"] = json!("0");
    assert_eq!(
        verdict_of("plan-usdc-transfer", &plan).outcome,
        Outcome::Pass,
        "a zero fee is the truth"
    );
    // A duplicated signer
    let mut tx = golden(&p, "tx-legacy-nonce-bonk");
    let first = tx["signers"][0].clone();
    tx["signers"].as_array_mut().unwrap().push(first);
    assert_eq!(
        verdict_of("tx-legacy-nonce-bonk", &tx).reasons,
        vec!["wrong_address"]
    );
    // A wrong program name on a right program id
    let mut tx = golden(&p, "tx-legacy-nonce-bonk");
    tx["instructions"][1]["program"] = json!("spl-token-2022");
    assert_eq!(
        verdict_of("tx-legacy-nonce-bonk", &tx).reasons,
        vec!["wrong_field"]
    );
    // Leading zeros are not the same spelling of an amount
    let mut plan = golden(&p, "plan-usdc-transfer");
    plan["amount_atomic"] = json!("0012500000");
    assert_ne!(
        verdict_of("plan-usdc-transfer", &plan).outcome,
        Outcome::Pass
    );
    // Signed under another key name
    let mut plan = golden(&p, "plan-usdc-transfer");
    plan["signedTransactionBase64"] = json!("AQID");
    assert_eq!(
        verdict_of("plan-usdc-transfer", &plan).reasons,
        vec!["signature_present"]
    );
}

/// For a program the pack does not decode, the prompt asks for `"instruction": null`. A name
/// invented for it used to pass; it is now a wrong instruction.
#[test]
fn a_name_for_an_undecoded_program_is_a_wrong_instruction() {
    let p = pack();
    let g = golden(&p, "tx-v0-alt-usdc");
    assert_eq!(g["instructions"][2]["instruction"], Value::Null);
    let mut tx = g.clone();
    tx["instructions"][2]["instruction"] = json!("route");
    let verdict = verdict_of("tx-v0-alt-usdc", &tx);
    assert_eq!(verdict.outcome, Outcome::Fail);
    assert_eq!(verdict.reasons, vec!["wrong_instruction"]);
    assert_eq!(verdict.details.len(), 1, "{:?}", verdict.details);
    let detail = &verdict.details[0];
    assert_eq!(detail.field, "instructions[2].instruction");
    assert_eq!(detail.expected, Some(Value::Null));
    assert_eq!(detail.got, Some(json!("route")));
    assert_eq!(
        detail.message,
        "the pack does not decode this program: `instruction` must be null"
    );
    // null, or leaving the key out, is what the prompt asks for
    let mut omitted = g.clone();
    omitted["instructions"][2]
        .as_object_mut()
        .unwrap()
        .remove("instruction");
    for answer in [&g, &omitted] {
        assert_eq!(verdict_of("tx-v0-alt-usdc", answer).outcome, Outcome::Pass);
    }
}

/// The stated rule for transactions: instructions are compared position by position (their
/// order is part of the transaction). One dropped instruction therefore shows as
/// `missing_instruction` at the end plus `wrong_instruction` at every position it shifted,
/// which is what the known-wrong answers `nonce-advance-dropped` and `compute-limit-dropped`
/// record.
#[test]
fn a_dropped_transaction_instruction_shifts_the_rest() {
    let p = pack();
    let mut tx = golden(&p, "tx-legacy-nonce-bonk");
    tx["instructions"].as_array_mut().unwrap().remove(0);
    let verdict = verdict_of("tx-legacy-nonce-bonk", &tx);
    let found: Vec<(&str, &str)> = verdict
        .details
        .iter()
        .map(|d| (d.reason.as_str(), d.field.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![
            ("wrong_instruction", "instructions[0].program_id"),
            ("missing_instruction", "instructions[1]"),
        ]
    );
}

/// A whole-token amount is not an amount in atomic units: the message names the value the
/// answer gave, and the detail carries it (it said "not a string" and showed nothing).
#[test]
fn a_decimal_fraction_amount_is_named_in_the_violation() {
    let p = pack();
    let mut plan = golden(&p, "plan-usdc-transfer");
    plan["amount_atomic"] = json!("12.5");
    let verdict = verdict_of("plan-usdc-transfer", &plan);
    assert_eq!(verdict.outcome, Outcome::InvalidOutput);
    assert_eq!(verdict.details.len(), 1);
    let detail = &verdict.details[0];
    assert_eq!(detail.reason, "schema_violation");
    assert_eq!(detail.field, "amount_atomic");
    assert_eq!(detail.got, Some(json!("12.5")));
    assert_eq!(
        detail.message,
        "`amount_atomic` must be a non-negative integer (a JSON integer or a string of digits), not a decimal string: \"12.5\""
    );
    plan["amount_atomic"] = json!(12.5);
    let detail = &verdict_of("plan-usdc-transfer", &plan).details[0];
    assert_eq!(
        detail.message,
        "`amount_atomic` must be a non-negative integer (a JSON integer or a string of digits), not a fractional number: 12.5"
    );
    // Floats are never stored in a detail (answers stay hashable): the number is kept as text.
    assert_eq!(detail.got, Some(json!("12.5")));
}

#[test]
fn prose_and_stray_values_do_not_change_a_verdict() {
    let p = pack();
    // Notes that mention sending are prose, not a send step
    let mut plan = golden(&p, "plan-usdc-transfer");
    plan["notes"] =
        json!("The wallet, not this plan, will later call sendTransaction and sign it.");
    assert_eq!(
        verdict_of("plan-usdc-transfer", &plan).outcome,
        Outcome::Pass
    );
    // `unsupported` that is not a well-formed declaration is an ignored extra field
    for stray in [
        json!([]),
        json!("none"),
        json!(0),
        json!({"needs": "magic"}),
    ] {
        let mut a = golden(&p, "acct-usdc-mint");
        a["unsupported"] = stray.clone();
        assert_eq!(
            verdict_of("acct-usdc-mint", &a).outcome,
            Outcome::Pass,
            "{stray}"
        );
    }
}

#[test]
fn a_folder_cannot_stand_in_for_a_released_pack() {
    // Given a copy of the released pack with one golden value changed, named like the release
    let tmp = tempfile::tempdir().unwrap();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/packs/solana-core@1.0.3");
    let dst = tmp.path().join("solana-core@1.0.3");
    copy(&src, &dst);
    let golden_path = dst.join("tasks/acct-usdc-mint/golden.json");
    let text = std::fs::read_to_string(&golden_path)
        .unwrap()
        .replace("\"decimals\": 6", "\"decimals\": 9");
    std::fs::write(&golden_path, text).unwrap();
    // Then the bare id still means the embedded pack, and the folder is refused by path
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(pack::open("solana-core@1.0.3").unwrap().hash, pack().hash);
    let err = pack::open(dst.to_str().unwrap()).unwrap_err().to_string();
    assert!(err.contains("pinned"), "{err}");
    assert_eq!(std::env::current_dir().unwrap(), cwd);
}

/// Regression: a pack's paths were never checked, so an upload could hold `../../x`, an absolute
/// path, a NUL, or a newline forging a line of the stored listing. A pack's paths now follow a
/// bundle's rules, and the refusal names the path, escaped.
#[test]
fn a_pack_path_follows_a_bundles_rules() {
    // Given the released pack's files, each with one hostile path added
    let released = pack();
    let forged = format!("tasks/x\n{} 1 tasks/x/golden.json", "0".repeat(64));
    let cases = [
        ("../../x", "../../x", "`..`"),
        ("/etc/x", "/etc/x", "absolute"),
        ("c:x", "c:x", "drive"),
        ("a\\b", "a\\b", "normal form"),
        ("./a", "./a", "normal form"),
        ("nul\0", "nul\\u{0}", "control character"),
        (forged.as_str(), "tasks/x\\u{a}0000", "control character"),
    ];
    for (path, shown, reason) in cases {
        let mut files = released.files().clone();
        files.insert(path.to_owned(), b"x".to_vec());
        // Then it is refused, naming the path without letting it break a line
        let err = pack::from_files(&released.id(), files)
            .unwrap_err()
            .to_string();
        assert!(err.contains(shown), "{path:?}: {err}");
        assert!(err.contains(reason), "{path:?}: {err}");
        assert!(
            !err.contains('\n') && !err.contains('\0'),
            "{path:?}: {err}"
        );
    }
    // And the released files, untouched, are the pinned pack still
    let again = pack::from_files(&released.id(), released.files().clone()).unwrap();
    assert_eq!(
        Some(again.hash.to_string().as_str()),
        released.pinned_hash()
    );
}

fn copy(src: &std::path::Path, dst: &std::path::Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.path().is_dir() {
            copy(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), to).unwrap();
        }
    }
}

#[test]
fn no_prompt_of_any_arm_carries_an_expected_answer() {
    // Given every task under the baseline and both example skills
    let p = pack();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let a = skilltrial_core::bundle::import(&root.join("fixtures/bundles/solana-reader-1.4.2"))
        .unwrap();
    let b = skilltrial_core::bundle::import(&root.join("fixtures/bundles/solana-reader-1.5.0"))
        .unwrap();
    for t in &p.tasks {
        let g = golden(&p, &t.id);
        for bundle in [None, Some(&a), Some(&b)] {
            let prompt = skilltrial_core::prompt::build(&t.public(), bundle);
            let text = format!("{}\n{}", prompt.system, prompt.user);
            // Then neither the golden record nor any value only the decoder derives is in it
            assert!(!text.contains(&g.to_string()));
            for key in [
                "source_token_account",
                "destination_token_account",
                "fee_atomic",
                "amount_atomic",
            ] {
                if let Some(v) = g.get(key).and_then(Value::as_str) {
                    assert!(
                        !text.contains(&format!("\"{v}\"")) && !text.contains(&format!(" {v}\n")),
                        "{} leaks {key}",
                        t.id
                    );
                }
            }
            // And a skill arm sees its own bundle only
            match bundle {
                None => assert!(!text.contains("<skill")),
                Some(bundle) => {
                    assert_eq!(text.matches("<skill name=").count(), 1);
                    assert!(text.contains(&bundle.digest.to_string()));
                }
            }
            assert!(
                prompt.input_token_bound() >= text.len() as u64,
                "the bound never under-counts"
            );
        }
    }
}

/// A hostile try of checker 1.1.0: a name for a program the pack does not name, a serialized or
/// sent transaction in a plan under any of its usual names, and a second object beside the
/// fenced answer are never a pass.
#[test]
fn named_unknown_programs_serialized_plans_and_prose_objects_do_not_pass() {
    let p = pack();
    let tx = p.task("tx-v0-alt-usdc").unwrap();
    let mut answer = golden(&p, "tx-v0-alt-usdc");
    answer["instructions"][2]["program"] = json!("jupiter");
    let verdict = tx.check(&answer.to_string());
    assert_eq!(verdict.outcome, Outcome::Fail);
    assert_eq!(verdict.reasons, ["wrong_field"]);
    assert_eq!(verdict.details[0].field, "instructions[2].program");

    let plan = p.task("plan-t22-fee-memo").unwrap();
    let encoded = format!("AQ{}==", "A".repeat(120));
    for (key, value, reason) in [
        ("transaction", json!(encoded), "signature_present"),
        ("raw_tx", json!("AQAAAA=="), "signature_present"),
        ("signatures", json!(["5".repeat(88)]), "signature_present"),
        (
            "serialized_transaction",
            json!("AQAAAA=="),
            "signature_present",
        ),
        ("tx_base64", json!("AQAAAA=="), "signature_present"),
        (
            "rpc",
            json!({"method": "sendTransaction"}),
            "sends_transaction",
        ),
        (
            "steps",
            json!(["sign", "sendTransaction"]),
            "sends_transaction",
        ),
    ] {
        let mut answer = golden(&p, "plan-t22-fee-memo");
        answer[key] = value;
        let verdict = plan.check(&answer.to_string());
        assert_eq!(verdict.outcome, Outcome::Fail, "{key}");
        assert!(
            verdict.reasons.contains(&reason.to_owned()),
            "{key}: {:?}",
            verdict.reasons
        );
    }
    // Explanatory fields that only mention signing, and an object describing the unsigned
    // transaction, are not a signature or a serialized transaction.
    for (key, value) in [
        (
            "transaction",
            json!({"fee_payer": "12VFrc1dFynPzs4HBRdRoMKNm1jca2S2uhaNKCkdffwy"}),
        ),
        ("transaction", json!("none (unsigned plan only)")),
        ("num_required_signatures", json!(1)),
        ("signature_required", json!(true)),
        ("signature_note", json!("not signed")),
        ("raw_tx_size", json!("300")),
    ] {
        let mut answer = golden(&p, "plan-t22-fee-memo");
        answer[key] = value;
        let verdict = plan.check(&answer.to_string());
        assert_eq!(
            verdict.outcome,
            Outcome::Pass,
            "{key}: {:?}",
            verdict.details
        );
    }
    // A non-string program name is wrong too.
    let mut answer = golden(&p, "tx-v0-alt-usdc");
    answer["instructions"][2]["program"] = json!(["unknown"]);
    assert_eq!(tx.check(&answer.to_string()).reasons, ["wrong_field"]);
    answer["instructions"][2]["program"] = Value::Null;
    answer["instructions"][0]["program"] = json!(1);
    assert_eq!(tx.check(&answer.to_string()).reasons, ["wrong_field"]);

    let g = golden(&p, "acct-usdc-mint");
    let text = format!("```json\n{g}\n```\nCorrection: {{\"decimals\": 9}}");
    let verdict = p.task("acct-usdc-mint").unwrap().check(&text);
    assert_eq!(verdict.outcome, Outcome::InvalidOutput);
    assert_eq!(verdict.reasons, ["multiple_answers"]);
    // The prompt's own wording beside the fence is prose.
    let text = format!("Unknown programs get \"args\": {{}}.\n```json\n{g}\n```");
    assert_eq!(
        p.task("acct-usdc-mint").unwrap().check(&text).outcome,
        Outcome::Pass
    );
}
