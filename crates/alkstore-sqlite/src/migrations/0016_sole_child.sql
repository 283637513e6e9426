-- 0016: a parent of one child counts it down by key, on its own path
-- (ADR 0029, issue 27).
--
-- A fan-in parent's ack entered 0014/0015's general path: the view's three
-- INSTEAD OF programs, a probe of the dead table (was this delete a move to
-- dead?), and three reads of the parent's edges (its child, that there is
-- no second, that there are not two) before the decrement. Now a parent
-- linked to exactly one child names it (sole_child), and its ack is one
-- trigger that hands the child's id to a one-statement program: the
-- decrement by primary key. So:
--
-- sole_child  the one child counting this parent; NULL when it has none,
--             several, or may have an edge it no longer counts (a parent
--             back from dead keeps NULL: the dead table has no such column,
--             and its edges were settled when it died). NULL always means
--             the general path, so a row of an older version works.
--
-- The sole path is for a 'processing' row, the one state an ack deletes.
-- A move to dead writes the dead row before it deletes the live one, so a
-- parent's dead row clears its sole_child first: its delete then takes the
-- general path, which sees the death.
ALTER TABLE __alkstore_jobs ADD COLUMN sole_child INTEGER;

-- 0013's link, marking a parent's first child as its sole child and a
-- second as none.
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

-- 0014's dispatch, leaving a processing parent with a sole child to the
-- trigger below (it still hands such a row over when it is a child too,
-- as a child only).
DROP TRIGGER IF EXISTS __alkstore_jobs_left;
CREATE TRIGGER __alkstore_jobs_left AFTER DELETE ON __alkstore_jobs
WHEN (OLD.has_children = 1 AND (OLD.sole_child IS NULL OR OLD.state <> 'processing'))
    OR OLD.parents_left IS NOT NULL
BEGIN
    INSERT INTO __alkstore_job_left (id, state, has_children, parents_left)
    VALUES (OLD.id, OLD.state, OLD.has_children = 1 AND (OLD.sole_child IS NULL OR OLD.state <> 'processing'),
        OLD.parents_left);
END;

-- A processing parent with a sole child left: acked. A one-value program
-- (every row that leaves runs it), its decrement a level down.
CREATE VIEW __alkstore_sole_acked (id) AS SELECT NULL WHERE 0;

CREATE TRIGGER __alkstore_jobs_sole_acked AFTER DELETE ON __alkstore_jobs
WHEN OLD.sole_child IS NOT NULL AND OLD.state = 'processing'
BEGIN
    INSERT INTO __alkstore_sole_acked (id) VALUES (OLD.sole_child);
END;

-- The release at zero is 0015's trigger on the decrement.
CREATE TRIGGER __alkstore_sole_acked_settle INSTEAD OF INSERT ON __alkstore_sole_acked
BEGIN
    UPDATE __alkstore_jobs SET parents_left = parents_left - 1 WHERE id = NEW.id AND +state = 'waiting';
END;

-- A parent's move to dead: its live row, deleted next, is no longer sole.
CREATE TRIGGER __alkstore_dead_parent_died AFTER INSERT ON __alkstore_dead
WHEN NEW.has_children = 1
BEGIN
    UPDATE __alkstore_jobs SET sole_child = NULL WHERE id = NEW.id AND sole_child IS NOT NULL;
END;
