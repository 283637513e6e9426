-- 0014: cheaper acks (ADR 0029, issue 27 and 31): a plain job's ack runs one
-- small trigger program instead of 0012's three, and a fan-in parent's ack
-- walks its edges once.

-- Every row that leaves the live table ran each AFTER DELETE trigger's
-- program: SQLite evaluates a trigger's WHEN inside the trigger's own
-- program, and each call allocates and zeroes a frame sized for the whole
-- body (measured with callgrind: the frames of 0012's three workflow
-- triggers, the big INSERT … SELECT of the failure path above all, were a
-- large part of every plain ack's instructions). So one small trigger
-- decides: a row in a workflow (a parent, or a child) is handed to the view
-- below, whose INSTEAD OF triggers are 0012's bodies unchanged (`NEW` for
-- `OLD`); a plain job's ack runs only this trigger's few-cell program (and
-- 0001's high-water mark). The view writes nothing, and its triggers run at
-- the same moment the AFTER DELETE triggers did: right after the row left,
-- inside the statement. Recursion (a dead parent's children deleted by its
-- trigger) goes through the same path, so recursive_triggers still carries
-- a failure down the graph.
DROP TRIGGER IF EXISTS __alkstore_jobs_parent_acked;
DROP TRIGGER IF EXISTS __alkstore_jobs_parent_failed;
DROP TRIGGER IF EXISTS __alkstore_jobs_child_left;

CREATE VIEW __alkstore_job_left (id, state, has_children, parents_left) AS
    SELECT NULL, NULL, NULL, NULL WHERE 0;
CREATE VIEW __alkstore_job_failed (id) AS SELECT NULL WHERE 0;
CREATE VIEW __alkstore_job_acked_many (id) AS SELECT NULL WHERE 0;

CREATE TRIGGER __alkstore_jobs_left AFTER DELETE ON __alkstore_jobs
WHEN OLD.has_children = 1 OR OLD.parents_left IS NOT NULL
BEGIN
    INSERT INTO __alkstore_job_left (id, state, has_children, parents_left)
    VALUES (OLD.id, OLD.state, OLD.has_children, OLD.parents_left);
END;

-- Acked: each waiting child still counting this parent counts one fewer
-- (0012's rule; the release is the trigger below).
CREATE TRIGGER __alkstore_job_left_acked INSTEAD OF INSERT ON __alkstore_job_left
WHEN NEW.has_children = 1 AND NEW.state <> 'cancelled'
    AND NOT EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id)
BEGIN
    -- A parent with one child still counting it (each parent of a fan-in):
    -- that child, found and updated by key. `id IN (SELECT …)` would build
    -- an ephemeral table (a b-tree, zeroed pages) on every such ack.
    UPDATE __alkstore_jobs SET parents_left = parents_left - 1
     WHERE id = (SELECT child_id FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0
                  ORDER BY child_id LIMIT 1)
       AND +state = 'waiting'
       AND NOT EXISTS (SELECT 1 FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0
                        AND child_id > __alkstore_jobs.id);
    -- Several (a fan-out): all of them in one statement, a level down.
    INSERT INTO __alkstore_job_acked_many (id) VALUES (NEW.id);
END;

CREATE TRIGGER __alkstore_job_acked_many_settle INSTEAD OF INSERT ON __alkstore_job_acked_many
WHEN (SELECT count(*) FROM (SELECT 1 FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0 LIMIT 2)) = 2
BEGIN
    UPDATE __alkstore_jobs SET parents_left = parents_left - 1
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0)
       AND +state = 'waiting';
END;

-- Dead or cancelled: 0012's failure path.
CREATE TRIGGER __alkstore_job_left_failed INSTEAD OF INSERT ON __alkstore_job_left
WHEN NEW.has_children = 1 AND (NEW.state = 'cancelled'
    OR EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id))
BEGIN
    INSERT INTO __alkstore_job_failed (id) VALUES (NEW.id);
END;

-- Its body, a level down: SQLite zeroes a trigger program's frame, sized
-- for its whole body, before it evaluates the WHEN, and this body is the
-- biggest; behind a one-line program every other workflow row skips it.
CREATE TRIGGER __alkstore_job_failed_settle INSTEAD OF INSERT ON __alkstore_job_failed
BEGIN
    UPDATE __alkstore_jobs
       SET parents_left = parents_left - 1,
           state = CASE WHEN parents_left = 1 THEN 'pending' ELSE 'waiting' END
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0)
       AND +state = 'waiting' AND on_failure = 'run';
    INSERT INTO __alkstore_dead (id, queue, state, payload, priority, attempts, max_attempts, claim_token,
        visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
        worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
        last_error, died_at, purge_at)
    SELECT c.id, c.queue, 'dead', c.payload, c.priority, c.attempts, c.max_attempts, c.claim_token,
        c.visibility_timeout_s, c.backoff_base_s, c.dead_retention_s, c.enqueued_at, c.run_at, c.claimed_at,
        c.deadline, c.worker_id, c.expires_at, c.unique_key, c.group_key, c.parents_left, c.on_failure,
        c.keep_result_s, c.has_children,
        'parent job ' || NEW.id || coalesce(' died: ' || p.last_error, ' was cancelled'),
        coalesce(p.died_at, unixepoch()), coalesce(p.died_at, unixepoch()) + c.dead_retention_s
      FROM __alkstore_jobs c LEFT JOIN __alkstore_dead p ON p.id = NEW.id
     WHERE c.id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0)
       AND +c.state = 'waiting' AND c.on_failure = 'cancel'
       AND NOT EXISTS (SELECT 1 FROM __alkstore_dead d WHERE d.id = c.id);
    UPDATE __alkstore_edges SET settled = 1 WHERE parent_id = NEW.id AND settled = 0;
    DELETE FROM __alkstore_jobs
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = NEW.id)
       AND +state = 'waiting' AND on_failure = 'cancel'
       AND EXISTS (SELECT 1 FROM __alkstore_dead d WHERE d.id = __alkstore_jobs.id);
END;

-- A child leaves for good: 0012's cleanup of its edges and results.
CREATE TRIGGER __alkstore_job_left_child INSTEAD OF INSERT ON __alkstore_job_left
WHEN NEW.parents_left IS NOT NULL AND NOT EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id)
BEGIN
    DELETE FROM __alkstore_results
     WHERE expires_at IS NULL
       AND id IN (SELECT parent_id FROM __alkstore_edges WHERE child_id = NEW.id)
       AND NOT EXISTS (SELECT 1 FROM __alkstore_edges e
                        WHERE e.parent_id = __alkstore_results.id AND e.child_id <> NEW.id);
    DELETE FROM __alkstore_edges WHERE child_id = NEW.id;
END;

-- The release: a trigger on the decrement, so every parent but the last
-- pays a comparison instead of a second walk of its edges, and the last one
-- sets `state` by primary key. (0012's ack trigger walked the same edges
-- twice: the decrement, then the release, because one UPDATE setting both
-- rewrites the waiting index's page on every ack, since an UPDATE that sets
-- `state` rewrites the partial indexes on it even to the same value.) The
-- other statements that set parents_left set `state` with it (waiting
-- exactly while parents_left > 0), so this never fires for them.
CREATE TRIGGER __alkstore_jobs_child_released AFTER UPDATE OF parents_left ON __alkstore_jobs
WHEN NEW.parents_left = 0 AND NEW.state = 'waiting'
BEGIN
    UPDATE __alkstore_jobs SET state = 'pending' WHERE id = NEW.id;
END;
