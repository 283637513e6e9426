-- 0012: workflows — job dependencies, fan-in and results (SPEC §25, ADR 0029).
--
-- The same model as SQLite's migration 0012: an edge row per (parent,
-- child), on the child the count of parents not yet settled for it (a child
-- with parents_left > 0 is 'waiting', which no claim reads), on the parent
-- has_children so a plain job's ack never reads the edges, and a results
-- table that outlives the acked row. Dead rows keep the four columns.
ALTER TABLE __SCHEMA__.jobs ADD COLUMN parents_left bigint;
ALTER TABLE __SCHEMA__.jobs ADD COLUMN on_failure text;
ALTER TABLE __SCHEMA__.jobs ADD COLUMN keep_result_s bigint;
ALTER TABLE __SCHEMA__.jobs ADD COLUMN has_children boolean NOT NULL DEFAULT false;
ALTER TABLE __SCHEMA__.dead ADD COLUMN parents_left bigint;
ALTER TABLE __SCHEMA__.dead ADD COLUMN on_failure text;
ALTER TABLE __SCHEMA__.dead ADD COLUMN keep_result_s bigint;
ALTER TABLE __SCHEMA__.dead ADD COLUMN has_children boolean NOT NULL DEFAULT false;

-- `stats` counts a queue's waiting rows; plain jobs are never in this index.
CREATE INDEX jobs_waiting ON __SCHEMA__.jobs (queue) WHERE state = 'waiting';

-- settled: the parent no longer counts for this child — it was gone when
-- the child was linked, or it died or was cancelled since. An acked parent's
-- edges stay false: its id is never live again, so nothing counts them.
-- Edges stay until the child leaves for good (acked, cancelled, or its dead
-- row purged): they name its parents for `parent_results` and the dashboard.
CREATE TABLE __SCHEMA__.edges (
    parent_id bigint  NOT NULL,
    child_id  bigint  NOT NULL,
    settled   boolean NOT NULL,
    PRIMARY KEY (parent_id, child_id)
);
CREATE INDEX edges_child ON __SCHEMA__.edges (child_id, parent_id);

-- Acked jobs' results; expires_at NULL: kept while a child needs it.
CREATE TABLE __SCHEMA__.results (
    id          bigint PRIMARY KEY,
    queue       text   NOT NULL,
    value       text,
    finished_at bigint NOT NULL,
    expires_at  bigint
);
CREATE INDEX results_expiring ON __SCHEMA__.results (queue, expires_at) WHERE expires_at IS NOT NULL;

