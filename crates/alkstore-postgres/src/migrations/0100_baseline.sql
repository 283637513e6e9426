-- The store's schema on Postgres, version 100: the baseline of alkstore 1.0
-- (ADR 0037). Every table, index, function and trigger once, as it reads
-- today. Versions 1-99 were pre-release builds, whose schemas are refused at
-- open.
--
-- Every object lives in the engine-owned schema (`__SCHEMA__`, the quoted
-- name given at open), co-tenant safe with the application's tables; the
-- meta table (schema_version, store_id) is made by the migration runner
-- before any migration, since the version must be readable first. The
-- other `__NAME__` marks are filled in at open from core's rules (migrate.rs).
--
-- Integers the contract treats as 64-bit (attempts, budgets, tokens,
-- durations, Unix-second times) are bigint, so both engines accept the same
-- values; `priority` is int (signed 32-bit). JSON is text, never jsonb:
-- jsonb would reorder keys and respace the text.

-- The store's identity (ADR 0015): a statement run on the application's own
-- connection checks that it reaches this store and not another database or
-- schema.
INSERT INTO __SCHEMA__.meta (key, value) VALUES ('store_id', replace(gen_random_uuid()::text, '-', ''))
ON CONFLICT (key) DO NOTHING;

---------------------------------------------------------------------------
-- Jobs (SPEC §4, ADR 0001)
---------------------------------------------------------------------------

-- Every live job: pending, scheduled (pending with a later run_at),
-- processing, or waiting for parents. An ack deletes the row; a move to dead
-- copies it to `dead` and deletes it. Ids come from the identity and are
-- never reused.
CREATE TABLE __SCHEMA__.jobs (
    id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue                text             NOT NULL,
    -- 'pending', 'processing', 'waiting' (a 'cancelled' mark lives only
    -- between a cancel's two statements).
    state                text             NOT NULL,
    payload              text             NOT NULL,
    priority             integer          NOT NULL,
    attempts             bigint           NOT NULL,
    max_attempts         bigint           NOT NULL,
    -- Fencing token: +1 on every claim, never refunded.
    claim_token          bigint           NOT NULL,
    -- The queue's options, stamped on each job at enqueue (SPEC §4).
    visibility_timeout_s bigint           NOT NULL,
    backoff_base_s       double precision NOT NULL,
    dead_retention_s     bigint,
    enqueued_at          bigint           NOT NULL,
    run_at               bigint           NOT NULL,
    -- The last claim's time: kept when the job goes back to pending.
    claimed_at           bigint,
    -- The lease: set only while processing (a pending row holds none, SPEC §4.4).
    deadline             bigint,
    worker_id            text,
    expires_at           bigint,
    -- At most one live row per (queue, unique_key) (SPEC §18, ADR 0016).
    unique_key           text,
    -- What a queue's group_concurrency limits (SPEC §24, ADR 0028).
    group_key            text,
    -- The concurrency slot (0 .. concurrency-1) a job of a limited queue
    -- holds while processing: the slot claim takes each slot under its own
    -- advisory lock, so claimers of one limited queue run side by side.
    -- NULL: claimed without a slot (an unlimited queue, or the group and
    -- rate claims); the slot claim then leaves the queue to the exclusive
    -- claim until such rows stop processing. No index: a limited queue's
    -- processing rows are few, and jobs_leased reaches them.
    slot                 bigint,
    -- Workflows (SPEC §25, ADR 0029):
    -- parents_left   NULL: no parents; else the parents not yet settled for it.
    parents_left         bigint,
    -- on_failure     'cancel' or 'run' (NULL: no parents).
    on_failure           text,
    -- keep_result_s  how long an ack's result is kept (NULL: only while a
    --                child names the job).
    keep_result_s        bigint,
    -- has_children   true once some job waits (or waited) for it, so a plain
    --                job's ack never reads the edges.
    has_children         boolean          NOT NULL DEFAULT false,
    -- sole_child     the one child counting this parent, whose ack then
    --                counts it down itself (`sole_acked`) with no trigger;
    --                NULL when it has none, several, or may have an edge it no
    --                longer counts (a parent back from dead). NULL always
    --                means the trigger's general path.
    sole_child           bigint,
    -- The latest failed attempt's error (a retry's, or a lapsed lease's),
    -- shown while the job is live (SPEC §30). The plain claim and ack never
    -- read or write it.
    last_error           text
);

