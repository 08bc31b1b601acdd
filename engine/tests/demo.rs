//! `skilltrial demo` as a library operation: the whole job against the real scripted model on
//! loopback, in a temporary state directory, with the steps it tells and the typed outcome and
//! errors it ends in.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use skilltrial_core::money::MicroUsd;
use skilltrial_core::state::RunStatus;
use skilltrial_engine::demo::{
    self, CallerError, DemoError, DemoOutcome, DemoRequest, Event, ScriptedModel,
};

/// The demo's defaults with `reps` repetitions and its state in `home`.
fn request(home: &Path, reps: u32) -> DemoRequest {
    DemoRequest {
        a: None,
        b: None,
        pack: "solana-core@1.0.3".to_owned(),
        model: None,
        model_name: None,
        scripted: false,
        scripted_model: ScriptedModel::One,
        reps,
        cap: MicroUsd(4_000_000),
        confirm_unpriced: false,
        out: None,
        gate: None,
        home: Some(home.to_path_buf()),
        stop: None,
        concurrency: Default::default(),
        progressive: None,
    }
}

/// An environment with no variable set: no key, so the scripted model answers.
fn no_env(_: &str) -> Option<String> {
    None
}

/// What the caller was told: each step's line, and the other events by name.
fn told(event: &Event<'_>) -> String {
    match event {
        Event::Step(step) => step.to_string(),
        Event::Running => "running".to_owned(),
        Event::Progress(p) => format!("progress {}/{}", p.done, p.total),
        Event::Ran => "ran".to_owned(),
    }
}

#[test]
fn the_demo_runs_its_trials_on_the_scripted_model_and_writes_a_sealed_report() {
    // Given a fresh state directory and no model key
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let mut events = Vec::new();
    let mut grids = Vec::new();

    // When the demo runs one repetition
    let outcome = demo::run(&request(&home, 1), &no_env, &mut |e| {
        if let Event::Progress(p) = &e {
            grids.push((p.done, p.trials.clone()));
        }
        events.push(told(&e));
        Ok(())
    })
    .unwrap();

    // Then it ran 18 trials (6 tasks × 3 arms) on the scripted model to their end
    let DemoOutcome::Reported(reported) = outcome else {
        panic!("the demo stopped: {events:?}");
    };
    assert!(reported.scripted);
    assert_eq!(reported.summary.planned, 18);
    assert_eq!(reported.summary.status, RunStatus::Finished.as_str());
    // ... and the report tells the script's story for the first repetition (baseline, A, B)
    let report = &reported.written.report;
    let passes: Vec<u64> = report.summary.arms.iter().map(|a| a.pass).collect();
    assert_eq!(passes, vec![1, 3, 6]);
    report.verify().unwrap();
    assert!(reported.written.json.is_file() && reported.written.html.is_file());
    assert!(reported.written.json.starts_with(home.join("reports")));
    // ... having told each step in order, the lines a person reads included
    let run = &reported.summary.run;
    assert!(events[0].starts_with("validated A: solana-reader 1.4.2 sha256:"));
    assert!(events[1].starts_with("validated B: solana-reader 1.5.0 sha256:"));
    assert_eq!(
        events[2],
        "model: the built-in SCRIPTED model (no key set): the results demonstrate the pipeline, not any real model"
    );
    assert_eq!(
        events[3],
        format!("planned 18 trials, manifest sha256:{run}")
    );
    assert_eq!(events[4], "running");
    assert_eq!(events.last().unwrap(), "ran");
    assert!(events.contains(&"progress 18/18".to_owned()), "{events:?}");
    // ... and each progress carried the live grid: as many trials with an outcome as were done,
    // the last one each trial's outcome in the report.
    for (done, grid) in &grids {
        let (landed, _) = grid.tally().unwrap();
        let landed: usize = landed.iter().map(|(_, n)| n).sum();
        assert_eq!(landed, usize::try_from(*done).unwrap(), "{grid:?}");
    }
    let (_, last) = grids.last().unwrap();
    let cells = last.cells().unwrap();
    assert_eq!(cells.len(), report.trials.len());
    for t in &report.trials {
        let cell = cells
            .iter()
            .find(|c| (c.0, c.1, c.2) == (t.task.as_str(), t.arm.as_str(), t.repetition))
            .unwrap();
        assert_eq!(
            cell.3.map_or("pending", |o| o.as_str()),
            t.outcome.as_str(),
            "{t:?}"
        );
    }
}

#[test]
fn a_bad_bundle_is_a_typed_refusal_that_writes_nothing() {
    // Given a bundle B that does not exist
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let missing = tmp.path().join("no-such-bundle");
    let mut req = request(&home, 1);
    req.b = Some(missing.clone());
    let mut events = Vec::new();

    // When the demo runs
    let err = demo::run(&req, &no_env, &mut |e| {
        events.push(told(&e));
        Ok(())
    })
    .unwrap_err();

    // Then it is refused naming bundle B and how to see why, after A was validated
    let DemoError::Bundle { label, path, .. } = &err else {
        panic!("not a bundle error: {err}");
    };
    assert_eq!((*label, path.as_deref()), ("B", Some(missing.as_path())));
    let message = err.to_string();
    assert!(message.starts_with("bundle B: bundle "), "{message}");
    assert!(
        message.ends_with(&format!(
            " (run `skilltrial validate {}` for details)",
            missing.display()
        )),
        "{message}"
    );
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(events[0].starts_with("validated A: "));
    // ... and the state directory was never created
    assert!(!home.exists());
}

#[test]
fn a_stop_before_the_first_request_leaves_a_resumable_run_and_no_report() {
    // Given a caller that asks to stop as the run starts (as a Ctrl-C would)
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let stop = Arc::new(AtomicBool::new(false));
    let mut req = request(&home, 1);
    req.stop = Some(Arc::clone(&stop));

    // When the demo runs
    let outcome = demo::run(&req, &no_env, &mut |e| {
        if matches!(e, Event::Running) {
            stop.store(true, Ordering::SeqCst);
        }
        Ok(())
    })
    .unwrap();

    // Then it says the run stopped, by its manifest, and wrote no report
    let DemoOutcome::Stopped { manifest } = outcome else {
        panic!("the demo did not stop");
    };
    assert_eq!(manifest.len(), 64);
    assert!(!home.join("reports").exists());
}

#[test]
fn the_callers_own_error_stops_the_demo_and_comes_back_unchanged() {
    // Given a caller whose handler fails when the model is chosen
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");

    // When the demo runs
    let err = demo::run(&request(&home, 1), &no_env, &mut |e| match e {
        Event::Step(step) if step.to_string().starts_with("model: ") => {
            Err(CallerError::from("the terminal went away"))
        }
        _ => Ok(()),
    })
    .unwrap_err();

    // Then that error ends it before anything is planned or written
    let DemoError::Caller(own) = err else {
        panic!("not the caller's error: {err}");
    };
    assert_eq!(own.to_string(), "the terminal went away");
    assert!(!home.exists());
}

#[test]
fn too_many_repetitions_for_the_demos_cap_say_how_many_fit() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let err = demo::run(&request(&home, 30), &no_env, &mut |_| Ok(())).unwrap_err();
    assert!(
        matches!(err, DemoError::OverCap { reps: 30, fits, .. } if fits > 0 && fits < 30),
        "{err}"
    );
    assert!(!home.exists());
}
