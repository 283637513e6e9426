-- 0014: a fan-in parent's ack reads its edges once (ADR 0029, issue 27).
--
-- 0012's ack trigger ran two statements per parent: the decrement, then a
-- second walk of the same edges and children to release the one brought to
-- zero (one statement setting both would rewrite the waiting index's page
-- on every ack, since an UPDATE that sets `state` rewrites the partial
-- indexes on it even to the same value). Here the ack's trigger only
-- decrements, and the release is a trigger on that decrement: its WHEN
-- reads the updated row, so every parent but the last pays a comparison
-- instead of a second walk, and the last one sets `state` by primary key.
-- The other statements that set parents_left set `state` with it (waiting
-- exactly while parents_left > 0), so this trigger never fires for them.
DROP TRIGGER IF EXISTS __alkstore_jobs_parent_acked;
CREATE TRIGGER __alkstore_jobs_parent_acked AFTER DELETE ON __alkstore_jobs
WHEN OLD.has_children = 1 AND OLD.state <> 'cancelled'
    AND NOT EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = OLD.id)
BEGIN
    UPDATE __alkstore_jobs SET parents_left = parents_left - 1
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = OLD.id AND settled = 0)
       AND +state = 'waiting';
END;

CREATE TRIGGER __alkstore_jobs_child_released AFTER UPDATE OF parents_left ON __alkstore_jobs
WHEN NEW.parents_left = 0 AND NEW.state = 'waiting'
BEGIN
    UPDATE __alkstore_jobs SET state = 'pending' WHERE id = NEW.id;
END;
