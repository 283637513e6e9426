-- 0007: acks per queue per minute, for the dashboard's completion chart
-- (SPEC §19, ADR 0020). Each process adds its in-memory count every few
-- seconds; rows older than a day are dropped by the next write.
CREATE TABLE __SCHEMA__.completions (
    queue  text   NOT NULL,
    minute bigint NOT NULL,
    n      bigint NOT NULL,
    PRIMARY KEY (queue, minute)
);
