//! `skilltrial pack list | show | verify | regenerate | new | add-task | build`.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;
use skilltrial_core::checker::{self, Expected};
use skilltrial_core::pack::{self, Pack};

use crate::cli::{Global, PackArg, PackCommand, PackShowArgs};
use crate::exit::{CliError, Status};
use crate::output;

pub fn run(command: PackCommand, global: &Global) -> Result<Status, CliError> {
    match command {
        PackCommand::List => list(global),
        PackCommand::Show(args) => show(&args, global),
        PackCommand::Verify(args) => verify(&args, global),
        PackCommand::Regenerate(args) => regenerate(&args, global),
        PackCommand::New(args) => crate::commands::pack_author::new(&args, global),
        PackCommand::AddTask(args) => {
            chain_only!("pack add-task", args => crate::commands::pack_add_task::run(&args, global))
        }
        PackCommand::Build(args) => crate::commands::pack_author::build(&args, global),
    }
}

/// Opens a pack ("not found" is a usage error, "malformed" a rejection: see `exit`), naming the
/// embedded versions of a name given without one.
pub fn open(spec: &str) -> Result<Pack, CliError> {
    Ok(skilltrial_engine::packs::open(spec)?)
}

/// Opens a pack to run or score with (`plan`, `demo`, `check`): a folder must also pass `pack
/// verify`. Refused (exit 1) naming the first failed claims.
pub fn open_verified(spec: &str) -> Result<Pack, CliError> {
    Ok(skilltrial_engine::packs::open_verified(spec)?)
}

#[derive(Serialize)]
struct Listed {
    pack: String,
    hash: String,
    tasks: usize,
    checker: String,
    description: String,
}

fn list(global: &Global) -> Result<Status, CliError> {
    let mut packs = Vec::new();
    for id in pack::embedded_ids() {
        let p = open(&id)?;
        packs.push(Listed {
            pack: p.id(),
            hash: p.hash.to_string(),
            tasks: p.tasks.len(),
            checker: format!("{} {}", p.checker.name, p.checker.version),
            description: p.description.clone(),
        });
    }
    if global.json {
        output::json(&serde_json::json!({ "packs": packs }))?;
    } else {
        let mut out = String::new();
        for p in &packs {
            let _ = writeln!(
                out,
                "{}  {} tasks  checker {}\n  {}\n  {}",
                p.pack, p.tasks, p.checker, p.hash, p.description
            );
        }
        output::text(&out)?;
    }
    Ok(Status::Ok)
}

fn expected_json(expected: &Expected) -> Value {
    match expected {
        Expected::Golden(v) => v.clone(),
        Expected::Excluded { reason, message } => {
            serde_json::json!({"excluded": {"reason": reason, "message": message}})
        }
    }
}

fn show(args: &PackShowArgs, global: &Global) -> Result<Status, CliError> {
    let p = open(&args.pack)?;
    let tasks: Vec<&pack::Task> = match &args.task {
        Some(id) => vec![p.task(id)?],
        None => p.tasks.iter().collect(),
    };
    if global.json {
        let tasks: Vec<Value> = tasks
            .iter()
            .map(|t| {
                let public = t.public();
                let mut v = serde_json::json!({
                    "id": t.id,
                    "family": t.family,
                    "network": t.network,
                    "slot": t.slot,
                    "title": t.title,
                    "input_sha256": t.input_ref.sha256,
                    "input_file": t.input_ref.file,
                    "reason_codes": t.reason_codes,
                    "provenance": t.provenance,
                });
                if args.prompt {
                    v["prompt"] = Value::String(public.render());
                }
                if args.reveal {
                    v["expected"] = expected_json(t.reveal_expected());
                }
                v
            })
            .collect();
        output::json(
            &serde_json::json!({ "pack": p.id(), "hash": p.hash.to_string(), "tasks": tasks }),
        )?;
        return Ok(Status::Ok);
    }
    let mut out = format!("{}  {}\n{}\n", p.id(), p.hash, p.description);
    for t in tasks {
        let slot = t
            .slot
            .map_or_else(|| "not recorded".to_owned(), |s| s.to_string());
        let _ = write!(
            out,
            "\n{}  [{}]  {}\n  network  {}   slot {}\n  input    {} ({} bytes, sha256 {})\n  source   {}\n  reasons  {}\n",
            t.id,
            t.family.as_str(),
            t.title,
            t.network,
            slot,
            t.input_ref.file,
            t.input_ref.size,
            t.input_ref.sha256,
            source_line(&t.provenance),
            t.reason_codes.join(", "),
        );
        if args.prompt {
            let _ = write!(out, "\n{}\n", t.public().render());
        }
        if args.reveal {
            let pretty = serde_json::to_string_pretty(&expected_json(t.reveal_expected()))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  expected (never shown to a model):\n{}",
                indent(&pretty, "    ")
            );
        }
    }
    output::text(&out)?;
    Ok(Status::Ok)
}

fn source_line(provenance: &Value) -> String {
    let get = |k: &str| provenance.get(k).and_then(Value::as_str).unwrap_or("");
    if !get("rpc").is_empty() {
        // A task made by `pack add-task`.
        return format!(
            "fetched from {} ({}, {}) at {}",
            get("rpc"),
            get("call"),
            get("commitment"),
            get("fetched_at")
        );
    }
    let commit = get("commit");
    let short = commit.get(..8).unwrap_or(commit);
    format!(
        "{} {}{}{} ({})",
        get("repository"),
        get("path"),
        if short.is_empty() { "" } else { " @ " },
        short,
        get("license")
    )
}

fn indent(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|l| format!("{prefix}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn verify(args: &PackArg, global: &Global) -> Result<Status, CliError> {
    // A folder is verified as it is (its pin and checker version are reported as checks); an
    // embedded pack is opened with the release checks.
    let p = if pack::is_path_spec(&args.pack) {
        pack::open_folder(std::path::Path::new(&args.pack))?
    } else {
        open(&args.pack)?
    };
    let report = pack::verify(&p);
    if global.json {
        output::json(&report)?;
    } else {
        let mut out = format!(
            "{}  {}\nchecker {} (source sha256 {})\n\n",
            report.pack, report.hash, report.checker_version, report.checker_source_sha256
        );
        for item in &report.items {
            let mark = if item.ok { "ok  " } else { "FAIL" };
            let task = if item.task.is_empty() {
                "(pack)"
            } else {
                item.task.as_str()
            };
            let _ = writeln!(
                out,
                "  {mark}  {task:<22} {:<34} {}",
                item.check, item.message
            );
        }
        let failed = report.items.iter().filter(|i| !i.ok).count();
        let _ = writeln!(
            out,
            "\n{} checks: {} ok, {failed} failed",
            report.items.len(),
            report.items.len() - failed
        );
        output::text(&out)?;
    }
    Ok(if report.ok {
        Status::Ok
    } else {
        Status::CheckFailed
    })
}

fn regenerate(args: &PackArg, global: &Global) -> Result<Status, CliError> {
    let written = pack::regenerate_folder(std::path::Path::new(&args.pack))?;
    let paths: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    if global.json {
        output::json(
            &serde_json::json!({ "written": paths, "checker_version": checker::CHECKER_VERSION }),
        )?;
    } else {
        output::text(
            &paths
                .iter()
                .map(|p| format!("wrote {p}\n"))
                .collect::<String>(),
        )?;
    }
    Ok(Status::Ok)
}
