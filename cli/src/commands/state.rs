//! Opening the state directory: the journal, the input store and the payload store.

use anyhow::Context;
use skilltrial_runner::home::{Layout, resolve_home};
use skilltrial_runner::journal::{Journal, RunRow};
use skilltrial_runner::store::Store;

use crate::cli::Global;
use crate::exit::CliError;

/// The state layout chosen by `--home`, `SKILLTRIAL_HOME` or XDG.
pub fn layout(global: &Global) -> Result<Layout, CliError> {
    let home = resolve_home(global.home.as_deref(), |k| std::env::var(k).ok())
        .map_err(anyhow::Error::from)?;
    Ok(Layout::new(&home.path))
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

pub fn journal(layout: &Layout) -> Result<Journal, CliError> {
    Ok(Journal::open(&layout.journal)
        .with_context(|| format!("cannot open the journal in {}", layout.root.display()))?)
}

pub fn store(layout: &Layout) -> Result<Store, CliError> {
    Ok(Store::open(&layout.store).context("cannot open the input store")?)
}

pub fn payloads(layout: &Layout) -> Result<Store, CliError> {
    Ok(Store::open(&layout.payloads).context("cannot open the payload store")?)
}

/// A run by id or prefix, or the latest run.
pub fn find_run(journal: &Journal, run: Option<&str>) -> Result<RunRow, CliError> {
    let found = match run {
        Some(id) => journal.run(id).map_err(anyhow::Error::from)?,
        None => journal.latest_run().map_err(anyhow::Error::from)?,
    };
    found.ok_or_else(|| {
        CliError::Environment(anyhow::anyhow!(match run {
            Some(id) => format!("no run `{id}` in {}", journal.path().display()),
            None => format!(
                "no runs yet in {}: plan one with `skilltrial plan`, then `skilltrial run`",
                journal.path().display()
            ),
        }))
    })
}

/// The first 12 characters of an id, for people.
pub fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// The state directory, opened: journal and both stores.
#[derive(Debug)]
pub struct Opened {
    pub layout: Layout,
    pub journal: Journal,
    pub store: Store,
    pub payloads: Store,
}

/// Opens everything under the chosen state directory.
pub fn open(global: &Global) -> Result<Opened, CliError> {
    let layout = layout(global)?;
    Ok(Opened {
        journal: journal(&layout)?,
        store: store(&layout)?,
        payloads: payloads(&layout)?,
        layout,
    })
}
