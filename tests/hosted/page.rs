//! The New-run page in a real browser against the real daemon, the local validator and a
//! loopback model server: `web/tests/e2e.mjs` (playwright-core driving Debian's Chromium, with
//! a Wallet Standard test wallet signing through WebCrypto Ed25519) goes through the Quickstart;
//! this side paces the model server by what the script reports, then checks on the chain what the
//! page claimed: the hash it showed is the one escrowed, the declined escrow left nothing, the
//! cancelled run stopped early, and the finished run's exported report verifies with the CLI
//! against its Run account and the wallet's anchor. Screenshots land in
//! `target/page-screenshots/`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skilltrial_chain::{Pubkey, pda};
use skilltrial_engine::scripted::{Reply, ScriptedServer};
use solana_keypair::Keypair;
use solana_signer::Signer;

#[path = "../../core/tests/support/rawzip.rs"]
mod rawzip;

use crate::daemon::{free_port, operator_profile, start_daemon_with};
use crate::harness::{Localnet, said, system_transfer};

/// The trials answered before the model server holds the rest of the first run until the
/// page's cancel has landed.
const ANSWERED_BEFORE_CANCEL: usize = 3;

fn chromium() -> PathBuf {
    std::env::var("CHROMIUM").map_or_else(|_| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

fn hex_bytes(text: &str) -> [u8; 32] {
    let bytes: Vec<u8> = (0..64)
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect();
    bytes.try_into().unwrap()
}

pub fn the_new_run_page_in_a_real_browser(net: &Localnet) {
    let web = skilltrial_e2e::workspace_root().join("web");
    assert!(
        web.join("node_modules/playwright-core").is_dir(),
        "web/node_modules is missing: the test command runs `bash scripts/web.sh --check`, which installs it (npm ci)"
    );
    let shots = skilltrial_e2e::workspace_root().join("target/page-screenshots");
    let _ = std::fs::remove_dir_all(&shots);

    // --- the model server: the first run's fourth request waits for the page's cancel
    let cancelled = Arc::new(AtomicBool::new(false));
    let gate = Arc::clone(&cancelled);
    let server = ScriptedServer::start(move |request| {
        let index = usize::try_from(request.index).unwrap();
        while index >= ANSWERED_BEFORE_CANCEL && !gate.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        Reply::Answer("I do not know.".to_owned())
    })
    .unwrap();
    let profiles = operator_profile(net, "loopback-page", &server);
    let state = net.dir.path().join("page-daemon-state");
    let port = free_port();
    let daemon = start_daemon_with(net, port, &state, &profiles, &["--batch", "6"]);

    // --- the page's wallet: a fresh keypair with 10 SOL
    let wallet = Keypair::new();
    let user = net.user();
    net.send_as(
        &user,
        "fund the page's wallet",
        &[system_transfer(
            &user.pubkey(),
            &wallet.pubkey(),
            10_000_000_000,
        )],
    )
    .unwrap();
    let balance_0 = net.balance(&wallet.pubkey());

    // --- what the page is given: the examples, one of them zipped, and a hostile ZIP
    let dir = net.dir.path().join("page");
    std::fs::create_dir_all(&dir).unwrap();
    let root = skilltrial_e2e::workspace_root();
    let bundle_a = root.join("fixtures/bundles/solana-reader-1.4.2");
    let bundle_b = root.join("fixtures/bundles/solana-reader-1.5.0");
    let zip_b = dir.join("solana-reader-1.5.0.zip");
    std::fs::write(&zip_b, rawzip::zip_folder(&bundle_b)).unwrap();
    let hostile = dir.join("hostile.zip");
    std::fs::write(&hostile, rawzip::hostile_bundle()).unwrap();
    let bytes = wallet.to_bytes();
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        json!({
            "url": daemon.url.as_str(),
            "seed": &bytes[..32],
            "publicKey": wallet.pubkey().to_bytes(),
            "address": wallet.pubkey().to_string(),
            "chromium": chromium(),
            "shots": shots,
            "bundleA": bundle_a,
            "bundleBFolder": bundle_b,
            "bundleBZip": zip_b,
            "hostileZip": hostile,
            "profile": "loopback-page",
        })
        .to_string(),
    )
    .unwrap();

    // --- the user, in the browser
    let mut child = Command::new("node")
        .arg("tests/e2e.mjs")
        .arg(&config)
        .current_dir(&web)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start node (scripts/web.sh installs it): {e}"));
    // Dropped once the last answer is written: the script's stdin then ends, and it can exit.
    let mut answer = child.stdin.take();
    let run_account = dir.join("run-account.json");
    let mut steps: Vec<Value> = Vec::new();
    let mut settled_before_close: Option<u64> = None;
    let mut held_before_close: Option<u64> = None;
    // A script that never ends is killed after 15 minutes (its stdout then ends and the test
    // fails with what it saw), instead of hanging the suite.
    let (finished_tx, finished_rx) = std::sync::mpsc::channel::<()>();
    let pid = child.id().to_string();
    let watchdog = std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            finished_rx.recv_timeout(Duration::from_secs(900))
        {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("page: the browser script ran over 15 minutes: killed");
            }
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
        }
    });
    let started = Instant::now();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let step: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the browser script printed {line:?}: {e}"));
        #[allow(clippy::print_stderr)] // what the browser saw, in the test's log
        {
            eprintln!("page: {line}");
        }
        if step["step"] == "cancelled" {
            // The cancel has landed: the held request is answered; nothing new is sent.
            cancelled.store(true, Ordering::SeqCst);
        }
        if step["step"] == "finished" {
            // The finished run as it stands before the page closes it: what it paid out, and
            // its account kept for `verify --run-account` (as the README advises a user).
            let address: Pubkey = step["run"].as_str().unwrap().parse().unwrap();
            let run = net.chain.run(&address).unwrap().unwrap().account.run;
            settled_before_close = Some(run.settled_usage + run.settled_fees);
            held_before_close = Some(net.balance(&address));
            // The page's "Check it yourself" command works as printed, on this cluster (`-u l`
            // names the default local port; this validator's URL stands in for it).
            let printed: Vec<&str> = step["command"].as_str().unwrap().split(' ').collect();
            assert_eq!(
                printed[..],
                [
                    "skilltrial",
                    "verify",
                    &format!("skilltrial-report-{address}.json"),
                    "--run",
                    &address.to_string(),
                    "-u",
                    "l"
                ]
            );
            let verify = net.cli(
                &net.user_keypair,
                &[
                    "verify",
                    step["exported"].as_str().unwrap(),
                    "--run",
                    printed[4],
                ],
            );
            assert!(verify.status.success(), "verify --run: {}", said(&verify));
            std::fs::write(
                &run_account,
                skilltrial_chain::account::to_cli_json(&address, &run).unwrap(),
            )
            .unwrap();
            let mut stdin = answer.take().expect("one finished run, one answer");
            std::io::Write::write_all(&mut stdin, b"close\n").unwrap();
        }
        steps.push(step);
        assert!(
            started.elapsed() < Duration::from_secs(900),
            "the browser test ran over 15 minutes"
        );
    }
    let status = child.wait().unwrap();
    drop(finished_tx);
    watchdog.join().unwrap();
    cancelled.store(true, Ordering::SeqCst);
    let step = |name: &str| -> Vec<Value> {
        steps
            .iter()
            .filter(|s| s["step"] == name)
            .cloned()
            .collect()
    };
    assert!(
        status.success() && !step("done").is_empty(),
        "the browser test failed (see target/page-screenshots/failure.*): {:?}",
        step("failed")
    );

    // --- the live grid filled as trials landed: one cell per planned trial, as many coloured
    // as trials done, while the first run ran, once it was cancelled and when the second ended
    let grids = step("grid");
    let names: Vec<&str> = grids.iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["trials-landing", "cancelled-run-finished", "run-finished"],
        "{grids:?}"
    );
    for g in &grids {
        assert_eq!(g["cells"], g["total"], "{g}");
        assert_eq!(g["landed"], g["done"], "{g}");
    }
    assert_eq!(grids[0]["total"], 36);
    assert!(grids[0]["landed"].as_u64().unwrap() >= 3, "{}", grids[0]);
    assert_eq!(grids[1]["landed"], 36, "{}", grids[1]);
    assert_eq!(grids[2]["landed"], grids[2]["total"], "{}", grids[2]);

    // --- every state walked fits a 390 px phone; a cap below the fees was refused
    let widths = step("width");
    assert!(widths.len() >= 10, "{widths:?}");
    assert!(widths.iter().all(|w| w["width"].as_u64().unwrap() <= 390));
    assert!(
        step("cap-refused")[0]["message"]
            .as_str()
            .unwrap()
            .contains("cannot cover this run's runner fees"),
        "{:?}",
        step("cap-refused")
    );

    // --- the hostile ZIP: the page listed exactly the CLI's rejection codes
    let out = net.local(&["validate", "--json", hostile.to_str().unwrap()]);
    let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cli_codes: Vec<String> = cli["bundles"][0]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap().to_owned())
        .collect();
    let page_codes: Vec<String> = step("hostile")[0]["codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    assert!(!cli_codes.is_empty());
    assert_eq!(page_codes, cli_codes, "the page's rejections are the CLI's");

    // --- the digests shown are the CLI's
    let accepted = &step("accepted")[0]["digests"];
    for (arm, folder) in [("a", &bundle_a), ("b", &bundle_b)] {
        let out = net.local(&["validate", "--json", folder.to_str().unwrap()]);
        let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(accepted[arm], cli["bundles"][0]["digest"], "bundle {arm}");
    }

    // --- the declined escrow opened nothing; the approved one is the hash the page showed
    let owner = wallet.pubkey();
    let declined = step("declined")[0]["hash"].as_str().unwrap().to_owned();
    let opened = step("opened");
    assert_eq!(opened.len(), 2, "{opened:?}");
    assert_eq!(
        opened[0]["hash"].as_str().unwrap(),
        declined,
        "the approval after the decline escrows the same plan"
    );
    for (i, run) in opened.iter().enumerate() {
        let hash = hex_bytes(run["hash"].as_str().unwrap());
        let address: Pubkey = run["run"].as_str().unwrap().parse().unwrap();
        assert_eq!(
            address,
            pda::run(&owner, &hash),
            "the Run is the wallet's, for the hash shown"
        );
        let Some(live) = net.chain.run(&address).unwrap() else {
            assert_eq!(i, 1, "only the finished run was closed");
            continue;
        };
        assert_eq!(
            live.account.run.manifest_hash, hash,
            "the escrowed hash is the one the page showed"
        );
        assert_eq!(live.account.run.user, skilltrial_chain::anchor_key(&owner));
        assert!(
            matches!(
                live.account.run.status,
                skilltrial_chain::account::RunStatus::Finalized { .. }
            ),
            "{:?}",
            live.account.run.status
        );
    }
    assert!(
        net.chain
            .run(&opened[1]["run"].as_str().unwrap().parse().unwrap())
            .unwrap()
            .is_none(),
        "the page's close deleted the finished run's account"
    );
    // One escrow signature before the cancel: the declined one never reached the chain.
    assert_eq!(opened[0]["signed"], 1, "{:?}", opened[0]);

    // --- the cancelled run stopped early
    let first: Pubkey = opened[0]["run"].as_str().unwrap().parse().unwrap();
    let first_run = net.chain.run(&first).unwrap().unwrap().account.run;
    // and its escrow is what the page showed before the signature: model cap plus fees
    let shown = &opened[0]["escrow"]["lamports"];
    let lamports = |field: &str| shown[field].as_str().unwrap().parse::<u64>().unwrap();
    assert_eq!(first_run.escrowed, lamports("escrow"), "{shown}");
    assert_eq!(
        lamports("model"),
        first_run.per_request_cap * u64::from(first_run.planned_trials)
    );
    assert_eq!(
        lamports("fees"),
        first_run.fee_per_trial * u64::from(first_run.planned_trials)
    );
    assert!(lamports("escrow") <= lamports("cap"));
    // Its deadline is said in cluster time.
    assert!(
        step("cancelled-finalized")[0]["deadline"]
            .as_str()
            .unwrap()
            .contains("UTC (cluster time)")
    );
    assert!(
        usize::from(first_run.settled_trials) < usize::from(first_run.planned_trials),
        "the cancel stopped the run: {} of {} settled",
        first_run.settled_trials,
        first_run.planned_trials
    );

    // --- the finished run's exported report verifies with the CLI: Run account and anchor
    let finished = &step("finished")[0];
    let exported = finished["exported"].as_str().unwrap();
    let anchor = finished["anchor"].as_str().unwrap();
    let verify = net.cli(
        &net.user_keypair,
        &[
            "verify",
            exported,
            "--run-account",
            run_account.to_str().unwrap(),
            "--signature",
            anchor,
            "--signer",
            &owner.to_string(),
        ],
    );
    assert!(verify.status.success(), "verify: {}", said(&verify));

    // --- money, to the lamport: the wallet paid what the cancelled run still holds and what it
    // settled, what the closed run settled, and 5,000 lamports for each transaction it signed
    // (the declined one never reached the chain). Nothing else left it.
    let spent = balance_0 - net.balance(&owner);
    let signed = step("cancelled-finalized")[0]["signed"].as_u64().unwrap()
        + step("done")[0]["signed"].as_u64().unwrap();
    assert_eq!(
        signed, 5,
        "run_open twice, the cancel, the anchor, the close"
    );
    let first_held = net.balance(&first);
    let first_out = first_run.settled_usage + first_run.settled_fees;
    let second_out = settled_before_close.expect("the finished run was read before its close");
    assert_eq!(
        spent,
        first_held + first_out + second_out + signed * 5_000,
        "the wallet's spend, to the lamport"
    );
    // --- the finish showed what the Run held, and after the close what came back, to the lamport
    let held = held_before_close.expect("the finished run was read before its close");
    assert_eq!(step("finished")[0]["held"], held.to_string());
    assert_eq!(step("closed")[0]["returned"], held.to_string());
    drop(daemon);
    server.stop();
}

