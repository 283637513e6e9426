-- 0002: pending rows by ready time alone, so a waiter can find the earliest
-- future run_at of a queue with one seek (the ready index orders by priority
-- first and cannot answer that without scanning every scheduled row).
CREATE INDEX IF NOT EXISTS __alkstore_jobs_due
    ON __alkstore_jobs (queue, run_at) WHERE state = 'pending';
