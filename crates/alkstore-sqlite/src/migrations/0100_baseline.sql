-- The store's schema on SQLite, version 100: the baseline of alkstore 1.0
-- (ADR 0037). Every table, index, view and trigger once, as it reads today.
-- Versions 1-99 were pre-release builds, whose files are refused at open.
--
-- Names carry the __alkstore_ prefix: SQLite's names are file-wide and the
-- application's own tables may share the file (SPEC §16). The meta table
-- (schema_version, store_id) is made by the migration runner before any
-- migration, since the version must be readable first.
--
-- Times are Unix seconds (INTEGER) unless a column says otherwise.

-- The store's identity (ADR 0015): a statement run on the application's own
-- connection checks that it reaches this store and not another file with
-- alkstore's tables.
INSERT OR IGNORE INTO __alkstore_meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))));

---------------------------------------------------------------------------
-- Ids (ADR 0001)
---------------------------------------------------------------------------

-- Ids are never reused, not even after the highest row is deleted, so a
-- stale handle can never act on another job. SQLite's AUTOINCREMENT would
-- guarantee it by writing sqlite_sequence on every insert (one more page per
-- commit: about 20% of a per-op enqueue). Instead the high-water mark is
-- written only when the row holding the highest id leaves the table (ack,
-- cancel, move to dead), and an enqueue takes max(highest live id,
-- high-water mark) + 1.
CREATE TABLE __alkstore_ids (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    hwm INTEGER NOT NULL
);
INSERT INTO __alkstore_ids (one, hwm) VALUES (1, 0);

---------------------------------------------------------------------------
-- Jobs (SPEC §4, ADR 0001)
---------------------------------------------------------------------------

-- Every live job: pending, scheduled (pending with a later run_at),
-- processing, or waiting for parents. An ack deletes the row; a move to dead
-- copies it to __alkstore_dead and deletes it. The column order is the
-- record's: the claim's and the ack's columns come first, so they decode
-- without reading past the rest.
CREATE TABLE __alkstore_jobs (
    id                   INTEGER PRIMARY KEY,
    queue                TEXT    NOT NULL,
    -- 'pending', 'processing', 'waiting' (a 'cancelled' mark lives only
    -- between a cancel's two statements).
    state                TEXT    NOT NULL,
    -- JSON text, kept byte-for-byte (key order included).
    payload              TEXT    NOT NULL,
    priority             INTEGER NOT NULL,
    attempts             INTEGER NOT NULL,
    max_attempts         INTEGER NOT NULL,
    -- Fencing token: +1 per claim, never refunded.
    claim_token          INTEGER NOT NULL,
    -- The queue's options, stamped on each job at enqueue (SPEC §4).
    visibility_timeout_s INTEGER NOT NULL,
    backoff_base_s       REAL    NOT NULL,
    dead_retention_s     INTEGER,
    enqueued_at          INTEGER NOT NULL,
    run_at               INTEGER NOT NULL,
    -- The last claim's time: kept when the job goes back to pending.
    claimed_at           INTEGER,
    -- The lease: set only while processing (a pending row holds none, SPEC
    -- §4.4; the ready scans seek deadline IS NULL).
    deadline             INTEGER,
    worker_id            TEXT,
    expires_at           INTEGER,
    -- At most one live row per (queue, unique_key) (SPEC §18, ADR 0016).
    unique_key           TEXT,
    -- What a queue's group_concurrency limits (SPEC §24, ADR 0028).
    group_key            TEXT,
    -- Workflows (SPEC §25, ADR 0029):
    -- parents_left   NULL: no parents; else the parents not yet settled for it
    --                (not kept up to date while parents_lo is set).
    parents_left         INTEGER,
    -- on_failure     'cancel' or 'run' (NULL: no parents).
    on_failure           TEXT,
    -- keep_result_s  how long an ack's result is kept (NULL: only while a
    --                child names the job).
    keep_result_s        INTEGER,
    -- has_children   1 once some job waits (or waited) for it, so the ack of
    --                a job without children never reads the edges.
    has_children         INTEGER NOT NULL DEFAULT 0,
    -- sole_child     the one child counting this parent, whose ack then counts
    --                it down by key; NULL when it has none, several, or may
    --                have an edge it no longer counts (a parent back from dead).
    sole_child           INTEGER,
    -- parents_lo, parents_hi: the child's parents are every id of this run
    --                (each live, or acked before; none dead), so "is any parent
    --                left?" is one seek of the primary key over the run and the
    --                parents' acks write nothing here; NULL: the count is kept.
    parents_lo           INTEGER,
    parents_hi           INTEGER,
    -- The latest failed attempt's error (a retry's, or a lapsed lease's),
    -- shown while the job is live (SPEC §30). The plain claim and ack
    -- never read or write it.
    last_error           TEXT
);

