-- 0020: a death settles every descendant it reaches in one call, not one
-- nested trigger per generation (ADR 0029, issue 43).
--
-- Up to 0019 a 'cancel' child killed by its parent's death left the live
-- table by a DELETE in settle_children, whose row trigger (parent_left)
-- called settle_children for its own children: a nested trigger per
-- generation, so a chain of about 400 jobs exhausted the server's stack
-- ("stack depth limit exceeded") and its head's fail() raised; the claim's
-- exhaustion step raised the same, so once the head's lease lapsed no claim
-- of its queue could succeed. Now a failed parent's descendants are walked
-- first (a recursive query over the unsettled edges, through waiting
-- 'cancel' children), the 'run' children of all of them counted down, all
-- their edges settled, and only then are they moved to dead: each moved
-- row's own triggers find nothing left to settle, so nothing nests further.
--
-- A descendant's last_error names its own parent and the cause at the top:
-- `parent job <its parent> died: <why>`, where `why` is the root's message
-- (`parent job <root> died: <error>` or `… was cancelled`); a child of the
-- root itself reads `why`, as before. One line however deep the chain.
--
-- And a parent acked with a result keeps it while any child names it (the
-- edges stay until a child leaves for good), not only while a child waits:
-- a parent redriven and acked before its dead child — the order
-- docs/workflows.md gives — left its child reading None.
CREATE OR REPLACE FUNCTION __SCHEMA__.settle_children(parent bigint, kids bigint[], ok boolean, why text, at bigint)
RETURNS void
LANGUAGE plpgsql
AS $fn$
DECLARE
    woken text[];
    doomed bigint[];
    vias bigint[];
    settling bigint[];
BEGIN
    IF ok THEN
        IF cardinality(kids) > 1 THEN
            PERFORM 1 FROM __SCHEMA__.jobs WHERE id = ANY(kids) AND state = 'waiting' ORDER BY id FOR UPDATE;
        END IF;
        WITH r AS (
            UPDATE __SCHEMA__.jobs
               SET parents_left = parents_left - 1,
                   state = CASE WHEN parents_left = 1 THEN 'pending' ELSE 'waiting' END
             WHERE id = ANY(kids) AND state = 'waiting'
            RETURNING queue, state)
        SELECT array_agg(DISTINCT queue) FILTER (WHERE state = 'pending') INTO woken FROM r;
        IF woken IS NOT NULL THEN
            PERFORM pg_notify('__CHANNEL__', q) FROM unnest(woken) AS q;
        END IF;
        RETURN;
    END IF;
    -- The doomed: every waiting 'cancel' job reached from `parent` through
    -- unsettled edges (UNION: a job reached twice is walked once), each
    -- with the parent its message names: `parent` when it is one, else its
    -- lowest parent among the doomed (one pass over the doomed jobs' own
    -- edges, by the edges' child index, each parent looked up in a hash).
    -- Each step reads a job's edges by the edges' primary key and its
    -- children by theirs: the state test is a subquery per edge, not a join
    -- the planner could turn around into a scan of every waiting job (it
    -- did, without statistics: a 3,000-job chain took 21 s).
    WITH RECURSIVE down(id) AS (
        SELECT j.id FROM __SCHEMA__.jobs j
         WHERE j.id = ANY(kids) AND j.state = 'waiting' AND j.on_failure = 'cancel'
        UNION
        SELECT e.child_id FROM down JOIN __SCHEMA__.edges e ON e.parent_id = down.id
         WHERE NOT e.settled
           AND (SELECT c.state = 'waiting' AND c.on_failure = 'cancel' FROM __SCHEMA__.jobs c WHERE c.id = e.child_id)),
    named AS (
        SELECT d.id, coalesce(min(e.parent_id) FILTER (WHERE e.parent_id = parent), min(e.parent_id)) AS via
          FROM down d JOIN __SCHEMA__.edges e ON e.child_id = d.id AND NOT e.settled
         WHERE e.parent_id = parent OR e.parent_id IN (SELECT id FROM down)
         GROUP BY d.id)
    SELECT array_agg(id ORDER BY id), array_agg(via ORDER BY id) INTO doomed, vias FROM named;
    settling := parent || coalesce(doomed, '{}');
    -- Every row written below, locked in id order, as every settling does.
    PERFORM 1 FROM __SCHEMA__.jobs
     WHERE state = 'waiting'
       AND id IN (SELECT child_id FROM __SCHEMA__.edges WHERE parent_id = ANY(settling) AND NOT settled)
     ORDER BY id FOR UPDATE;
    -- 'run' children count each of their parents among them as settled.
    WITH k AS (
        SELECT e.child_id AS id, count(*) AS n FROM __SCHEMA__.edges e
         WHERE e.parent_id = ANY(settling) AND NOT e.settled GROUP BY e.child_id),
    r AS (
        UPDATE __SCHEMA__.jobs j
           SET parents_left = j.parents_left - k.n,
               state = CASE WHEN j.parents_left = k.n THEN 'pending' ELSE 'waiting' END
          FROM k
         WHERE j.id = k.id AND j.state = 'waiting' AND j.on_failure = 'run'
        RETURNING j.queue, j.state)
    SELECT array_agg(DISTINCT queue) FILTER (WHERE state = 'pending') INTO woken FROM r;
    IF woken IS NOT NULL THEN
        PERFORM pg_notify('__CHANNEL__', q) FROM unnest(woken) AS q;
    END IF;
    -- Settled before the doomed leave, so their own triggers find nothing,
    -- and a redriven parent's later ack does not count for them again.
    UPDATE __SCHEMA__.edges SET settled = true WHERE parent_id = ANY(settling) AND NOT settled;
    IF doomed IS NOT NULL THEN
        WITH moved AS (
            DELETE FROM __SCHEMA__.jobs WHERE id = ANY(doomed) AND state = 'waiting' RETURNING *)
        INSERT INTO __SCHEMA__.dead (id, queue, state, payload, priority, attempts, max_attempts, claim_token,
            visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
            worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
            last_error, died_at, purge_at)
        SELECT m.id, m.queue, 'dead', m.payload, m.priority, m.attempts, m.max_attempts, m.claim_token,
            m.visibility_timeout_s, m.backoff_base_s, m.dead_retention_s, m.enqueued_at, m.run_at, m.claimed_at,
            m.deadline, m.worker_id, m.expires_at, m.unique_key, m.group_key, m.parents_left, m.on_failure,
            m.keep_result_s, m.has_children,
            CASE WHEN v.via = parent THEN why ELSE 'parent job ' || v.via || ' died: ' || why END,
            at, at + m.dead_retention_s
          FROM moved m JOIN unnest(doomed, vias) AS v(id, via) ON v.id = m.id;
    END IF;
END
$fn$;

-- 0016's ack_flow, keeping the result while any child names the job.
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
            AND EXISTS (SELECT 1 FROM __SCHEMA__.edges e WHERE e.parent_id = job)))
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

