//! `skilltrial check --pack P --task T <answer-file>`: one answer, one verdict.

use std::fmt::Write as _;
use std::io::Read;

use anyhow::Context;
use skilltrial_core::bundle::display_safe;
use skilltrial_core::checker::answer::MAX_ANSWER_BYTES;
use skilltrial_core::outcome::Outcome;

use crate::cli::{CheckArgs, Global};
use crate::commands::input;
use crate::commands::pack::open_verified as open;
use crate::exit::{CliError, Status};
use crate::output;

pub fn run(args: &CheckArgs, global: &Global) -> Result<Status, CliError> {
    // Looked at first, before the pack and task: a FIFO nobody writes would block the read.
    if args.answer.as_os_str() != "-" {
        input::regular_file(&args.answer, "an answer file, or `-` for standard input")?;
    }
    let pack = open(&args.pack)?;
    let task = pack.task(&args.task)?;
    let limit = u64::try_from(MAX_ANSWER_BYTES)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    let mut bytes = Vec::new();
    if args.answer.as_os_str() == "-" {
        std::io::stdin()
            .take(limit)
            .read_to_end(&mut bytes)
            .context("cannot read the answer from standard input")?;
    } else {
        std::fs::File::open(&args.answer)
            .and_then(|f| f.take(limit).read_to_end(&mut bytes))
            .with_context(|| format!("cannot read the answer file {}", args.answer.display()))?;
    }
    // Not UTF-8 is not JSON: let the checker say so rather than guessing an encoding.
    let text = String::from_utf8(bytes)
        .unwrap_or_else(|e| format!("\u{0}not UTF-8 at byte {}", e.utf8_error().valid_up_to()));
    let verdict = task.check(&text);

    if global.json {
        output::json(&verdict)?;
    } else {
        let mut out = format!(
            "{} ({})\noutcome  {}\n",
            task.id,
            pack.id(),
            verdict.outcome
        );
        if !verdict.reasons.is_empty() {
            let _ = writeln!(out, "reasons  {}", verdict.reasons.join(", "));
        }
        for d in &verdict.details {
            let field = if d.field.is_empty() {
                String::new()
            } else {
                format!("{}: ", d.field)
            };
            let _ = writeln!(
                out,
                "  {:<20} {field}{}",
                d.reason,
                display_safe(&d.message)
            );
            if let Some(expected) = &d.expected {
                let _ = writeln!(
                    out,
                    "  {:<20}   expected {}",
                    "",
                    display_safe(&expected.to_string())
                );
            }
            if let Some(got) = &d.got {
                let _ = writeln!(
                    out,
                    "  {:<20}   got      {}",
                    "",
                    display_safe(&got.to_string())
                );
            }
        }
        output::text(&out)?;
    }
    Ok(if verdict.outcome == Outcome::Pass {
        Status::Ok
    } else {
        Status::CheckFailed
    })
}