-- One index for every live row of a queue (ADR 0033), keyed (queue, state
-- DESC, deadline, priority DESC, run_at, id): a queue's waiting rows, then
-- its processing rows in deadline order, which end where its pending rows
-- begin, in claim order. A claim
-- takes the head of the pending run and puts the row at the tail of the
-- processing run — the newest lease has the latest deadline — on the same
-- leaf page, and the ack deletes it from there: two index pages per job.
-- A pending row's deadline is NULL, so the ready scans seek (queue,
-- 'pending', NULL) in claim order; the lapsed-lease probe seeks (queue,
-- 'processing', deadline < now); `stats` counts the waiting run.
CREATE INDEX __alkstore_jobs_ready
    ON __alkstore_jobs (queue, state DESC, deadline, priority DESC, run_at, id);
-- The expiry sweep.
CREATE INDEX __alkstore_jobs_expiring
    ON __alkstore_jobs (queue, expires_at) WHERE expires_at IS NOT NULL;
-- Live rows are exactly this table's rows, so the key needs no state
-- predicate, and it is free again once its job is acked, cancelled or dead.
CREATE UNIQUE INDEX __alkstore_jobs_unique
    ON __alkstore_jobs (queue, unique_key) WHERE unique_key IS NOT NULL;
-- Counting a group's processing rows is a seek here.
CREATE INDEX __alkstore_jobs_group_running
    ON __alkstore_jobs (queue, group_key) WHERE state = 'processing' AND group_key IS NOT NULL;

CREATE TRIGGER __alkstore_jobs_keep_hwm
AFTER DELETE ON __alkstore_jobs
WHEN NOT EXISTS (SELECT 1 FROM __alkstore_jobs WHERE id > old.id)
BEGIN
    UPDATE __alkstore_ids SET hwm = max(hwm, old.id) WHERE one = 1;
END;

---------------------------------------------------------------------------
-- Dead letters (SPEC §4.5)
---------------------------------------------------------------------------

-- A dead job keeps every field of its live row (for requeue_dead), and why
-- it died.
CREATE TABLE __alkstore_dead (
    -- The live row's id, moved, never regenerated.
    id                   INTEGER PRIMARY KEY,
    queue                TEXT    NOT NULL,
    state                TEXT    NOT NULL,
    payload              TEXT    NOT NULL,
    priority             INTEGER NOT NULL,
    attempts             INTEGER NOT NULL,
    max_attempts         INTEGER NOT NULL,
    claim_token          INTEGER NOT NULL,
    visibility_timeout_s INTEGER NOT NULL,
    backoff_base_s       REAL    NOT NULL,
    dead_retention_s     INTEGER,
    enqueued_at          INTEGER NOT NULL,
    run_at               INTEGER NOT NULL,
    claimed_at           INTEGER,
    deadline             INTEGER,
    worker_id            TEXT,
    expires_at           INTEGER,
    -- Why it died: a fail's error, 'attempts exhausted', 'expired', or the
    -- parent whose death killed it.
    last_error           TEXT    NOT NULL,
    died_at              INTEGER NOT NULL,
    -- died_at + dead_retention_s; NULL keeps the row forever.
    purge_at             INTEGER,
    unique_key           TEXT,
    group_key            TEXT,
    parents_left         INTEGER,
    on_failure           TEXT,
    keep_result_s        INTEGER,
    has_children         INTEGER NOT NULL DEFAULT 0
);
-- dead_jobs paging, get_job, stats.
CREATE INDEX __alkstore_dead_queue ON __alkstore_dead (queue, id);
-- The retention purge.
CREATE INDEX __alkstore_dead_purge
    ON __alkstore_dead (queue, purge_at) WHERE purge_at IS NOT NULL;

---------------------------------------------------------------------------
-- Queues (SPEC §18, §19, §24)
---------------------------------------------------------------------------

