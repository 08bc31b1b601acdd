-- 0001: the chain outbox's first schema, exactly as the code created it before this folder
-- existed. `IF NOT EXISTS` adopts such a file (user_version 0, this very table) as schema 1
-- without touching a row.
--
-- One row per signed transaction, written before it is sent: `intent` names its purpose (one
-- pending row per intent and cluster), `wire_base64` its exact bytes (resent unchanged), and
-- `last_valid_block_height` when its blockhash expires.

CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY,
    cluster TEXT NOT NULL,
    intent TEXT NOT NULL,
    signature TEXT NOT NULL UNIQUE,
    blockhash TEXT NOT NULL,
    last_valid_block_height INTEGER NOT NULL,
    wire_base64 TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'landed', 'failed', 'expired')),
    detail TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_intent ON outbox (cluster, intent, state);
