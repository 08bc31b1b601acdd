//! Opening a state directory ([`crate::home::Layout`]): the journal and both content stores.
//!
//! Shared by every command that keeps state and by the operations that run inside the engine
//! (the demo). Opening for writing creates what is missing; resolving a [`Layout`] never does.

use std::path::{Path, PathBuf};

use crate::home::Layout;
use crate::journal::{Journal, JournalError};
use crate::store::{Store, StoreError};

/// The state directory, opened: the journal and both stores.
#[derive(Debug)]
pub struct Opened {
    pub layout: Layout,
    pub journal: Journal,
    pub store: Store,
    pub payloads: Store,
}

/// Why a state directory could not be opened. Every one leaves the directory unusable for the
/// operation, whatever the file held: none judges an input.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot open the journal in {}{}", root.display(), if *read_only { " (read-only)" } else { "" })]
    Journal {
        root: PathBuf,
        /// Whether it was opened read-only (see [`journal`]).
        read_only: bool,
        #[source]
        source: JournalError,
    },
    #[error("cannot open the input store")]
    Store(#[source] StoreError),
    #[error("cannot open the payload store")]
    Payloads(#[source] StoreError),
}

/// Whether a file can be created in `dir` (tried with a probe file, removed at once). Asked only
/// after the journal failed to open for writing.
fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!(".skilltrial-write-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            true
        }
        Err(_) => false,
    }
}

/// The journal, created if missing. In a state directory whose permissions forbid writing, an
/// existing journal is opened read-only instead, so that commands that only read still work
/// there (and one that writes fails naming the read-only journal). Decided by the permission
/// bits first, so that it holds for root too, whom `chmod` does not stop; and, when opening for
/// writing fails, by whether the directory can be written at all (a read-only mount).
pub fn journal(layout: &Layout) -> Result<Journal, StateError> {
    let dir = layout.journal.parent().unwrap_or(&layout.root);
    let mut read_only = layout.journal.is_file()
        && std::fs::metadata(dir).is_ok_and(|m| m.permissions().readonly());
    let opened = if read_only {
        Journal::open_read_only(&layout.journal)
    } else {
        match Journal::open(&layout.journal) {
            // A directory whose permission bits allow writing may still be unwritable: a
            // read-only mount. An existing journal is then read where it is, as above.
            Err(_) if layout.journal.is_file() && !writable(dir) => {
                read_only = true;
                Journal::open_read_only(&layout.journal)
            }
            opened => opened,
        }
    };
    opened.map_err(|source| StateError::Journal {
        root: layout.root.clone(),
        read_only,
        source,
    })
}

/// The input store (manifests, bundle files, pack files), created if missing.
pub fn store(layout: &Layout) -> Result<Store, StateError> {
    Store::open(&layout.store).map_err(StateError::Store)
}

/// The payload store (raw model requests and responses), created if missing.
pub fn payloads(layout: &Layout) -> Result<Store, StateError> {
    Store::open(&layout.payloads).map_err(StateError::Payloads)
}

/// Opens everything under `layout`, creating what is missing.
pub fn open(layout: Layout) -> Result<Opened, StateError> {
    Ok(Opened {
        journal: journal(&layout)?,
        store: store(&layout)?,
        payloads: payloads(&layout)?,
        layout,
    })
}
