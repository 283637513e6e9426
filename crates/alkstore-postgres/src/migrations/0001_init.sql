-- 0001: the queue tables of ADR 0001. `__SCHEMA__` is replaced by the quoted
-- engine-owned schema at open. Integers the contract treats as 64-bit on
-- SQLite (attempts, budgets, tokens, durations, timestamps) are bigint here so
-- both engines accept the same values; `priority` is int (SPEC: signed 32-bit).

CREATE TABLE __SCHEMA__.jobs (
    id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue                text             NOT NULL,
    state                text             NOT NULL,
    -- JSON text, never jsonb: jsonb would reorder keys and respace the text.
    payload              text             NOT NULL,
    priority             integer          NOT NULL,
    attempts             bigint           NOT NULL,
    max_attempts         bigint           NOT NULL,
    -- Fencing token: +1 on every claim, never refunded.
    claim_token          bigint           NOT NULL,
    visibility_timeout_s bigint           NOT NULL,
    backoff_base_s       double precision NOT NULL,
    dead_retention_s     bigint,
    enqueued_at          bigint           NOT NULL,
    run_at               bigint           NOT NULL,
    claimed_at           bigint,
    deadline             bigint,
    worker_id            text,
    expires_at           bigint
);

-- The claim hot path: ready rows in claim order.
CREATE INDEX jobs_ready ON __SCHEMA__.jobs (queue, priority DESC, run_at, id) WHERE state = 'pending';
-- Lapsed leases: reclaim and exhaustion by reclaim.
CREATE INDEX jobs_leased ON __SCHEMA__.jobs (queue, deadline) WHERE state = 'processing';
-- The expiry sweep.
CREATE INDEX jobs_expiring ON __SCHEMA__.jobs (queue, expires_at) WHERE expires_at IS NOT NULL;

-- Dead rows keep the live row's id (moved, not regenerated) and every field
-- as it was at death, except `state`, which reads 'dead'.
CREATE TABLE __SCHEMA__.dead (
    id                   bigint           PRIMARY KEY,
    queue                text             NOT NULL,
    state                text             NOT NULL,
    payload              text             NOT NULL,
    priority             integer          NOT NULL,
    attempts             bigint           NOT NULL,
    max_attempts         bigint           NOT NULL,
    claim_token          bigint           NOT NULL,
    visibility_timeout_s bigint           NOT NULL,
    backoff_base_s       double precision NOT NULL,
    dead_retention_s     bigint,
    enqueued_at          bigint           NOT NULL,
    run_at               bigint           NOT NULL,
    claimed_at           bigint,
    deadline             bigint,
    worker_id            text,
    expires_at           bigint,
    last_error           text             NOT NULL,
    died_at              bigint           NOT NULL,
    -- died_at + dead_retention_s; NULL keeps the row forever.
    purge_at             bigint
);

-- dead_jobs paging, get_job, stats.
CREATE INDEX dead_queue ON __SCHEMA__.dead (queue, id);
-- Retention purge.
CREATE INDEX dead_purge ON __SCHEMA__.dead (queue, purge_at) WHERE purge_at IS NOT NULL;
