-- 0018: one index holds a queue's pending and processing rows (ADR 0033).
--
-- Up to 0017 a claim moved its row from the ready index to the leased index,
-- and the ack took it out of the leased one: three index pages written per
-- job, in two different b-trees. Here one index keys every live row by
-- (queue, state DESC, deadline, priority DESC, run_at, id):
-- - 'processing' sorts before 'pending', so a queue's processing rows, in
--   deadline order, end where its pending rows begin, in claim order. A
--   claim takes the head of the pending run and puts the row back at the
--   tail of the processing run — the newest lease has the latest deadline —
--   which is the same leaf page, and the ack deletes it from there: two
--   index pages per job instead of three.
-- - A pending row holds no lease (0003, SPEC §4.4): its deadline is NULL, so
--   the ready scans say `deadline IS NULL` and seek (queue, 'pending', NULL),
--   where the index is in claim order. The lapsed-lease probe seeks
--   (queue, 'processing', deadline < now) as it did on the leased index.
-- - Waiting rows (SPEC §25) are a third run of the same index, so 0012's
--   index of them goes too.
--
-- The name stays __alkstore_jobs_ready: a process of an older version still
-- sharing the file names it in INDEXED BY, and with the name kept its
-- statements re-prepare against this index (slower, sorting the pending run,
-- but correct) instead of failing until it is restarted.
UPDATE __alkstore_jobs SET worker_id = NULL, deadline = NULL
WHERE state <> 'processing' AND (worker_id IS NOT NULL OR deadline IS NOT NULL);
DROP INDEX IF EXISTS __alkstore_jobs_ready;
DROP INDEX IF EXISTS __alkstore_jobs_leased;
DROP INDEX IF EXISTS __alkstore_jobs_waiting;
CREATE INDEX __alkstore_jobs_ready
    ON __alkstore_jobs (queue, state DESC, deadline, priority DESC, run_at, id);
