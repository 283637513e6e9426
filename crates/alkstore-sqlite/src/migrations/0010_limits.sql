-- 0010: flow control (SPEC §24, ADR 0028).
--
-- A job may carry a group key, which a queue's group_concurrency limits; dead
-- rows keep it. Counting a group's processing rows is a seek on the partial
-- index below (it holds processing rows with a group only).
ALTER TABLE __alkstore_jobs ADD COLUMN group_key TEXT;
ALTER TABLE __alkstore_dead ADD COLUMN group_key TEXT;
CREATE INDEX IF NOT EXISTS __alkstore_jobs_group_running
    ON __alkstore_jobs (queue, group_key) WHERE state = 'processing' AND group_key IS NOT NULL;

-- A limited queue is a row here; the one-statement claim probes it by key,
-- as it probes __alkstore_paused, and leaves a limited queue to the limited
-- claim. NULL: no limit of that kind.
CREATE TABLE IF NOT EXISTS __alkstore_limits (
    queue             TEXT    PRIMARY KEY,
    concurrency       INTEGER,
    rate_count        INTEGER,
    rate_period_s     REAL,
    group_concurrency INTEGER
) WITHOUT ROWID;

-- The claims of rate-limited queues: when (Unix seconds, sub-second) and how
-- many. The limited claim sums the rows inside the window and drops older ones.
CREATE TABLE IF NOT EXISTS __alkstore_rate_log (
    queue TEXT    NOT NULL,
    at    REAL    NOT NULL,
    n     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS __alkstore_rate_log_at ON __alkstore_rate_log (queue, at);
