-- 0002: the outbox table becomes STRICT (every column holds its declared type) and a block
-- height is never negative (it is a u64 in Rust): the values the code has always written, now
-- refused by SQLite when anything else is tried.
--
-- SQLite cannot add a constraint to an existing table, so the table is rebuilt with SQLite's
-- ALTER TABLE procedure (https://sqlite.org/lang_altertable.html#otheralter): create the new
-- table, copy every row, drop the old one, rename the new one into its place, recreate its
-- index. Column order is that of 0001 and `id` is copied, so every row keeps its id. A row that
-- breaks a new constraint makes the whole migration fail and roll back: the outbox stays at
-- schema 1 rather than lose or alter a row.

CREATE TABLE outbox_new (
    id                      INTEGER PRIMARY KEY,
    cluster                 TEXT NOT NULL,
    intent                  TEXT NOT NULL,
    signature               TEXT NOT NULL UNIQUE,
    blockhash               TEXT NOT NULL,
    last_valid_block_height INTEGER NOT NULL CHECK (last_valid_block_height >= 0),
    wire_base64             TEXT NOT NULL,
    state                   TEXT NOT NULL CHECK (state IN ('pending', 'landed', 'failed', 'expired')),
    detail                  TEXT,
    created_at              INTEGER NOT NULL,
    updated_at              INTEGER NOT NULL
) STRICT;
INSERT INTO outbox_new
    SELECT id, cluster, intent, signature, blockhash, last_valid_block_height, wire_base64,
           state, detail, created_at, updated_at
    FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_new RENAME TO outbox;
CREATE INDEX outbox_intent ON outbox (cluster, intent, state);