-- Every queue that has had a job: `store.queues()`, `stats` and `/metrics`
-- list a queue from here, so a queue whose jobs are all acked keeps
-- reporting zeros instead of vanishing (an absent series is what a
-- Prometheus alert cannot tell from a dead exporter), until it is forgotten
-- (`forget_queue`). A trigger fills it, so every way a job is inserted —
-- the store's statements, the application's connection (`conn=`), a
-- redrive — registers its queue; its WHEN is one primary-key probe per
-- insert once the queue is known.
CREATE TABLE __alkstore_queues (
    queue   TEXT    PRIMARY KEY,
    seen_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER __alkstore_jobs_queue_seen AFTER INSERT ON __alkstore_jobs
WHEN NOT EXISTS (SELECT 1 FROM __alkstore_queues WHERE queue = NEW.queue)
BEGIN
    INSERT OR IGNORE INTO __alkstore_queues (queue, seen_at) VALUES (NEW.queue, NEW.enqueued_at);
END;

-- A paused queue is a row here; the claim statements probe it by key.
CREATE TABLE __alkstore_paused (
    queue     TEXT    PRIMARY KEY,
    paused_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Acks per queue per minute, for the dashboard's completion chart (ADR
-- 0020). Each process adds its in-memory count every few seconds; rows
-- older than a day are dropped by the next write.
CREATE TABLE __alkstore_completions (
    queue  TEXT    NOT NULL,
    minute INTEGER NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (queue, minute)
) WITHOUT ROWID;

-- A limited queue is a row here (ADR 0028); the one-statement claim probes
-- it by key, as it probes __alkstore_paused, and leaves a limited queue to
-- the limited claim. NULL: no limit of that kind.
CREATE TABLE __alkstore_limits (
    queue             TEXT    PRIMARY KEY,
    concurrency       INTEGER,
    rate_count        INTEGER,
    rate_period_s     REAL,
    group_concurrency INTEGER
) WITHOUT ROWID;

-- The claims of rate-limited queues: when (Unix seconds with a fraction)
-- and how many. The limited claim sums the rows inside the window and drops
-- older ones.
CREATE TABLE __alkstore_rate_log (
    queue TEXT    NOT NULL,
    at    REAL    NOT NULL,
    n     INTEGER NOT NULL
);
CREATE INDEX __alkstore_rate_log_at ON __alkstore_rate_log (queue, at);

---------------------------------------------------------------------------
-- Locks, schedules and streams (SPEC §8, §9, §10, §23)
---------------------------------------------------------------------------

-- One lease per name; the scheduler's leadership lock is a row here too.
CREATE TABLE __alkstore_locks (
    name       TEXT    PRIMARY KEY,
    owner      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE __alkstore_scheduler_tasks (
    name         TEXT    PRIMARY KEY,
    spec         TEXT    NOT NULL,
    interval_s   INTEGER NOT NULL,
    queue        TEXT    NOT NULL,
    -- JSON text enqueued on each fire.
    payload      TEXT    NOT NULL,
    priority     INTEGER NOT NULL,
    max_attempts INTEGER,
    expires_s    INTEGER,
    next_fire_at INTEGER NOT NULL,
    -- The zone a cron spec is read in, and the key core derives from the
    -- spec and zone: re-registering an equal key keeps the next fire (ADR 0027).
    tz           TEXT    NOT NULL DEFAULT 'UTC',
    spec_key     TEXT    NOT NULL DEFAULT ''
) WITHOUT ROWID;
-- The runner's "what is due" and "when is the next one".
CREATE INDEX __alkstore_scheduler_due ON __alkstore_scheduler_tasks (next_fire_at);

-- Events: (stream, seq) is the event's offset within its stream.
CREATE TABLE __alkstore_stream_events (
    stream       TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    key          TEXT,
    payload      TEXT    NOT NULL,
    published_at INTEGER NOT NULL,
    PRIMARY KEY (stream, seq)
) WITHOUT ROWID;
-- The last offset handed out per stream, so offsets are never reused after
-- a trim.
CREATE TABLE __alkstore_stream_heads (
    stream   TEXT    PRIMARY KEY,
    last_seq INTEGER NOT NULL
) WITHOUT ROWID;
-- Saved consumer positions.
CREATE TABLE __alkstore_stream_offsets (
    stream   TEXT    NOT NULL,
    consumer TEXT    NOT NULL,
    seq      INTEGER NOT NULL,
    PRIMARY KEY (stream, consumer)
) WITHOUT ROWID;

-- An event written with an offset past its stream's head moves the head
-- there, in the same statement (ADR 0015). `publish` on alkstore's own
-- connection moves the head first, so this never fires for it; a publish on
-- the application's connection must be one statement, and SQLite has no
-- data-modifying CTEs, so there the head follows the event.
CREATE TRIGGER __alkstore_stream_head_follows
AFTER INSERT ON __alkstore_stream_events
WHEN NEW.seq > coalesce((SELECT last_seq FROM __alkstore_stream_heads WHERE stream = NEW.stream), 0)
BEGIN
    INSERT OR REPLACE INTO __alkstore_stream_heads (stream, last_seq) VALUES (NEW.stream, NEW.seq);
END;

---------------------------------------------------------------------------
-- Workflows: edges and results (SPEC §25, ADR 0029)
---------------------------------------------------------------------------

-- One row per (parent, child). settled: 1 once the parent no longer counts
-- for this child — it was gone when the child was linked, or it died or was
-- cancelled since. An acked parent's edges keep 0: its id is never live
-- again, so nothing counts them. Edges stay until the child leaves for good
-- (acked, cancelled, or its dead row purged): they name its parents for
-- `parent_results` and the dashboard, and keep their results.
CREATE TABLE __alkstore_edges (
    parent_id INTEGER NOT NULL,
    child_id  INTEGER NOT NULL,
    settled   INTEGER NOT NULL,
    PRIMARY KEY (parent_id, child_id)
) WITHOUT ROWID;
CREATE INDEX __alkstore_edges_child ON __alkstore_edges (child_id, parent_id);

-- Acked jobs' results. expires_at NULL: kept while a child names the job
-- (the edges say so), then deleted with the last child's edges.
CREATE TABLE __alkstore_results (
    id          INTEGER PRIMARY KEY,
    queue       TEXT    NOT NULL,
    value       TEXT,
    finished_at INTEGER NOT NULL,
    expires_at  INTEGER
);
CREATE INDEX __alkstore_results_expiring
    ON __alkstore_results (queue, expires_at) WHERE expires_at IS NOT NULL;

-- The descendants one failure settles, while its trigger program runs:
-- `root` the job whose death or cancel is settled, `via` the parent the
-- descendant's message names. Empty outside a trigger program (a trigger
-- has no variables).
CREATE TABLE __alkstore_doomed (
    root INTEGER NOT NULL,
    id   INTEGER NOT NULL,
    via  INTEGER NOT NULL,
    PRIMARY KEY (root, id)
) WITHOUT ROWID;

---------------------------------------------------------------------------
-- Workflows: the rules, as triggers
---------------------------------------------------------------------------
--
-- What happens to a job's children when it leaves the live table is decided
-- here, so every path that removes a job — the claim's exhaustion step
-- included — settles them without a statement of its own, and a plain job
-- never reaches the edges. How the row left decides: a move to dead (fail, a
-- retry at budget, exhaustion, expiry, the limited claim's burial) writes
-- the dead row first, and `cancel` marks the row 'cancelled' before it
-- deletes it; any other delete is an ack.
--
-- The shape is set by cost, measured with callgrind (ADR 0029): SQLite
-- evaluates a trigger's WHEN inside the trigger's own program, after it has
-- allocated and zeroed a frame sized for the whole body. So every rule whose
-- WHEN decides sits in a one-value program that inserts into an empty view
-- (`… (id) AS SELECT NULL WHERE 0`), and its body runs a level down, in the
-- view's INSTEAD OF trigger, only when the WHEN held; a plain job's ack
-- runs only one-value programs. (A conditional `INSERT INTO view SELECT …
-- WHERE` instead builds an ephemeral table for every such insert: worse.)
-- The children are found through the parent's edges and read by primary
-- key: `+state` keeps the planner from walking every waiting row of the
-- store instead (ops/plans.rs checks each statement's plan).

-- A job is inserted and linked by one statement (`enqueue(after=…)`, also
-- on the application's connection, which may be in autocommit: a child must
-- never be seen pending before its edges exist). SQLite has no
-- data-modifying CTEs, so the statement inserts into this view and the
-- trigger inserts and links each row; the statement's RETURNING hands back
-- the ids. The view's columns are what an insert supplies: after_ids is the
-- parents as a JSON array, sorted and distinct (NULL: none), on_failure is
-- NULL without parents.
CREATE VIEW __alkstore_jobs_linked AS
SELECT id, queue, payload, priority, max_attempts, visibility_timeout_s, backoff_base_s, dead_retention_s,
       enqueued_at, run_at, expires_at, unique_key, group_key, keep_result_s, on_failure, NULL AS after_ids
  FROM __alkstore_jobs WHERE 0;

-- The rows a leaving job hands to the rules below, and the levels they run.
CREATE VIEW __alkstore_job_left (id, state, has_children, parents_left) AS
    SELECT NULL, NULL, NULL, NULL WHERE 0;
CREATE VIEW __alkstore_job_acked_many (id) AS SELECT NULL WHERE 0;
CREATE VIEW __alkstore_parent_acked (id) AS SELECT NULL WHERE 0;
CREATE VIEW __alkstore_child_left (id) AS SELECT NULL WHERE 0;
CREATE VIEW __alkstore_fan_out (id) AS SELECT NULL WHERE 0;
CREATE VIEW __alkstore_child_released (id) AS SELECT NULL WHERE 0;
CREATE VIEW __alkstore_sole_acked (id) AS SELECT NULL WHERE 0;
CREATE VIEW __alkstore_parent_counted (id) AS SELECT NULL WHERE 0;
CREATE VIEW __alkstore_job_failed (id, why, at) AS SELECT NULL, NULL, NULL WHERE 0;

-- A child (or a fan-in) is purged from dead letters, not redriven: its
-- edges go, and with them the results its parents kept only for it.
CREATE TRIGGER __alkstore_dead_child_left AFTER DELETE ON __alkstore_dead
WHEN OLD.parents_left IS NOT NULL AND NOT EXISTS (SELECT 1 FROM __alkstore_jobs WHERE id = OLD.id)
BEGIN
    DELETE FROM __alkstore_results
     WHERE expires_at IS NULL
       AND id IN (SELECT parent_id FROM __alkstore_edges WHERE child_id = OLD.id)
       AND NOT EXISTS (SELECT 1 FROM __alkstore_edges e
                        WHERE e.parent_id = __alkstore_results.id AND e.child_id <> OLD.id);
    DELETE FROM __alkstore_edges WHERE child_id = OLD.id;
END;

-- Acked, by a parent not on the sole path: its children count it down, a
-- level down.
CREATE TRIGGER __alkstore_job_left_acked INSTEAD OF INSERT ON __alkstore_job_left
WHEN NEW.has_children = 1 AND NEW.state <> 'cancelled'
    AND NOT EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id)
BEGIN
    INSERT INTO __alkstore_parent_acked (id) VALUES (NEW.id);
END;

-- The one child still counting this parent, by key (`id IN (SELECT …)`
-- would build an ephemeral table on every such ack); several (a fan-out) a
-- level down. The release at zero is __alkstore_jobs_child_released.
CREATE TRIGGER __alkstore_parent_acked_settle INSTEAD OF INSERT ON __alkstore_parent_acked
BEGIN
    UPDATE __alkstore_jobs SET parents_left = parents_left - 1
     WHERE id = (SELECT child_id FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0
                  ORDER BY child_id LIMIT 1)
       AND +state = 'waiting'
       AND NOT EXISTS (SELECT 1 FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0
                        AND child_id > __alkstore_jobs.id);
    INSERT INTO __alkstore_job_acked_many (id) VALUES (NEW.id);
END;

CREATE TRIGGER __alkstore_job_acked_many_settle INSTEAD OF INSERT ON __alkstore_job_acked_many
WHEN (SELECT count(*) FROM (SELECT 1 FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0 LIMIT 2)) = 2
BEGIN
    INSERT INTO __alkstore_fan_out (id) VALUES (NEW.id);
END;

CREATE TRIGGER __alkstore_fan_out_settle INSTEAD OF INSERT ON __alkstore_fan_out
BEGIN
    UPDATE __alkstore_jobs SET parents_left = parents_left - 1
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0)
       AND +state = 'waiting';
END;

-- A child leaves the live table for good (acked or cancelled; a move to
-- dead keeps it, for requeue_dead): its edges and the results kept only for
-- it go, a level down.
CREATE TRIGGER __alkstore_job_left_child INSTEAD OF INSERT ON __alkstore_job_left
WHEN NEW.parents_left IS NOT NULL AND NOT EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id)
BEGIN
    INSERT INTO __alkstore_child_left (id) VALUES (NEW.id);
