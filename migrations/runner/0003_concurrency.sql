-- 0003: a hosted run's concurrency, `runs.concurrency`: how many of its requests the daemon may
-- have in flight at once, as its owner asked when registering it (1 up to the operator's
-- `runner serve --max-concurrency`; skilltrial_core::concurrency::Concurrency bounds it to 1..64).
-- Every run registered before this column ran one request at a time: they read 1. A value
-- outside 1..64 can never be stored.
--
-- SQLite adds a column with its DEFAULT and CHECK in place (no rebuild): the default fills every
-- existing row, which the CHECK accepts.

ALTER TABLE runs ADD COLUMN concurrency INTEGER NOT NULL DEFAULT 1 CHECK (concurrency BETWEEN 1 AND 64);
