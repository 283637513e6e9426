-- 0020: a death settles every descendant it reaches in one trigger program,
-- not one nested trigger per generation (ADR 0029, issue 43).
--
-- Up to 0019 a 'cancel' child killed by its parent's death left the live
-- table by a DELETE inside the failure rule, whose own trigger then killed
-- its children: three trigger levels per generation, so a chain of about
-- 350 jobs reached SQLite's trigger depth limit (1000) and its head's
-- fail() raised "triggers nested too deep". The claim's exhaustion step
-- raised the same, so once the head's lease lapsed no claim of its queue
-- could succeed. Now the failure rule walks the descendants first (a
-- recursive query over the unsettled edges, through waiting 'cancel'
-- children), writes their dead rows, counts down the 'run' children of all
-- of them, settles all their edges, and only then deletes them: each
-- deleted row's own triggers find nothing left to settle, so nothing nests
-- further, whatever the depth.
--
-- A descendant's last_error names its own parent and the cause at the top:
-- `parent job <its parent> died: parent job <root> died: <error>` (or `…
-- was cancelled`), one line however deep the chain (up to 0019 each
-- generation prefixed another `parent job N died: `, so the messages of a
-- long chain grew with its depth). A child of the dying job itself reads
-- `parent job <root> died: <error>`, as before.

-- The descendants one failure settles, while its trigger program runs:
-- `root` the job whose death or cancel is being settled, `via` the parent
-- the descendant's message names (the root when it is a parent, else its
-- lowest parent among the doomed). Empty outside a trigger program.
CREATE TABLE __alkstore_doomed (
    root INTEGER NOT NULL,
    id   INTEGER NOT NULL,
    via  INTEGER NOT NULL,
    PRIMARY KEY (root, id)
) WITHOUT ROWID;

-- The failure rule now takes the message and the instant from whoever calls
-- it: a live row that left dead or cancelled, or a dead parent purged while a
-- redriven child still counted it.
DROP TRIGGER __alkstore_job_left_failed;
DROP TRIGGER __alkstore_job_failed_settle;
DROP TRIGGER __alkstore_dead_parent_left;
DROP VIEW __alkstore_job_failed;
CREATE VIEW __alkstore_job_failed (id, why, at) AS SELECT NULL, NULL, NULL WHERE 0;

