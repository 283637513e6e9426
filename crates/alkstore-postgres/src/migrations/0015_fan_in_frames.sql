-- 0015: nothing on Postgres.
--
-- On SQLite this migration rearranges the triggers a workflow row's departure
-- runs, so a fan-in parent's ack allocates fewer and smaller trigger frames
-- (ADR 0029). Postgres settles in one plpgsql function (0014). The number is
-- kept so both engines' schema versions name the same set of features.
SELECT 1;
