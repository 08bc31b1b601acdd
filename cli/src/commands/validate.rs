//! `skilltrial validate <bundle>...`: import each bundle in memory and report it.

use std::fmt::Write as _;

use serde::Serialize;
use skilltrial_core::bundle::verdict::BundleReport;
use skilltrial_core::bundle::{self, Bundle, FileKind, FlagKind, Rejected, display_safe};

use crate::cli::{Global, ValidateArgs};
use crate::commands::input;
use crate::exit::{CliError, Status};
use crate::output;

/// The `--json` document.
#[derive(Debug, Serialize)]
pub struct Report {
    pub bundles: Vec<BundleReport>,
}

pub fn run(args: &ValidateArgs, global: &Global) -> Result<Status, CliError> {
    // A FIFO or device given as a bundle is refused before any is opened: reading a FIFO that
    // nobody writes blocks forever.
    for path in &args.bundles {
        input::file_or_folder(path, "a bundle folder or ZIP")?;
    }
    let results: Vec<(String, Result<Bundle, Rejected>)> = args
        .bundles
        .iter()
        .map(|input| (input.display().to_string(), bundle::import(input)))
        .collect();
    let report = Report {
        bundles: results
            .iter()
            .map(|(input, r)| to_report(input, r))
            .collect(),
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
    Ok(if environment {
        Status::Environment
    } else if report.bundles.iter().all(|b| b.ok) {
        Status::Ok
    } else {
        Status::CheckFailed
    })
}

fn to_report(input: &str, result: &Result<Bundle, Rejected>) -> BundleReport {
    BundleReport::of(input, result.as_ref().map_err(|r| r.errors.as_slice()))
}

/// The human report. Everything that came from a bundle passes through `display_safe`, so a
/// hostile name or excerpt cannot drive the terminal.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for b in &report.bundles {
        render_bundle(&mut out, b);
        out.push('\n');
    }
    let ok = report.bundles.iter().filter(|b| b.ok).count();
    let rejected = report.bundles.len() - ok;
    let noun = if report.bundles.len() == 1 {
        "bundle"
    } else {
        "bundles"
    };
    let _ = writeln!(
        out,
        "{} {noun}: {ok} ok, {rejected} rejected",
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
