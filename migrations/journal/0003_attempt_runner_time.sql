-- 0003: the runner's own time per attempt, in microseconds (issue #9): from the moment the engine
-- starts working on the trial to the verdict, minus the time spent waiting for the model. It is
-- measured inside one process, so a pause between two `run` invocations never counts.
-- NULL for attempts written before this migration (or closed without the engine working on them:
-- not_run, recovered unknowns).
ALTER TABLE attempts ADD COLUMN runner_us INTEGER CHECK (runner_us IS NULL OR runner_us >= 0);
