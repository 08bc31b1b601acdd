//! `skilltrial verify` on a hosted run's report: the settlement digest recomputes from the
//! evidence records the report carries, and an edited usage is named by batch and trial. The real
//! binary on a report written by a real run (loopback server, real journal); the settlement is
//! added to it as the hosted runner will, before sealing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use serde_json::Value;
use skilltrial_core::report::Report;
use skilltrial_core::settlement::{EvidenceRecord, SettledBatch, Settlement};
use skilltrial_engine::scripted::{Reply, ScriptedServer};

mod support;

use support::{Env, scripted_answer};

/// A report of a real 18-trial run, its answered trials settled in batches of 10 (trial `i`
/// charged `5_000 + i` lamports), sealed.
fn hosted_report(env: &Env) -> Report {
    let run = env.plan(&["--reps", "1", "--cap-usd", "4"]);
    env.json(&["run", "--manifest", &run, "--json"]);
    let mut report = Report::from_value(&env.report(&run)).unwrap();
    let evidence: Vec<EvidenceRecord> = (0..report.trials.len())
        .map(|i| {
            let index = u64::from(report.trials[i].index);
            report.evidence_of(i, 5_000 + index).unwrap().unwrap()
        })
        .collect();
    let batches = evidence
        .chunks(10)
        .map(|c| SettledBatch::new(c.to_vec(), None))
        .collect();
    let key = "11111111111111111111111111111111".to_owned();
    report.settlement = Some(Settlement::new(key.clone(), key, 3, batches));
    report.seal().unwrap();
    report
}

fn write(path: &Path, doc: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(doc).unwrap()).unwrap();
}

/// (exit code, stdout, stderr) of `verify` with `extra`.
fn verify(env: &Env, path: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec!["verify", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = env.run(&args);
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn verify_recomputes_a_hosted_reports_settlement_and_names_an_edited_usage() {
    // Given a sealed hosted report whose 18 trials were settled in batches of 10 and 8 ...
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let report = hosted_report(&env);
    let doc = report.to_value().unwrap();
    let path = env.dir.path().join("hosted.json");
    write(&path, &doc);
    let settlement = report.settlement.as_ref().unwrap();
    let digest = settlement.digest_sha256.clone();
    let usage: u64 = (0..18).map(|i| 5_000 + i).sum();

    // When it is verified, then the digest recomputes from the evidence, and says so.
    let (code, text, _) = verify(&env, &path, &[]);
    assert_eq!(code, Some(0));
    assert_eq!(
        text,
        format!(
            "ok: report hash {} and manifest hash {} recompute from the file\n\
             derived: the summary, pairs, task table, trial outcomes and cost sums are what its trials give\n\
             settlement: digest {digest} recomputed from 18 evidence records in 2 batches ({usage} lamports of usage)\n",
            report.report_hash.as_deref().unwrap(),
            report.manifest_hash
        )
    );
    let (code, json, _) = verify(&env, &path, &["--json"]);
    assert_eq!(code, Some(0));
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["ok"], true);
    assert_eq!(
        json["settlement"],
        serde_json::json!({
            "ok": true, "stated": digest, "recomputed": digest, "records": 18, "batches": 2,
            "usage_lamports": usage, "error": null,
        })
    );

    // Given the usage of trial 12 (batch 2) edited in the file, and the report hash recomputed
    // over the edit, as a forger would ...
    let mut edited = doc.clone();
    let record = &mut edited["settlement"]["batches"][1]["evidence"][2];
    assert_eq!(record["trial"], 12);
    record["usage_lamports"] = Value::from(9_000_000);
    let mut forged = Report::from_value(&edited).unwrap();
    forged.seal().unwrap();
    let forged_path = env.dir.path().join("forged.json");
    let forged_doc = forged.to_value().unwrap();
    write(&forged_path, &forged_doc);
    let before = std::fs::read(&forged_path).unwrap();
    // ... verify fails with the check-failed code and names the batch, its trials and both hashes.
    let stored = &settlement.batches[1].evidence_sha256;
    let recomputed =
        skilltrial_core::digest::Sha256Digest(skilltrial_core::settlement::batch_evidence_hash(
            &forged.settlement.as_ref().unwrap().batches[1].evidence,
        ))
        .hex();
    let message = format!(
        "settlement: batch 2 (trials 10, 11, 12, 13, 14, 15, 16, 17): evidence_sha256 is {stored}, its evidence records hash to {recomputed}"
    );
    let (code, text, _) = verify(&env, &forged_path, &[]);
    assert_eq!(code, Some(1));
    assert_eq!(text, format!("MISMATCH: {message}\n"));
    let (code, json, _) = verify(&env, &forged_path, &["--json"]);
    assert_eq!(code, Some(1));
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (&json["ok"], &json["report_hash"]["ok"]),
        (&Value::from(false), &Value::from(true))
    );
    assert_eq!(
        json["settlement"],
        serde_json::json!({
            "ok": false, "stated": digest, "recomputed": null, "records": null, "batches": null,
            "usage_lamports": null, "error": message,
        })
    );
    // Verifying wrote nothing: the file is byte for byte what it was.
    assert_eq!(std::fs::read(&forged_path).unwrap(), before);

    // Given the same edit without a new report hash, both the hash and the settlement are named.
    let unsealed_path = env.dir.path().join("edited.json");
    write(&unsealed_path, &edited);
    let (code, text, _) = verify(&env, &unsealed_path, &[]);
    assert_eq!(code, Some(1));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("MISMATCH: report hash: the file states "),
        "{text}"
    );
    assert_eq!(lines[1], format!("MISMATCH: {message}"));
}

