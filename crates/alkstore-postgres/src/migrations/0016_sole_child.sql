-- 0016: a parent of one child is acked without a trigger (ADR 0029, issue 27).
--
-- Every parent's ack ran 0012's parent_left, a plpgsql trigger whose query
-- read the parent's edges and probed the dead table before it could
-- decrement the child: SPI and three reads for what, in a fan-in, is one
-- counter. Now a parent linked to exactly one child names it (sole_child),
-- and the ack statement itself decrements that child (ops/handle.rs, and
-- ack_flow below). The trigger on jobs skips such a parent while it is
-- processing, the one state an ack deletes; a death of it is seen by a new
-- trigger on the dead row's insert, which every move to dead makes (the
-- sweep inserts a parent's row whatever its retention). So:
--
-- sole_child  the one child counting this parent; NULL when it has none,
--             several, or may have an edge it no longer counts (a parent
--             back from dead keeps NULL: the dead table has no such column,
--             and its edges were settled when it died). NULL always means
--             the trigger's general path, so a row of an older version works.
ALTER TABLE __SCHEMA__.jobs ADD COLUMN sole_child bigint;

-- 0012's link, marking a parent's first child as its sole child and a
-- second as none.
CREATE OR REPLACE FUNCTION __SCHEMA__.link(child bigint, after bigint[], mode text, keep bigint, t bigint)
RETURNS void
LANGUAGE plpgsql
AS $fn$
DECLARE
    left_n bigint;
    dead_id bigint;
    dead_error text;
BEGIN
    IF mode IS NOT NULL THEN
        PERFORM 1 FROM __SCHEMA__.jobs WHERE id = ANY(after) ORDER BY id FOR UPDATE;
        UPDATE __SCHEMA__.jobs
           SET has_children = true, sole_child = CASE WHEN has_children THEN NULL ELSE child END
         WHERE id = ANY(after) AND (NOT has_children OR sole_child <> child);
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

-- The settling of `kids` (ids in order) for `parent`, 0012's general path
-- as it was: ok, one parent fewer each (released at zero, and woken);
-- failed, 'run' children as ok and 'cancel' children dead with `why` at
-- `at`, and the parent's edges settled.
CREATE FUNCTION __SCHEMA__.settle_children(parent bigint, kids bigint[], ok boolean, why text, at bigint)
RETURNS void
LANGUAGE plpgsql
AS $fn$
DECLARE
    woken text[];
BEGIN
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
        UPDATE __SCHEMA__.edges SET settled = true WHERE parent_id = parent AND NOT settled;
    END IF;
END
$fn$;

-- 0014's parent_left, its general path now settle_children's.
CREATE OR REPLACE FUNCTION __SCHEMA__.parent_left() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
DECLARE
    ok boolean;
    why text;
    at bigint;
    woken text[];
    kids bigint[];
BEGIN
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
        WITH k AS MATERIALIZED (
                 SELECT array_agg(e.child_id ORDER BY e.child_id) AS ids FROM __SCHEMA__.edges e
                  WHERE e.parent_id = OLD.id AND NOT e.settled),
             d AS MATERIALIZED (
                 SELECT 'parent job ' || OLD.id || ' died: ' || x.last_error AS why, x.died_at
                   FROM __SCHEMA__.dead x WHERE x.id = OLD.id),
             r AS (
                 UPDATE __SCHEMA__.jobs j
                    SET parents_left = j.parents_left - 1,
                        state = CASE WHEN j.parents_left = 1 THEN 'pending' ELSE 'waiting' END
                  WHERE j.id = (SELECT k.ids[1] FROM k WHERE cardinality(k.ids) = 1)
                    AND j.state = 'waiting' AND OLD.state <> 'cancelled' AND NOT EXISTS (SELECT 1 FROM d)
                 RETURNING j.queue, j.state)
        SELECT k.ids, d.why, d.died_at, (SELECT array_agg(r.queue) FROM r WHERE r.state = 'pending')
          INTO kids, why, at, woken
          FROM k LEFT JOIN d ON true;
        IF kids IS NULL THEN
            RETURN NULL;
        END IF;
        IF at IS NULL AND OLD.state <> 'cancelled' AND cardinality(kids) = 1 THEN
            IF woken IS NOT NULL THEN
                PERFORM pg_notify('__CHANNEL__', woken[1]);
            END IF;
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
    PERFORM __SCHEMA__.settle_children(OLD.id, kids, ok, why, at);
    RETURN NULL;
END
$fn$;

-- A parent's move to dead, seen at its dead row's insert: the deaths the
-- jobs trigger no longer sees (a processing sole-child parent's: a failed
-- or exhausted attempt, an expired or buried lease). For any other parent
-- the jobs trigger has settled or will settle the same children with the
-- same outcome; whichever runs second finds the edges settled, and stops.
CREATE FUNCTION __SCHEMA__.parent_died() RETURNS trigger
LANGUAGE plpgsql
AS $fn$
DECLARE
    kids bigint[];
BEGIN
    SELECT array_agg(child_id ORDER BY child_id) INTO kids
      FROM __SCHEMA__.edges WHERE parent_id = NEW.id AND NOT settled;
    IF kids IS NOT NULL THEN
        PERFORM __SCHEMA__.settle_children(NEW.id, kids, false,
            'parent job ' || NEW.id || ' died: ' || NEW.last_error, NEW.died_at);
    END IF;
    RETURN NULL;
END
$fn$;

DROP TRIGGER jobs_parent_left ON __SCHEMA__.jobs;
CREATE TRIGGER jobs_parent_left AFTER DELETE ON __SCHEMA__.jobs
    FOR EACH ROW WHEN (OLD.has_children AND (OLD.sole_child IS NULL OR OLD.state <> 'processing'))
    EXECUTE FUNCTION __SCHEMA__.parent_left();
CREATE TRIGGER dead_parent_died AFTER INSERT ON __SCHEMA__.dead
    FOR EACH ROW WHEN (NEW.has_children) EXECUTE FUNCTION __SCHEMA__.parent_died();

-- 0012's ack_flow, deciding its sole child as the plain ack does.
CREATE OR REPLACE FUNCTION __SCHEMA__.ack_flow(job bigint, worker text, token bigint, t bigint, result text)
RETURNS boolean
LANGUAGE plpgsql
AS $fn$
DECLARE
    q text;
    sole bigint;
    released text;
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
    RETURNING queue, sole_child INTO q, sole;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF sole IS NOT NULL THEN
        UPDATE __SCHEMA__.jobs
           SET parents_left = parents_left - 1,
               state = CASE WHEN parents_left = 1 THEN 'pending' ELSE 'waiting' END
         WHERE id = sole AND state = 'waiting'
        RETURNING CASE WHEN state = 'pending' THEN queue END INTO released;
        IF released IS NOT NULL THEN
            PERFORM pg_notify('__CHANNEL__', released);
        END IF;
    END IF;
    -- A slot of a limited queue is free (ADR 0028), as the plain ack says.
    PERFORM pg_notify('__CHANNEL__', q) WHERE EXISTS (SELECT 1 FROM __SCHEMA__.limits l WHERE l.queue = q);
    RETURN true;
END
$fn$;
