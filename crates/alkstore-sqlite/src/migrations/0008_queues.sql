-- 0008: every queue that has ever had a job. `store.queues()`, `stats`
-- and `/metrics` list a queue from here, so a queue whose jobs are all
-- acked keeps reporting zeros instead of vanishing (an absent series is
-- what a Prometheus alert cannot tell from a dead exporter). A trigger
-- fills it, so every way a job is inserted — the store's statements, the
-- caller's own connection (`conn=`), redrive — registers its queue; the
-- WHEN clause makes that one primary-key probe per insert once the queue
-- is known.
CREATE TABLE IF NOT EXISTS __alkstore_queues (
    queue   TEXT    PRIMARY KEY,
    seen_at INTEGER NOT NULL
) WITHOUT ROWID;

INSERT OR IGNORE INTO __alkstore_queues (queue, seen_at)
    SELECT queue, min(enqueued_at) FROM (
        SELECT queue, enqueued_at FROM __alkstore_jobs
        UNION ALL SELECT queue, enqueued_at FROM __alkstore_dead
    ) GROUP BY queue;

CREATE TRIGGER IF NOT EXISTS __alkstore_jobs_queue_seen AFTER INSERT ON __alkstore_jobs
WHEN NOT EXISTS (SELECT 1 FROM __alkstore_queues WHERE queue = NEW.queue)
BEGIN
    INSERT OR IGNORE INTO __alkstore_queues (queue, seen_at) VALUES (NEW.queue, NEW.enqueued_at);
END;
