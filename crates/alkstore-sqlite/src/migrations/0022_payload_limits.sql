-- 0022: nothing on SQLite.
--
-- On Postgres this migration writes the SQL enqueue function again, with
-- core's payload limits (nesting, integer digits, floats that would read
-- as infinity; ADR 0003's revision). SQLite has no such function: every
-- enqueue there goes through the Store's checks. The number is kept so
-- both engines' schema versions name the same set of features.
SELECT 1;
