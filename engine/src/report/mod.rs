//! Reports (SPEC §8): the canonical JSON export of a run and its statistics, and the HTML view.
//!
//! The export holds the manifest, every trial and attempt (outcome, reasons, usage, fingerprint,
//! the stored answer), per-arm success with Wilson intervals, the paired comparisons, per-task
//! verdicts, cost and comparability. Its `report_hash` is SHA-256 over the RFC 8785 canonical
//! form of the whole document *without* the `report_hash` member; the manifest hash is SHA-256
//! over the canonical form of its `manifest` member. Anyone holding the file can recompute both.

pub mod html;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::journal::{AttemptRow, Journal, JournalError, RunRow, TrialRow};
use crate::store::{Store, StoreError, parse_hex};
use skilltrial_core::canonical;
use skilltrial_core::digest::Sha256Digest;
use skilltrial_core::manifest::{Arm, Manifest};
use skilltrial_core::outcome::Outcome;
use skilltrial_core::stats::{self, Fraction};

/// The export format name. v2 (issue #9): p-values and Holm values as exact fractions with a
/// `text` form, per-attempt runner time (`runner_us`) instead of wall clock minus latency, the
/// first-screen `summary.changes`, and one shared `summary.caveat`. The hash is computed exactly
/// as in v1; the name changed because the members did.
pub const FORMAT: &str = "skilltrial-report-v2";

/// Shown with every export.
pub const SENSITIVE_WARNING: &str = "This report holds raw model answers, which may contain sensitive content. It is written to your disk only and never uploaded; review it before sharing.";

/// Why a report could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Exact fractions travel as decimal strings: their denominators (2^n) outgrow JSON's safe
/// integers, and the report must stay canonicalizable.
fn fraction(f: Fraction) -> Value {
    let f = reduced(f);
    json!({ "num": f.num.to_string(), "den": f.den.to_string(), "text": fraction_text(f), "value": format!("{:.6}", f.value()) })
}

fn reduced(f: Fraction) -> Fraction {
    fn gcd(a: u128, b: u128) -> u128 {
        if b == 0 { a.max(1) } else { gcd(b, a % b) }
    }
    let g = gcd(f.num, f.den);
    Fraction {
        num: f.num / g,
        den: f.den / g,
    }
}

/// How a p-value reads everywhere (cards, sentences, terminal): the exact fraction, `1` and `0`
/// as themselves. A denominator that is not a power of two came from the large-sample
/// approximation (more than 126 discordant pairs), which is not exact, so it reads as a decimal.
pub fn fraction_text(f: Fraction) -> String {
    let f = reduced(f);
    if f.num == 0 {
        "0".to_owned()
    } else if f.num == f.den {
        "1".to_owned()
    } else if f.den.is_power_of_two() || f.den <= 1_000 {
        format!("{}/{}", f.num, f.den)
    } else {
        format!("≈{:.6}", f.value())
    }
}

/// Holm's step-down adjustment on exact fractions (input order kept): the adjusted value of the
/// i-th smallest of m p-values is max over j ≤ i of min(1, (m − j + 1) · p(j)), which stays a
/// fraction with the same denominator. Falls back to the float adjustment if a product would
/// not fit (never for the pack sizes we run).
fn holm_exact(p: &[Fraction]) -> Vec<Fraction> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|a, b| p[*a].value().total_cmp(&p[*b].value()));
    let mut adjusted = vec![Fraction { num: 1, den: 1 }; m];
    let mut running = Fraction { num: 0, den: 1 };
    for (rank, &i) in order.iter().enumerate() {
        let k = (m - rank) as u128;
        let scaled = match p[i].num.checked_mul(k) {
            Some(num) if num < p[i].den => reduced(Fraction { num, den: p[i].den }),
            Some(_) => Fraction { num: 1, den: 1 },
            None => return fallback_holm(p),
        };
        if scaled.value() > running.value() {
            running = scaled;
        }
        adjusted[i] = running;
    }
    adjusted
}

