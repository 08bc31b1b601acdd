//! `skilltrial gate [RUN | --report FILE] [--policy gate.toml] [--format …]`: the release gate.
//!
//! Exit codes are the verdict's — 0 cleared, 1 missed, 3 inconclusive — and every error is 2, so
//! that a CI step reading 1 always reads a missed gate.

use std::io::Read as _;
use std::path::Path;

use anyhow::Context as _;
use skilltrial_core::digest::Sha256Digest;
use skilltrial_core::gate::{
    self, Judgement, MAX_POLICY_BYTES, Policy, PolicyUsed, Source, Verdict,
};
use skilltrial_core::report::Report;
use skilltrial_engine::report;

use crate::cli::{GateArgs, GateFormat, Global};
use crate::commands::input;
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;

pub fn run(args: &GateArgs, global: &Global) -> Result<Status, CliError> {
    judge(args, global).map_err(|e| match e {
        // A refused input is exit 2 here: exit 1 is a missed gate.
        CliError::Rejected(e) => CliError::Environment(e),
        other => other,
    })
}

fn judge(args: &GateArgs, global: &Global) -> Result<Status, CliError> {
    if args.print_default_policy {
        output::text(gate::DEFAULT_POLICY)?;
        return Ok(Status::Ok);
    }
    let format = match (global.json, args.format) {
        (false, f) => f,
        (true, GateFormat::Text | GateFormat::Json) => GateFormat::Json,
        (true, other) => {
            return Err(CliError::Environment(anyhow::anyhow!(
                "--json and --format {}: choose one output",
                format_name(other)
            )));
        }
    };
    let report = match &args.report {
        Some(path) => exported(path)?,
        None => {
            let layout = state::layout(global)?;
            let journal = state::existing_journal(&layout)?;
            let store = state::store(&layout)?;
            let payloads = state::payloads(&layout)?;
            let run = state::find_run(&journal, args.run.as_deref())?;
            report::build(&journal, &store, &payloads, &run)?
        }
    };
    let policy = policy_for(&report, args.policy.as_deref())?;
    let judgement = gate::judge(&report, &policy);
    match format {
        GateFormat::Text => output::text(&gate::render_text(&judgement))?,
        GateFormat::Json => output::json(&judgement)?,
        GateFormat::Junit => output::text(&gate::render_junit(&judgement))?,
        GateFormat::Github => output::text(&gate::render_github(&judgement))?,
    }
    Ok(status(&judgement))
}

fn format_name(f: GateFormat) -> &'static str {
    match f {
        GateFormat::Text => "text",
        GateFormat::Json => "json",
        GateFormat::Junit => "junit",
        GateFormat::Github => "github",
    }
}

fn status(j: &Judgement) -> Status {
    match j.verdict {
        Verdict::Cleared => Status::Ok,
        Verdict::Missed => Status::CheckFailed,
        Verdict::Inconclusive => Status::Inconclusive,
    }
}

/// An exported report, judged only if its report and manifest hashes recompute.
fn exported(path: &Path) -> Result<Report, CliError> {
    let report = skilltrial_engine::files::read_report(path)?;
    report.verify().map_err(|e| {
        CliError::Environment(anyhow::anyhow!(
            "{}: {e}; the file was changed after it was written, so no gate judges it",
            path.display()
        ))
    })?;
    Ok(report)
}

/// The policy to judge by: the pinned one (a `--policy` file must have its hash), else the
/// file (unpinned), else the default.
fn policy_for(report: &Report, file: Option<&Path>) -> Result<PolicyUsed, CliError> {
    let read = file.map(read_policy).transpose()?;
    if let Some(pin) = &report.manifest.gate {
        let policy = pin
            .policy()
            .map_err(|e| CliError::Environment(anyhow::anyhow!("{e}")))?;
        if let (Some(path), Some(text)) = (file, &read) {
            let given = Sha256Digest::of(text.as_bytes()).to_string();
            if given != pin.sha256 {
                return Err(CliError::Environment(anyhow::anyhow!(
                    "{} has {given}, but the run pinned {} when it was planned: a policy cannot change after the run; judge without --policy (the pinned text is used), or plan a new run with --gate {}",
                    path.display(),
                    pin.sha256,
                    path.display()
                )));
            }
        }
        return Ok(PolicyUsed {
            source: Source::Pinned,
            sha256: pin.sha256.clone(),
            policy,
        });
    }
    match (file, read) {
        (Some(path), Some(text)) => Ok(PolicyUsed {
            source: Source::Unpinned,
            sha256: Sha256Digest::of(text.as_bytes()).to_string(),
            policy: Policy::parse(&text, &path.display().to_string())
                .map_err(|e| CliError::Environment(anyhow::anyhow!("{e}")))?,
        }),
        _ => Ok(PolicyUsed {
            source: Source::Default,
            sha256: Sha256Digest::of(gate::DEFAULT_POLICY.as_bytes()).to_string(),
            policy: Policy::default_policy(),
        }),
    }
}

/// The policy file `--gate` names, read and checked, as the manifest pins it (`plan`, `demo`).
pub fn pin_policy(path: &Path) -> Result<gate::Pin, CliError> {
    let text = read_policy(path)?;
    gate::Pin::of(&text, &path.display().to_string())
        .map_err(|e| CliError::Rejected(anyhow::anyhow!("{e}")))
}

/// A policy file's text: a regular file, UTF-8, at most [`MAX_POLICY_BYTES`].
pub fn read_policy(path: &Path) -> Result<String, CliError> {
    input::regular_file(path, "a gate policy (TOML)")?;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| {
            f.take(u64::try_from(MAX_POLICY_BYTES).unwrap_or(u64::MAX) + 1)
                .read_to_end(&mut bytes)
        })
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() > MAX_POLICY_BYTES {
        return Err(CliError::Environment(anyhow::anyhow!(
            "{} is larger than {MAX_POLICY_BYTES} bytes: a gate policy is a few lines",
            path.display()
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        CliError::Environment(anyhow::anyhow!(
            "{} is not UTF-8 text (byte {}): a gate policy is TOML",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}
