-- 0002: TTL locks (SPEC §10), schedules (§8) and streams (§9).

-- One lease per name; the scheduler's leadership lock is a row here too.
CREATE TABLE IF NOT EXISTS __alkstore_locks (
    name       TEXT    PRIMARY KEY,
    owner      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS __alkstore_scheduler_tasks (
    name         TEXT    PRIMARY KEY,
    spec         TEXT    NOT NULL,
    interval_s   INTEGER NOT NULL,
    queue        TEXT    NOT NULL,
    -- JSON text enqueued on each fire.
    payload      TEXT    NOT NULL,
    priority     INTEGER NOT NULL,
    max_attempts INTEGER,
    expires_s    INTEGER,
    next_fire_at INTEGER NOT NULL
) WITHOUT ROWID;
-- The runner's "what is due" and "when is the next one".
CREATE INDEX IF NOT EXISTS __alkstore_scheduler_due ON __alkstore_scheduler_tasks (next_fire_at);

-- Events: (stream, seq) is the event's offset within its stream.
CREATE TABLE IF NOT EXISTS __alkstore_stream_events (
    stream       TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    key          TEXT,
    payload      TEXT    NOT NULL,
    published_at INTEGER NOT NULL,
    PRIMARY KEY (stream, seq)
) WITHOUT ROWID;
-- The last offset handed out per stream, so offsets are never reused after a trim.
CREATE TABLE IF NOT EXISTS __alkstore_stream_heads (
    stream   TEXT    PRIMARY KEY,
    last_seq INTEGER NOT NULL
) WITHOUT ROWID;
-- Saved consumer positions.
CREATE TABLE IF NOT EXISTS __alkstore_stream_offsets (
    stream   TEXT    NOT NULL,
    consumer TEXT    NOT NULL,
    seq      INTEGER NOT NULL,
    PRIMARY KEY (stream, consumer)
) WITHOUT ROWID;