fn fallback_holm(p: &[Fraction]) -> Vec<Fraction> {
    let values: Vec<f64> = p.iter().map(|f| f.value()).collect();
    let den = 1_000_000_000_000u64;
    stats::holm(&values)
        .into_iter()
        .map(|h| Fraction {
            // h is in [0, 1], so the product fits and is non-negative.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            num: (h * den as f64).round() as u128,
            den: u128::from(den),
        })
        .collect()
}

/// "1 time", "2 times".
pub fn count_of(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn rate(num: u64, den: u64) -> Value {
    if den == 0 {
        return Value::Null;
    }
    let (lo, hi) = stats::wilson95(num, den).unwrap_or((0.0, 1.0));
    json!({ "num": num, "den": den, "value": format!("{:.6}", num as f64 / den as f64), "wilson95": [format!("{lo:.6}"), format!("{hi:.6}")] })
}

/// One trial's observation: its latest attempt.
struct Observation<'a> {
    trial: &'a TrialRow,
    latest: Option<&'a AttemptRow>,
}

impl Observation<'_> {
    fn outcome(&self) -> &str {
        self.latest
            .and_then(|a| a.outcome.map(Outcome::as_str))
            .unwrap_or("pending")
    }
    fn passed(&self) -> bool {
        self.outcome() == "pass"
    }
    fn executed(&self) -> bool {
        self.latest
            .and_then(|a| a.outcome)
            .is_some_and(Outcome::is_executed)
    }
}

