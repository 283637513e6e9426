-- 0019: nothing on Postgres.
--
-- On SQLite this migration lets a child whose parents are a run of ids
-- learn of its release by a probe of the run instead of a count written by
-- every parent's ack (ADR 0029). Postgres's fan-in parent ack is within the
-- SPEC's cost with the count (0017). The number is kept so both engines'
-- schema versions name the same set of features.
SELECT 1;
