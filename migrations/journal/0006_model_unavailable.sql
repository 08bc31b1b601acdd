-- 0006: a not-run reason more, `not_run_model_unavailable` (skilltrial_core::state::NotRunReason):
-- a hosted run whose model its runner cannot call at all closes its trials with it, where they
-- used to say `cancelled` (nobody had cancelled them).
--
-- `attempts` is rebuilt as 0004 rebuilt it (SQLite's twelve-step ALTER TABLE procedure; foreign
-- keys off and checked before the commit by Journal::migrate), with the same columns in the same
-- order and the same CHECKs but the reasons' list: every row copies as it was.

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
           OR reasons IN ('["not_run_budget"]', '["not_run_time_limit"]', '["not_run_request_cap"]', '["cancelled"]',
                         '["not_run_model_unavailable"]'))
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
