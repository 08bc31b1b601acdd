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
