//! `skilltrial validate <bundle>...`: import each bundle in memory and report it; with `--lint`,
//! also the lint rules (core::bundle::lint), and with `--fix` their mechanical fixes.

use std::fmt::Write as _;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use skilltrial_core::bundle::lint::{self, Finding, Mode, Severity};
use skilltrial_core::bundle::verdict::BundleReport;
use skilltrial_core::bundle::{self, Bundle, FileKind, FlagKind, Rejected, display_safe};

use crate::cli::{Global, LintMode, ValidateArgs};
use crate::commands::input;
use crate::exit::{CliError, Status};
use crate::output;

/// The `--json` document.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Report {
    pub bundles: Vec<BundleReport>,
    /// With `--lint`: one entry per bundle, in the same order (absent without `--lint`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lint: Option<Vec<LintReport>>,
}

/// One bundle's lint.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct LintReport {
    pub input: String,
    pub mode: Mode,
    /// `false` when the bundle was rejected: there is nothing to lint.
    pub linted: bool,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    /// After any fixes.
    pub findings: Vec<Finding>,
    /// The fixes `--fix` wrote (before re-linting).
    pub fixed: Vec<lint::Fix>,
    /// Fixes not written, and why (a file changed while linting).
    pub not_fixed: Vec<String>,
}

pub fn run(args: &ValidateArgs, global: &Global) -> Result<Status, CliError> {
    // A FIFO or device given as a bundle is refused before any is opened: reading a FIFO that
    // nobody writes blocks forever.
    for path in &args.bundles {
        input::file_or_folder(path, "a bundle folder or ZIP")?;
    }
    if args.fix {
        // Refused before anything is read or written: --fix rewrites files in a folder.
        if let Some(other) = args.bundles.iter().find(|b| !b.is_dir()) {
            return Err(CliError::Environment(anyhow::anyhow!(
                "--fix rewrites files in a bundle folder, and {} is not a folder{}: unpack a ZIP and fix the folder, or lint without --fix",
                other.display(),
                if other.exists() {
                    ""
                } else {
                    " (it does not exist)"
                }
            )));
        }
    }
    let mode = match args.mode {
        LintMode::Strict => Mode::Strict,
        LintMode::Lenient => Mode::Lenient,
    };
    let mut results: Vec<(String, Result<Bundle, Rejected>)> = Vec::new();
    let mut lints = Vec::new();
    for input in &args.bundles {
        let label = input.display().to_string();
        let mut imported = bundle::import(input);
        if args.lint {
            let (report, refreshed) = lint_one(input, &label, &imported, mode, args.fix)?;
            if let Some(after) = refreshed {
                imported = after;
            }
            lints.push(report);
        }
        results.push((label, imported));
    }
    let report = Report {
        bundles: results
            .iter()
            .map(|(input, r)| to_report(input, r))
            .collect(),
        lint: args.lint.then_some(lints),
    };

    if global.json {
        output::json(&report)?;
    } else {
        output::text(&render(&report))?;
    }
    let environment = report
        .bundles
        .iter()
        .flat_map(|b| &b.errors)
        .any(|e| e.code.is_environment());
    let lint_errors = report.lint.iter().flatten().any(|l| l.errors > 0);
    Ok(if environment {
        Status::Environment
    } else if report.bundles.iter().all(|b| b.ok) && !lint_errors {
        Status::Ok
    } else {
        Status::CheckFailed
    })
}

/// The folder name the `name` should match: the input's own name (resolved, so `.` works);
/// `None` for a ZIP.
fn folder_name(input: &Path) -> Option<String> {
    if !input.is_dir() {
        return None;
    }
    let resolved = std::fs::canonicalize(input).unwrap_or_else(|_| input.to_path_buf());
    resolved
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
}

