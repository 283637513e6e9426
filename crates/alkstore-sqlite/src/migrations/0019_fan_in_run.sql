-- 0019: a child of a run of ids learns of its release by a probe, not a
-- count (ADR 0029, issue 27).
--
-- With the count on the child (0012–0016), every fan-in parent's ack wrote
-- the child's row: a third page in a commit that otherwise writes two (the
-- parent's table leaf and its index leaf), and with it a parent's ack
-- could not come within 1.2x of a plain one (a bare sqlite3 loop of that
-- shape measures 1.27x; benches/fan_in_floor.py). But the parents of a
-- fan-in are most often enqueued together, so their ids are a run, and a
-- parent is waited for exactly while its row is live. When every id from
-- the lowest parent to the highest is a parent, "is any parent left?" is
-- one seek of the jobs table's primary key over that run, which writes
-- nothing. So:
--
-- parents_lo, parents_hi  the child's parents are every id in this run
--                         (each one live, or acked before: none dead), and
--                         its parents_left is not kept up to date while
--                         they are set; NULL: the count is kept (0012).
--
-- A processing parent of one child acked (0016's sole path) releases a run
-- child when the probe finds no row left in the run, and writes nothing
-- else. Any other way a parent of a run child leaves — a second child
-- linked to it, a death, a cancel, a parent back from dead — goes through
-- the general path, which first turns the run child back into a counted
-- one: parents_left = the live rows of the run, plus the parent leaving
-- (already deleted, still to be counted by the decrement that follows). A
-- run child therefore never has a dead parent, and a parent back from dead
-- is never in a run: its child counts it as 0012 says (settled at its
-- death, not again at its ack). Rows written before 0019 have no run and
-- keep the count.
ALTER TABLE __alkstore_jobs ADD COLUMN parents_lo INTEGER;
ALTER TABLE __alkstore_jobs ADD COLUMN parents_hi INTEGER;

-- 0016's link, and then the run: a waiting child whose parents, two or more,
-- are every id of one run with none of them dead. (One parent gains nothing
-- from a run: its ack is the last, which writes the child anyway; and the
-- children of a fan-out, one parent each, would only be counted again by
-- that parent's ack, which takes the general path.)
DROP TRIGGER IF EXISTS __alkstore_jobs_link;
CREATE TRIGGER __alkstore_jobs_link INSTEAD OF INSERT ON __alkstore_jobs_linked
BEGIN
    INSERT INTO __alkstore_jobs (id, queue, state, payload, priority, attempts, max_attempts, claim_token,
        visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at, unique_key,
        group_key, keep_result_s, on_failure)
    VALUES (NEW.id, NEW.queue, 'pending', NEW.payload, NEW.priority, 0, NEW.max_attempts, 0,
        NEW.visibility_timeout_s, NEW.backoff_base_s, NEW.dead_retention_s, NEW.enqueued_at, NEW.run_at,
        NEW.expires_at, NEW.unique_key, NEW.group_key, NEW.keep_result_s, NEW.on_failure);
    INSERT INTO __alkstore_edges (parent_id, child_id, settled)
    SELECT p.value, NEW.id, NOT EXISTS (SELECT 1 FROM __alkstore_jobs j WHERE j.id = p.value)
      FROM json_each(NEW.after_ids) AS p WHERE NEW.on_failure IS NOT NULL ON CONFLICT DO NOTHING;
    UPDATE __alkstore_jobs SET has_children = 1, sole_child = CASE WHEN has_children = 0 THEN NEW.id END
     WHERE id IN (SELECT parent_id FROM __alkstore_edges WHERE child_id = NEW.id AND settled = 0)
       AND (has_children = 0 OR sole_child <> NEW.id);
    UPDATE __alkstore_jobs
       SET parents_left = (SELECT count(*) FROM __alkstore_edges WHERE child_id = NEW.id AND settled = 0),
           state = CASE WHEN EXISTS (SELECT 1 FROM __alkstore_edges WHERE child_id = NEW.id AND settled = 0)
                   THEN 'waiting' ELSE 'pending' END
     WHERE id = NEW.id AND NEW.on_failure IS NOT NULL;
    UPDATE __alkstore_jobs SET parents_lo = r.lo, parents_hi = r.hi
      FROM (SELECT min(p.value) AS lo, max(p.value) AS hi, count(DISTINCT p.value) AS n
              FROM json_each(NEW.after_ids) AS p) AS r
     WHERE __alkstore_jobs.id = NEW.id AND __alkstore_jobs.state = 'waiting' AND r.n > 1 AND r.hi - r.lo + 1 = r.n
       AND NOT EXISTS (SELECT 1 FROM __alkstore_dead d WHERE d.id BETWEEN r.lo AND r.hi);
    INSERT INTO __alkstore_dead (id, queue, state, payload, priority, attempts, max_attempts, claim_token,
        visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
        worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
        last_error, died_at, purge_at)
    SELECT c.id, c.queue, 'dead', c.payload, c.priority, c.attempts, c.max_attempts, c.claim_token,
        c.visibility_timeout_s, c.backoff_base_s, c.dead_retention_s, c.enqueued_at, c.run_at, c.claimed_at,
        c.deadline, c.worker_id, c.expires_at, c.unique_key, c.group_key, c.parents_left, c.on_failure,
        c.keep_result_s, c.has_children, 'parent job ' || d.id || ' died: ' || coalesce(d.last_error, ''),
        NEW.enqueued_at, NEW.enqueued_at + c.dead_retention_s
      FROM __alkstore_edges e JOIN __alkstore_dead d ON d.id = e.parent_id JOIN __alkstore_jobs c ON c.id = e.child_id
     WHERE e.child_id = NEW.id AND NEW.on_failure = 'cancel'
     ORDER BY d.id LIMIT 1;
    DELETE FROM __alkstore_jobs
     WHERE id = NEW.id AND NEW.on_failure = 'cancel' AND EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id);
END;

-- 0016's sole path: a counted child counts one fewer; a run child is
-- released (parents_left 0, which 0015's trigger on the decrement turns
-- into 'pending') when no row of its run is left, and otherwise not written.
DROP TRIGGER IF EXISTS __alkstore_sole_acked_settle;
CREATE TRIGGER __alkstore_sole_acked_settle INSTEAD OF INSERT ON __alkstore_sole_acked
BEGIN
    UPDATE __alkstore_jobs
       SET parents_left = CASE WHEN parents_lo IS NULL THEN parents_left - 1 ELSE 0 END
     WHERE id = NEW.id AND +state = 'waiting'
       AND (parents_lo IS NULL OR NOT EXISTS (SELECT 1 FROM __alkstore_jobs p
             WHERE p.id BETWEEN __alkstore_jobs.parents_lo AND __alkstore_jobs.parents_hi));
END;

-- The general path's first step: the run children still counting the
-- parent `id`, which has left the live table, are counted again.
CREATE VIEW __alkstore_parent_counted (id) AS SELECT NULL WHERE 0;

CREATE TRIGGER __alkstore_parent_counted_recount INSTEAD OF INSERT ON __alkstore_parent_counted
BEGIN
    UPDATE __alkstore_jobs
       SET parents_left = 1 + (SELECT count(*) FROM __alkstore_jobs p
             WHERE p.id BETWEEN __alkstore_jobs.parents_lo AND __alkstore_jobs.parents_hi),
           parents_lo = NULL, parents_hi = NULL
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0)
       AND +state = 'waiting' AND parents_lo IS NOT NULL;
END;

-- 0015's acked rule and 0014's failed rule, each recounting first.
DROP TRIGGER IF EXISTS __alkstore_job_left_acked;
CREATE TRIGGER __alkstore_job_left_acked INSTEAD OF INSERT ON __alkstore_job_left
WHEN NEW.has_children = 1 AND NEW.state <> 'cancelled'
    AND NOT EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id)
BEGIN
    INSERT INTO __alkstore_parent_counted (id) VALUES (NEW.id);
    INSERT INTO __alkstore_parent_acked (id) VALUES (NEW.id);
END;

DROP TRIGGER IF EXISTS __alkstore_job_left_failed;
CREATE TRIGGER __alkstore_job_left_failed INSTEAD OF INSERT ON __alkstore_job_left
WHEN NEW.has_children = 1 AND (NEW.state = 'cancelled'
    OR EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id))
BEGIN
    INSERT INTO __alkstore_parent_counted (id) VALUES (NEW.id);
    INSERT INTO __alkstore_job_failed (id) VALUES (NEW.id);
END;
