-- 0001: the queue tables and their partial indexes (ADR 0001).
-- Index names carry the __alkstore_ prefix: on SQLite index names are
-- file-wide and the caller's own tables live in the same file.

-- Ids are never reused, not even after the highest row is deleted. SQLite's
-- AUTOINCREMENT would guarantee it by writing sqlite_sequence on every insert
-- (one more page per commit: ~20% of per-op enqueue). Instead the high-water
-- mark below is written only when the row holding the highest id leaves the
-- table (ack, cancel, move to dead), and enqueue takes max(highest live id,
-- high-water mark) + 1.
CREATE TABLE IF NOT EXISTS __alkstore_ids (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    hwm INTEGER NOT NULL
);
INSERT OR IGNORE INTO __alkstore_ids (one, hwm) VALUES (1, 0);

CREATE TABLE IF NOT EXISTS __alkstore_jobs (
    id                   INTEGER PRIMARY KEY,
    queue                TEXT    NOT NULL,
    state                TEXT    NOT NULL,
    -- JSON text, kept byte-for-byte (key order included).
    payload              TEXT    NOT NULL,
    priority             INTEGER NOT NULL,
    attempts             INTEGER NOT NULL,
    max_attempts         INTEGER NOT NULL,
    -- Fencing token: +1 per claim, never refunded.
    claim_token          INTEGER NOT NULL,
    visibility_timeout_s INTEGER NOT NULL,
    backoff_base_s       REAL    NOT NULL,
    dead_retention_s     INTEGER,
    enqueued_at          INTEGER NOT NULL,
    run_at               INTEGER NOT NULL,
    claimed_at           INTEGER,
    deadline             INTEGER,
    worker_id            TEXT,
    expires_at           INTEGER
);

CREATE TRIGGER IF NOT EXISTS __alkstore_jobs_keep_hwm
AFTER DELETE ON __alkstore_jobs
WHEN NOT EXISTS (SELECT 1 FROM __alkstore_jobs WHERE id > old.id)
BEGIN
    UPDATE __alkstore_ids SET hwm = max(hwm, old.id) WHERE one = 1;
END;

-- The claim hot path: ready rows in claim order.
CREATE INDEX IF NOT EXISTS __alkstore_jobs_ready
    ON __alkstore_jobs (queue, priority DESC, run_at, id) WHERE state = 'pending';
-- Lapsed leases: reclaim and exhaustion by reclaim.
CREATE INDEX IF NOT EXISTS __alkstore_jobs_leased
    ON __alkstore_jobs (queue, deadline) WHERE state = 'processing';
-- The expiry sweep.
CREATE INDEX IF NOT EXISTS __alkstore_jobs_expiring
    ON __alkstore_jobs (queue, expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE IF NOT EXISTS __alkstore_dead (
    -- The live row's id, moved, never regenerated.
    id                   INTEGER PRIMARY KEY,
    queue                TEXT    NOT NULL,
    state                TEXT    NOT NULL,
    payload              TEXT    NOT NULL,
    priority             INTEGER NOT NULL,
    attempts             INTEGER NOT NULL,
    max_attempts         INTEGER NOT NULL,
    claim_token          INTEGER NOT NULL,
    visibility_timeout_s INTEGER NOT NULL,
    backoff_base_s       REAL    NOT NULL,
    dead_retention_s     INTEGER,
    enqueued_at          INTEGER NOT NULL,
    run_at               INTEGER NOT NULL,
    claimed_at           INTEGER,
    deadline             INTEGER,
    worker_id            TEXT,
    expires_at           INTEGER,
    last_error           TEXT    NOT NULL,
    died_at              INTEGER NOT NULL,
    -- died_at + dead_retention_s; NULL keeps the row forever.
    purge_at             INTEGER
);

-- dead_jobs paging, get_job, stats.
CREATE INDEX IF NOT EXISTS __alkstore_dead_queue ON __alkstore_dead (queue, id);
-- Retention purge.
CREATE INDEX IF NOT EXISTS __alkstore_dead_purge
    ON __alkstore_dead (queue, purge_at) WHERE purge_at IS NOT NULL;
