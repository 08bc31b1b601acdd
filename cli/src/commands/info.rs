//! `skilltrial info`: the version and where state lives. Reads only; creates nothing.

use serde::Serialize;
use skilltrial_engine::home::HomeSource;

use crate::cli::Global;
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Info {
    version: &'static str,
    home: String,
    home_source: HomeSource,
    home_exists: bool,
}

pub fn run(global: &Global) -> Result<Status, CliError> {
    let home = state::home(global)?;
    let info = Info {
        version: skilltrial_engine::APP_VERSION,
        home: home.path.display().to_string(),
        home_source: home.source,
        home_exists: home.path.is_dir(),
    };
    if global.json {
        output::json(&info)?;
    } else {
        let source = match info.home_source {
            HomeSource::Flag => "--home",
            HomeSource::Env => "SKILLTRIAL_HOME",
            HomeSource::XdgDataHome => "XDG_DATA_HOME",
            HomeSource::DefaultDataDir => "default data directory",
        };
        let exists = if info.home_exists {
            ""
        } else {
            " (not created yet)"
        };
        output::text(&format!(
            "skilltrial {}\nstate  {}{exists}\n       from {source}\n",
            info.version, info.home
        ))?;
    }
    Ok(Status::Ok)
}
