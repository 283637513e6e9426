-- 0016: nothing on SQLite.
--
-- On Postgres this migration lets a parent of one child be acked without a
-- trigger: the ack statement decrements the child itself (ADR 0029). SQLite
-- settles children in trigger programs inside the deleting statement
-- (0014, 0015), where there is no per-statement planner or SPI to save.
-- The number is kept so both engines' schema versions name the same set of
-- features.
SELECT 1;