-- A parent leaves the live table (or its dead row is purged while a
-- redriven child still counts it). How it left decides: a move to dead
-- (fail, retry at budget, exhaustion, expiry, the limited claim's bury)
-- has written the dead row by the time this runs (the end of its
-- statement), `cancel` marks the row 'cancelled' first; any other delete is
-- an ack. Each waiting child still counting it: on an ack, or with
-- on_failure 'run', one parent fewer, released to 'pending' (and woken) at
-- zero; on a failure with 'cancel', dead, naming the parent; that child's
-- own deletion fires this function for its children, so the failure runs
-- down the graph in the same transaction. A failure marks the edges
-- settled (a redriven parent's later ack must not count again); an ack
-- leaves them, its id never being live again. The children are locked in id
-- order first, so two parents settling shared children never deadlock, and
-- two acks of a child's last two parents decrement it one after the other:
-- exactly one releases it. A plain job never gets here (WHEN has_children).
CREATE FUNCTION __SCHEMA__.parent_left() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
DECLARE
    ok boolean;
    why text;
    at bigint;
    woken text[];
    kids bigint[];
BEGIN
    -- The children still counting this parent (by the edges' primary key;
    -- every statement below reads them by the jobs' primary key), and for a
    -- live row whether it moved to dead, in one query: a fan-in parent's
    -- ack runs this and the UPDATE below, nothing else.
    IF TG_TABLE_NAME = 'dead' THEN
        SELECT array_agg(child_id ORDER BY child_id) INTO kids
          FROM __SCHEMA__.edges WHERE parent_id = OLD.id AND NOT settled;
        IF kids IS NULL OR EXISTS (SELECT 1 FROM __SCHEMA__.jobs WHERE id = OLD.id) THEN
            RETURN NULL;  -- nothing counts it, or redriven, not gone
        END IF;
        ok := false;
        why := 'parent job ' || OLD.id || ' died: ' || OLD.last_error;
        at := floor(extract(epoch FROM clock_timestamp()))::bigint;
    ELSE
        SELECT (SELECT array_agg(e.child_id ORDER BY e.child_id) FROM __SCHEMA__.edges e
                 WHERE e.parent_id = OLD.id AND NOT e.settled),
               'parent job ' || OLD.id || ' died: ' || d.last_error, d.died_at
          INTO kids, why, at
          FROM (SELECT 1) AS one LEFT JOIN __SCHEMA__.dead d ON d.id = OLD.id;
        IF kids IS NULL THEN
            RETURN NULL;
        END IF;
        IF at IS NOT NULL THEN
            ok := false;
        ELSE
            ok := OLD.state <> 'cancelled';
            why := 'parent job ' || OLD.id || ' was cancelled';
            at := floor(extract(epoch FROM clock_timestamp()))::bigint;
        END IF;
    END IF;
    IF cardinality(kids) > 1 THEN
        PERFORM 1 FROM __SCHEMA__.jobs WHERE id = ANY(kids) AND state = 'waiting' ORDER BY id FOR UPDATE;
    END IF;
    WITH r AS (
        UPDATE __SCHEMA__.jobs
           SET parents_left = parents_left - 1,
               state = CASE WHEN parents_left = 1 THEN 'pending' ELSE 'waiting' END
         WHERE id = ANY(kids) AND state = 'waiting' AND (ok OR on_failure = 'run')
        RETURNING queue, state)
    SELECT array_agg(DISTINCT queue) FILTER (WHERE state = 'pending') INTO woken FROM r;
    IF woken IS NOT NULL THEN
        PERFORM pg_notify('__CHANNEL__', q) FROM unnest(woken) AS q;
    END IF;
    IF NOT ok THEN
        WITH moved AS (
            DELETE FROM __SCHEMA__.jobs
             WHERE id = ANY(kids) AND state = 'waiting' AND on_failure = 'cancel'
            RETURNING *)
        INSERT INTO __SCHEMA__.dead (id, queue, state, payload, priority, attempts, max_attempts, claim_token,
            visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
            worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
            last_error, died_at, purge_at)
        SELECT id, queue, 'dead', payload, priority, attempts, max_attempts, claim_token,
            visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
            worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
            why, at, at + dead_retention_s
          FROM moved;
    END IF;
    IF NOT ok THEN
        UPDATE __SCHEMA__.edges SET settled = true WHERE parent_id = OLD.id AND NOT settled;
    END IF;
    RETURN NULL;
END
$fn$;

-- A child leaves for good (acked or cancelled, or its dead row purged; a
-- move to dead and a redrive keep it): its edges go, and with them the
-- results its parents kept only for it.
CREATE FUNCTION __SCHEMA__.child_left() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    IF TG_TABLE_NAME = 'jobs' AND EXISTS (SELECT 1 FROM __SCHEMA__.dead WHERE id = OLD.id) THEN
        RETURN NULL;
    END IF;
    IF TG_TABLE_NAME = 'dead' AND EXISTS (SELECT 1 FROM __SCHEMA__.jobs WHERE id = OLD.id) THEN
        RETURN NULL;
    END IF;
    DELETE FROM __SCHEMA__.results r
     WHERE r.expires_at IS NULL
       AND r.id IN (SELECT parent_id FROM __SCHEMA__.edges WHERE child_id = OLD.id)
       AND NOT EXISTS (SELECT 1 FROM __SCHEMA__.edges e WHERE e.parent_id = r.id AND e.child_id <> OLD.id);
    DELETE FROM __SCHEMA__.edges WHERE child_id = OLD.id;
    RETURN NULL;
END
$fn$;

CREATE TRIGGER jobs_parent_left AFTER DELETE ON __SCHEMA__.jobs
    FOR EACH ROW WHEN (OLD.has_children) EXECUTE FUNCTION __SCHEMA__.parent_left();
CREATE TRIGGER dead_parent_left AFTER DELETE ON __SCHEMA__.dead
    FOR EACH ROW WHEN (OLD.has_children) EXECUTE FUNCTION __SCHEMA__.parent_left();
CREATE TRIGGER jobs_child_left AFTER DELETE ON __SCHEMA__.jobs
    FOR EACH ROW WHEN (OLD.parents_left IS NOT NULL) EXECUTE FUNCTION __SCHEMA__.child_left();
CREATE TRIGGER dead_child_left AFTER DELETE ON __SCHEMA__.dead
    FOR EACH ROW WHEN (OLD.parents_left IS NOT NULL) EXECUTE FUNCTION __SCHEMA__.child_left();

-- Links the just-inserted job `child` to its parents `after` (sorted,
-- distinct, every id already known to be issued) and stamps its workflow
-- columns; `t` is the enqueue's clock. Live parents are locked in id order
-- and marked as parents, so a parent's ack that races this enqueue either
-- finishes first (the parent is gone: settled) or waits and then takes the
-- workflow ack. A dead parent kills a 'cancel' child at birth.
CREATE FUNCTION __SCHEMA__.link(child bigint, after bigint[], mode text, keep bigint, t bigint) RETURNS void
LANGUAGE plpgsql
AS $fn$
DECLARE
    left_n bigint;
    dead_id bigint;
    dead_error text;
BEGIN
    IF mode IS NOT NULL THEN
        PERFORM 1 FROM __SCHEMA__.jobs WHERE id = ANY(after) ORDER BY id FOR UPDATE;
        UPDATE __SCHEMA__.jobs SET has_children = true WHERE id = ANY(after) AND NOT has_children;
        INSERT INTO __SCHEMA__.edges (parent_id, child_id, settled)
        SELECT a, child, NOT EXISTS (SELECT 1 FROM __SCHEMA__.jobs j WHERE j.id = a) FROM unnest(after) AS a
        ON CONFLICT DO NOTHING;
        SELECT count(*) INTO left_n FROM __SCHEMA__.edges WHERE child_id = child AND NOT settled;
    END IF;
    UPDATE __SCHEMA__.jobs
       SET keep_result_s = keep, on_failure = mode, parents_left = left_n,
           state = CASE WHEN left_n > 0 THEN 'waiting' ELSE state END
     WHERE id = child;
    IF mode = 'cancel' THEN
        SELECT d.id, d.last_error INTO dead_id, dead_error
          FROM __SCHEMA__.dead d WHERE d.id = ANY(after) ORDER BY d.id LIMIT 1;
        IF FOUND THEN
            WITH moved AS (DELETE FROM __SCHEMA__.jobs WHERE id = child RETURNING *)
            INSERT INTO __SCHEMA__.dead (id, queue, state, payload, priority, attempts, max_attempts, claim_token,
                visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
                worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
                last_error, died_at, purge_at)
            SELECT id, queue, 'dead', payload, priority, attempts, max_attempts, claim_token,
                visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
                worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
                'parent job ' || dead_id || ' died: ' || dead_error, t, t + dead_retention_s
              FROM moved;
        END IF;
    END IF;
END
$fn$;

-- `link` for each of `children` (jobs of one enqueue with the same parents
-- and options), in one call: a fan-out enqueue is one round trip per batch.
CREATE FUNCTION __SCHEMA__.link_all(children bigint[], after bigint[], mode text, keep bigint, t bigint) RETURNS void
LANGUAGE plpgsql
AS $fn$
DECLARE
    c bigint;
BEGIN
    FOREACH c IN ARRAY children LOOP
        PERFORM __SCHEMA__.link(c, after, mode, keep, t);
    END LOOP;
END
$fn$;

-- The ack of a job keeping its result (the plain ack leaves those, and
-- those given a result that may have children): a valid handle's result is
-- kept where needed (`keep_result_s`, or a result a waiting child counts
-- on), then its row deleted, which settles its children (parent_left). One
-- statement for the caller, so it is atomic on its own. False when the
-- handle is not valid. A parent acked without a result keeps no row for its
-- children (they read None either way), so a fan-in of N parents writes none.
CREATE FUNCTION __SCHEMA__.ack_flow(job bigint, worker text, token bigint, t bigint, result text) RETURNS boolean
LANGUAGE plpgsql
AS $fn$
DECLARE
    q text;
BEGIN
    INSERT INTO __SCHEMA__.results (id, queue, value, finished_at, expires_at)
    SELECT j.id, j.queue, result, t, t + j.keep_result_s FROM __SCHEMA__.jobs j
     WHERE j.id = job AND j.state = 'processing' AND j.worker_id = worker AND j.claim_token = token
       AND j.deadline >= t
       AND (j.keep_result_s IS NOT NULL OR (result IS NOT NULL
            AND EXISTS (SELECT 1 FROM __SCHEMA__.edges e WHERE e.parent_id = job AND NOT e.settled)))
    ON CONFLICT (id) DO UPDATE SET queue = excluded.queue, value = excluded.value,
        finished_at = excluded.finished_at, expires_at = excluded.expires_at;
    DELETE FROM __SCHEMA__.jobs
     WHERE id = job AND state = 'processing' AND worker_id = worker AND claim_token = token AND deadline >= t
    RETURNING queue INTO q;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- A slot of a limited queue is free (ADR 0028), as the plain ack says.
    PERFORM pg_notify('__CHANNEL__', q) WHERE EXISTS (SELECT 1 FROM __SCHEMA__.limits l WHERE l.queue = q);
    RETURN true;
END
$fn$;

-- The enqueue function gains `after`, `on_failure` and `keep_result_s`
-- (defaults: none, 'cancel', none), so every older call keeps working; a
-- new argument list is a new function to Postgres, so the old one goes first.
DROP FUNCTION IF EXISTS __SCHEMA__.enqueue(text, jsonb, bigint, integer, bigint, bigint, bigint, double precision, text, text);
__ENQUEUE_FUNCTION__
