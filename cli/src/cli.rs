//! The command line: every subcommand and flag, parsed by clap.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::exit;

/// SkillTrial: see on which Solana tasks a new version of an agent skill helps, and where it
/// breaks, before it ships.
#[derive(Debug, Parser)]
#[command(name = "skilltrial", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every subcommand takes.
#[derive(Debug, Args)]
pub struct Global {
    /// Print machine-readable JSON on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// State directory (journal and content-addressed store). Default: $SKILLTRIAL_HOME, then
    /// $XDG_DATA_HOME/skilltrial, then ~/.local/share/skilltrial.
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate skill bundles (folders or ZIPs): name, version, digest, files by kind, flags.
    ///
    /// Exits 1 if any bundle is rejected. Nothing is written to disk.
    Validate(ValidateArgs),
    /// Show this installation: version, and where state lives and why.
    Info,
    /// Fixture packs: list, show a task, verify every claim a pack makes.
    #[command(subcommand)]
    Pack(PackCommand),
    /// Score one answer file against a pack task with the deterministic checker.
    ///
    /// Exits 0 on pass, 1 otherwise.
    Check(CheckArgs),
}

#[derive(Debug, Subcommand)]
pub enum PackCommand {
    /// List the packs built into this binary.
    List,
    /// Show a pack's public tasks (the golden record only with --reveal).
    Show(PackShowArgs),
    /// Verify a pack: hashes, golden records regenerate, golden answers pass, every known-wrong
    /// answer is rejected with its stated reasons. Exits 1 on any failure.
    Verify(PackArg),
    /// Maintainers: rewrite every golden.json of a pack folder from its raw inputs.
    #[command(hide = true)]
    Regenerate(PackArg),
}

#[derive(Debug, Args)]
pub struct PackArg {
    /// An embedded pack (e.g. solana-core@1.0.3) or a pack folder.
    #[arg(value_name = "PACK")]
    pub pack: String,
}

#[derive(Debug, Args)]
pub struct PackShowArgs {
    /// An embedded pack (e.g. solana-core@1.0.3) or a pack folder.
    #[arg(value_name = "PACK")]
    pub pack: String,
    /// Only this task.
    #[arg(long, value_name = "TASK")]
    pub task: Option<String>,
    /// Also show each task's expected answer (never shown to a model).
    #[arg(long)]
    pub reveal: bool,
    /// Print the full task text a model is given, input included.
    #[arg(long)]
    pub prompt: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// An embedded pack (e.g. solana-core@1.0.3) or a pack folder.
    #[arg(long, value_name = "PACK")]
    pub pack: String,
    /// The task id.
    #[arg(long, value_name = "TASK")]
    pub task: String,
    /// The answer file (`-` for standard input).
    #[arg(value_name = "ANSWER_FILE")]
    pub answer: std::path::PathBuf,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Bundle folders or ZIP files, e.g. ./v1.4.2 ./v1.5.0.zip
    #[arg(required = true, value_name = "BUNDLE")]
    pub bundles: Vec<PathBuf>,
}

/// Parses the arguments. Help and version print and exit 0; usage errors print (as JSON when
/// `--json` was given) and exit 2.
pub fn parse(args: Vec<OsString>) -> Result<Cli, ExitCode> {
    let json = args.iter().any(|a| a == "--json");
    Cli::try_parse_from(args).map_err(|error| exit::clap_error(&error, json))
}
