-- 0012: workflows — job dependencies, fan-in and results (SPEC §25, ADR 0029).
--
-- A child job names its parents (`after`); one edge row per (parent, child)
-- pair, and on the child a count of the parents that have not settled for
-- it yet. A child with parents_left > 0 is in state 'waiting', which no claim
-- statement reads (they all read 'pending'). A parent carries has_children,
-- so the ack of a job without children never reads the edges.
--
-- parents_left  NULL: no parents; else the parents not yet settled for it.
-- on_failure    'cancel' or 'run' (NULL: no parents).
-- keep_result_s how long an ack's result is kept (NULL: only while a waiting
--               child needs it).
-- has_children  1 once some job waits (or waited) for it.
-- Dead rows keep all four, so `requeue_dead` restores them.
ALTER TABLE __alkstore_jobs ADD COLUMN parents_left INTEGER;
ALTER TABLE __alkstore_jobs ADD COLUMN on_failure TEXT;
ALTER TABLE __alkstore_jobs ADD COLUMN keep_result_s INTEGER;
ALTER TABLE __alkstore_jobs ADD COLUMN has_children INTEGER NOT NULL DEFAULT 0;
ALTER TABLE __alkstore_dead ADD COLUMN parents_left INTEGER;
ALTER TABLE __alkstore_dead ADD COLUMN on_failure TEXT;
ALTER TABLE __alkstore_dead ADD COLUMN keep_result_s INTEGER;
ALTER TABLE __alkstore_dead ADD COLUMN has_children INTEGER NOT NULL DEFAULT 0;

-- settled: 1 once the parent no longer counts for this child — it was gone
-- when the child was linked, or it died or was cancelled since. An acked
-- parent's edges keep 0: its id is never live again, so nothing counts them.
-- The child's parents_left is its edges with 0 to parents not yet acked.
-- Edges stay until the child leaves for good (acked, cancelled, or its dead
-- row purged): they name its parents for `parent_results` and the dashboard.
CREATE TABLE IF NOT EXISTS __alkstore_edges (
    parent_id INTEGER NOT NULL,
    child_id  INTEGER NOT NULL,
    settled   INTEGER NOT NULL,
    PRIMARY KEY (parent_id, child_id)
) WITHOUT ROWID;
-- `stats` counts a queue's waiting rows; plain jobs are never in this index.
CREATE INDEX IF NOT EXISTS __alkstore_jobs_waiting ON __alkstore_jobs (queue) WHERE state = 'waiting';

CREATE INDEX IF NOT EXISTS __alkstore_edges_child ON __alkstore_edges (child_id, parent_id);

-- Acked jobs' results. expires_at NULL: kept while a child needs it (the
-- edges say so), then deleted with the last child's edges.
CREATE TABLE IF NOT EXISTS __alkstore_results (
    id          INTEGER PRIMARY KEY,
    queue       TEXT    NOT NULL,
    value       TEXT,
    finished_at INTEGER NOT NULL,
    expires_at  INTEGER
);
CREATE INDEX IF NOT EXISTS __alkstore_results_expiring
    ON __alkstore_results (queue, expires_at) WHERE expires_at IS NOT NULL;

-- A parent leaves the live table. Settling its children is these two
-- triggers' job, so every path that removes a job does it — the claim's
-- exhaustion step included — without a statement of its own, and a plain
-- job (has_children = 0) never reaches the edges. How the row left decides:
-- a move to dead (fail, retry at budget, exhaustion, expiry, the limited
-- claim's bury) writes the dead row first, and `cancel` marks the row
-- 'cancelled' before deleting it; any other delete is an ack.
--
-- Acked: each waiting child still counting this parent counts one fewer,
-- and the one brought to zero is released to 'pending' (its commit wakes
-- the waiters, as an enqueue's does). The edges stay as they are: the
-- parent's id is never live again, so nothing reads them as unsettled.
-- `+state`: the children are found through the parent's edges and read by
-- primary key; a bare `state = 'waiting'` lets the planner walk every
-- waiting row of the store instead (checked in ops/plans.rs). The count and
-- the release are two statements because an UPDATE that sets `state`
-- rewrites the partial indexes on it even to the same value: one more page
-- (the waiting index's) in every fan-in parent's commit. Measured with 5,000
-- parents: 1.91x the bytes a plain ack writes with one statement, 1.45x with
-- two.
CREATE TRIGGER IF NOT EXISTS __alkstore_jobs_parent_acked AFTER DELETE ON __alkstore_jobs
WHEN OLD.has_children = 1 AND OLD.state <> 'cancelled'
    AND NOT EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = OLD.id)
BEGIN
    UPDATE __alkstore_jobs SET parents_left = parents_left - 1
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = OLD.id AND settled = 0)
       AND +state = 'waiting';
    UPDATE __alkstore_jobs SET state = 'pending'
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = OLD.id AND settled = 0)
       AND +state = 'waiting' AND parents_left = 0;
END;

-- Dead or cancelled: 'run' children count it as settled; 'cancel' children
-- go dead naming the parent, and their own deletion fires this trigger for
-- their children (the engine's connections set recursive_triggers), so the
-- failure runs down the graph in the same transaction. The edges are marked
-- settled: a redriven parent's later ack must not count for them again. A
-- child already copied to dead is not copied again: in a diamond (c after a
-- and b, b after a) a's death copies b and c, and b's deletion then fires
-- this for b, whose child c is still a waiting row until a's DELETE runs.
CREATE TRIGGER IF NOT EXISTS __alkstore_jobs_parent_failed AFTER DELETE ON __alkstore_jobs
WHEN OLD.has_children = 1 AND (OLD.state = 'cancelled'
    OR EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = OLD.id))
