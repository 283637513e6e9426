-- 0002: TTL locks (SPEC §10), schedules (§8) and streams (§9); the same
-- tables as SQLite's migration 0002, in the engine-owned schema.

-- One lease per name; the scheduler's leadership lock is a row here too.
CREATE TABLE __SCHEMA__.locks (
    name       text   PRIMARY KEY,
    owner      text   NOT NULL,
    expires_at bigint NOT NULL
);

CREATE TABLE __SCHEMA__.schedules (
    name         text    PRIMARY KEY,
    spec         text    NOT NULL,
    interval_s   bigint  NOT NULL,
    queue        text    NOT NULL,
    -- JSON text enqueued on each fire (text, never jsonb: byte-identical).
    payload      text    NOT NULL,
    priority     integer NOT NULL,
    max_attempts bigint,
    expires_s    bigint,
    next_fire_at bigint  NOT NULL
);
-- The runner's "what is due" and "when is the next one".
CREATE INDEX schedules_due ON __SCHEMA__.schedules (next_fire_at);

-- Events: (stream, seq) is the event's offset within its stream.
CREATE TABLE __SCHEMA__.stream_events (
    stream       text   NOT NULL,
    seq          bigint NOT NULL,
    key          text,
    payload      text   NOT NULL,
    published_at bigint NOT NULL,
    PRIMARY KEY (stream, seq)
);
-- The last offset handed out per stream. Publishers take it with a row lock
-- held to commit, which is what makes offsets follow commit order.
CREATE TABLE __SCHEMA__.stream_heads (
    stream   text   PRIMARY KEY,
    last_seq bigint NOT NULL
);
-- Saved consumer positions.
CREATE TABLE __SCHEMA__.stream_offsets (
    stream   text   NOT NULL,
    consumer text   NOT NULL,
    seq      bigint NOT NULL,
    PRIMARY KEY (stream, consumer)
);
