-- 0013: nothing on Postgres.
--
-- On SQLite this migration adds the view through which a workflow job is
-- inserted and linked by one statement (ADR 0029): Postgres does that with
-- data-modifying CTEs already (0012). The number is kept so both engines'
-- schema versions name the same set of features.
SELECT 1;
