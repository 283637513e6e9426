-- 0014: a fan-in parent's ack is one query in the trigger (ADR 0029, issue 27).
--
-- 0012's parent_left read a parent's children and its dead row in one
-- query and settled them in a second, for every parent. Most parents that
-- reach it have one child still counting them (each parent of a fan-in,
-- each link of a chain), and their ack is now one query: the same read with
-- the decrement (and release) of that one child in it. A single row lock,
-- so the id order kept for several children does not arise. Everything
-- else is 0012's function as it was.
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
    -- The children still counting this parent (by the edges' primary key;
    -- every statement below reads them by the jobs' primary key), and for a
    -- live row whether it moved to dead.
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
        -- One query settles the common case, a parent acked with one child
        -- still counting it (each parent of a fan-in, each link of a
        -- chain): the child ids, the dead row (a move to dead) and, for
        -- one child of an ack, its decrement and release. One row lock, so
        -- no order to keep. Anything else (several children, a death, a
        -- cancel) falls through to the general path below with the ids.
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