-- The claims' exhaustion step: queue `q`'s lapsed leases with no attempt
-- left, at `t`, to dead ('attempts exhausted', or 'expired' when also past
-- their expiry, the reason a sweep at the same instant gives); how many. A
-- function so that the burial runs in a subtransaction of its own: when it
-- fails — its settlement of the jobs' descendants, by trigger, is a write
-- like any other — the rows stay processing with their leases lapsed, the
-- claim goes on without them (its lapsed scans take only rows with an
-- attempt left), and the next claim that finds them tries again. Up to
-- 0019 the burial was a step of the claim statement, so a burial that
-- always failed failed every claim of its queue (issue 43). -1: it failed
-- (the server log has a WARNING with the error).
CREATE FUNCTION __SCHEMA__.bury_exhausted(q text, t bigint) RETURNS bigint
LANGUAGE plpgsql
AS $fn$
DECLARE
    n bigint;
BEGIN
    WITH gone AS (
        DELETE FROM __SCHEMA__.jobs WHERE id = ANY(ARRAY(
            SELECT id FROM __SCHEMA__.jobs
             WHERE queue = q AND state = 'processing' AND deadline < t AND attempts >= max_attempts
             FOR UPDATE SKIP LOCKED))
        RETURNING *)
    INSERT INTO __SCHEMA__.dead (id, queue, state, payload, priority, attempts, max_attempts, claim_token,
        visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
        worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
        last_error, died_at, purge_at)
    SELECT id, queue, 'dead', payload, priority, attempts, max_attempts, claim_token,
        visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
        worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
        CASE WHEN expires_at <= t THEN 'expired' ELSE 'attempts exhausted' END, t, t + dead_retention_s
      FROM gone;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'alkstore: the exhausted jobs of queue % stay processing: burying them failed: %', q, SQLERRM;
    RETURN -1;
END
$fn$;
