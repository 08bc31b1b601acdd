-- 0002: the run's own clock, stored so that its time limit holds across `run` invocations.
--
-- `run_limit_ms` is the manifest's run time limit, copied when the run row is written (old runs
-- keep NULL: the engine then reads the manifest). `executed_ms` is the time the runner has spent
-- executing this run, summed over every `run` invocation; the engine adds to it as it goes, so a
-- stop or a kill loses at most the time since its last write.

ALTER TABLE runs ADD COLUMN run_limit_ms INTEGER CHECK (run_limit_ms IS NULL OR run_limit_ms >= 0);
ALTER TABLE runs ADD COLUMN executed_ms INTEGER NOT NULL DEFAULT 0 CHECK (executed_ms >= 0);
