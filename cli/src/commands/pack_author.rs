//! `skilltrial pack new | build`: a pack of one's own (core::pack::author makes the tasks;
//! `pack add-task`, in `pack_add_task`, fetches them from one's own chain data).

use std::path::Path;

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_core::pack::{self, author};

use crate::cli::{Global, PackArg, PackNewArgs};
use crate::exit::{CliError, Status};
use crate::output;

/// `pack new --json`: the pack folder created.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PackCreated {
    /// `name@version`.
    pub pack: String,
    /// The folder, with its empty pack.json and tasks/.
    pub dir: String,
}

pub(crate) fn refused(message: impl std::fmt::Display) -> CliError {
    CliError::Rejected(anyhow::anyhow!("{message}"))
}

pub(crate) fn environment(message: impl std::fmt::Display) -> CliError {
    CliError::Environment(anyhow::anyhow!("{message}"))
}

pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    skilltrial_engine::store::write_durably(path, bytes)
        .map_err(|e| environment(format!("cannot write {}: {e}", path.display())))
}

pub fn new(args: &PackNewArgs, global: &Global) -> Result<Status, CliError> {
    let meta =
        author::pack_json(&args.name, &args.pack_version, &args.description).map_err(refused)?;
    let dir = &args.dir;
    if dir.exists() {
        let empty = dir.is_dir()
            && std::fs::read_dir(dir)
                .map_err(|e| environment(format!("cannot read {}: {e}", dir.display())))?
                .next()
                .is_none();
        if !empty {
            return Err(environment(format!(
                "{} already exists and is not an empty folder: give a new folder",
                dir.display()
            )));
        }
    }
    std::fs::create_dir_all(dir.join("tasks"))
        .map_err(|e| environment(format!("cannot create {}: {e}", dir.display())))?;
    write(&dir.join("pack.json"), &meta)?;
    if global.json {
        output::json(&PackCreated {
            pack: format!("{}@{}", args.name, args.pack_version),
            dir: dir.display().to_string(),
        })?;
    } else {
        output::text(&format!(
            "created pack {}@{} in {}\nadd tasks: skilltrial pack add-task {} --account <ADDRESS> --url <RPC>\n",
            args.name,
            args.pack_version,
            dir.display(),
            dir.display()
        ))?;
    }
    Ok(Status::Ok)
}

pub fn build(args: &PackArg, global: &Global) -> Result<Status, CliError> {
    let dir = Path::new(&args.pack);
    if !dir.is_dir() {
        return Err(environment(format!(
            "{}: not a pack folder (pack build seals a folder; embedded packs are sealed already)",
            dir.display()
        )));
    }
    pack::regenerate_folder(dir).map_err(CliError::from)?;
    let status = crate::commands::pack::verify(args, global)?;
    if status == Status::Ok && !global.json {
        let p = pack::open_folder(dir).map_err(CliError::from)?;
        output::text(&format!(
            "sealed {}: {}\nplan with `--pack {}`: the manifest pins this hash, and the run reads the pack as stored at plan time\n",
            p.id(),
            p.hash,
            dir.display()
        ))?;
    }
    Ok(status)
}