-- The claim's hot path: ready rows in claim order.
CREATE INDEX jobs_ready ON __SCHEMA__.jobs (queue, priority DESC, run_at, id) WHERE state = 'pending';
-- Lapsed leases: reclaim, and exhaustion by reclaim.
CREATE INDEX jobs_leased ON __SCHEMA__.jobs (queue, deadline) WHERE state = 'processing';
-- `stats` counts a queue's waiting rows; plain jobs are never in this index.
CREATE INDEX jobs_waiting ON __SCHEMA__.jobs (queue) WHERE state = 'waiting';
-- The expiry sweep.
CREATE INDEX jobs_expiring ON __SCHEMA__.jobs (queue, expires_at) WHERE expires_at IS NOT NULL;
-- Live rows are exactly this table's rows, so the key needs no state
-- predicate, and it is free again once its job is acked, cancelled or dead.
CREATE UNIQUE INDEX jobs_unique ON __SCHEMA__.jobs (queue, unique_key) WHERE unique_key IS NOT NULL;
-- Counting a group's processing rows is a seek here.
CREATE INDEX jobs_group_running ON __SCHEMA__.jobs (queue, group_key)
    WHERE state = 'processing' AND group_key IS NOT NULL;

---------------------------------------------------------------------------
-- Dead letters (SPEC §4.5)
---------------------------------------------------------------------------

-- A dead job keeps the live row's id (moved, not regenerated) and every
-- field as it was at death (for requeue_dead), except `state`, which reads
-- 'dead'; and why it died.
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
    -- Why it died: a fail's error, 'attempts exhausted', 'expired', or the
    -- parent whose death killed it.
    last_error           text             NOT NULL,
    died_at              bigint           NOT NULL,
    -- died_at + dead_retention_s; NULL keeps the row forever.
    purge_at             bigint,
    unique_key           text,
    group_key            text,
    parents_left         bigint,
    on_failure           text,
    keep_result_s        bigint,
    has_children         boolean          NOT NULL DEFAULT false
);
-- dead_jobs paging, get_job, stats.
CREATE INDEX dead_queue ON __SCHEMA__.dead (queue, id);
-- The retention purge.
CREATE INDEX dead_purge ON __SCHEMA__.dead (queue, purge_at) WHERE purge_at IS NOT NULL;

-- A live row as the dead row it becomes: every field kept, `state` 'dead',
-- why it died and when, and its purge time from its retention. The moves to
-- dead of the functions below write through it, so the mapping is written
-- once here (the engine's own statements, ops/mod.rs, name the same columns).
CREATE FUNCTION __SCHEMA__.dead_row(j __SCHEMA__.jobs, why text, at bigint) RETURNS __SCHEMA__.dead
LANGUAGE sql IMMUTABLE
AS $fn$
    SELECT j.id, j.queue, 'dead', j.payload, j.priority, j.attempts, j.max_attempts, j.claim_token,
        j.visibility_timeout_s, j.backoff_base_s, j.dead_retention_s, j.enqueued_at, j.run_at, j.claimed_at,
        j.deadline, j.worker_id, j.expires_at, why, at, at + j.dead_retention_s, j.unique_key, j.group_key,
        j.parents_left, j.on_failure, j.keep_result_s, j.has_children
$fn$;

---------------------------------------------------------------------------
-- Queues (SPEC §18, §19, §24)
---------------------------------------------------------------------------

-- Every queue that has had a job: `store.queues()`, `stats` and `/metrics`
-- list a queue from here, so a queue whose jobs are all acked keeps
-- reporting zeros instead of vanishing (an absent series is what a
-- Prometheus alert cannot tell from a dead exporter), until it is forgotten
-- (`forget_queue`). Every enqueue statement registers its queue in a CTE
-- (`INSERT … ON CONFLICT DO NOTHING`: an index probe and no write once the
-- queue is known), and so does the enqueue function.
CREATE TABLE __SCHEMA__.queues (
    queue   text   PRIMARY KEY,
    seen_at bigint NOT NULL
);

-- A paused queue is a row here; the claim statements probe it by key.
CREATE TABLE __SCHEMA__.paused (
    queue     text   PRIMARY KEY,
    paused_at bigint NOT NULL
);

-- Acks per queue per minute, for the dashboard's completion chart (ADR
-- 0020). Each process adds its in-memory count every few seconds; rows
-- older than a day are dropped by the next write.
CREATE TABLE __SCHEMA__.completions (
    queue  text   NOT NULL,
    minute bigint NOT NULL,
    n      bigint NOT NULL,
    PRIMARY KEY (queue, minute)
);

