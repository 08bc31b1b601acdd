//! Opening the state directory: the journal, the input store and the payload store, and
//! finding a run in it. Shared by the commands; not a command itself.

use skilltrial_engine::home::{Layout, StateHome, state_home};
use skilltrial_engine::journal::{Journal, RunRow};
use skilltrial_engine::store::Store;

use crate::cli::Global;
use crate::exit::CliError;

pub use skilltrial_engine::state::Opened;

/// The state directory chosen by `--home`, `SKILLTRIAL_HOME` or XDG; one that exists but is not
/// a directory is refused here, for every command (see [`skilltrial_engine::home::state_home`]).
pub fn home(global: &Global) -> Result<StateHome, CliError> {
    Ok(state_home(global.home.as_deref(), |k| {
        std::env::var(k).ok()
    })?)
}

/// The state layout under [`home`].
pub fn layout(global: &Global) -> Result<Layout, CliError> {
    Ok(Layout::new(&home(global)?.path))
}

/// The journal, which must already exist: commands that only read never create state.
pub fn existing_journal(layout: &Layout) -> Result<Journal, CliError> {
    if !layout.journal.is_file() {
        return Err(CliError::Environment(anyhow::anyhow!(
            "no runs yet in {}: plan one with `skilltrial plan`, then `skilltrial run`",
            layout.root.display()
        )));
    }
    journal(layout)
}

/// The journal, created if missing, or read-only where the directory cannot be written (see
/// [`skilltrial_engine::state::journal`]).
pub fn journal(layout: &Layout) -> Result<Journal, CliError> {
    Ok(skilltrial_engine::state::journal(layout)?)
}

pub fn store(layout: &Layout) -> Result<Store, CliError> {
    Ok(skilltrial_engine::state::store(layout)?)
}

pub fn payloads(layout: &Layout) -> Result<Store, CliError> {
    Ok(skilltrial_engine::state::payloads(layout)?)
}

/// The shortest run id prefix accepted: shorter ones match too easily by accident.
pub const MIN_PREFIX: usize = 8;

/// A run reference as a person gives it, checked and reduced to lowercase hex: the manifest
/// hash as `plan` prints it (`sha256:<64 hex>`), its 64 hex digits, or a prefix of at least
/// [`MIN_PREFIX`] of them. Every command that takes a run goes through here.
pub fn run_reference(reference: &str) -> Result<String, CliError> {
    let hex = reference.strip_prefix("sha256:").unwrap_or(reference);
    if hex.is_empty() || hex.len() > 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(CliError::Environment(anyhow::anyhow!(
            "`{reference}` is not a run id: give the manifest hash `skilltrial plan` printed (sha256:<64 hex>), or a prefix of at least {MIN_PREFIX} of its hex characters"
        )));
    }
    if hex.len() < MIN_PREFIX {
        return Err(CliError::Environment(anyhow::anyhow!(
            "run id prefix `{reference}` is too short: give at least {MIN_PREFIX} characters of the manifest hash"
        )));
    }
    Ok(hex.to_ascii_lowercase())
}

/// The full id of the run `reference` names (see [`run_reference`]), for `run`. A full hash
/// whose manifest is in the store is a run even before the journal records it (a journal
/// deleted or not yet created: `run` records it); one in neither is no run (exit 2).
pub fn run_id(layout: &Layout, reference: &str) -> Result<String, CliError> {
    let hex = run_reference(reference)?;
    if hex.len() == 64
        && skilltrial_engine::store::parse_hex(&hex)
            .is_some_and(|d| store(layout).is_ok_and(|s| s.contains(&d)))
    {
        return Ok(hex);
    }
    Ok(find_run(&existing_journal(layout)?, Some(reference))?.id)
}

/// A run by id or prefix (see [`run_reference`]), or the latest run. No such run is a usage
/// error (exit 2), whichever command asked.
pub fn find_run(journal: &Journal, run: Option<&str>) -> Result<RunRow, CliError> {
    let found = match run {
        Some(reference) => journal.find_run(&run_reference(reference)?)?,
        None => journal.latest_run()?,
    };
    found.ok_or_else(|| {
        CliError::Environment(anyhow::anyhow!(match run {
            Some(id) => format!(
                "no run `{id}` in {}: give the manifest hash `skilltrial plan` printed, or a prefix of at least {MIN_PREFIX} characters",
                journal.path().display()
            ),
            None => format!(
                "no runs yet in {}: plan one with `skilltrial plan`, then `skilltrial run`",
                journal.path().display()
            ),
        }))
    })
}

/// Whether a `skilltrial run` process holds the run's lock now (see
/// [`skilltrial_engine::engine::run_is_live`]). Probing is I/O on the state directory: any
/// failure is the environment (exit 2), never a judgement on the run.
pub fn run_is_live(journal: &Journal, run_id: &str) -> Result<bool, CliError> {
    skilltrial_engine::engine::run_is_live(journal.path(), run_id)
        .map_err(|e| CliError::Environment(e.into()))
}

/// The first 12 characters of an id, for people.
pub fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// Opens everything under the chosen state directory for a command that only reads: the journal
/// must exist already (see [`existing_journal`]).
pub fn open_existing(global: &Global) -> Result<Opened, CliError> {
    let layout = layout(global)?;
    Ok(Opened {
        journal: existing_journal(&layout)?,
        store: store(&layout)?,
        payloads: payloads(&layout)?,
        layout,
    })
}
