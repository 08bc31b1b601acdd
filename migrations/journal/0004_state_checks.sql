-- 0004: every stored state is constrained to the text of its enum (skilltrial_core::state and
-- skilltrial_core::outcome), as runs.status, attempts.state, ledger.kind and payloads.kind were
-- from 0001:
--   attempts.outcome  NULL (not scored yet) or one of the eight outcomes;
--   attempts.reasons  for a `not_run` attempt, exactly its one not-run reason;
--   checks.outcome    one of the four outcomes the checker gives.
--
-- SQLite cannot add a CHECK to an existing table, so `attempts` and `checks` are rebuilt with
-- SQLite's twelve-step ALTER TABLE procedure (https://sqlite.org/lang_altertable.html#otheralter):
-- create the new table, copy every row, drop the old one, rename the new one into its place,
-- recreate its indexes. Journal::migrate runs this inside the migration's transaction with
-- foreign keys off (steps 1-2) and runs `PRAGMA foreign_key_check` before committing (step 10).
-- The other tables reference `attempts` by name, so their foreign keys hold again after the
-- rename. Column order and types are those of 0001-0003, so every row copies as it was.
-- A row that breaks a new CHECK makes the whole migration fail and roll back: the journal stays
-- at schema 3 rather than lose or alter a row.

CREATE TABLE attempts_new (
    id                    TEXT PRIMARY KEY,
    run_id                TEXT NOT NULL,
    trial_idx             INTEGER NOT NULL,
    seq                   INTEGER NOT NULL CHECK (seq >= 1),
    retry_of              TEXT REFERENCES attempts(id),
    retry_reason          TEXT,
    state                 TEXT NOT NULL CHECK (state IN ('planned', 'dispatched', 'result', 'unknown', 'closed')),
    outcome               TEXT CHECK (outcome IS NULL OR outcome IN ('pass', 'fail', 'invalid_output', 'unsupported_case', 'infrastructure_error', 'unknown', 'interrupted', 'not_run')),
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
    runner_us             INTEGER CHECK (runner_us IS NULL OR runner_us >= 0),
    FOREIGN KEY (run_id, trial_idx) REFERENCES trials(run_id, idx),
    CHECK (outcome IS NOT 'not_run'
           OR reasons IN ('["not_run_budget"]', '["not_run_time_limit"]', '["not_run_request_cap"]', '["cancelled"]'))
);

INSERT INTO attempts_new (
    id, run_id, trial_idx, seq, retry_of, retry_reason, state, outcome, reasons, details,
    reserved_micros, reserved_tokens, spent_micros, input_tokens, output_tokens, request_sha256,
    http_status, provider_request_id, model_reported, system_fingerprint, response_sha256,
    answer_sha256, latency_ms, error, planned_at_ms, dispatched_at_ms, finished_at_ms, runner_us
)
SELECT
    id, run_id, trial_idx, seq, retry_of, retry_reason, state, outcome, reasons, details,
    reserved_micros, reserved_tokens, spent_micros, input_tokens, output_tokens, request_sha256,
    http_status, provider_request_id, model_reported, system_fingerprint, response_sha256,
    answer_sha256, latency_ms, error, planned_at_ms, dispatched_at_ms, finished_at_ms, runner_us
FROM attempts;

DROP TABLE attempts;
ALTER TABLE attempts_new RENAME TO attempts;
CREATE UNIQUE INDEX attempts_by_trial ON attempts(run_id, trial_idx, seq);

CREATE TABLE checks_new (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    attempt_id            TEXT NOT NULL REFERENCES attempts(id),
    checker_version       TEXT NOT NULL,
    checker_source_sha256 TEXT NOT NULL,
    outcome               TEXT NOT NULL CHECK (outcome IN ('pass', 'fail', 'invalid_output', 'unsupported_case')),
    reasons               TEXT NOT NULL,
    details               TEXT NOT NULL,
    at_ms                 INTEGER NOT NULL
);

-- Ids are copied as they are: the newest verdict of an attempt is its highest id.
INSERT INTO checks_new (id, attempt_id, checker_version, checker_source_sha256, outcome, reasons, details, at_ms)
SELECT id, attempt_id, checker_version, checker_source_sha256, outcome, reasons, details, at_ms
FROM checks;

DROP TABLE checks;
ALTER TABLE checks_new RENAME TO checks;