-- A limited queue is a row here (ADR 0028); the one-statement claim probes
-- it by key, as it probes `paused`, and leaves a limited queue to the
-- limited claims. NULL: no limit of that kind.
CREATE TABLE __SCHEMA__.limits (
    queue             text PRIMARY KEY,
    concurrency       bigint,
    rate_count        bigint,
    rate_period_s     double precision,
    group_concurrency bigint
);

-- The claims of rate-limited queues: when (Unix seconds with a fraction)
-- and how many. The limited claim sums the rows inside the window and drops
-- older ones.
CREATE TABLE __SCHEMA__.rate_log (
    queue text             NOT NULL,
    at    double precision NOT NULL,
    n     bigint           NOT NULL
);
CREATE INDEX rate_log_at ON __SCHEMA__.rate_log (queue, at);

---------------------------------------------------------------------------
-- Locks, schedules and streams (SPEC §8, §9, §10, §23)
---------------------------------------------------------------------------

-- One lease per name; the scheduler's leadership lock is a row here too.
CREATE TABLE __SCHEMA__.locks (
    name       text   PRIMARY KEY,
    owner      text   NOT NULL,
    expires_at bigint NOT NULL
);

CREATE TABLE __SCHEMA__.schedules (
    name         text    PRIMARY KEY,
    spec         text    NOT NULL,
    interval_s   bigint  NOT NULL,
    queue        text    NOT NULL,
    -- JSON text enqueued on each fire.
    payload      text    NOT NULL,
    priority     integer NOT NULL,
    max_attempts bigint,
    expires_s    bigint,
    next_fire_at bigint  NOT NULL,
    -- The zone a cron spec is read in, and the key core derives from the
    -- spec and zone: re-registering an equal key keeps the next fire (ADR 0027).
    tz           text    NOT NULL DEFAULT 'UTC',
    spec_key     text    NOT NULL DEFAULT ''
);
-- The runner's "what is due" and "when is the next one".
CREATE INDEX schedules_due ON __SCHEMA__.schedules (next_fire_at);

-- Events: (stream, seq) is the event's offset within its stream.
CREATE TABLE __SCHEMA__.stream_events (
    stream       text   NOT NULL,
    seq          bigint NOT NULL,
    key          text,
    payload      text   NOT NULL,
    published_at bigint NOT NULL,
    PRIMARY KEY (stream, seq)
);
-- The last offset handed out per stream. Publishers take it with a row lock
-- held to commit, which is what makes offsets follow commit order, and it
-- keeps offsets from being reused after a trim.
CREATE TABLE __SCHEMA__.stream_heads (
    stream   text   PRIMARY KEY,
    last_seq bigint NOT NULL
);
-- Saved consumer positions.
CREATE TABLE __SCHEMA__.stream_offsets (
    stream   text   NOT NULL,
    consumer text   NOT NULL,
    seq      bigint NOT NULL,
    PRIMARY KEY (stream, consumer)
);

---------------------------------------------------------------------------
-- Workflows: edges and results (SPEC §25, ADR 0029)
---------------------------------------------------------------------------

-- One row per (parent, child). settled: the parent no longer counts for
-- this child — it was gone when the child was linked, or it died or was
-- cancelled since. An acked parent's edges stay false: its id is never live
-- again, so nothing counts them. Edges stay until the child leaves for good
-- (acked, cancelled, or its dead row purged): they name its parents for
-- `parent_results` and the dashboard, and keep their results.
CREATE TABLE __SCHEMA__.edges (
    parent_id bigint  NOT NULL,
    child_id  bigint  NOT NULL,
    settled   boolean NOT NULL,
    PRIMARY KEY (parent_id, child_id)
);
CREATE INDEX edges_child ON __SCHEMA__.edges (child_id, parent_id);

