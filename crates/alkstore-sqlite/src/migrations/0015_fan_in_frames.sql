-- 0015: a fan-in parent's ack enters smaller trigger programs (ADR 0029,
-- issue 27). Same rules, same moments; only which program holds which
-- statement changes.
--
-- SQLite evaluates a trigger's WHEN inside the trigger's own program, after
-- it has allocated and zeroed a frame sized for the whole body (callgrind:
-- 16,500 of the 45,800 instructions a fan-in parent's ack cost more than a
-- plain one went to zeroing frames). 0014's parent ack entered programs with
-- an UPDATE of jobs in them (a frame for a whole row, old and new) three
-- times: the acked rule itself, the fan-out step behind a WHEN counting a
-- second child, and the release trigger behind a WHEN that is false for
-- every parent but the last; and the child-cleanup rule's two DELETEs behind
-- a WHEN false for a parent. Now every rule whose WHEN decides sits in a
-- one-value program that inserts into a view, and the body runs a level down
-- only when the WHEN held, as 0014 did for the failure path. (A conditional
-- `INSERT INTO view SELECT … WHERE` instead would build an ephemeral table for
-- every such insert, which measured worse than the frames.)
DROP TRIGGER IF EXISTS __alkstore_job_left_acked;
DROP TRIGGER IF EXISTS __alkstore_job_left_child;
DROP TRIGGER IF EXISTS __alkstore_job_acked_many_settle;
DROP TRIGGER IF EXISTS __alkstore_jobs_child_released;

CREATE VIEW __alkstore_parent_acked (id) AS SELECT NULL WHERE 0;
CREATE VIEW __alkstore_child_left (id) AS SELECT NULL WHERE 0;
CREATE VIEW __alkstore_fan_out (id) AS SELECT NULL WHERE 0;
CREATE VIEW __alkstore_child_released (id) AS SELECT NULL WHERE 0;

-- Acked (0012's rule; 0014's statements), a level down.
CREATE TRIGGER __alkstore_job_left_acked INSTEAD OF INSERT ON __alkstore_job_left
WHEN NEW.has_children = 1 AND NEW.state <> 'cancelled'
    AND NOT EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id)
BEGIN
    INSERT INTO __alkstore_parent_acked (id) VALUES (NEW.id);
END;

-- The one child still counting this parent (each parent of a fan-in), by
-- key; several (a fan-out) a level down.
CREATE TRIGGER __alkstore_parent_acked_settle INSTEAD OF INSERT ON __alkstore_parent_acked
BEGIN
    UPDATE __alkstore_jobs SET parents_left = parents_left - 1
     WHERE id = (SELECT child_id FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0
                  ORDER BY child_id LIMIT 1)
       AND +state = 'waiting'
       AND NOT EXISTS (SELECT 1 FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0
                        AND child_id > __alkstore_jobs.id);
    INSERT INTO __alkstore_job_acked_many (id) VALUES (NEW.id);
END;

CREATE TRIGGER __alkstore_job_acked_many_settle INSTEAD OF INSERT ON __alkstore_job_acked_many
WHEN (SELECT count(*) FROM (SELECT 1 FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0 LIMIT 2)) = 2
BEGIN
    INSERT INTO __alkstore_fan_out (id) VALUES (NEW.id);
END;

CREATE TRIGGER __alkstore_fan_out_settle INSTEAD OF INSERT ON __alkstore_fan_out
BEGIN
    UPDATE __alkstore_jobs SET parents_left = parents_left - 1
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0)
       AND +state = 'waiting';
END;

-- A child leaves for good: 0012's cleanup of its edges and results, a level down.
CREATE TRIGGER __alkstore_job_left_child INSTEAD OF INSERT ON __alkstore_job_left
WHEN NEW.parents_left IS NOT NULL AND NOT EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id)
BEGIN
    INSERT INTO __alkstore_child_left (id) VALUES (NEW.id);
END;

CREATE TRIGGER __alkstore_child_left_cleanup INSTEAD OF INSERT ON __alkstore_child_left
BEGIN
    DELETE FROM __alkstore_results
     WHERE expires_at IS NULL
       AND id IN (SELECT parent_id FROM __alkstore_edges WHERE child_id = NEW.id)
       AND NOT EXISTS (SELECT 1 FROM __alkstore_edges e
                        WHERE e.parent_id = __alkstore_results.id AND e.child_id <> NEW.id);
    DELETE FROM __alkstore_edges WHERE child_id = NEW.id;
END;

-- The release (0014's rule): the decrement that reaches zero, its UPDATE a
-- level down, so every other decrement allocates a one-value frame only.
CREATE TRIGGER __alkstore_jobs_child_released AFTER UPDATE OF parents_left ON __alkstore_jobs
WHEN NEW.parents_left = 0 AND NEW.state = 'waiting'
BEGIN
    INSERT INTO __alkstore_child_released (id) VALUES (NEW.id);
END;

CREATE TRIGGER __alkstore_child_released_pending INSTEAD OF INSERT ON __alkstore_child_released
BEGIN
    UPDATE __alkstore_jobs SET state = 'pending' WHERE id = NEW.id;
END;
