-- 0005: an answer's text lives in the journal, in the same commit as its result (issue #10).
-- Before, the answer was written to the payload store first (a file fsync and a directory fsync)
-- and then journaled (a third fsync); now one WAL commit makes both durable together. `content` holds an answer's bytes; it is NULL for request bodies and raw responses
-- (audit copies in the payload store), for answers journaled before this migration (still in the
-- payload store), and once a payload is purged.
ALTER TABLE payloads ADD COLUMN content BLOB CHECK (content IS NULL OR kind = 'answer');
