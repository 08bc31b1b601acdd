-- 0002: the numbers the daemon reads back as unsigned can no longer be stored negative:
-- `runs.run_id` (the Run account's u64 `run_id`) and `events.seq` (counted from 1, as
-- `batches.seq` already was). The code has never written anything else; now SQLite refuses it.
--
-- SQLite cannot add a CHECK to an existing table, so `runs` and `events` are rebuilt with
-- SQLite's ALTER TABLE procedure (https://sqlite.org/lang_altertable.html#otheralter): create
-- the new table, copy every row, drop the old one, rename the new one into its place, recreate
-- its index. The migration runs with foreign keys off and `PRAGMA foreign_key_check` before its
-- commit (skilltrial_sqlite::migrate); `batches` and `events` reference `runs` by name, so their
-- foreign keys hold again after the rename. Column order and types are those of 0001, so every
-- row copies as it was. A row that breaks a new CHECK makes the whole migration fail and roll
-- back: the state stays at its schema rather than lose or alter a row.

CREATE TABLE runs_new (
    address            TEXT PRIMARY KEY,
    user               TEXT NOT NULL,
    manifest           TEXT NOT NULL,
    run_id             INTEGER NOT NULL CHECK (run_id >= 0),
    deadline           INTEGER NOT NULL,
    phase              TEXT NOT NULL CHECK (phase IN ('executing', 'finalizing', 'finalized', 'failed')),
    detail             TEXT,
    report_hash        TEXT,
    finalize_signature TEXT,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
) STRICT;
INSERT INTO runs_new
    SELECT address, user, manifest, run_id, deadline, phase, detail, report_hash,
           finalize_signature, created_at, updated_at
    FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_by_user ON runs (user, created_at);

CREATE TABLE events_new (
    run  TEXT NOT NULL REFERENCES runs (address),
    seq  INTEGER NOT NULL CHECK (seq >= 1),
    at   INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run, seq)
) STRICT;
INSERT INTO events_new SELECT run, seq, at, kind, data FROM events;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