/// Builds the report of a run from the journal and the stores.
pub fn build(
    journal: &Journal,
    store: &Store,
    payloads: &Store,
    run: &RunRow,
) -> Result<Value, ReportError> {
    let manifest_hash = parse_hex(&run.manifest_sha256)
        .ok_or_else(|| ReportError::Invalid("the run id is not a hash".to_owned()))?;
    let manifest: Manifest = serde_json::from_slice(&store.get(&manifest_hash)?)
        .map_err(|e| ReportError::Invalid(format!("manifest: {e}")))?;
    let manifest_value =
        serde_json::to_value(&manifest).map_err(|e| ReportError::Invalid(e.to_string()))?;
    let trials = journal.trials(&run.id)?;
    let attempts = journal.attempts(&run.id)?;
    let money = journal.money(&run.id)?;
    let families = families(store, &manifest)?;
    let runner_times = journal.runner_times(&run.id)?;

    let mut latest: BTreeMap<u32, &AttemptRow> = BTreeMap::new();
    for a in &attempts {
        latest.insert(a.trial_idx, a);
    }
    let observations: Vec<Observation<'_>> = trials
        .iter()
        .map(|t| Observation {
            trial: t,
            latest: latest.get(&t.idx).copied(),
        })
        .collect();

    // Every trial with every attempt, the stored answer included.
    let mut trial_values = Vec::new();
    for obs in &observations {
        let mut attempt_values = Vec::new();
        for a in attempts.iter().filter(|a| a.trial_idx == obs.trial.idx) {
            let answer = match a.answer_sha256.as_deref().and_then(parse_hex) {
                Some(sha) => match payloads.get(&sha) {
                    Ok(bytes) => Value::String(String::from_utf8_lossy(&bytes).into_owned()),
                    Err(StoreError::Missing(_)) => Value::Null,
                    Err(e) => return Err(e.into()),
                },
                None => Value::Null,
            };
            attempt_values.push(json!({
                "id": a.id,
                "seq": a.seq,
                "state": a.state,
                "outcome": a.outcome,
                "reasons": a.reasons,
                "details": a.details,
                "retry_of": a.retry_of,
                "retry_reason": a.retry_reason,
                "reserved_usd_micros": a.reserved_micros,
                "spent_usd_micros": a.spent_micros,
                "input_tokens": a.input_tokens,
                "output_tokens": a.output_tokens,
                "latency_ms": a.latency_ms,
                "runner_us": runner_times.get(&a.id),
                "http_status": a.http_status,
                "provider_request_id": a.provider_request_id,
                "model_reported": a.model_reported,
                "system_fingerprint": a.system_fingerprint,
                "request_sha256": a.request_sha256,
                "answer_sha256": a.answer_sha256,
                "answer": answer,
                "answer_purged": a.answer_sha256.is_some() && answer.is_null(),
                "error": a.error,
            }));
        }
        trial_values.push(json!({
            "index": obs.trial.idx,
            "task": obs.trial.task,
            "family": families.get(&obs.trial.task),
            "arm": obs.trial.arm,
            "repetition": obs.trial.repetition,
            "outcome": obs.outcome(),
            "reasons": obs.latest.map(|a| a.reasons.clone()).unwrap_or_default(),
            "attempts": attempt_values,
        }));
    }

    let arms: Vec<String> = manifest
        .arms
        .iter()
        .map(|a| a.arm.as_str().to_owned())
        .collect();
    let complete = observations.iter().all(Observation::executed);

    // Per arm.
    let mut arm_values = Vec::new();
    for spec in &manifest.arms {
        let arm = spec.arm.as_str();
        let mine: Vec<&Observation<'_>> =
            observations.iter().filter(|o| o.trial.arm == arm).collect();
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for o in &mine {
            *counts.entry(o.outcome().to_owned()).or_insert(0) += 1;
        }
        let count = |k: &str| counts.get(k).copied().unwrap_or(0);
        let executed_n: u64 = Outcome::ALL
            .iter()
            .filter(|o| o.is_executed())
            .map(|o| count(o.as_str()))
            .sum();
        arm_values.push(json!({
            "arm": arm,
            "bundle": spec.bundle,
            "planned": mine.len(),
            "executed": executed_n,
            "pass": count("pass"),
            "fail": count("fail"),
            "invalid_output": count("invalid_output"),
            "unsupported_case": count("unsupported_case"),
            "infrastructure_error": count("infrastructure_error"),
            "unknown": count("unknown"),
            "interrupted": count("interrupted"),
            "not_run": count("not_run"),
            "pending": count("pending"),
            "success": rate(count("pass"), executed_n),
        }));
    }

    let pairs = pairs(&manifest, &observations);
    let tasks = task_table(&manifest, &observations, &families);
    let leader = if complete {
        leader(&arm_values)
    } else {
        Value::Null
    };

    let reported: BTreeSet<String> = attempts
        .iter()
        .filter_map(|a| a.model_reported.clone())
        .collect();
    let fingerprints: BTreeSet<String> = attempts
        .iter()
        .filter_map(|a| a.system_fingerprint.clone())
        .collect();
    let spent_by_arm: BTreeMap<String, u64> = arms
        .iter()
        .map(|arm| {
            let spent = attempts
                .iter()
                .filter(|a| trials.iter().any(|t| t.idx == a.trial_idx && &t.arm == arm))
                .filter_map(|a| a.spent_micros)
                .sum();
            (arm.clone(), spent)
        })
        .collect();
    let model_latency_ms: u64 = attempts
        .iter()
        .filter(|a| a.state == crate::journal::AttemptState::Result)
        .filter_map(|a| a.latency_ms)
        .sum();
    let wall_ms = match (run.started_at_ms, run.finished_at_ms) {
        (Some(s), Some(f)) => u64::try_from(f.saturating_sub(s)).ok(),
        _ => None,
    };
    // The runner's own time: the sum of what the engine measured per attempt (model wait
    // excluded), never derived from the wall clock, which counts pauses between invocations.
    let runner_us: u64 = runner_times.values().sum();
    let unmeasured = attempts
        .iter()
        .filter(|a| a.dispatched_at_ms.is_some() && !runner_times.contains_key(&a.id))
        .count();
    let unknown_holding: Vec<Value> = attempts
        .iter()
        .filter(|a| a.state == crate::journal::AttemptState::Unknown)
        .map(|a| json!({ "attempt": a.id, "reserved_usd_micros": a.reserved_micros }))
        .collect();

    let scripted = manifest.model.scripted;
    let verdict_checkers: Vec<Value> = journal
        .verdict_checkers(&run.id)?
        .into_iter()
        .map(|(version, source)| json!({ "version": version, "source_sha256": source }))
        .collect();
    let report = json!({
        "format": FORMAT,
        "generated_by": { "app": "skilltrial", "version": crate::APP_VERSION },
        "warning": SENSITIVE_WARNING,
        "run": {
            "id": run.id,
            "status": run.status,
            "complete": complete,
            "created_at_ms": run.created_at_ms,
            "started_at_ms": run.started_at_ms,
            "finished_at_ms": run.finished_at_ms,
        },
        "manifest_hash": manifest_hash.to_string(),
        "manifest": manifest_value,
        "model_label": if scripted { "scripted (not a real model)" } else { "real model" },
        "comparability": {
            "model": {
                "provider": manifest.model.provider,
                "model": manifest.model.model,
                "revision": manifest.model.revision,
                "scripted": scripted,
                "reported_models": reported,
                "system_fingerprints": fingerprints,
            },
            "pack": { "id": manifest.pack.id, "hash": manifest.pack.hash },
            "checker": { "version": manifest.checker.version, "source_sha256": manifest.checker.source_sha256 },
            // The checker that produced the verdicts shown (a `recheck` may have re-scored them).
            "verdicts_by": verdict_checkers,
            "sampling": { "temperature": manifest.sampling.temperature, "max_output_tokens": manifest.sampling.max_output_tokens },
            "prompt_template_sha256": manifest.prompt.template_sha256,
        },
        "summary": {
            "planned": trials.len(),
            "executed": observations.iter().filter(|o| o.executed()).count(),
            "complete": complete,
            "arms": arm_values,
            "leader": leader,
            "changes": changes(&tasks),
            "caveat": caveat(&manifest),
        },
        "pairs": pairs,
        "tasks": tasks,
        "cost": {
            "cap_usd_micros": manifest.budget.cap_usd_micros,
            "spent_usd_micros": money.spent.0,
            "reserved_usd_micros": money.reserved.0,
            "spent_by_arm_usd_micros": spent_by_arm,
            "input_tokens": attempts.iter().filter_map(|a| a.input_tokens).sum::<u64>(),
            "output_tokens": attempts.iter().filter_map(|a| a.output_tokens).sum::<u64>(),
            "model_latency_ms": model_latency_ms,
            "run_wall_ms": wall_ms,
            "runner_time_ms": runner_us / 1000,
            "runner_time_us": runner_us,
            "runner_time_unmeasured_attempts": unmeasured,
            "unknown_holding_reserve": unknown_holding,
        },
        "trials": trial_values,
    });
    Ok(report)
}

