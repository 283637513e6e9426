-- 0013: a workflow job inserted and linked by one statement (SPEC §25, ADR 0029).
--
-- `enqueue(after=…, conn=…)` runs one statement on the application's own
-- connection, which may be in autocommit: the child must never be seen
-- pending before its edges exist. SQLite has no data-modifying CTEs, so the
-- statement inserts into this view and the INSTEAD OF trigger below does the
-- insert and the linking for each row; the statement's RETURNING still hands
-- back the ids. The store's own enqueue of workflow jobs inserts through the
-- same view, so the linking rules are written once, here.
--
-- The view has no rows; its columns are what an insert supplies. after_ids
-- is the parents as a JSON array (NULL: none), on_failure is NULL without
-- parents.
CREATE VIEW IF NOT EXISTS __alkstore_jobs_linked AS
SELECT id, queue, payload, priority, max_attempts, visibility_timeout_s, backoff_base_s, dead_retention_s,
       enqueued_at, run_at, expires_at, unique_key, group_key, keep_result_s, on_failure, NULL AS after_ids
  FROM __alkstore_jobs WHERE 0;

-- In order: the row; one edge per parent (a parent not live — acked, dead or
-- cancelled — has settled already); the live parents learn they have
-- children, so their ack and their death look at the edges; the child counts
-- its unsettled parents and waits while any is left; and with on_failure
-- 'cancel', a child of a dead parent is born dead, naming the lowest such
-- parent, as if it had been waiting when the parent died.
CREATE TRIGGER IF NOT EXISTS __alkstore_jobs_link INSTEAD OF INSERT ON __alkstore_jobs_linked
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
    UPDATE __alkstore_jobs SET has_children = 1
     WHERE id IN (SELECT parent_id FROM __alkstore_edges WHERE child_id = NEW.id AND settled = 0)
       AND has_children = 0;
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
