-- 0008: trials of several turns (progressive delivery, `plan --delivery progressive`).
--
-- Each model turn of a trial is one attempt row with its own durable record (planned ->
-- dispatched -> result | unknown) and ledger rows, so every guarantee of an attempt holds per
-- turn. `turn` is 1 for every attempt of an inline run and for the first turn of a progressive
-- trial. `prior_turn` is the attempt whose answer asked for tools and so led to this one (NULL
-- for a first turn). `exchange` is set on an answered turn that asked for tools: its text and
-- its tool calls as JSON (`{"text": ..., "calls": [{"id", "name", "arguments"}]}`), from which
-- the next turn's request and the trial's evidence are rebuilt; the replies to the calls are
-- recomputed from the pinned bundles, never stored apart from the request payload.

ALTER TABLE attempts ADD COLUMN turn INTEGER NOT NULL DEFAULT 1 CHECK (turn >= 1);
ALTER TABLE attempts ADD COLUMN prior_turn TEXT REFERENCES attempts(id);
ALTER TABLE attempts ADD COLUMN exchange TEXT CHECK (exchange IS NULL OR json_valid(exchange));
