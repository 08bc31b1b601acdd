-- 0007: how many requests a run may have in flight, and its durable syncs.
--
-- `concurrency` is the `--concurrency` of the run's latest invocation (1 to 64; NULL for runs
-- recorded before schema 7, which all ran one request at a time). It is not part of the manifest:
-- it changes how long a run takes, never what it sends or finds.
--
-- `syncs` counts the engine's durable syncs: while a run executes, its commits skip their own
-- fsync and become durable together, at a sync, before any request they name is sent and before
-- any answer they hold is checked. A sync is a commit of this row that always changes it (SQLite
-- writes nothing, and so syncs nothing, for an update that leaves a row as it was).

ALTER TABLE runs ADD COLUMN concurrency INTEGER CHECK (concurrency IS NULL OR concurrency BETWEEN 1 AND 64);
ALTER TABLE runs ADD COLUMN syncs INTEGER NOT NULL DEFAULT 0 CHECK (syncs >= 0);