/// Lints one imported bundle; with `fix`, writes the mechanical fixes into its folder and lints
/// the bundle again (returned, so the report shows the folder as it now is).
fn lint_one(
    input: &Path,
    label: &str,
    imported: &Result<Bundle, Rejected>,
    mode: Mode,
    fix: bool,
) -> Result<(LintReport, Option<Result<Bundle, Rejected>>), CliError> {
    let Ok(b) = imported else {
        return Ok((
            LintReport {
                input: label.to_owned(),
                mode,
                linted: false,
                errors: 0,
                warnings: 0,
                infos: 0,
                findings: Vec::new(),
                fixed: Vec::new(),
                not_fixed: Vec::new(),
            },
            None,
        ));
    };
    let folder = folder_name(input);
    let mut findings = lint::lint(b, mode, folder.as_deref());
    let mut fixed = Vec::new();
    let mut not_fixed = Vec::new();
    let mut refreshed = None;
    if fix && findings.iter().any(|f| f.fix.is_some()) {
        let texts: BTreeMap<String, String> = b
            .files
            .iter()
            .filter_map(|f| Some((f.path.clone(), f.text()?.to_owned())))
            .collect();
        let outcome = lint::fix(&texts, &findings);
        for (f, why) in &outcome.skipped {
            not_fixed.push(format!("{} ({} → {})", why, f.old.trim(), f.new.trim()));
        }
        for (path, text) in &outcome.changed {
            let target = input.join(path);
            // Written only over what was linted: an edit made meanwhile is kept, not lost.
            let now = std::fs::read(&target).ok();
            if now.as_deref() != texts.get(path).map(String::as_bytes) {
                not_fixed.push(format!("{path}: changed while it was linted; run again"));
                continue;
            }
            let meta = std::fs::metadata(&target).ok();
            if meta.as_ref().is_some_and(|m| m.permissions().readonly()) {
                not_fixed.push(format!(
                    "{path}: read-only, left as it is (make it writable to fix it)"
                ));
                continue;
            }
            if let Err(e) = skilltrial_engine::store::write_durably(&target, text.as_bytes()) {
                // Files fixed before this one stay fixed: say which, so nothing is a surprise.
                let done: Vec<&str> = fixed.iter().map(|f: &lint::Fix| f.path.as_str()).collect();
                return Err(CliError::Environment(anyhow::anyhow!(
                    "cannot write {}: {e}{}",
                    target.display(),
                    if done.is_empty() {
                        " (nothing was changed)".to_owned()
                    } else {
                        format!(" (already fixed: {})", done.join(", "))
                    }
                )));
            }
            if let Some(m) = meta {
                let _ = std::fs::set_permissions(&target, m.permissions());
            }
            fixed.extend(outcome.applied.iter().filter(|f| &f.path == path).cloned());
        }
        let again = bundle::import(input);
        findings = match &again {
            Ok(after) => lint::lint(after, mode, folder.as_deref()),
            Err(_) => Vec::new(),
        };
        refreshed = Some(again);
    }
    let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    Ok((
        LintReport {
            input: label.to_owned(),
            mode,
            linted: true,
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            infos: count(Severity::Info),
            findings,
            fixed,
            not_fixed,
        },
        refreshed,
    ))
}

fn to_report(input: &str, result: &Result<Bundle, Rejected>) -> BundleReport {
    BundleReport::of(input, result.as_ref().map_err(|r| r.errors.as_slice()))
}

/// The human report. Everything that came from a bundle passes through `display_safe`, so a
/// hostile name or excerpt cannot drive the terminal.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for (i, b) in report.bundles.iter().enumerate() {
        render_bundle(&mut out, b);
        if let Some(l) = report.lint.as_ref().and_then(|l| l.get(i)) {
            render_lint(&mut out, l);
        }
        out.push('\n');
    }
    let ok = report.bundles.iter().filter(|b| b.ok).count();
    let rejected = report.bundles.len() - ok;
    let noun = if report.bundles.len() == 1 {
        "bundle"
    } else {
        "bundles"
    };
    let lint = report.lint.as_ref().map_or_else(String::new, |lints| {
        let sum = |get: fn(&LintReport) -> usize| lints.iter().map(get).sum::<usize>();
        let errors = sum(|l| l.errors);
        format!(
            "; lint: {errors} error{}, {} warning{}, {} info",
            if errors == 1 { "" } else { "s" },
            sum(|l| l.warnings),
            if sum(|l| l.warnings) == 1 { "" } else { "s" },
            sum(|l| l.infos)
        )
    });
    let _ = writeln!(
        out,
        "{} {noun}: {ok} ok, {rejected} rejected{lint}",
        report.bundles.len()
    );
    out
}