CREATE TRIGGER __alkstore_job_failed_settle INSTEAD OF INSERT ON __alkstore_job_failed
BEGIN
    -- The doomed: every waiting 'cancel' job reached from the root through
    -- unsettled edges (UNION: a job reached twice is walked once).
    INSERT INTO __alkstore_doomed (root, id, via)
    SELECT NEW.id, id, NEW.id FROM (
        WITH RECURSIVE down(id) AS (
            SELECT e.child_id FROM __alkstore_edges e JOIN __alkstore_jobs c ON c.id = e.child_id
             WHERE e.parent_id = NEW.id AND e.settled = 0 AND +c.state = 'waiting' AND c.on_failure = 'cancel'
            UNION
            SELECT e.child_id FROM down JOIN __alkstore_edges e ON e.parent_id = down.id
              JOIN __alkstore_jobs c ON c.id = e.child_id
             WHERE e.settled = 0 AND +c.state = 'waiting' AND c.on_failure = 'cancel')
        SELECT id FROM down);
    -- A doomed job that is not the root's child names its lowest doomed
    -- parent (by the child's edges, each probed in the doomed table's key).
    UPDATE __alkstore_doomed
       SET via = (SELECT min(e.parent_id) FROM __alkstore_edges e
                   WHERE e.child_id = __alkstore_doomed.id AND e.settled = 0
                     AND EXISTS (SELECT 1 FROM __alkstore_doomed p WHERE p.root = NEW.id AND p.id = e.parent_id))
     WHERE root = NEW.id
       AND NOT EXISTS (SELECT 1 FROM __alkstore_edges e
                        WHERE e.parent_id = NEW.id AND e.child_id = __alkstore_doomed.id AND e.settled = 0);
    -- Their dead rows. (Each insert clears the row's sole_child, whose
    -- trigger, 0019, counts a run child of it again: the count below then
    -- takes this parent off.)
    INSERT INTO __alkstore_dead (id, queue, state, payload, priority, attempts, max_attempts, claim_token,
        visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
        worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
        last_error, died_at, purge_at)
    SELECT c.id, c.queue, 'dead', c.payload, c.priority, c.attempts, c.max_attempts, c.claim_token,
        c.visibility_timeout_s, c.backoff_base_s, c.dead_retention_s, c.enqueued_at, c.run_at, c.claimed_at,
        c.deadline, c.worker_id, c.expires_at, c.unique_key, c.group_key, c.parents_left, c.on_failure,
        c.keep_result_s, c.has_children,
        CASE WHEN d.via = NEW.id THEN NEW.why ELSE 'parent job ' || d.via || ' died: ' || NEW.why END,
        NEW.at, NEW.at + c.dead_retention_s
      FROM __alkstore_doomed d JOIN __alkstore_jobs c ON c.id = d.id
     WHERE d.root = NEW.id AND NOT EXISTS (SELECT 1 FROM __alkstore_dead x WHERE x.id = c.id);
    -- 'run' children of the root and of the doomed count each of those
    -- parents as settled: pending at zero.
    UPDATE __alkstore_jobs
       SET parents_left = parents_left - k.n,
           state = CASE WHEN parents_left = k.n THEN 'pending' ELSE 'waiting' END
      FROM (SELECT e.child_id AS id, count(*) AS n FROM __alkstore_edges e
             WHERE e.parent_id IN (SELECT NEW.id UNION ALL SELECT id FROM __alkstore_doomed WHERE root = NEW.id)
               AND e.settled = 0
             GROUP BY e.child_id) AS k
     WHERE __alkstore_jobs.id = k.id AND +__alkstore_jobs.state = 'waiting' AND __alkstore_jobs.on_failure = 'run';
    -- Every edge of the root and of the doomed is settled, so a redriven
    -- parent's later ack does not count for these children again, and the
    -- doomed rows' own triggers, as they leave below, find nothing to do.
    UPDATE __alkstore_edges SET settled = 1
     WHERE parent_id IN (SELECT NEW.id UNION ALL SELECT id FROM __alkstore_doomed WHERE root = NEW.id)
       AND settled = 0;
    DELETE FROM __alkstore_jobs
     WHERE id IN (SELECT id FROM __alkstore_doomed WHERE root = NEW.id)
       AND +state = 'waiting' AND EXISTS (SELECT 1 FROM __alkstore_dead x WHERE x.id = __alkstore_jobs.id);
    DELETE FROM __alkstore_doomed WHERE root = NEW.id;
END;

-- 0019's entry to the failure rule, naming the cause.
CREATE TRIGGER __alkstore_job_left_failed INSTEAD OF INSERT ON __alkstore_job_left
WHEN NEW.has_children = 1 AND (NEW.state = 'cancelled'
    OR EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id))
BEGIN
    INSERT INTO __alkstore_parent_counted (id) VALUES (NEW.id);
    INSERT INTO __alkstore_job_failed (id, why, at)
    SELECT NEW.id, 'parent job ' || NEW.id || coalesce(' died: ' || p.last_error, ' was cancelled'),
           coalesce(p.died_at, unixepoch())
      FROM (SELECT 1) LEFT JOIN __alkstore_dead p ON p.id = NEW.id;
END;

-- 0012's purge of a dead parent that a redriven child counts again: the
-- same rule (a parent back from dead is never in a run, so nothing to count
-- again first).
CREATE TRIGGER __alkstore_dead_parent_left AFTER DELETE ON __alkstore_dead
WHEN OLD.has_children = 1 AND NOT EXISTS (SELECT 1 FROM __alkstore_jobs WHERE id = OLD.id)
BEGIN
    INSERT INTO __alkstore_job_failed (id, why, at)
    VALUES (OLD.id, 'parent job ' || OLD.id || ' died: ' || OLD.last_error, unixepoch());
END;
