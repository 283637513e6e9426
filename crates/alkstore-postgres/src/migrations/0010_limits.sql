-- 0010: flow control (SPEC §24, ADR 0028).
--
-- A job may carry a group key, which a queue's group_concurrency limits; dead
-- rows keep it. Counting a group's processing rows is a seek on the partial
-- index below (it holds processing rows with a group only).
ALTER TABLE __SCHEMA__.jobs ADD COLUMN group_key text;
ALTER TABLE __SCHEMA__.dead ADD COLUMN group_key text;
CREATE INDEX jobs_group_running ON __SCHEMA__.jobs (queue, group_key)
    WHERE state = 'processing' AND group_key IS NOT NULL;

-- A limited queue is a row here; the one-statement claim probes it by key,
-- as it probes `paused`, and leaves a limited queue to the limited claim.
-- NULL: no limit of that kind.
CREATE TABLE __SCHEMA__.limits (
    queue             text PRIMARY KEY,
    concurrency       bigint,
    rate_count        bigint,
    rate_period_s     double precision,
    group_concurrency bigint
);

-- The claims of rate-limited queues: when (Unix seconds, sub-second) and how
-- many. The limited claim sums the rows inside the window and drops older ones.
CREATE TABLE __SCHEMA__.rate_log (
    queue text             NOT NULL,
    at    double precision NOT NULL,
    n     bigint           NOT NULL
);
CREATE INDEX rate_log_at ON __SCHEMA__.rate_log (queue, at);

-- The enqueue function gains `group_key`: a new argument list is a new
-- function to Postgres, so the old signature goes first.
DROP FUNCTION IF EXISTS __SCHEMA__.enqueue(text, jsonb, bigint, integer, bigint, bigint, bigint, double precision, text);
__ENQUEUE_FUNCTION__