-- Acked jobs' results. expires_at NULL: kept while a child names the job,
-- then deleted with the last child's edges.
CREATE TABLE __SCHEMA__.results (
    id          bigint PRIMARY KEY,
    queue       text   NOT NULL,
    value       text,
    finished_at bigint NOT NULL,
    expires_at  bigint
);
CREATE INDEX results_expiring ON __SCHEMA__.results (queue, expires_at) WHERE expires_at IS NOT NULL;

---------------------------------------------------------------------------
-- Workflows: the rules
---------------------------------------------------------------------------
--
-- What happens to a job's children when it leaves the live table is
-- decided by triggers, so every path that removes a job — the claim's
-- exhaustion step included — settles them without a statement of its own.
-- How the row left decides: a move to dead (fail, a retry at budget,
-- exhaustion, expiry, the limited claims' burial) has written the dead row
-- by the time the trigger runs (after-row triggers run at the end of the
-- statement, whose CTE inserted it), `cancel` marks the row 'cancelled'
-- first; any other delete is an ack. A parent with one child (sole_child)
-- is acked without a trigger: the ack statement calls `sole_acked`, and
-- its death is seen at its dead row's insert (`parent_died`).

-- Links the just-inserted job `child` to its parents `after` (sorted,
-- distinct, every id already known to be issued) and stamps its workflow
-- columns; `t` is the enqueue's clock. Live parents are locked in id order
-- and marked as parents (a first child is the sole child, a second makes
-- none), so a parent's ack that races this enqueue either finishes first
-- (the parent is gone: settled) or waits and then takes the workflow ack.
-- A dead parent kills a 'cancel' child at birth, naming the lowest one.
CREATE FUNCTION __SCHEMA__.link(child bigint, after bigint[], mode text, keep bigint, t bigint)
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
            INSERT INTO __SCHEMA__.dead
            SELECT d.* FROM moved m,
                LATERAL __SCHEMA__.dead_row(ROW(m.*)::__SCHEMA__.jobs,
                    'parent job ' || dead_id || ' died: ' || dead_error, t) AS d;
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

-- The settling of `kids` (ids in order) for `parent`. ok (an ack): one
-- parent fewer each, released to 'pending' (and woken) at zero; the
-- children are locked in id order first, so two parents settling shared
-- children never deadlock, and two acks of a child's last two parents
-- decrement it one after the other: exactly one releases it.
--
-- Not ok (a death or a cancel, `why` naming it, at `at`): the descendants
-- are settled set-wise, so a death of any depth is one call and nothing
-- nests further (a chain of 100,000 fails at its head in one call): the
-- walk down the unsettled edges through waiting 'cancel' children first;
-- every 'run' child of `parent` and of the doomed counts each of them as
-- settled; every edge of theirs is settled (a redriven parent's later ack
-- does not count for these children again, and the doomed rows' own
-- triggers, as they leave last, find nothing to do); then the doomed move
-- to dead. A child of `parent` reads `why`; a deeper one names its own
-- lowest doomed parent and `why`: one line at any depth.
CREATE FUNCTION __SCHEMA__.settle_children(parent bigint, kids bigint[], ok boolean, why text, at bigint)
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
        INSERT INTO __SCHEMA__.dead
        SELECT d.* FROM moved m JOIN unnest(doomed, vias) AS v(id, via) ON v.id = m.id,
            LATERAL __SCHEMA__.dead_row(ROW(m.*)::__SCHEMA__.jobs,
                CASE WHEN v.via = parent THEN why ELSE 'parent job ' || v.via || ' died: ' || why END, at) AS d;
    END IF;
END
$fn$;

-- A parent left the live table (`jobs_parent_left`), or its dead row was
-- purged while a redriven child still counts it (`dead_parent_left`). One
-- query settles the common case, a parent acked with one child still
-- counting it (each parent of a fan-in, each link of a chain): the child
-- ids, the dead row (a move to dead) and, for one child of an ack, its
-- decrement and release; one row lock, so no order to keep. Anything else
-- (several children, a death, a cancel) goes to settle_children. A plain
-- job never gets here (WHEN has_children).
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
-- jobs trigger does not see (a processing sole-child parent's: a failed or
-- exhausted attempt, an expired or buried lease). For any other parent the
-- jobs trigger has settled or will settle the same children with the same
-- outcome; whichever runs second finds the edges settled, and stops.
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
    FOR EACH ROW WHEN (OLD.has_children AND (OLD.sole_child IS NULL OR OLD.state <> 'processing'))
    EXECUTE FUNCTION __SCHEMA__.parent_left();
CREATE TRIGGER dead_parent_left AFTER DELETE ON __SCHEMA__.dead
    FOR EACH ROW WHEN (OLD.has_children) EXECUTE FUNCTION __SCHEMA__.parent_left();
CREATE TRIGGER dead_parent_died AFTER INSERT ON __SCHEMA__.dead
    FOR EACH ROW WHEN (NEW.has_children) EXECUTE FUNCTION __SCHEMA__.parent_died();
CREATE TRIGGER jobs_child_left AFTER DELETE ON __SCHEMA__.jobs
    FOR EACH ROW WHEN (OLD.parents_left IS NOT NULL) EXECUTE FUNCTION __SCHEMA__.child_left();
CREATE TRIGGER dead_child_left AFTER DELETE ON __SCHEMA__.dead
    FOR EACH ROW WHEN (OLD.parents_left IS NOT NULL) EXECUTE FUNCTION __SCHEMA__.child_left();

-- The decrement of a parent's sole child, which the ack statement calls
-- (RETURNING) only where the row it deleted names one, so a plain ack is
-- the DELETE alone; the child's queue when it was released (and woken).
CREATE FUNCTION __SCHEMA__.sole_acked(child bigint) RETURNS text
LANGUAGE plpgsql
AS $fn$
DECLARE
    released text;
BEGIN
    UPDATE __SCHEMA__.jobs
       SET parents_left = parents_left - 1,
           state = CASE WHEN parents_left = 1 THEN 'pending' ELSE 'waiting' END
     WHERE id = child AND state = 'waiting'
    RETURNING CASE WHEN state = 'pending' THEN queue END INTO released;
    IF released IS NOT NULL THEN
        PERFORM pg_notify('__CHANNEL__', released);
    END IF;
    RETURN released;
END
$fn$;

-- The ack of a job keeping its result (the plain ack leaves those, and
-- those given a result that may have children): a valid handle's result is
-- kept where needed (`keep_result_s`, or while any child names the job —
-- a dead child among them, which a redrive may run later), then its row
-- deleted, which settles its children. One statement for the caller, so it
-- is atomic on its own; false when the handle is not valid. A parent acked
-- without a result keeps no row for its children (they read None either
-- way), so a fan-in of N parents writes none.
CREATE FUNCTION __SCHEMA__.ack_flow(job bigint, worker text, token bigint, t bigint, result text)
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

---------------------------------------------------------------------------
-- The claims' exhaustion step
---------------------------------------------------------------------------

-- Queue `q`'s lapsed leases with no attempt left, at `t`, to dead
-- ('attempts exhausted', or 'expired' when also past their expiry, the
-- reason a sweep at the same instant gives); how many. A function so that
-- the burial runs in a subtransaction of its own: when it fails — its
-- settlement of the jobs' descendants, by trigger, is a write like any
-- other — the rows stay processing with their leases lapsed, the claim goes
-- on without them (its lapsed scans take only rows with an attempt left),
-- and the next claim that finds them tries again; -1, and the server log
-- has a WARNING with the error. The claims call it behind a gate that
-- finds nothing exhausted for nearly every claim (ops::bury_step).
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
    INSERT INTO __SCHEMA__.dead
    SELECT d.* FROM gone g,
        LATERAL __SCHEMA__.dead_row(ROW(g.*)::__SCHEMA__.jobs,
            CASE WHEN g.expires_at <= t THEN 'expired' ELSE 'attempts exhausted' END, t) AS d;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'alkstore: the exhausted jobs of queue % stay processing: burying them failed: %', q, SQLERRM;
    RETURN -1;
END
$fn$;

---------------------------------------------------------------------------
-- Enqueue from SQL (SPEC §17, ADR 0014)
---------------------------------------------------------------------------

-- Its definition lives in functions/enqueue.sql.
__ENQUEUE_FUNCTION__
