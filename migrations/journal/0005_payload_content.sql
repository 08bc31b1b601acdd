-- 0005: what a run produces lives in the journal, in the commit that records it (issue #10).
-- `payloads.content` holds a payload's bytes: the request body (committed with its `dispatched`
-- row), the answer and the raw response (committed with the result). Before, each was a file in
-- the payload store: the answer cost a file fsync and a directory fsync before its journal
-- commit, and every payload a file to create. Now one WAL commit makes a payload durable with
-- the row that names it. `content` is NULL for payloads journaled before this migration (their
-- bytes stay in the payload store) and once a payload is purged.
ALTER TABLE payloads ADD COLUMN content BLOB;
