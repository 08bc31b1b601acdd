//! A progressive run (`plan --delivery progressive`) served by the runner daemon: every turn of a
//! trial is one request to the model, charged at what it spent; the runner's fee is per trial,
//! settled once with the sum of its turns' usage; the downloaded report carries the activation
//! evidence and verifies against the Run account.

use std::collections::BTreeMap;

use serde_json::Value;
use skilltrial_core::manifest::SolUsd;
use skilltrial_core::money::MicroUsd;
use skilltrial_core::report::Report;
use skilltrial_engine::scripted::{Reply, ScriptedServer, ServerRequest};

use crate::daemon::{
    free_port, operator_profile, plan_with, remote_report_args, start_daemon_with, status_command,
    submit_args,
};
use crate::harness::{Localnet, said};

/// The rate the plan pins (`--sol-usd 150`), to recompute each trial's usage in lamports.
const USD_MICROS_PER_SOL: u64 = 150_000_000;

/// A model that loads the skill its catalog lists on its first turn and answers on the next; with
/// an empty catalog (the baseline) it answers at once.
fn loads_then_answers(request: &ServerRequest) -> Reply {
    if !request.has_tools() {
        return Reply::Answer("an inline request: this plan is progressive".to_owned());
    }
    if !request.tool_results().is_empty() {
        return Reply::Answer("{\"answer\": \"read the skill, still unsure\"}".to_owned());
    }
    let system = request.system_text();
    match system
        .split("<name>")
        .nth(1)
        .and_then(|rest| rest.split("</name>").next())
    {
        Some(name) => Reply::Tools {
            text: "Loading the skill first.".to_owned(),
            calls: vec![(
                "load_skill".to_owned(),
                serde_json::json!({ "name": name }).to_string(),
            )],
        },
        None => Reply::Answer("{\"answer\": \"no skill to load\"}".to_owned()),
    }
}

pub fn a_progressive_run_is_charged_per_turn_and_settled_per_trial(net: &Localnet) {
    let server = ScriptedServer::start(loads_then_answers).unwrap();
    let profiles = operator_profile(net, "loopback-progressive", &server);
    let manifest = plan_with(
        net,
        &profiles,
        "loopback-progressive",
        &["1", "5", "32"],
        &["--delivery", "progressive", "--max-turns", "3"],
    );

    let state = net.dir.path().join("progressive-daemon-state");
    let daemon = start_daemon_with(net, free_port(), &state, &profiles, &["--batch", "5"]);
    let submitted = net.cli_json(&net.user_keypair, &submit_args(&manifest, &daemon.url));
    let run = submitted["run"].as_str().unwrap().to_owned();
    let planned = submitted["escrow"]["planned_trials"].as_u64().unwrap();
    assert_eq!(planned, 18, "{submitted}");
    let fee = submitted["escrow"]["fee_per_trial_lamports"]
        .as_u64()
        .unwrap();

    let followed = status_command(net, &daemon, &run, &["--follow"])
        .output()
        .unwrap();
    assert!(followed.status.success(), "follow: {}", said(&followed));
    let last: Value = serde_json::from_str(
        String::from_utf8_lossy(&followed.stdout)
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(last["data"]["phase"], "finalized", "{last}");

    let out_dir = net.dir.path().join("progressive-report");
    let downloaded = net.cli_json(
        &net.user_keypair,
        &remote_report_args(&run, &daemon, out_dir.to_str().unwrap()),
    );
    assert_eq!(downloaded["run_account"], "agrees", "{downloaded}");
    let report =
        Report::from_json(&std::fs::read_to_string(out_dir.join("report.json")).unwrap()).unwrap();

    // Two turns for every skill trial (load, then answer), one for every baseline trial: one
    // request per turn, each sent once.
    let requests = server.requests();
    let mut sent: Vec<String> = requests.iter().filter_map(|r| r.attempt.clone()).collect();
    assert_eq!(sent.len(), 12 * 2 + 6, "requests: {}", sent.len());
    sent.sort();
    sent.dedup();
    assert_eq!(sent.len(), 30, "a turn was sent twice");
    let mut turns_by_arm: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for trial in &report.trials {
        let evidence = trial
            .evidence
            .as_ref()
            .expect("a progressive trial's evidence");
        turns_by_arm
            .entry(trial.arm.clone())
            .or_default()
            .push(evidence.turns);
        assert_eq!(evidence.loaded, trial.arm != "baseline", "{trial:?}");
        assert_eq!(trial.attempts.len(), evidence.turns as usize, "{trial:?}");
    }
    assert!(
        turns_by_arm["baseline"].iter().all(|t| *t == 1)
            && turns_by_arm["a"].iter().all(|t| *t == 2)
            && turns_by_arm["b"].iter().all(|t| *t == 2),
        "{turns_by_arm:?}"
    );
    let activation = report
        .activation
        .as_ref()
        .expect("activation in the report");
    assert_eq!(activation.arms.len(), 3, "{activation:?}");

    // Settled once per trial, never per turn: its usage is what all its turns spent, at the
    // pinned rate; the fee is the trial's.
    let settlement = report.settlement.clone().unwrap();
    let records: Vec<_> = settlement
        .batches
        .iter()
        .flat_map(|b| b.evidence.iter())
        .collect();
    assert_eq!(records.len(), 18, "one record per trial");
    let rate = SolUsd {
        usd_micros_per_sol: USD_MICROS_PER_SOL,
        source: "the test".to_owned(),
        at: "2026-12-04T00:00:00Z".to_owned(),
    };
    let mut usage_total = 0u64;
    for record in &records {
        let trial = report
            .trials
            .iter()
            .find(|t| t.index == u32::from(record.trial()))
            .unwrap();
        let spent: u64 = trial
            .attempts
            .iter()
            .map(|a| a.spent_usd_micros.unwrap())
            .sum();
        assert_eq!(
            record.usage_lamports(),
            rate.lamports(MicroUsd(spent)).unwrap().0,
            "trial {}: usage is the sum of its turns",
            trial.index
        );
        // The record names the trial's last turn: the one whose answer was scored.
        assert_eq!(record.attempt_id(), trial.attempts.last().unwrap().id);
        usage_total += record.usage_lamports();
    }
    let status = net.cli_json(&net.user_keypair, &["chain-status", &run]);
    assert_eq!(status["settled_trials"], 18, "{status}");
    assert_eq!(status["settled_fees_lamports"], 18 * fee, "{status}");
    assert_eq!(status["settled_usage_lamports"], usage_total, "{status}");
    // The export verifies against the Run account: its hash, its settlement, its usage.
    let exported = out_dir.join("report.json");
    let args = ["verify", exported.to_str().unwrap(), "--run", &run];
    let verified = net.cli(&net.user_keypair, &args);
    assert_eq!(verified.status.code(), Some(0), "{}", said(&verified));
    drop(daemon);
    server.stop();
}
