-- 0011: nothing on SQLite.
--
-- On Postgres this migration adds `jobs.slot`, the concurrency slot a job of
-- a limited queue holds (ADR 0028, "Slots"): there, claimers of one limited
-- queue take slots under advisory locks side by side. SQLite's claims of a
-- limited queue already run one at a time under the file's one writer and
-- count the processing rows, so it needs no slot. The number is kept so both
-- engines' schema versions name the same set of features.
SELECT 1;
