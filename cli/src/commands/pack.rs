//! `skilltrial pack list | show | verify | regenerate | new | add-task | build`.

use std::fmt::Write as _;

use schemars::JsonSchema;
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

/// `pack list --json`: the packs built into this binary.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PackList {
    pub packs: Vec<Listed>,
}

/// One embedded pack.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Listed {
    /// `name@version`, as `--pack` takes it.
    pub pack: String,
    /// The pack's content hash (`sha256:…`), the one a manifest pins.
    pub hash: String,
    /// How many tasks it has.
    pub tasks: usize,
    /// The checker it is scored with: "name version".
    pub checker: String,
    pub description: String,
}

/// `pack show --json`: a pack's public tasks.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PackShown {
    /// `name@version`.
    pub pack: String,
    /// The pack's content hash.
    pub hash: String,
    /// Every task, or the one `--task` names.
    pub tasks: Vec<ShownTask>,
}

/// One task as a model may see it, plus its golden record with `--reveal`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShownTask {
    pub id: String,
    pub family: checker::Family,
    /// The cluster its input came from (`mainnet-beta`, `devnet`, …).
    pub network: String,
    /// The slot its input was read at (null when not recorded).
    pub slot: Option<u64>,
    pub title: String,
    /// The SHA-256 of its input file.
    pub input_sha256: String,
    /// The input file's name in the pack.
    pub input_file: String,
    /// The reasons the pack's known-wrong answers are rejected with.
    pub reason_codes: Vec<String>,
    /// Where the input came from (a repository and commit, or the RPC call that fetched it).
    pub provenance: Value,
    /// The full text a model is given; only with `--prompt`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The golden record (never shown to a model); only with `--reveal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<ShownExpected>,
}

/// What a task expects: its golden record, or why it is excluded from scoring.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ShownExpected {
    /// The golden record, as the decoder wrote it.
    Golden(Value),
    /// The task cannot be scored: every answer gets `unsupported_case`.
    Excluded { excluded: Exclusion },
}

/// Why a task is excluded. (Members in this order: `pack show --reveal` prints them so.)
#[derive(Debug, Serialize, JsonSchema)]
pub struct Exclusion {
    pub message: String,
    pub reason: &'static str,
}

/// `pack regenerate --json`: the golden records rewritten.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Regenerated {
    /// Every file written.
    pub written: Vec<String>,
    /// The checker (and decoder) version that wrote them.
    pub checker_version: &'static str,
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
        output::json(&PackList { packs })?;
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

fn expected_json(expected: &Expected) -> ShownExpected {
    match expected {
        Expected::Golden(v) => ShownExpected::Golden(v.clone()),
        Expected::Excluded { reason, message } => ShownExpected::Excluded {
            excluded: Exclusion {
                message: message.clone(),
                reason,
            },
        },
    }
}

fn show(args: &PackShowArgs, global: &Global) -> Result<Status, CliError> {
    let p = open(&args.pack)?;
    let tasks: Vec<&pack::Task> = match &args.task {
        Some(id) => vec![p.task(id)?],
        None => p.tasks.iter().collect(),
    };
    if global.json {
        let tasks: Vec<ShownTask> = tasks
            .iter()
            .map(|t| ShownTask {
                id: t.id.clone(),
                family: t.family,
                network: t.network.clone(),
                slot: t.slot,
                title: t.title.clone(),
                input_sha256: t.input_ref.sha256.clone(),
                input_file: t.input_ref.file.clone(),
                reason_codes: t.reason_codes.clone(),
                provenance: t.provenance.clone(),
                prompt: args.prompt.then(|| t.public().render()),
                expected: args.reveal.then(|| expected_json(t.reveal_expected())),
            })
            .collect();
        output::json(&PackShown {
            pack: p.id(),
            hash: p.hash.to_string(),
            tasks,
        })?;
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
        output::json(&Regenerated {
            written: paths,
            checker_version: checker::CHECKER_VERSION,
        })?;
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
