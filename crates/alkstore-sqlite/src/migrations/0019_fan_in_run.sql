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
-- A child gets a run only when each of its live parents has it as its sole
-- child (0016), so each of their acks takes the sole path, which releases a
-- run child when the probe finds no row of the run left, and otherwise
-- writes nothing. Whatever else can happen to a parent of a run child turns
-- the child back into a counted one first — parents_left = the live rows
-- of its run — and then the count works as 0012 says:
-- - a second child linked to the parent, or its move to dead (either
--   clears sole_child; a trigger on that counts the former sole child
--   again, the parent still live);
-- - its cancel (the failure rule, which decrements a 'run' child or kills a
--   'cancel' one): the rule counts its run children again first, plus the
--   parent itself, already deleted but not yet settled.
-- So a run child never has a dead parent, and a parent back from dead is
-- never in a run: its child counts it as 0012 says (settled at its death,
-- not again at its ack). Rows written before 0019 have no run and keep the
-- count.
ALTER TABLE __alkstore_jobs ADD COLUMN parents_lo INTEGER;
ALTER TABLE __alkstore_jobs ADD COLUMN parents_hi INTEGER;

-- 0016's link, and then the run: a waiting child whose parents, two or
-- more, are every id of one run (the engine passes after_ids sorted and
-- distinct, so the first and the last and the length say it), none of them
-- dead, and each live one with this child as its sole child. (One parent
-- gains nothing from a run: its ack is the last, which writes the child
-- anyway.)
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
    UPDATE __alkstore_jobs
       SET parents_lo = json_extract(NEW.after_ids, '$[0]'), parents_hi = json_extract(NEW.after_ids, '$[#-1]')
     WHERE id = NEW.id AND state = 'waiting' AND json_array_length(NEW.after_ids) > 1
       AND json_extract(NEW.after_ids, '$[#-1]') - json_extract(NEW.after_ids, '$[0]') + 1
           = json_array_length(NEW.after_ids)
       AND NOT EXISTS (SELECT 1 FROM __alkstore_dead d
                        WHERE d.id BETWEEN json_extract(NEW.after_ids, '$[0]') AND json_extract(NEW.after_ids, '$[#-1]'))
       AND NOT EXISTS (SELECT 1 FROM __alkstore_jobs p
                        WHERE p.id BETWEEN json_extract(NEW.after_ids, '$[0]') AND json_extract(NEW.after_ids, '$[#-1]')
                          AND p.sole_child IS NOT NEW.id);
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

-- A parent stops being sole (a second child linked to it, its move to
-- dead by 0016's trigger on the dead row, or a redriven child counting it
-- again): its former sole child, if it has a run, is counted again, the
-- parent still live and among the run's rows. Only statements that set
-- sole_child fire this (the link, the death, the redrive's relink), never a
-- claim or an ack.
CREATE TRIGGER __alkstore_jobs_sole_lost AFTER UPDATE OF sole_child ON __alkstore_jobs
WHEN OLD.sole_child IS NOT NULL AND NEW.sole_child IS NOT OLD.sole_child
BEGIN
    UPDATE __alkstore_jobs
       SET parents_left = (SELECT count(*) FROM __alkstore_jobs p
             WHERE p.id BETWEEN __alkstore_jobs.parents_lo AND __alkstore_jobs.parents_hi),
           parents_lo = NULL, parents_hi = NULL
     WHERE id = OLD.sole_child AND +state = 'waiting' AND parents_lo IS NOT NULL;
END;

-- The failure rule's first step: the run children of the parent `id`,
-- which has left the live table cancelled (a death has counted them again
-- already, above), are counted again, the parent among them (the rule's
-- decrement, or kill, follows). A cancel keeps the parent's sole_child.
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

-- 0014's failure rule, counting again first.
DROP TRIGGER IF EXISTS __alkstore_job_left_failed;
CREATE TRIGGER __alkstore_job_left_failed INSTEAD OF INSERT ON __alkstore_job_left
WHEN NEW.has_children = 1 AND (NEW.state = 'cancelled'
    OR EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id))
BEGIN
    INSERT INTO __alkstore_parent_counted (id) VALUES (NEW.id);
    INSERT INTO __alkstore_job_failed (id) VALUES (NEW.id);
END;