END;

CREATE TRIGGER __alkstore_child_left_cleanup INSTEAD OF INSERT ON __alkstore_child_left
BEGIN
    DELETE FROM __alkstore_results
     WHERE expires_at IS NULL
       AND id IN (SELECT parent_id FROM __alkstore_edges WHERE child_id = NEW.id)
       AND NOT EXISTS (SELECT 1 FROM __alkstore_edges e
                        WHERE e.parent_id = __alkstore_results.id AND e.child_id <> NEW.id);
    DELETE FROM __alkstore_edges WHERE child_id = NEW.id;
END;

-- The release: the decrement that reaches zero sets `state` by primary key,
-- a level down, so every other decrement allocates a one-value frame only
-- (an UPDATE that sets `state` rewrites the index on it even to the same
-- value: one more page in every fan-in parent's commit). The other
-- statements that set parents_left set `state` with it (waiting exactly
-- while parents_left > 0), so this never fires for them.
CREATE TRIGGER __alkstore_jobs_child_released AFTER UPDATE OF parents_left ON __alkstore_jobs
WHEN NEW.parents_left = 0 AND NEW.state = 'waiting'
BEGIN
    INSERT INTO __alkstore_child_released (id) VALUES (NEW.id);
END;

CREATE TRIGGER __alkstore_child_released_pending INSTEAD OF INSERT ON __alkstore_child_released
BEGIN
    UPDATE __alkstore_jobs SET state = 'pending' WHERE id = NEW.id;
END;

-- Every row that leaves the live table runs this one-value program: a row
-- in a workflow (a parent, or a child) goes to the rules above. A
-- processing parent with a sole child is left to the sole path below (it
-- is still handed over when it is a child too, as a child only).
CREATE TRIGGER __alkstore_jobs_left AFTER DELETE ON __alkstore_jobs
WHEN (OLD.has_children = 1 AND (OLD.sole_child IS NULL OR OLD.state <> 'processing'))
    OR OLD.parents_left IS NOT NULL
BEGIN
    INSERT INTO __alkstore_job_left (id, state, has_children, parents_left)
    VALUES (OLD.id, OLD.state, OLD.has_children = 1 AND (OLD.sole_child IS NULL OR OLD.state <> 'processing'),
        OLD.parents_left);
END;

-- The sole path: a processing parent with a sole child left, so it was
-- acked (a move to dead clears sole_child first, below). A one-value
-- program, its decrement a level down.
CREATE TRIGGER __alkstore_jobs_sole_acked AFTER DELETE ON __alkstore_jobs
WHEN OLD.sole_child IS NOT NULL AND OLD.state = 'processing'
BEGIN
    INSERT INTO __alkstore_sole_acked (id) VALUES (OLD.sole_child);
END;

-- A parent's move to dead: its live row, deleted next, is no longer sole.
CREATE TRIGGER __alkstore_dead_parent_died AFTER INSERT ON __alkstore_dead
WHEN NEW.has_children = 1
BEGIN
    UPDATE __alkstore_jobs SET sole_child = NULL WHERE id = NEW.id AND sole_child IS NOT NULL;
END;

-- The link, in order: the row; one edge per parent (a parent not live —
-- acked, dead or cancelled — has settled already); the live parents learn
-- they have children (a first child is the sole child, a second makes
-- none); the child counts its unsettled parents and waits while any is
-- left; a waiting child whose parents, two or more, are every id of one run
-- (the first and the last and the length say it), none dead and each live
-- one with this child as its sole child, takes the run; and with
-- on_failure 'cancel', a child of a dead parent is born dead, naming the
-- lowest such parent, as if it had been waiting when the parent died.
CREATE TRIGGER __alkstore_jobs_link INSTEAD OF INSERT ON __alkstore_jobs_linked
BEGIN
    INSERT INTO __alkstore_jobs (id, queue, state, payload, priority, attempts, max_attempts, claim_token,
        visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at, unique_key,
        group_key, keep_result_s, on_failure)
    VALUES (NEW.id, NEW.queue, 'pending', NEW.payload, NEW.priority, 0, NEW.max_attempts, 0,
        NEW.visibility_timeout_s, NEW.backoff_base_s, NEW.dead_retention_s, NEW.enqueued_at, NEW.run_at,
        NEW.expires_at, NEW.unique_key, NEW.group_key, NEW.keep_result_s, NEW.on_failure);
    INSERT INTO __alkstore_edges (parent_id, child_id, settled)
    SELECT p.value, NEW.id, NOT EXISTS (SELECT 1 FROM __alkstore_jobs j WHERE j.id = p.value)
      FROM json_each(NEW.after_ids) AS p WHERE NEW.on_failure IS NOT NULL ON CONFLICT DO NOTHING;
    UPDATE __alkstore_jobs SET has_children = 1, sole_child = CASE WHEN has_children = 0 THEN NEW.id END
     WHERE id IN (SELECT parent_id FROM __alkstore_edges WHERE child_id = NEW.id AND settled = 0)
       AND (has_children = 0 OR sole_child <> NEW.id);
    UPDATE __alkstore_jobs
       SET parents_left = (SELECT count(*) FROM __alkstore_edges WHERE child_id = NEW.id AND settled = 0),
           state = CASE WHEN EXISTS (SELECT 1 FROM __alkstore_edges WHERE child_id = NEW.id AND settled = 0)
                   THEN 'waiting' ELSE 'pending' END
     WHERE id = NEW.id AND NEW.on_failure IS NOT NULL;
    UPDATE __alkstore_jobs
       SET parents_lo = json_extract(NEW.after_ids, '$[0]'), parents_hi = json_extract(NEW.after_ids, '$[#-1]')
     WHERE id = NEW.id AND state = 'waiting' AND json_array_length(NEW.after_ids) > 1
       AND json_extract(NEW.after_ids, '$[#-1]') - json_extract(NEW.after_ids, '$[0]') + 1
           = json_array_length(NEW.after_ids)
       AND NOT EXISTS (SELECT 1 FROM __alkstore_dead d
                        WHERE d.id BETWEEN json_extract(NEW.after_ids, '$[0]') AND json_extract(NEW.after_ids, '$[#-1]'))
       AND NOT EXISTS (SELECT 1 FROM __alkstore_jobs p
                        WHERE p.id BETWEEN json_extract(NEW.after_ids, '$[0]') AND json_extract(NEW.after_ids, '$[#-1]')
                          AND p.sole_child IS NOT NEW.id);
    INSERT INTO __alkstore_dead (id, queue, state, payload, priority, attempts, max_attempts, claim_token,
        visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
        worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
        last_error, died_at, purge_at)
    SELECT c.id, c.queue, 'dead', c.payload, c.priority, c.attempts, c.max_attempts, c.claim_token,
        c.visibility_timeout_s, c.backoff_base_s, c.dead_retention_s, c.enqueued_at, c.run_at, c.claimed_at,
        c.deadline, c.worker_id, c.expires_at, c.unique_key, c.group_key, c.parents_left, c.on_failure,
        c.keep_result_s, c.has_children, 'parent job ' || d.id || ' died: ' || coalesce(d.last_error, ''),
        NEW.enqueued_at, NEW.enqueued_at + c.dead_retention_s
      FROM __alkstore_edges e JOIN __alkstore_dead d ON d.id = e.parent_id JOIN __alkstore_jobs c ON c.id = e.child_id
     WHERE e.child_id = NEW.id AND NEW.on_failure = 'cancel'
     ORDER BY d.id LIMIT 1;
    DELETE FROM __alkstore_jobs
     WHERE id = NEW.id AND NEW.on_failure = 'cancel' AND EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id);