/// The report hash: SHA-256 over the canonical form without `report_hash`.
pub fn hash(report: &Value) -> Result<Sha256Digest, ReportError> {
    let mut copy = report.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("report_hash");
    }
    canonical::hash(&copy).map_err(|e| ReportError::Invalid(e.to_string()))
}

/// Adds `report_hash` and returns it.
pub fn seal(report: &mut Value) -> Result<Sha256Digest, ReportError> {
    let digest = hash(report)?;
    if let Some(map) = report.as_object_mut() {
        map.insert("report_hash".to_owned(), Value::String(digest.to_string()));
    }
    Ok(digest)
}

/// Verifies a report document: its `report_hash` and its manifest hash both recompute.
pub fn verify(report: &Value) -> Result<(Sha256Digest, Sha256Digest), ReportError> {
    let claimed = report
        .get("report_hash")
        .and_then(Value::as_str)
        .ok_or_else(|| ReportError::Invalid("no report_hash".to_owned()))?;
    let actual = hash(report)?;
    if claimed != actual.to_string() {
        return Err(ReportError::Invalid(format!(
            "report_hash says {claimed}, the content hashes to {actual}"
        )));
    }
    let manifest = report
        .get("manifest")
        .ok_or_else(|| ReportError::Invalid("no manifest".to_owned()))?;
    let manifest_hash =
        canonical::hash(manifest).map_err(|e| ReportError::Invalid(e.to_string()))?;
    if report.get("manifest_hash").and_then(Value::as_str)
        != Some(manifest_hash.to_string().as_str())
    {
        return Err(ReportError::Invalid(format!(
            "manifest_hash does not match the manifest ({manifest_hash})"
        )));
    }
    Ok((actual, manifest_hash))
}