/// A daemon started with `--demo-model` (no key, no model server): the page offers only the
/// labelled scripted profile, one run goes to the end, and its report says it is scripted.
pub fn the_page_on_a_demo_model_daemon(net: &Localnet) {
    let shots = skilltrial_e2e::workspace_root().join("target/page-screenshots/demo");
    let _ = std::fs::remove_dir_all(&shots);
    let state = net.dir.path().join("demo-daemon-state");
    let port = free_port();
    let unused = net.dir.path().join("no-profiles.toml");
    let daemon = start_daemon_with(
        net,
        port,
        &state,
        &unused,
        &["--demo-model", "--batch", "6"],
    );
    let wallet = Keypair::new();
    let user = net.user();
    net.send_as(
        &user,
        "fund the demo wallet",
        &[system_transfer(
            &user.pubkey(),
            &wallet.pubkey(),
            1_000_000_000,
        )],
    )
    .unwrap();
    let root = skilltrial_e2e::workspace_root();
    let bytes = wallet.to_bytes();
    let config = net.dir.path().join("demo-config.json");
    std::fs::write(
        &config,
        json!({
            "mode": "demo",
            "url": daemon.url.as_str(),
            "seed": &bytes[..32],
            "publicKey": wallet.pubkey().to_bytes(),
            "address": wallet.pubkey().to_string(),
            "chromium": chromium(),
            "shots": shots,
            "bundleA": root.join("fixtures/bundles/solana-reader-1.4.2"),
            "bundleBFolder": root.join("fixtures/bundles/solana-reader-1.5.0"),
        })
        .to_string(),
    )
    .unwrap();
    let out = Command::new("node")
        .arg("tests/e2e.mjs")
        .arg(&config)
        .current_dir(root.join("web"))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot start node (scripts/web.sh installs it): {e}"));
    let steps: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let step = |name: &str| steps.iter().find(|s| s["step"] == name).cloned();
    #[allow(clippy::print_stderr)]
    for s in &steps {
        eprintln!("demo page: {s}");
    }
    assert!(
        out.status.success() && step("done").is_some(),
        "the demo walk failed (see target/page-screenshots/demo/failure.*): {:?}",
        step("failed")
    );
    let opened = step("opened").unwrap();
    let finished = step("finished").unwrap();
    // The live grid ended with every planned trial coloured by its outcome.
    let grid = step("grid").unwrap();
    assert_eq!(grid["cells"], grid["total"], "{grid}");
    assert_eq!(grid["landed"], grid["total"], "{grid}");
    // The run went to the end on the chain, at the escrow shown, charging no usage
    let address: Pubkey = finished["run"].as_str().unwrap().parse().unwrap();
    let run = net.chain.run(&address).unwrap().unwrap().account.run;
    assert!(
        matches!(
            run.status,
            skilltrial_chain::account::RunStatus::Finalized { .. }
        ),
        "{:?}",
        run.status
    );
    assert_eq!(run.settled_trials, run.planned_trials);
    assert_eq!(run.settled_usage, 0, "the scripted model is free");
    assert_eq!(
        run.escrowed.to_string(),
        opened["escrow"]["lamports"]["escrow"].as_str().unwrap()
    );
    // and its report says the answers came from the scripted model
    assert_eq!(finished["scripted"], true, "{finished}");
    assert!(
        finished["banner"]
            .as_str()
            .unwrap()
            .contains("scripted model"),
        "{finished}"
    );
    drop(daemon);
}
