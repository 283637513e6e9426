-- 0017: nothing on SQLite.
--
-- On Postgres this migration moves a sole child's decrement (0016) into a
-- function only a parent's ack calls. SQLite's sole path is a trigger
-- program already (0016). The number is kept so both engines' schema
-- versions name the same set of features.
SELECT 1;
