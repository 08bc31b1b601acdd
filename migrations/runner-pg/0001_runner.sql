-- 0001: the hosted runner's state on PostgreSQL, shared by every worker of one deployment
-- (`runner serve --database postgres://…`). The same facts as the SQLite state
-- (migrations/runner/), plus what several workers need: a lease on each run (who executes it,
-- until when on the database's clock, and the fencing epoch every write of its owner is checked
-- against), the write log of each run's journal and outbox (what a worker taking a run over
-- rebuilds them from), and the uploads and reports every worker serves.
--
-- Applied by runner/src/pg.rs in one transaction under an advisory lock, so workers starting
-- together never race; `runner_schema` records each version applied.

CREATE TABLE nonces (
    nonce      text PRIMARY KEY,
    address    text,
    expires_at bigint NOT NULL
);

-- Who uploaded what (see migrations/runner/0001_runner.sql).
CREATE TABLE holdings (
    address text NOT NULL,
    digest  text NOT NULL,
    PRIMARY KEY (address, digest)
);

CREATE TABLE sessions (
    token_sha256 text PRIMARY KEY,
    address      text NOT NULL,
    expires_at   bigint NOT NULL
);

CREATE TABLE runs (
    address            text PRIMARY KEY,
    "user"             text NOT NULL,
    manifest           text NOT NULL,
    run_id             bigint NOT NULL CHECK (run_id >= 0),
    deadline           bigint NOT NULL,
    phase              text NOT NULL CHECK (phase IN ('executing', 'finalizing', 'finalized', 'failed')),
    detail             text,
    report_hash        text,
    finalize_signature text,
    concurrency        integer NOT NULL DEFAULT 1 CHECK (concurrency BETWEEN 1 AND 64),
    created_at         bigint NOT NULL,
    updated_at         bigint NOT NULL,
    -- The lease: the worker executing the run (`host:pid:boot`), the fencing epoch (+1 at every
    -- claim; a write carrying an older one changes nothing) and when the lease lapses, on the
    -- database's clock only. `not_before`: no worker claims the run before then (a back-off).
    lease_owner        text,
    lease_epoch        bigint NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0),
    lease_expires      timestamptz,
    not_before         timestamptz,
    -- The last event's number: an event is numbered under this row's lock, so per run the
    -- commit order is the numbering order and a follower reading "after n" never skips one.
    event_seq          bigint NOT NULL DEFAULT 0 CHECK (event_seq >= 0)
);
CREATE INDEX runs_by_user ON runs ("user", created_at);
CREATE INDEX runs_to_work ON runs (created_at) WHERE phase IN ('executing', 'finalizing');

CREATE TABLE batches (
    run       text NOT NULL REFERENCES runs (address),
    seq       integer NOT NULL CHECK (seq >= 1),
    evidence  text NOT NULL,
    signature text,
    refused   text,
    PRIMARY KEY (run, seq)
);

CREATE TABLE events (
    run  text NOT NULL REFERENCES runs (address),
    seq  bigint NOT NULL CHECK (seq >= 1),
    at   bigint NOT NULL,
    kind text NOT NULL,
    data text NOT NULL,
    PRIMARY KEY (run, seq)
);

-- Each write transaction of a run's journal or outbox, as the SQL statements that reproduce it
-- on a fresh file of the same schema (skilltrial_sqlite::replica), appended before the
-- transaction commits and only while its writer holds the run's lease at `epoch`.
CREATE TABLE replica_log (
    run            text NOT NULL REFERENCES runs (address),
    file           text NOT NULL CHECK (file IN ('journal', 'outbox')),
    seq            bigint NOT NULL CHECK (seq >= 1),
    epoch          bigint NOT NULL CHECK (epoch >= 1),
    schema_version integer NOT NULL CHECK (schema_version >= 1),
    statements     text[] NOT NULL,
    at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run, file, seq)
);

-- Content-addressed bytes every worker needs: uploaded manifests, bundle and pack files and
-- their listings (bounded by the upload limits), and each run's sealed report.
CREATE TABLE blobs (
    digest     text PRIMARY KEY CHECK (digest ~ '^[0-9a-f]{64}$'),
    bytes      bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- A run's own files by name (`report.json`, `report.html`), as blobs.
CREATE TABLE run_files (
    run    text NOT NULL REFERENCES runs (address),
    name   text NOT NULL,
    digest text NOT NULL REFERENCES blobs (digest),
    PRIMARY KEY (run, name)
);

-- Keys every worker must share: `challenges`, the HMAC key sign-in nonces are issued and
-- recognised under (a challenge fetched from one worker is signed and verified on another).
-- Drawn once from a CSPRNG by the first worker; never logged, never sent.
CREATE TABLE secrets (
    name  text PRIMARY KEY,
    value bytea NOT NULL CHECK (length(value) = 32)
);