fn families(store: &Store, manifest: &Manifest) -> Result<BTreeMap<String, String>, ReportError> {
    let Some(hash) = parse_hex(&manifest.pack.hash) else {
        return Ok(BTreeMap::new());
    };
    let files: BTreeMap<String, Vec<u8>> = store.get_tree(&hash)?.into_iter().collect();
    let pack = skilltrial_core::pack::from_files(&manifest.pack.id, files)
        .map_err(|e| ReportError::Invalid(e.to_string()))?;
    Ok(pack
        .tasks
        .iter()
        .map(|t| (t.id.clone(), t.family.as_str().to_owned()))
        .collect())
}

fn leader(arms: &[Value]) -> Value {
    let pass = |v: &Value| v["pass"].as_u64().unwrap_or(0);
    let best = arms.iter().map(pass).max().unwrap_or(0);
    let top: Vec<&str> = arms
        .iter()
        .filter(|a| pass(a) == best)
        .filter_map(|a| a["arm"].as_str())
        .collect();
    if top.len() == 1 {
        json!({ "arm": top[0], "note": "an observed count in a complete run, not a significance claim" })
    } else {
        let names: Vec<String> = top.iter().map(|a| a.to_uppercase()).collect();
        json!({ "arm": null, "note": format!("Tie between {}.", names.join(" and ")) })
    }
}

/// The contrasts of a manifest: (x, y) meaning x − y.
fn contrasts(manifest: &Manifest) -> Vec<(Arm, Arm)> {
    let has = |arm| manifest.arms.iter().any(|a| a.arm == arm);
    let mut out = Vec::new();
    if has(Arm::A) {
        out.push((Arm::A, Arm::Baseline));
    }
    if has(Arm::B) {
        out.push((Arm::B, Arm::Baseline));
        out.push((Arm::B, Arm::A));
    }
    out
}