BEGIN
    UPDATE __alkstore_jobs
       SET parents_left = parents_left - 1,
           state = CASE WHEN parents_left = 1 THEN 'pending' ELSE 'waiting' END
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = OLD.id AND settled = 0)
       AND +state = 'waiting' AND on_failure = 'run';
    INSERT INTO __alkstore_dead (id, queue, state, payload, priority, attempts, max_attempts, claim_token,
        visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
        worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
        last_error, died_at, purge_at)
    SELECT c.id, c.queue, 'dead', c.payload, c.priority, c.attempts, c.max_attempts, c.claim_token,
        c.visibility_timeout_s, c.backoff_base_s, c.dead_retention_s, c.enqueued_at, c.run_at, c.claimed_at,
        c.deadline, c.worker_id, c.expires_at, c.unique_key, c.group_key, c.parents_left, c.on_failure,
        c.keep_result_s, c.has_children,
        'parent job ' || OLD.id || coalesce(' died: ' || p.last_error, ' was cancelled'),
        coalesce(p.died_at, unixepoch()), coalesce(p.died_at, unixepoch()) + c.dead_retention_s
      FROM __alkstore_jobs c LEFT JOIN __alkstore_dead p ON p.id = OLD.id
     WHERE c.id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = OLD.id AND settled = 0)
       AND +c.state = 'waiting' AND c.on_failure = 'cancel'
       AND NOT EXISTS (SELECT 1 FROM __alkstore_dead d WHERE d.id = c.id);
    UPDATE __alkstore_edges SET settled = 1 WHERE parent_id = OLD.id AND settled = 0;
    DELETE FROM __alkstore_jobs
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = OLD.id)
       AND +state = 'waiting' AND on_failure = 'cancel'
       AND EXISTS (SELECT 1 FROM __alkstore_dead d WHERE d.id = __alkstore_jobs.id);
END;

-- A dead parent is purged while a child redriven after its death still
-- counts it: the same failure, as the death itself would have been.
CREATE TRIGGER IF NOT EXISTS __alkstore_dead_parent_left AFTER DELETE ON __alkstore_dead
WHEN OLD.has_children = 1 AND NOT EXISTS (SELECT 1 FROM __alkstore_jobs WHERE id = OLD.id)
BEGIN
    UPDATE __alkstore_jobs
       SET parents_left = parents_left - 1,
           state = CASE WHEN parents_left = 1 THEN 'pending' ELSE 'waiting' END
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = OLD.id AND settled = 0)
       AND +state = 'waiting' AND on_failure = 'run';
    INSERT INTO __alkstore_dead (id, queue, state, payload, priority, attempts, max_attempts, claim_token,
        visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
        worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
        last_error, died_at, purge_at)
    SELECT c.id, c.queue, 'dead', c.payload, c.priority, c.attempts, c.max_attempts, c.claim_token,
        c.visibility_timeout_s, c.backoff_base_s, c.dead_retention_s, c.enqueued_at, c.run_at, c.claimed_at,
        c.deadline, c.worker_id, c.expires_at, c.unique_key, c.group_key, c.parents_left, c.on_failure,
        c.keep_result_s, c.has_children,
        'parent job ' || OLD.id || ' died: ' || OLD.last_error, unixepoch(), unixepoch() + c.dead_retention_s
      FROM __alkstore_jobs c
     WHERE c.id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = OLD.id AND settled = 0)
       AND +c.state = 'waiting' AND c.on_failure = 'cancel'
       AND NOT EXISTS (SELECT 1 FROM __alkstore_dead d WHERE d.id = c.id);
    UPDATE __alkstore_edges SET settled = 1 WHERE parent_id = OLD.id AND settled = 0;
    DELETE FROM __alkstore_jobs
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = OLD.id)
       AND +state = 'waiting' AND on_failure = 'cancel'
       AND EXISTS (SELECT 1 FROM __alkstore_dead d WHERE d.id = __alkstore_jobs.id);
END;

-- A child leaves for good (acked or cancelled; a move to dead keeps it, for
-- requeue_dead): its edges go, and with them the results its parents kept
-- only for it.
CREATE TRIGGER IF NOT EXISTS __alkstore_jobs_child_left AFTER DELETE ON __alkstore_jobs
WHEN OLD.parents_left IS NOT NULL AND NOT EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = OLD.id)
BEGIN
    DELETE FROM __alkstore_results
     WHERE expires_at IS NULL
       AND id IN (SELECT parent_id FROM __alkstore_edges WHERE child_id = OLD.id)
       AND NOT EXISTS (SELECT 1 FROM __alkstore_edges e
                        WHERE e.parent_id = __alkstore_results.id AND e.child_id <> OLD.id);
    DELETE FROM __alkstore_edges WHERE child_id = OLD.id;
END;

-- A dead child's row is purged (not redriven): the same.
CREATE TRIGGER IF NOT EXISTS __alkstore_dead_child_left AFTER DELETE ON __alkstore_dead
WHEN OLD.parents_left IS NOT NULL AND NOT EXISTS (SELECT 1 FROM __alkstore_jobs WHERE id = OLD.id)
BEGIN
    DELETE FROM __alkstore_results
     WHERE expires_at IS NULL
       AND id IN (SELECT parent_id FROM __alkstore_edges WHERE child_id = OLD.id)
       AND NOT EXISTS (SELECT 1 FROM __alkstore_edges e
                        WHERE e.parent_id = __alkstore_results.id AND e.child_id <> OLD.id);
    DELETE FROM __alkstore_edges WHERE child_id = OLD.id;
END;