END;

-- The sole path's step: a counted child counts one fewer; a run child is
-- released (parents_left 0, which the release trigger turns into 'pending')
-- when no row of its run is left, and otherwise not written.
CREATE TRIGGER __alkstore_sole_acked_settle INSTEAD OF INSERT ON __alkstore_sole_acked
BEGIN
    UPDATE __alkstore_jobs
       SET parents_left = CASE WHEN parents_lo IS NULL THEN parents_left - 1 ELSE 0 END
     WHERE id = NEW.id AND +state = 'waiting'
       AND (parents_lo IS NULL OR NOT EXISTS (SELECT 1 FROM __alkstore_jobs p
             WHERE p.id BETWEEN __alkstore_jobs.parents_lo AND __alkstore_jobs.parents_hi));
END;

-- A run child stays equal to its count only while each live parent of its
-- run has it as its sole child. Whatever else can happen to such a parent
-- turns the child back into a counted one first (parents_left = the live
-- rows of its run): a second child linked to it, or its move to dead, clears
-- sole_child, and this counts the former sole child again by key, the
-- parent still live. Only statements that set sole_child fire it (the link,
-- the death, a redrive's relink), never a claim or an ack. So a run child
-- never has a dead parent, and a parent back from dead is never in a run.
CREATE TRIGGER __alkstore_jobs_sole_lost AFTER UPDATE OF sole_child ON __alkstore_jobs
WHEN OLD.sole_child IS NOT NULL AND NEW.sole_child IS NOT OLD.sole_child
BEGIN
    UPDATE __alkstore_jobs
       SET parents_left = (SELECT count(*) FROM __alkstore_jobs p
             WHERE p.id BETWEEN __alkstore_jobs.parents_lo AND __alkstore_jobs.parents_hi),
           parents_lo = NULL, parents_hi = NULL
     WHERE id = OLD.sole_child AND +state = 'waiting' AND parents_lo IS NOT NULL;
END;

-- The failure rule's first step: the run children of the parent `id`,
-- which left the live table cancelled (a cancel keeps sole_child; a death
-- has counted them again already, above), are counted again, the parent
-- among them (already deleted, not yet settled).
CREATE TRIGGER __alkstore_parent_counted_recount INSTEAD OF INSERT ON __alkstore_parent_counted
BEGIN
    UPDATE __alkstore_jobs
       SET parents_left = 1 + (SELECT count(*) FROM __alkstore_jobs p
             WHERE p.id BETWEEN __alkstore_jobs.parents_lo AND __alkstore_jobs.parents_hi),
           parents_lo = NULL, parents_hi = NULL
     WHERE id IN (SELECT child_id FROM __alkstore_edges WHERE parent_id = NEW.id AND settled = 0)
       AND +state = 'waiting' AND parents_lo IS NOT NULL;
END;

-- The failure rule: job `id` died or was cancelled (`why` names it, `at` is
-- when). Its descendants are settled set-wise, so a death of any depth is
-- one trigger program and nothing nests further (a chain of 100,000 fails
-- at its head in one call): the walk down the unsettled edges through
-- waiting 'cancel' children first (UNION: a job reached twice is walked
-- once); their dead rows; every 'run' child of the root and of the doomed
-- counts each of them as settled (pending at zero); every edge of theirs is
-- settled, so a redriven parent's later ack does not count for these
-- children again, and the doomed rows' own triggers, as they leave last,
-- find nothing to do. A child of the root reads `why`; a deeper one names
-- its own lowest doomed parent and `why`: `parent job 9 died: parent job 7
-- died: boom`, one line at any depth.
CREATE TRIGGER __alkstore_job_failed_settle INSTEAD OF INSERT ON __alkstore_job_failed
BEGIN
    INSERT INTO __alkstore_doomed (root, id, via)
    SELECT NEW.id, id, NEW.id FROM (
        WITH RECURSIVE down(id) AS (
            SELECT e.child_id FROM __alkstore_edges e JOIN __alkstore_jobs c ON c.id = e.child_id
             WHERE e.parent_id = NEW.id AND e.settled = 0 AND +c.state = 'waiting' AND c.on_failure = 'cancel'
            UNION
            SELECT e.child_id FROM down JOIN __alkstore_edges e ON e.parent_id = down.id
              JOIN __alkstore_jobs c ON c.id = e.child_id
             WHERE e.settled = 0 AND +c.state = 'waiting' AND c.on_failure = 'cancel')
        SELECT id FROM down);
    UPDATE __alkstore_doomed
       SET via = (SELECT min(e.parent_id) FROM __alkstore_edges e
                   WHERE e.child_id = __alkstore_doomed.id AND e.settled = 0
                     AND EXISTS (SELECT 1 FROM __alkstore_doomed p WHERE p.root = NEW.id AND p.id = e.parent_id))
     WHERE root = NEW.id
       AND NOT EXISTS (SELECT 1 FROM __alkstore_edges e
                        WHERE e.parent_id = NEW.id AND e.child_id = __alkstore_doomed.id AND e.settled = 0);
    INSERT INTO __alkstore_dead (id, queue, state, payload, priority, attempts, max_attempts, claim_token,
        visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, deadline,
        worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, has_children,
        last_error, died_at, purge_at)
    SELECT c.id, c.queue, 'dead', c.payload, c.priority, c.attempts, c.max_attempts, c.claim_token,
        c.visibility_timeout_s, c.backoff_base_s, c.dead_retention_s, c.enqueued_at, c.run_at, c.claimed_at,
        c.deadline, c.worker_id, c.expires_at, c.unique_key, c.group_key, c.parents_left, c.on_failure,
        c.keep_result_s, c.has_children,
        CASE WHEN d.via = NEW.id THEN NEW.why ELSE 'parent job ' || d.via || ' died: ' || NEW.why END,
        NEW.at, NEW.at + c.dead_retention_s
      FROM __alkstore_doomed d JOIN __alkstore_jobs c ON c.id = d.id
     WHERE d.root = NEW.id AND NOT EXISTS (SELECT 1 FROM __alkstore_dead x WHERE x.id = c.id);
    UPDATE __alkstore_jobs
       SET parents_left = parents_left - k.n,
           state = CASE WHEN parents_left = k.n THEN 'pending' ELSE 'waiting' END
      FROM (SELECT e.child_id AS id, count(*) AS n FROM __alkstore_edges e
             WHERE e.parent_id IN (SELECT NEW.id UNION ALL SELECT id FROM __alkstore_doomed WHERE root = NEW.id)
               AND e.settled = 0
             GROUP BY e.child_id) AS k
     WHERE __alkstore_jobs.id = k.id AND +__alkstore_jobs.state = 'waiting' AND __alkstore_jobs.on_failure = 'run';
    UPDATE __alkstore_edges SET settled = 1
     WHERE parent_id IN (SELECT NEW.id UNION ALL SELECT id FROM __alkstore_doomed WHERE root = NEW.id)
       AND settled = 0;
    DELETE FROM __alkstore_jobs
     WHERE id IN (SELECT id FROM __alkstore_doomed WHERE root = NEW.id)
       AND +state = 'waiting' AND EXISTS (SELECT 1 FROM __alkstore_dead x WHERE x.id = __alkstore_jobs.id);
    DELETE FROM __alkstore_doomed WHERE root = NEW.id;
END;

-- A parent left dead or cancelled: its run children are counted again, then
-- the failure rule, naming the cause.
CREATE TRIGGER __alkstore_job_left_failed INSTEAD OF INSERT ON __alkstore_job_left
WHEN NEW.has_children = 1 AND (NEW.state = 'cancelled'
    OR EXISTS (SELECT 1 FROM __alkstore_dead WHERE id = NEW.id))
BEGIN
    INSERT INTO __alkstore_parent_counted (id) VALUES (NEW.id);
    INSERT INTO __alkstore_job_failed (id, why, at)
    SELECT NEW.id, 'parent job ' || NEW.id || coalesce(' died: ' || p.last_error, ' was cancelled'),
           coalesce(p.died_at, unixepoch())
      FROM (SELECT 1) LEFT JOIN __alkstore_dead p ON p.id = NEW.id;
END;

-- A dead parent is purged while a child redriven after its death still
-- counts it: the same failure, as the death itself would have been (a
-- parent back from dead is never in a run: nothing to count again first).
CREATE TRIGGER __alkstore_dead_parent_left AFTER DELETE ON __alkstore_dead
WHEN OLD.has_children = 1 AND NOT EXISTS (SELECT 1 FROM __alkstore_jobs WHERE id = OLD.id)
BEGIN
    INSERT INTO __alkstore_job_failed (id, why, at)
    VALUES (OLD.id, 'parent job ' || OLD.id || ' died: ' || OLD.last_error, unixepoch());
END;