fn pairs(manifest: &Manifest, observations: &[Observation<'_>]) -> Value {
    let mut results = Vec::new();
    let mut p_values = Vec::new();
    for (x, y) in contrasts(manifest) {
        let find = |task: &str, rep: u32, arm: Arm| {
            observations.iter().find(|o| {
                o.trial.task == task && o.trial.repetition == rep && o.trial.arm == arm.as_str()
            })
        };
        let mut excluded = Vec::new();
        let (mut both, mut x_only, mut y_only, mut neither) = (0u64, 0u64, 0u64, 0u64);
        let mut per_task: BTreeMap<String, (i64, u64)> = BTreeMap::new();
        for task in &manifest.tasks {
            for rep in 1..=manifest.repetitions {
                let (Some(ox), Some(oy)) = (find(task, rep, x), find(task, rep, y)) else {
                    continue;
                };
                if !(ox.executed() && oy.executed()) {
                    let mut why = Vec::new();
                    if !ox.executed() {
                        why.push(format!("{}: {}", x.as_str(), ox.outcome()));
                    }
                    if !oy.executed() {
                        why.push(format!("{}: {}", y.as_str(), oy.outcome()));
                    }
                    excluded
                        .push(json!({ "task": task, "repetition": rep, "reason": why.join(", ") }));
                    continue;
                }
                let entry = per_task.entry(task.clone()).or_insert((0, 0));
                entry.1 += 1;
                match (ox.passed(), oy.passed()) {
                    (true, true) => both += 1,
                    (true, false) => {
                        x_only += 1;
                        entry.0 += 1;
                    }
                    (false, true) => {
                        y_only += 1;
                        entry.0 -= 1;
                    }
                    (false, false) => neither += 1,
                }
            }
        }
        let complete_pairs = both + x_only + y_only + neither;
        let x_pass = both + x_only;
        let y_pass = both + y_only;
        let diffs: Vec<(i64, u64)> = per_task.values().copied().collect();
        let (test_name, p) = if manifest.repetitions == 1 {
            (
                "exact McNemar test over complete pairs",
                Some(stats::mcnemar_exact(x_only, y_only)),
            )
        } else {
            (
                "exact sign-flip permutation test over per-task differences (task = unit)",
                stats::sign_flip(&diffs),
            )
        };
        let difference = if complete_pairs == 0 {
            Value::Null
        } else {
            let d = x_pass as i64 - y_pass as i64;
            json!({ "pairs": complete_pairs, "x_minus_y_passes": d, "value": format!("{:.6}", d as f64 / complete_pairs as f64) })
        };
        p_values.push(p);
        results.push((x, y, json!({
            "contrast": format!("{}-{}", x.as_str(), y.as_str()),
            "x": x.as_str(),
            "y": y.as_str(),
            "complete_pairs": complete_pairs,
            "excluded": excluded,
            "both_pass": both,
            "x_only": x_only,
            "y_only": y_only,
            "neither": neither,
            "x_pass_rate": rate(x_pass, complete_pairs),
            "y_pass_rate": rate(y_pass, complete_pairs),
            "observed_difference": difference,
            "per_task": per_task.iter().map(|(t, (n, d))| json!({ "task": t, "x_minus_y_passes": n, "pairs": d })).collect::<Vec<_>>(),
            "test": { "name": test_name, "units": if manifest.repetitions == 1 { complete_pairs } else { diffs.len() as u64 }, "p": p.map(fraction) },
        })));
    }
    // Holm across the contrasts that have a test.
    let present: Vec<Fraction> = p_values.iter().flatten().copied().collect();
    let mut adjusted_iter = holm_exact(&present).into_iter();
    results
        .into_iter()
        .zip(p_values)
        .map(|((x, y, mut v), p)| {
            let holm = p.and_then(|_| adjusted_iter.next());
            v["test"]["holm_p"] = holm.map_or(Value::Null, fraction);
            v["statement"] = Value::String(statement(x, y, &v));
            v
        })
        .collect()
}

/// One contrast in one or two sentences: the discordant counts, and the test's p with its Holm
/// adjustment. What the test can and cannot claim is said once for the whole report
/// ([`caveat`]), not once per contrast.
fn statement(x: Arm, y: Arm, v: &Value) -> String {
    let pairs = v["complete_pairs"].as_u64().unwrap_or(0);
    let xo = v["x_only"].as_u64().unwrap_or(0);
    let yo = v["y_only"].as_u64().unwrap_or(0);
    let (xn, yn) = (x.as_str().to_uppercase(), y.as_str().to_uppercase());
    let mut s = format!(
        "Over {}, {xn} passed where {yn} failed {} and {yn} passed where {xn} failed {}.",
        count_of(pairs, "complete pair", "complete pairs"),
        count_of(xo, "time", "times"),
        count_of(yo, "time", "times"),
    );
    if let (Some(p), Some(h)) = (
        v["test"]["p"]["text"].as_str(),
        v["test"]["holm_p"]["text"].as_str(),
    ) {
        s.push_str(&format!(
            " The {} gives p = {p} (Holm-adjusted {h}).",
            v["test"]["name"].as_str().unwrap_or("test")
        ));
    }
    s
}

/// What the paired tests can and cannot claim, said once per report.
fn caveat(manifest: &Manifest) -> String {
    let reps = manifest.repetitions;
    let mut s = if reps > 1 {
        "Each test asks whether a difference is consistent across these tasks, each task counted once; it says nothing about tasks outside this pack, and with few tasks even a perfect record cannot reach a small p.".to_owned()
    } else {
        "Each test asks whether discordant pairs lean one way more than chance would; it says nothing about tasks outside this pack.".to_owned()
    };
    if reps <= 3 {
        s.push_str(&format!(
            " With {} these are counts and an observed difference, not significance.",
            count_of(u64::from(reps), "repetition", "repetitions")
        ));
    }
    s
}

/// The first screen's answer: per contrast, the tasks the first arm fixes (fails → passes) and
/// breaks (passes → fails) against the second, by the per-task majority verdicts.
fn changes(tasks: &Value) -> Value {
    let mut out = serde_json::Map::new();
    let rows = tasks.as_array().cloned().unwrap_or_default();
    for (key, verdict, fix, brk) in [
        ("b_vs_a", "b_vs_a", "improvement", "regression"),
        ("b_vs_baseline", "b", "skill needed", "broken"),
        ("a_vs_baseline", "a", "skill needed", "broken"),
    ] {
        if !rows.iter().any(|t| t["verdicts"].get(verdict).is_some()) {
            continue;
        }
        let pick = |want: &str| -> Vec<Value> {
            rows.iter()
                .filter(|t| t["verdicts"][verdict].as_str() == Some(want))
                .map(|t| t["task"].clone())
                .collect()
        };
        out.insert(
            key.to_owned(),
            json!({ "fixes": pick(fix), "breaks": pick(brk) }),
        );
    }
    Value::Object(out)
}

/// Per contrast of `summary.changes` (`b_vs_a`, `b_vs_baseline`, `a_vs_baseline`), how many tasks
/// could be compared: those with a model result in both arms (a verdict). In a partial run this can
/// be 0, and then an empty fixes list means "not compared yet", not "fixes nothing".
pub fn compared_tasks(report: &Value) -> BTreeMap<&'static str, usize> {
    let rows = report["tasks"].as_array().map_or(&[][..], Vec::as_slice);
    [
        ("b_vs_a", "b_vs_a"),
        ("b_vs_baseline", "b"),
        ("a_vs_baseline", "a"),
    ]
    .into_iter()
    .map(|(key, verdict)| {
        let n = rows
            .iter()
            .filter(|t| t["verdicts"][verdict].is_string())
            .count();
        (key, n)
    })
    .collect()
}

