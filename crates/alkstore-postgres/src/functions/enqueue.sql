-- The enqueue as a SQL function (SPEC §17), for producers in any language
-- and for triggers: it runs in the caller's transaction, so the job exists
-- exactly when that transaction commits.
--
-- This is the function's current definition: the baseline (ADR 0037)
-- writes it in through the __ENQUEUE_FUNCTION__ placeholder (migrate.rs),
-- and a later migration that changes it writes it in again (CREATE OR
-- REPLACE; a new argument list is a new function to Postgres, so such a
-- migration drops the old signature first).
--
-- The bounds are core's, written in when the migration is applied
-- (migrate.rs renders __MAX_NAME_CHARS__, __RESERVED_PREFIX__,
-- __MAX_DURATION_S__, __MAX_PAYLOAD_BYTES__ and the payload limits from
-- alkstore-core), and the messages read as the Store's, naming the SQL
-- argument (the payload limits' messages are rendered from core too). A bad
-- argument raises SQLSTATE 22023 (invalid_parameter_value) before anything
-- is written. The payload bound is the default `max_payload_bytes`: the
-- function cannot know what a particular handle was opened with.
-- The notification is the one every enqueue sends on the store's channel
-- (__CHANNEL__), so LISTENing workers wake when the caller commits.
CREATE OR REPLACE FUNCTION __SCHEMA__.enqueue(
    queue text,
    payload jsonb,
    delay_s bigint DEFAULT 0,
    priority integer DEFAULT 0,
    max_attempts bigint DEFAULT 3,
    expires_s bigint DEFAULT NULL,
    visibility_timeout_s bigint DEFAULT 300,
    backoff_base_s double precision DEFAULT 5,
    unique_key text DEFAULT NULL,
    group_key text DEFAULT NULL,
    after bigint[] DEFAULT NULL,
    on_failure text DEFAULT 'cancel',
    keep_result_s bigint DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql
AS $fn$
-- The arguments share the columns' names; in the INSERT's conflict clause
-- a name means the column.
#variable_conflict use_column
DECLARE
    body text;
    t bigint;
    big numeric;
    new_id bigint;
    parents bigint[];
    issued bigint;
BEGIN
    IF queue IS NULL OR queue = '' THEN
        RAISE EXCEPTION 'invalid queue name: must not be empty' USING ERRCODE = '22023';
    END IF;
    IF char_length(queue) > __MAX_NAME_CHARS__ THEN
        RAISE EXCEPTION 'invalid queue name: must be at most __MAX_NAME_CHARS__ characters' USING ERRCODE = '22023';
    END IF;
    IF starts_with(queue, '__RESERVED_PREFIX__') THEN
        RAISE EXCEPTION 'invalid queue name: the prefix ''__RESERVED_PREFIX__'' is reserved' USING ERRCODE = '22023';
    END IF;
    IF payload IS NULL THEN
        RAISE EXCEPTION 'payload must not be NULL (JSON null is ''null''::jsonb)' USING ERRCODE = '22023';
    END IF;
    body := payload::text;
    IF octet_length(body) > __MAX_PAYLOAD_BYTES__ THEN
        RAISE EXCEPTION 'payload is % bytes of JSON, over max_payload_bytes=__MAX_PAYLOAD_BYTES__', octet_length(body)
            USING ERRCODE = '22023';
    END IF;
    -- Core's payload limits (rules::payload), met by the text stored, `body`:
    -- jsonb writes every number in plain notation, so one without a
    -- fraction (scale 0) is an integer literal, which Python's int() reads,
    -- and one with a fraction is read by float(). The walks are jsonb's own,
    -- in C, and stop at the depth limit.
    IF jsonb_path_exists(payload,
        'strict $.**{__MAX_PAYLOAD_DEPTH__} ? (@.type() == "array" || @.type() == "object")') THEN
        RAISE EXCEPTION __PAYLOAD_TOO_DEEP__ USING ERRCODE = '22023';
    END IF;
    -- Every number a limit refuses is at least the float limit in magnitude:
    -- only those are looked at, the first in the text's order.
    SELECT n::numeric INTO big
        FROM jsonb_path_query(payload,
            'strict $.** ? (@.type() == "number" && (@ >= __FLOAT_OVERFLOW__ || @ <= -__FLOAT_OVERFLOW__))') AS n
        WHERE scale(n::numeric) > 0 OR abs(n::numeric) >= 1e__MAX_INT_DIGITS__
        LIMIT 1;
    IF scale(big) > 0 THEN
        RAISE EXCEPTION __PAYLOAD_FLOAT_OVERFLOW__ USING ERRCODE = '22023';
    ELSIF big IS NOT NULL THEN
        RAISE EXCEPTION __PAYLOAD_LONG_INT__, length(abs(big)::text) USING ERRCODE = '22023';
    END IF;
    IF delay_s IS NULL OR delay_s < 0 THEN
        RAISE EXCEPTION 'delay_s must be >= 0 seconds, got %', coalesce(delay_s::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF delay_s > __MAX_DURATION_S__ THEN
        RAISE EXCEPTION 'delay_s must be at most __MAX_DURATION_S__ seconds (100 years), got %', delay_s
            USING ERRCODE = '22023';
    END IF;
    IF priority IS NULL THEN
        RAISE EXCEPTION 'priority must not be NULL' USING ERRCODE = '22023';
    END IF;
    IF max_attempts IS NULL OR max_attempts < 1 THEN
        RAISE EXCEPTION 'max_attempts must be >= 1, got %', coalesce(max_attempts::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF expires_s < 0 THEN
        RAISE EXCEPTION 'expires_s must be >= 0 seconds, got %', expires_s USING ERRCODE = '22023';
    END IF;
    IF expires_s > __MAX_DURATION_S__ THEN
        RAISE EXCEPTION 'expires_s must be at most __MAX_DURATION_S__ seconds (100 years), got %', expires_s
            USING ERRCODE = '22023';
    END IF;
    IF visibility_timeout_s IS NULL OR visibility_timeout_s < 1 THEN
        RAISE EXCEPTION 'visibility_timeout_s must be >= 1, got %', coalesce(visibility_timeout_s::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF visibility_timeout_s > __MAX_DURATION_S__ THEN
        RAISE EXCEPTION 'visibility_timeout_s must be at most __MAX_DURATION_S__ seconds (100 years), got %',
            visibility_timeout_s USING ERRCODE = '22023';
    END IF;
    IF backoff_base_s IS NULL OR backoff_base_s < 0 OR backoff_base_s = 'NaN'::float8
        OR backoff_base_s = 'Infinity'::float8 THEN
        RAISE EXCEPTION 'backoff_base_s must be a finite number of seconds >= 0, got %',
            coalesce(backoff_base_s::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF backoff_base_s > __MAX_DURATION_S__ THEN
        RAISE EXCEPTION 'backoff_base_s must be at most __MAX_DURATION_S__ seconds (100 years), got %', backoff_base_s
            USING ERRCODE = '22023';
    END IF;
    IF unique_key IS NOT NULL AND (char_length(unique_key) < 1 OR char_length(unique_key) > __MAX_UNIQUE_KEY_CHARS__) THEN
        RAISE EXCEPTION 'unique_key must be 1-__MAX_UNIQUE_KEY_CHARS__ characters, got %', char_length(unique_key)
            USING ERRCODE = '22023';
    END IF;

    IF group_key IS NOT NULL AND (char_length(group_key) < 1 OR char_length(group_key) > __MAX_UNIQUE_KEY_CHARS__) THEN
        RAISE EXCEPTION 'group_key must be 1-__MAX_UNIQUE_KEY_CHARS__ characters, got %', char_length(group_key)
            USING ERRCODE = '22023';
    END IF;

    IF on_failure IS NULL OR on_failure NOT IN ('cancel', 'run') THEN
        RAISE EXCEPTION 'on_failure must be "cancel" or "run", got %', coalesce(on_failure, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF keep_result_s < 0 OR keep_result_s > __MAX_DURATION_S__ THEN
        RAISE EXCEPTION 'keep_result must be 0 to __MAX_DURATION_S__ seconds, got %', keep_result_s
            USING ERRCODE = '22023';
    END IF;
    IF cardinality(after) > 0 THEN
        IF unique_key IS NOT NULL THEN
            RAISE EXCEPTION 'after cannot be combined with unique_key' USING ERRCODE = '22023';
        END IF;
        SELECT array_agg(DISTINCT a ORDER BY a) INTO parents FROM unnest(after) AS a;
        IF parents[1] IS NULL OR parents[1] < 1 THEN
            RAISE EXCEPTION 'after: % is not a job id (ids are >= 1)', coalesce(parents[1]::text, 'NULL')
                USING ERRCODE = '22023';
        END IF;
        -- An id above the identity's last value was never issued (SPEC §25).
        SELECT CASE WHEN s.is_called THEN s.last_value ELSE 0 END INTO issued FROM __SCHEMA__.jobs_id_seq s;
        IF parents[cardinality(parents)] > issued THEN
            RAISE EXCEPTION 'after: job % was never issued by this store',
                (SELECT min(a) FROM unnest(parents) AS a WHERE a > issued) USING ERRCODE = '22023';
        END IF;
    END IF;

    -- The engine's clock, as every statement of the engine reads it.
    t := floor(extract(epoch FROM clock_timestamp()))::bigint;
    -- A live key returns the live job's id (SPEC §18): the no-op update makes
    -- RETURNING hand back that row, waiting for it if it is not committed yet.
    INSERT INTO __SCHEMA__.jobs AS j (queue, state, payload, priority, attempts, max_attempts, claim_token,
        visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at, unique_key, group_key)
    VALUES (queue, 'pending', body, priority, 0, max_attempts, 0,
        visibility_timeout_s, backoff_base_s, NULL, t, t + delay_s, t + expires_s, unique_key, group_key)
    ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO UPDATE SET unique_key = excluded.unique_key
    RETURNING j.id INTO new_id;
    IF parents IS NOT NULL OR keep_result_s IS NOT NULL THEN
        PERFORM __SCHEMA__.link(new_id, parents, CASE WHEN parents IS NULL THEN NULL ELSE on_failure END,
            keep_result_s, t);
    END IF;
    INSERT INTO __SCHEMA__.queues (queue, seen_at) VALUES (queue, t) ON CONFLICT DO NOTHING;
    PERFORM pg_notify('__CHANNEL__', queue);
    RETURN new_id;
END
$fn$;