fn render_bundle(out: &mut String, b: &BundleReport) {
    let input = display_safe(&b.input);
    if !b.ok {
        let _ = writeln!(out, "{input}  REJECTED");
        for e in &b.errors {
            let path = e
                .path
                .as_deref()
                .map(|p| format!("  {p}"))
                .unwrap_or_default();
            let _ = writeln!(out, "  error  {}{path}", e.code);
            let _ = writeln!(out, "         {}", display_safe(&e.message));
        }
        return;
    }
    let name = display_safe(b.name.as_deref().unwrap_or_default());
    let version = b
        .version
        .as_deref()
        .map_or_else(|| "(no version)".to_owned(), display_safe);
    let _ = writeln!(out, "{input}  ok");
    let _ = writeln!(out, "  name         {name}");
    let _ = writeln!(out, "  version      {version}");
    if let Some(d) = &b.description {
        let _ = writeln!(out, "  description  {}", display_safe(&shorten(d, 100)));
    }
    let _ = writeln!(
        out,
        "  digest       {}",
        b.digest.as_deref().unwrap_or_default()
    );

    let kinds = [
        FileKind::Skill,
        FileKind::Reference,
        FileKind::Script,
        FileKind::Binary,
    ];
    let counts: Vec<String> = kinds
        .iter()
        .filter_map(|k| {
            let n = b.files.iter().filter(|f| f.kind == *k).count();
            (n > 0).then(|| format!("{n} {}", k.as_str()))
        })
        .collect();
    let _ = writeln!(
        out,
        "  files        {} ({})",
        b.files.len(),
        counts.join(", ")
    );
    let width = b
        .files
        .iter()
        .map(|f| f.path.chars().count())
        .max()
        .unwrap_or(0);
    for kind in kinds {
        for f in b.files.iter().filter(|f| f.kind == kind) {
            let note = if kind.is_prompt_text() {
                ""
            } else {
                "  not executable: never run, never sent"
            };
            let _ = writeln!(
                out,
                "    {:<9}  {:<width$}  {:>8} B{note}",
                kind.as_str(),
                display_safe(&f.path),
                f.size
            );
        }
    }
    if b.coverage == Some("partial") {
        let _ = writeln!(
            out,
            "  coverage     partial: tasks that need its scripts or binaries get unsupported_case"
        );
    }
    if b.flags.is_empty() {
        let _ = writeln!(out, "  flags        none");
    } else {
        // Counts by kind first, so an author sees at a glance whether anything needs reading.
        let mut kinds: Vec<(FlagKind, usize)> = Vec::new();
        for f in &b.flags {
            match kinds.iter_mut().find(|(k, _)| *k == f.kind) {
                Some((_, n)) => *n += 1,
                None => kinds.push((f.kind, 1)),
            }
        }
        kinds.sort();
        let counts: Vec<String> = kinds
            .iter()
            .map(|(k, n)| format!("{n} {}", k.as_str()))
            .collect();
        let _ = writeln!(
            out,
            "  flags        {} ({})",
            b.flags.len(),
            counts.join(", ")
        );
        for f in &b.flags {
            let _ = writeln!(
                out,
                "    {:<13}  {}:{}  {}",
                f.kind.as_str(),
                display_safe(&f.path),
                f.line,
                f.excerpt
            );
        }
    }
}

fn render_lint(out: &mut String, l: &LintReport) {
    if !l.linted {
        let _ = writeln!(out, "  lint         not run: the bundle was rejected");
        return;
    }
    for f in &l.fixed {
        let _ = writeln!(
            out,
            "  fixed        {}:{}  {} → {}",
            display_safe(&f.path),
            f.line,
            display_safe(f.old.trim()),
            display_safe(f.new.trim())
        );
    }
    for why in &l.not_fixed {
        let _ = writeln!(out, "  not fixed    {}", display_safe(why));
    }
    let _ = writeln!(
        out,
        "  lint         {} ({}): {} error{}, {} warning{}, {} info",
        l.mode.as_str(),
        if l.mode == Mode::Strict {
            "the Agent Skills format"
        } else {
            "what Claude Code accepts"
        },
        l.errors,
        if l.errors == 1 { "" } else { "s" },
        l.warnings,
        if l.warnings == 1 { "" } else { "s" },
        l.infos
    );
    for f in &l.findings {
        let _ = writeln!(
            out,
            "    {}:{}: {} {}: {}{}",
            display_safe(&f.path),
            f.line,
            f.severity.as_str(),
            f.rule,
            display_safe(&f.message),
            if f.fix.is_some() { " [--fix]" } else { "" }
        );
    }
}

fn shorten(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut s: String = one_line.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}