fn task_table(
    manifest: &Manifest,
    observations: &[Observation<'_>],
    families: &BTreeMap<String, String>,
) -> Value {
    let rate_of = |task: &str, arm: Arm| -> Option<(u64, u64)> {
        let obs: Vec<&Observation<'_>> = observations
            .iter()
            .filter(|o| o.trial.task == task && o.trial.arm == arm.as_str() && o.executed())
            .collect();
        (!obs.is_empty() || manifest.arms.iter().any(|a| a.arm == arm)).then(|| {
            (
                obs.iter().filter(|o| o.passed()).count() as u64,
                obs.len() as u64,
            )
        })
    };
    // Passing in at least half of the executed repetitions counts as passing the task.
    let majority = |r: Option<(u64, u64)>| r.filter(|(_, n)| *n > 0).map(|(p, n)| p * 2 >= n);
    manifest
        .tasks
        .iter()
        .map(|task| {
            let mut per_arm = serde_json::Map::new();
            let mut passes = BTreeMap::new();
            for spec in &manifest.arms {
                if let Some((p, n)) = rate_of(task, spec.arm) {
                    per_arm.insert(spec.arm.as_str().to_owned(), json!({ "pass": p, "executed": n }));
                    passes.insert(spec.arm, majority(Some((p, n))));
                }
            }
            let verdict = |skill: Arm| -> Value {
                match (passes.get(&Arm::Baseline).copied().flatten(), passes.get(&skill).copied().flatten()) {
                    (Some(false), Some(true)) => json!("skill needed"),
                    (Some(true), Some(true)) => json!("no-op"),
                    (Some(true), Some(false)) => json!("broken"),
                    (Some(false), Some(false)) => json!("still failing"),
                    _ => Value::Null,
                }
            };
            let mut verdicts = serde_json::Map::new();
            if passes.contains_key(&Arm::A) {
                verdicts.insert("a".to_owned(), verdict(Arm::A));
            }
            if passes.contains_key(&Arm::B) {
                verdicts.insert("b".to_owned(), verdict(Arm::B));
                let ab = match (passes.get(&Arm::A).copied().flatten(), passes.get(&Arm::B).copied().flatten()) {
                    (Some(true), Some(false)) => json!("regression"),
                    (Some(false), Some(true)) => json!("improvement"),
                    (Some(x), Some(y)) if x == y => json!("same"),
                    _ => Value::Null,
                };
                verdicts.insert("b_vs_a".to_owned(), ab);
            }
            json!({ "task": task, "family": families.get(task), "arms": per_arm, "verdicts": verdicts })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(num: u128, den: u128) -> Fraction {
        Fraction { num, den }
    }

    #[test]
    fn compared_tasks_counts_only_tasks_with_a_verdict_per_contrast() {
        // A partial run: one task has results in baseline and A, none in B.
        let report = json!({ "tasks": [
            { "task": "t1", "verdicts": { "a": "no-op", "b": null, "b_vs_a": null } },
            { "task": "t2", "verdicts": { "a": null, "b": null, "b_vs_a": null } },
        ]});
        let got = compared_tasks(&report);
        assert_eq!(got["a_vs_baseline"], 1);
        assert_eq!(got["b_vs_baseline"], 0);
        assert_eq!(got["b_vs_a"], 0);
    }

    #[test]
    fn p_values_read_as_exact_fractions() {
        assert_eq!(fraction_text(f(4, 32)), "1/8");
        assert_eq!(fraction_text(f(12, 32)), "3/8");
        assert_eq!(fraction_text(f(32, 32)), "1");
        assert_eq!(fraction_text(f(0, 8)), "0");
        // The large-sample approximation is not exact, so it does not pretend to be.
        assert_eq!(fraction_text(f(123_456, 1_000_000_000_000)), "≈0.000000");
    }

    #[test]
    fn holm_on_fractions_matches_the_float_adjustment() {
        // The 54-trial demo's sign-flip p-values (a−baseline, b−baseline, b−a).
        let p = [f(1, 8), f(1, 32), f(3, 8)];
        let adjusted = holm_exact(&p);
        assert_eq!(adjusted, vec![f(1, 4), f(3, 32), f(3, 8)]);
        let floats = stats::holm(&p.map(Fraction::value));
        for (exact, float) in adjusted.iter().zip(floats) {
            assert!((exact.value() - float).abs() < 1e-12);
        }
        // Capped at 1.
        assert_eq!(holm_exact(&[f(1, 2), f(3, 4)]), vec![f(1, 1), f(1, 1)]);
    }

    #[test]
    fn a_tie_names_the_arms_in_a_sentence() {
        let arms = [
            json!({ "arm": "a", "pass": 3 }),
            json!({ "arm": "b", "pass": 3 }),
        ];
        assert_eq!(
            leader(&arms),
            json!({ "arm": null, "note": "Tie between A and B." })
        );
    }

    #[test]
    fn counts_read_as_english() {
        assert_eq!(count_of(1, "time", "times"), "1 time");
        assert_eq!(count_of(0, "time", "times"), "0 times");
        assert_eq!(count_of(3, "repetition", "repetitions"), "3 repetitions");
    }
}
