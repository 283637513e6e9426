-- 0004: the enqueue as a SQL function (SPEC §17). Its definition lives in
-- functions/enqueue.sql, written in here by migrate.rs; 0006 writes it
-- again, so stores that ran this before unique keys existed get the body
-- that honours them.
__ENQUEUE_FUNCTION__
