-- 0001: the hosted runner's state, exactly as the code created it before this folder existed.
-- `IF NOT EXISTS` adopts such a file (user_version 0, these very tables) as schema 1 without
-- touching a row; a file from before `batches.refused` gets that column first, in the same
-- transaction (`adopt_unnumbered` in runner/src/state.rs).
--
-- Sign-in nonces (single use), sessions (by the SHA-256 of their token: a token is never
-- stored), the hosted runs, their settlement batches (written before their transaction is
-- signed) and each run's event log.

CREATE TABLE IF NOT EXISTS nonces (
    nonce      TEXT PRIMARY KEY,
    address    TEXT,
    expires_at INTEGER NOT NULL,
    used       INTEGER NOT NULL DEFAULT 0 CHECK (used IN (0, 1))
) STRICT;
-- Who uploaded what: a wallet may escrow and register a manifest only after it uploaded it (and
-- the manifest only after it uploaded its bundles), so knowing a hash is not enough to run
-- another wallet's private skill.
CREATE TABLE IF NOT EXISTS holdings (
    address TEXT NOT NULL,
    digest  TEXT NOT NULL,
    PRIMARY KEY (address, digest)
) STRICT;
CREATE TABLE IF NOT EXISTS sessions (
    token_sha256 TEXT PRIMARY KEY,
    address      TEXT NOT NULL,
    expires_at   INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS runs (
    address            TEXT PRIMARY KEY,
    user               TEXT NOT NULL,
    manifest           TEXT NOT NULL,
    run_id             INTEGER NOT NULL,
    deadline           INTEGER NOT NULL,
    phase              TEXT NOT NULL CHECK (phase IN ('executing', 'finalizing', 'finalized', 'failed')),
    detail             TEXT,
    report_hash        TEXT,
    finalize_signature TEXT,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS runs_by_user ON runs (user, created_at);
CREATE TABLE IF NOT EXISTS batches (
    run       TEXT NOT NULL REFERENCES runs (address),
    seq       INTEGER NOT NULL CHECK (seq >= 1),
    evidence  TEXT NOT NULL,
    signature TEXT,
    -- Why the program refused it for good (the deadline passed, the cancel window closed):
    -- never sent again, never charged. Added after the first release (see `adopt_unnumbered`).
    refused   TEXT,
    PRIMARY KEY (run, seq)
) STRICT;
CREATE TABLE IF NOT EXISTS events (
    run  TEXT NOT NULL REFERENCES runs (address),
    seq  INTEGER NOT NULL,
    at   INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run, seq)
) STRICT;
