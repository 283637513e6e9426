-- 0008: every queue that has ever had a job. `store.queues()`, `stats`
-- and `/metrics` list a queue from here, so a queue whose jobs are all
-- acked keeps reporting zeros instead of vanishing (an absent series is
-- what a Prometheus alert cannot tell from a dead exporter). Every enqueue
-- statement registers its queue in a CTE (`INSERT … ON CONFLICT DO
-- NOTHING`: an index probe and no write once the queue is known), and so
-- does the enqueue function, appended below in its new text.
CREATE TABLE __SCHEMA__.queues (
    queue   text   PRIMARY KEY,
    seen_at bigint NOT NULL
);

INSERT INTO __SCHEMA__.queues (queue, seen_at)
    SELECT queue, min(enqueued_at) FROM (
        SELECT queue, enqueued_at FROM __SCHEMA__.jobs
        UNION ALL SELECT queue, enqueued_at FROM __SCHEMA__.dead
    ) q GROUP BY queue
ON CONFLICT DO NOTHING;

__ENQUEUE_FUNCTION__
