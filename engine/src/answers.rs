//! Where a stored answer is read from: the journal, which holds an answer's bytes since schema 5
//! (they commit with the result, in one fsync), or the payload store, which holds the answers of
//! runs journaled before. `None` means the answer was purged.

use skilltrial_core::digest::Sha256Digest;

use crate::journal::{Journal, JournalError};
use crate::store::{Store, StoreError};

/// The bytes of the answer `sha`, or `None` when it was purged.
pub fn read<E>(
    journal: &Journal,
    payloads: &Store,
    sha: &Sha256Digest,
) -> Result<Option<Vec<u8>>, E>
where
    E: From<JournalError> + From<StoreError>,
{
    if let Some(bytes) = journal.payload_content(&sha.hex())? {
        return Ok(Some(bytes));
    }
    match payloads.get(sha) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(StoreError::Missing(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
