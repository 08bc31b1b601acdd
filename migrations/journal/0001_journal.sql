-- 0001: the journal's first schema.
--
-- Money is integer micro-USD. Every state change of an attempt happens in one transaction
-- together with its ledger rows. An attempt moves planned -> dispatched -> result | unknown;
-- `closed` is terminal for attempts that end without a model result (infrastructure error,
-- not run, or resolved by the user).

CREATE TABLE runs (
    id               TEXT PRIMARY KEY,          -- the manifest hash (hex)
    manifest_sha256  TEXT NOT NULL,
    pack_id          TEXT NOT NULL,
    created_at_ms    INTEGER NOT NULL,
    started_at_ms    INTEGER,
    finished_at_ms   INTEGER,
    status           TEXT NOT NULL CHECK (status IN ('planned', 'running', 'finished', 'cancelled', 'stopped')),
    cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
    cap_micros       INTEGER CHECK (cap_micros IS NULL OR cap_micros >= 0),
    max_requests     INTEGER NOT NULL CHECK (max_requests >= 0),
    max_tokens       INTEGER CHECK (max_tokens IS NULL OR max_tokens >= 0)
);

CREATE TABLE trials (
    run_id            TEXT NOT NULL REFERENCES runs(id),
    idx               INTEGER NOT NULL,
    task              TEXT NOT NULL,
    arm               TEXT NOT NULL CHECK (arm IN ('baseline', 'a', 'b')),
    repetition        INTEGER NOT NULL,
    reserve_micros    INTEGER NOT NULL CHECK (reserve_micros >= 0),
    input_token_bound INTEGER NOT NULL,
    max_output_tokens INTEGER NOT NULL,
    PRIMARY KEY (run_id, idx)
);

CREATE TABLE attempts (
    id                    TEXT PRIMARY KEY,
    run_id                TEXT NOT NULL,
    trial_idx             INTEGER NOT NULL,
    seq                   INTEGER NOT NULL CHECK (seq >= 1),
    retry_of              TEXT REFERENCES attempts(id),
    retry_reason          TEXT,
    state                 TEXT NOT NULL CHECK (state IN ('planned', 'dispatched', 'result', 'unknown', 'closed')),
    outcome               TEXT,
    reasons               TEXT NOT NULL DEFAULT '[]',
    details               TEXT NOT NULL DEFAULT '[]',
    reserved_micros       INTEGER NOT NULL DEFAULT 0 CHECK (reserved_micros >= 0),
    reserved_tokens       INTEGER NOT NULL DEFAULT 0 CHECK (reserved_tokens >= 0),
    spent_micros          INTEGER CHECK (spent_micros IS NULL OR spent_micros >= 0),
    input_tokens          INTEGER,
    output_tokens         INTEGER,
    request_sha256        TEXT,
    http_status           INTEGER,
    provider_request_id   TEXT,
    model_reported        TEXT,
    system_fingerprint    TEXT,
    response_sha256       TEXT,
    answer_sha256         TEXT,
    latency_ms            INTEGER,
    error                 TEXT,
    planned_at_ms         INTEGER NOT NULL,
    dispatched_at_ms      INTEGER,
    finished_at_ms        INTEGER,
    FOREIGN KEY (run_id, trial_idx) REFERENCES trials(run_id, idx)
);
CREATE UNIQUE INDEX attempts_by_trial ON attempts(run_id, trial_idx, seq);

CREATE TABLE ledger (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id     TEXT NOT NULL REFERENCES runs(id),
    attempt_id TEXT REFERENCES attempts(id),
    kind       TEXT NOT NULL CHECK (kind IN ('reserve', 'release', 'spend')),
    micros     INTEGER NOT NULL CHECK (micros >= 0),
    tokens     INTEGER NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    at_ms      INTEGER NOT NULL,
    note       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX ledger_by_run ON ledger(run_id);

CREATE TABLE checks (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    attempt_id            TEXT NOT NULL REFERENCES attempts(id),
    checker_version       TEXT NOT NULL,
    checker_source_sha256 TEXT NOT NULL,
    outcome               TEXT NOT NULL,
    reasons               TEXT NOT NULL,
    details               TEXT NOT NULL,
    at_ms                 INTEGER NOT NULL
);

CREATE TABLE payloads (
    sha256        TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('request', 'response', 'answer')),
    bytes         INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    purged_at_ms  INTEGER
);