/// `verify --run-account`: the report of a real run, settled as the hosted runner will, against
/// its Run account as `solana account --output json` prints it (data written by the program's own
/// serializer). It agrees; an account whose digest differs by one bit, or whose anchored report
/// hash is another report's, is a mismatch naming the field; a local report, a file that is not a
/// Run account of the program, and a missing file are refused, naming the file.
#[test]
fn verify_compares_a_hosted_report_with_its_run_account() {
    use skilltrial_chain::account::{Run, RunStatus, SETTLED_BITMAP_BYTES, to_cli_json};
    use skilltrial_chain::{PROGRAM_ID, Pubkey};
    let server = ScriptedServer::start(|r| Reply::Answer(scripted_answer(r))).unwrap();
    let env = Env::new(&server).backoff_scale("0");
    let mut report = hosted_report(&env);
    // The run the program would have opened for this report's manifest.
    let user = Pubkey::new_from_array([1; 32]);
    let manifest = report.manifest_digest().unwrap().0;
    let address = skilltrial_chain::pda::run(&user, &manifest);
    let mut section = report.settlement.take().unwrap();
    section = Settlement::new(
        PROGRAM_ID.to_string(),
        address.to_string(),
        section.run_id,
        section.batches,
    );
    report.settlement = Some(section.clone());
    let report_hash = report.seal().unwrap();
    let check = section.verify().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("report.json");
    write(&report_path, &report.to_value().unwrap());

    let run = |digest: [u8; 32], anchored: [u8; 32]| Run {
        version: 2,
        run_id: section.run_id,
        user,
        runner: Pubkey::new_from_array([2; 32]),
        manifest_hash: manifest,
        planned_trials: 54,
        per_request_cap: 1_000_000,
        fee_per_trial: 200_000,
        escrowed: 100_000_000,
        settled_usage: check.usage_lamports,
        settled_fees: 200_000 * check.records as u64,
        settled_trials: u16::try_from(check.records).unwrap(),
        settle_batches: u16::try_from(check.batches).unwrap(),
        settled_bitmap: [0; SETTLED_BITMAP_BYTES],
        settle_digest: digest,
        status: RunStatus::Finalized { at: 1 },
        opened_at: 0,
        deadline: 2,
        report_hash: anchored,
        bump: 255,
        reserved: [0; 32],
    };
    let account_path = dir.path().join("run-account.json");
    let write_account = |r: &Run| {
        std::fs::write(&account_path, to_cli_json(&address, r).unwrap()).unwrap();
    };
    let arg = account_path.to_str().unwrap().to_owned();

    write_account(&run(check.digest.0, report_hash.0));
    let (code, out, err) = verify(&env, &report_path, &["--run-account", &arg]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains(&format!("run account {address} agrees")),
        "{out}"
    );
    let (code, out, _) = verify(&env, &report_path, &["--run-account", &arg, "--json"]);
    assert_eq!(code, Some(0));
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["run_account"]["ok"], true);
    assert_eq!(doc["run_account"]["address"], address.to_string());

    let mut flipped = check.digest.0;
    flipped[31] ^= 1;
    write_account(&run(flipped, [7; 32]));
    let (code, out, _) = verify(&env, &report_path, &["--run-account", &arg]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "MISMATCH: run account {address}: settlement digest: the report says {}",
            check.digest.hex()
        )),
        "{out}"
    );
    assert!(out.contains("report hash: the report says"), "{out}");

    // A report whose settlement does not recompute is never said to agree with the account.
    let mut doc = report.to_value().unwrap();
    let usage = &mut doc["settlement"]["batches"][0]["evidence"][0]["usage_lamports"];
    *usage = (usage.as_u64().unwrap() + 1).into();
    let edited = dir.path().join("edited.json");
    write(&edited, &doc);
    write_account(&run(check.digest.0, report_hash.0));
    let (code, out, _) = verify(&env, &edited, &["--run-account", &arg, "--json"]);
    assert_eq!(code, Some(1), "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&doc["run_account"]["ok"], &doc["run_account"]["compared"]),
        (&Value::Null, &Value::Bool(false))
    );
    let (_, out, _) = verify(&env, &edited, &["--run-account", &arg]);
    assert!(
        out.contains("not compared: the report's settlement does not recompute"),
        "{out}"
    );

    // Refusals name the file and say why; nothing is written.
    let local = dir.path().join("local.json");
    let mut plain = report.clone();
    plain.settlement = None;
    plain.seal().unwrap();
    write(&local, &plain.to_value().unwrap());
    let (code, _, err) = verify(&env, &local, &["--run-account", &arg]);
    assert_ne!(code, Some(0));
    assert!(err.contains("has no settlement to compare"), "{err}");
    std::fs::write(&account_path, "{\"pubkey\": 1}").unwrap();
    let (code, _, err) = verify(&env, &report_path, &["--run-account", &arg]);
    assert_ne!(code, Some(0));
    assert!(
        err.contains(&format!("--run-account {arg}")) && err.contains("pubkey"),
        "{err}"
    );
    let missing = dir.path().join("missing.json");
    let (code, _, err) = verify(
        &env,
        &report_path,
        &["--run-account", missing.to_str().unwrap()],
    );
    assert_ne!(code, Some(0));
    assert!(err.contains("missing.json"), "{err}");
}
