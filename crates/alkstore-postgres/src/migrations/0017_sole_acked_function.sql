-- 0017: a sole child's decrement is a function only a parent's ack calls
-- (ADR 0029, issue 27).
--
-- 0016 put the decrement in a CTE of every ack statement: an UPDATE that,
-- for a plain job, touches no row but still opens the jobs table and its
-- indexes for writing. Server log of a 3,000-job drain: the plain ack's
-- execution went from 51 to 63 µs (median). Now the ack's RETURNING calls
-- this only where the deleted row names a sole child, so a plain ack is
-- again the DELETE alone.
CREATE FUNCTION __SCHEMA__.sole_acked(child bigint) RETURNS text
LANGUAGE plpgsql
AS $fn$
DECLARE
    released text;
BEGIN
    UPDATE __SCHEMA__.jobs
       SET parents_left = parents_left - 1,
           state = CASE WHEN parents_left = 1 THEN 'pending' ELSE 'waiting' END
     WHERE id = child AND state = 'waiting'
    RETURNING CASE WHEN state = 'pending' THEN queue END INTO released;
    IF released IS NOT NULL THEN
        PERFORM pg_notify('__CHANNEL__', released);
    END IF;
    RETURN released;
END
$fn$;
