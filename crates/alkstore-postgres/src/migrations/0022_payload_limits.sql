-- 0022: the SQL enqueue function meets core's payload limits (ADR 0003's
-- revision, issue 44): arrays and objects nested at most 500 deep, integers
-- of at most 4,300 digits, no number that reads as an infinite float. The
-- function accepted anything jsonb takes, and a Worker could not decode it.
-- Same signature: the function is replaced in place.
__ENQUEUE_FUNCTION__
