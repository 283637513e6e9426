-- 0006: unique jobs and paused queues (SPEC §18, ADR 0016).
--
-- A job may carry a unique key; the partial unique index holds at most one
-- live row per (queue, key). Live rows are exactly the rows of `jobs`
-- (acked rows are deleted, dead ones moved), so the index needs no state
-- predicate, and a key is free again once its job is acked, cancelled or
-- dead. Dead rows keep their key, for `requeue_dead`. Migrate.rs appends
-- the enqueue function's new definition (enqueue_function.sql), which
-- honours `unique_key`.
ALTER TABLE __SCHEMA__.jobs ADD COLUMN unique_key text;
ALTER TABLE __SCHEMA__.dead ADD COLUMN unique_key text;
CREATE UNIQUE INDEX jobs_unique ON __SCHEMA__.jobs (queue, unique_key) WHERE unique_key IS NOT NULL;

-- A paused queue is a row here; the claim statement probes it by key.
CREATE TABLE __SCHEMA__.paused (
    queue     text   PRIMARY KEY,
    paused_at bigint NOT NULL
);

-- The enqueue function, now honouring unique_key.
__ENQUEUE_FUNCTION__
