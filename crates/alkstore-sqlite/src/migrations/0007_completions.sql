-- 0007: acks per queue per minute, for the dashboard's completion chart
-- (SPEC §19, ADR 0020). Each process adds its in-memory count every few
-- seconds; rows older than a day are dropped by the next write.
CREATE TABLE IF NOT EXISTS __alkstore_completions (
    queue  TEXT    NOT NULL,
    minute INTEGER NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (queue, minute)
) WITHOUT ROWID;
