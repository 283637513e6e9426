-- 0006: unique jobs and paused queues (SPEC §18, ADR 0016).
--
-- A job may carry a unique key; the partial unique index holds at most one
-- live row per (queue, key). Live rows are exactly the rows of this table
-- (acked rows are deleted, dead ones moved), so the index needs no state
-- predicate, and the key is free again once its job is acked, cancelled or
-- dead. Dead rows keep their key, for `requeue_dead`.
ALTER TABLE __alkstore_jobs ADD COLUMN unique_key TEXT;
ALTER TABLE __alkstore_dead ADD COLUMN unique_key TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS __alkstore_jobs_unique
    ON __alkstore_jobs (queue, unique_key) WHERE unique_key IS NOT NULL;

-- A paused queue is a row here; the claim statements probe it by key.
CREATE TABLE IF NOT EXISTS __alkstore_paused (
    queue     TEXT    PRIMARY KEY,
    paused_at INTEGER NOT NULL
) WITHOUT ROWID;
