-- 0018: nothing on Postgres.
--
-- On SQLite this migration puts a queue's pending and processing rows in one
-- index, so a claim and its ack write two index pages instead of three.
-- Postgres writes a new tuple version per update whatever its indexes, and
-- its partial ready and leased indexes stay as they are. The number is kept
-- so both engines' schema versions name the same set of features.
SELECT 1;
