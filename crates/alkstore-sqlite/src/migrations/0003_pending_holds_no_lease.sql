-- 0003: a pending job holds no lease (SPEC §4.4).
--
-- Up to version 2, retry and release left the last claim's worker_id and
-- deadline on the row they sent back to pending, so reads showed a pending
-- job as leased. They now clear both (claimed_at stays as the last claim's
-- time); this clears what older versions left behind, so every pending row
-- reads the same. Data only: no table or index changes.
UPDATE __alkstore_jobs SET worker_id = NULL, deadline = NULL
WHERE state = 'pending' AND (worker_id IS NOT NULL OR deadline IS NOT NULL);
