//! The engine's statement text, one statement per operation (ADR 0001).
//!
//! Statements are built once per store at open with the quoted schema
//! formatted in, then prepared per connection through the pool's statement
//! cache: each hot operation is one Bind/Execute round trip. Every statement
//! that needs the clock reads it once, in a `MATERIALIZED` CTE, because
//! `clock_timestamp()` is volatile and would otherwise be re-read per row.
//! Parameter `$1` is always the handle's clock offset when the statement has
//! a clock.

/// The database clock in whole Unix seconds plus the offset parameter `$1`.
pub(crate) const NOW: &str =
    "WITH n AS MATERIALIZED (SELECT floor(extract(epoch FROM clock_timestamp()))::bigint + $1::bigint AS t)";

/// Columns a dead row copies from the live row, in table order.
const LIVE_COLS: &str = "id, queue, state, payload, priority, attempts, max_attempts, claim_token, \
                         visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, \
                         claimed_at, deadline, worker_id, expires_at";

/// [`LIVE_COLS`] as the SELECT side of a move to dead: the stored state
/// becomes 'dead' (as on SQLite); every other field is kept as it was.
const DEAD_SELECT: &str = "id, queue, 'dead', payload, priority, attempts, max_attempts, claim_token, \
                           visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, \
                           claimed_at, deadline, worker_id, expires_at";

/// What a claim hands out, in the order [`crate::rows::claimed`] reads it.
const CLAIMED_COLS: &str = "j.id, j.queue, j.payload, j.attempts, j.max_attempts, j.priority, j.worker_id, \
                            j.claim_token, j.enqueued_at, j.run_at, j.claimed_at, j.deadline, j.expires_at, \
                            j.visibility_timeout_s, j.backoff_base_s";

/// A job view without `state`, `last_error`, `died_at`, in the order
/// [`crate::rows::job`] reads it (those three are added per table).
const VIEW_COLS: &str = "id, queue, payload, priority, attempts, max_attempts, enqueued_at, run_at, \
                         claimed_at, deadline, worker_id, expires_at";

/// The validity predicate of every handle op (SPEC §4.3): `$2` id, `$3`
/// worker, `$4` claim token.
const VALID: &str = "id = $2::bigint AND state = 'processing' AND worker_id = $3::text \
                     AND claim_token = $4::bigint AND deadline >= (SELECT t FROM n)";

/// `died_at` and `purge_at` of a row moving to dead.
const DEAD_VALUES: &str = "(SELECT t FROM n), (SELECT t FROM n) + dead_retention_s";

/// Every statement of one store, schema-qualified.
#[derive(Debug, Clone)]
pub struct Statements {
    /// One job: `$2` queue, `$3` payload, `$4` priority, `$5` max_attempts,
    /// `$6` visibility timeout, `$7` backoff base, `$8` retention, `$9`
    /// absolute run_at or NULL, `$10` delay, `$11` expires_s or NULL.
    pub enqueue_one: String,
    /// Many jobs from parallel arrays, ids returned in input order by `ord`.
    pub enqueue_many: String,
    /// The claim of one job, its bound a literal: with `LIMIT $4` the
    /// planner assumes a large limit for the generic plan, keeps choosing a
    /// custom plan, and re-plans this big statement on every call.
    pub claim_one: String,
    /// The claim of up to `$4` jobs (planned per call; the cost is shared
    /// by the batch).
    pub claim: String,
    /// One handle deleted.
    pub ack_one: String,
    /// Many handles deleted from parallel arrays.
    pub ack_many: String,
    /// Back to pending at `now + $5`.
    pub retry: String,
    /// Move a valid handle's row to dead with `last_error = $5`.
    pub kill: String,
    /// `deadline := now + $5`, returning it.
    pub heartbeat: String,
    /// Back to pending now, attempt refunded.
    pub release: String,
    /// Delete a live row of a queue: `$1` id, `$2` queue.
    pub cancel: String,
    /// A live or dead row of a queue: `$1` id, `$2` queue.
    pub get_job: String,
    /// Dead rows newest first: `$1` queue, `$2` exclusive upper id, `$3` limit.
    pub dead_jobs: String,
    /// The four counts and the oldest ready age.
    pub stats: String,
    /// Live rows newest first: `$1` queue, `$2` exclusive upper id, `$3` limit (ADR 0007).
    pub live_jobs: String,
    /// Every queue name with a live or dead row, sorted (ADR 0007).
    pub queue_names: String,
    /// Expired rows to dead, retention purge; returns (expired, purged).
    pub sweep: String,
    /// The earliest future instant `$2`'s queue gains claimable work without a commit.
    pub next_wake: String,
    /// The clock.
    pub now: String,
    /// TTL locks (SPEC §10).
    pub locks: crate::ops::locks::LockSql,
    /// Schedules (SPEC §8).
    pub schedules: crate::ops::schedules::ScheduleSql,
}

/// `schema` quoted as an identifier. The name is validated at open (ASCII
/// letters, digits, `_`), so this only guards against a future relaxation.
pub fn quote_ident(schema: &str) -> String {
    format!("\"{}\"", schema.replace('"', "\"\""))
}

impl Statements {
    /// The statements for the engine-owned `schema` (unquoted).
    pub fn new(schema: &str) -> Self {
        let s = quote_ident(schema);
        // The channel is ASCII letters, digits and `_` (from the validated
        // schema name), so it is safe inside a string literal.
        let channel = crate::wake::channel(schema);
        let notify = format!("pg_notify('{channel}', queue)");
        let into_dead = format!("INSERT INTO {s}.dead ({LIVE_COLS}, last_error, died_at, purge_at)");
        Statements {
            enqueue_one: format!(
                "{NOW} INSERT INTO {s}.jobs (queue, state, payload, priority, attempts, max_attempts, claim_token, \
                 visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at) \
                 SELECT $2::text, 'pending', $3::text, $4::int, 0, $5::bigint, 0, $6::bigint, $7::float8, $8::bigint, \
                 n.t, coalesce($9::bigint, n.t + $10::bigint), n.t + $11::bigint FROM n RETURNING id, {notify}"
            ),
            enqueue_many: format!(
                "{NOW} INSERT INTO {s}.jobs (queue, state, payload, priority, attempts, max_attempts, claim_token, \
                 visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at) \
                 SELECT $2::text, 'pending', u.payload, u.priority, 0, u.max_attempts, 0, $3::bigint, $4::float8, \
                 $5::bigint, n.t, coalesce(u.run_at, n.t + u.delay), n.t + u.expires_s \
                 FROM n, unnest($6::text[], $7::int[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[]) \
                 WITH ORDINALITY AS u(payload, priority, max_attempts, run_at, delay, expires_s, ord) \
                 ORDER BY u.ord RETURNING id, {notify}"
            ),
            claim_one: claim(&s, "1"),
            claim: claim(&s, "$4::bigint"),
            ack_one: format!("{NOW} DELETE FROM {s}.jobs WHERE {VALID}"),
            // Duplicate handles in one batch join the same row; DELETE counts it once.
            ack_many: format!(
                "{NOW} DELETE FROM {s}.jobs j \
                 USING unnest($2::bigint[], $3::text[], $4::bigint[]) AS h(id, worker_id, claim_token) \
                 WHERE j.id = h.id AND j.state = 'processing' AND j.worker_id = h.worker_id \
                   AND j.claim_token = h.claim_token AND j.deadline >= (SELECT t FROM n)"
            ),
            // A pending job holds no lease (SPEC §4.4): worker_id and deadline
            // are cleared, claimed_at stays as the last claim's time, and the
            // claim token alone fences off the old handle. Only a retry that
            // is ready at once wakes waiters; a delayed one is found through
            // next_wake.
            retry: format!(
                "{NOW} UPDATE {s}.jobs SET state = 'pending', run_at = (SELECT t FROM n) + $5::bigint, \
                 worker_id = NULL, deadline = NULL WHERE {VALID} \
                 RETURNING CASE WHEN $5::bigint <= 0 THEN {notify} END"
            ),
            // One statement: the DELETE and the INSERT commit together, also
            // inside a caller's transaction, so no savepoint is needed.
            kill: format!(
                "{NOW}, moved AS (DELETE FROM {s}.jobs WHERE {VALID} RETURNING *) \
                 {into_dead} SELECT {DEAD_SELECT}, $5::text, {DEAD_VALUES} FROM moved"
            ),
            heartbeat: format!(
                "{NOW} UPDATE {s}.jobs SET deadline = (SELECT t FROM n) + $5::bigint WHERE {VALID} RETURNING deadline"
            ),
            // Cleared like a retry's; the claim token is not refunded.
            release: format!(
                "{NOW} UPDATE {s}.jobs SET state = 'pending', run_at = (SELECT t FROM n), attempts = attempts - 1, \
                 worker_id = NULL, deadline = NULL WHERE {VALID} RETURNING {notify}"
            ),
            cancel: format!("DELETE FROM {s}.jobs WHERE id = $1::bigint AND queue = $2::text"),
            // One statement, one snapshot: a row moving to dead is seen in
            // exactly one of the two tables.
            get_job: format!(
                "SELECT {VIEW_COLS}, state, NULL::text AS last_error, NULL::bigint AS died_at \
                 FROM {s}.jobs WHERE id = $1::bigint AND queue = $2::text \
                 UNION ALL \
                 SELECT {VIEW_COLS}, 'dead', last_error, died_at \
                 FROM {s}.dead WHERE id = $1::bigint AND queue = $2::text"
            ),
            dead_jobs: format!(
                "SELECT {VIEW_COLS}, 'dead', last_error, died_at FROM {s}.dead \
                 WHERE queue = $1::text AND id < $2::bigint ORDER BY id DESC LIMIT $3::bigint"
            ),
            stats: format!(
                "{NOW}, p AS ( \
                   SELECT count(*) FILTER (WHERE run_at <= (SELECT t FROM n)) AS ready, \
                          count(*) FILTER (WHERE run_at > (SELECT t FROM n)) AS scheduled, \
                          min(run_at) FILTER (WHERE run_at <= (SELECT t FROM n)) AS oldest \
                   FROM {s}.jobs WHERE queue = $2::text AND state = 'pending') \
                 SELECT p.ready, p.scheduled, \
                   (SELECT count(*) FROM {s}.jobs WHERE queue = $2::text AND state = 'processing'), \
                   (SELECT count(*) FROM {s}.dead WHERE queue = $2::text), \
                   (SELECT t FROM n) - p.oldest \
                 FROM p"
            ),
            // For operators (ADR 0007): a backward walk of the primary key
            // that skips other queues' rows.
            live_jobs: format!(
                "SELECT {VIEW_COLS}, state, NULL::text AS last_error, NULL::bigint AS died_at FROM {s}.jobs \
                 WHERE queue = $1::text AND id < $2::bigint ORDER BY id DESC LIMIT $3::bigint"
            ),
            // UNION, not UNION ALL: one name per queue. A scan of both
            // tables, for operators only (ADR 0007), never on a hot path.
            // COLLATE "C" sorts by bytes, as SQLite's BINARY does, so both
            // engines list queues in one order whatever the database locale.
            queue_names: format!(
                "SELECT queue FROM (SELECT queue FROM {s}.jobs UNION SELECT queue FROM {s}.dead) q \
                 ORDER BY queue COLLATE \"C\""
            ),
            // ADR 0001 sweeps in two steps: move expired rows, then purge
            // dead rows with purge_at <= now. One statement sees one snapshot,
            // so the purge cannot see the rows it just moved; instead a moved
            // row whose retention is 0 (purge_at = now) is not inserted and is
            // counted as purged — the same end state and counts as the two steps.
            sweep: format!(
                "{NOW}, \
                 moved AS ( \
                   DELETE FROM {s}.jobs WHERE id = ANY(ARRAY( \
                     SELECT id FROM {s}.jobs WHERE queue = $2::text AND expires_at <= (SELECT t FROM n) \
                     FOR UPDATE SKIP LOCKED)) \
                   RETURNING *), \
                 kept AS ( \
                   {into_dead} SELECT {DEAD_SELECT}, 'expired', {DEAD_VALUES} FROM moved \
                   WHERE dead_retention_s IS NULL OR dead_retention_s > 0), \
                 purged AS ( \
                   DELETE FROM {s}.dead WHERE queue = $2::text AND purge_at <= (SELECT t FROM n) RETURNING 1) \
                 SELECT (SELECT count(*) FROM moved), \
                   (SELECT count(*) FROM purged) \
                   + (SELECT count(*) FROM moved WHERE dead_retention_s IS NOT NULL AND dead_retention_s <= 0)"
            ),
            // Pending rows: the jobs_ready index orders by priority first, so
            // the earliest future run_at is one seek per distinct priority,
            // found by a recursive skip scan, never a scan of the backlog.
            // Leases: reclaimable once `deadline < now`, i.e. at deadline + 1.
            next_wake: format!(
                "WITH RECURSIVE n AS MATERIALIZED ( \
                   SELECT floor(extract(epoch FROM clock_timestamp()))::bigint + $1::bigint AS t), \
                 prio AS ( \
                   (SELECT priority FROM {s}.jobs WHERE queue = $2::text AND state = 'pending' \
                    ORDER BY priority DESC LIMIT 1) \
                   UNION ALL \
                   SELECT (SELECT j.priority FROM {s}.jobs j \
                           WHERE j.queue = $2::text AND j.state = 'pending' AND j.priority < prio.priority \
                           ORDER BY j.priority DESC LIMIT 1) \
                   FROM prio WHERE prio.priority IS NOT NULL) \
                 SELECT least( \
                   (SELECT min((SELECT j.run_at FROM {s}.jobs j \
                                WHERE j.queue = $2::text AND j.state = 'pending' AND j.priority = prio.priority \
                                  AND j.run_at > (SELECT t FROM n) \
                                ORDER BY j.run_at LIMIT 1)) \
                    FROM prio WHERE prio.priority IS NOT NULL), \
                   (SELECT min(deadline) + 1 FROM {s}.jobs \
                    WHERE queue = $2::text AND state = 'processing' AND deadline >= (SELECT t FROM n)))"
            ),
            now: "SELECT floor(extract(epoch FROM clock_timestamp()))::bigint + $1::bigint".to_owned(),
            locks: crate::ops::locks::LockSql::new(&s, &channel),
            schedules: crate::ops::schedules::ScheduleSql::new(&s, &channel),
        }
    }
}

/// The claim (ADR 0001) with `limit` as its row bound: `$1` offset, `$2`
/// queue, `$3` worker, and `$4` the bound when `limit` is `$4::bigint`.
///
/// The exhaustion step and the claim are one statement, hence one
/// transaction and one round trip. An exhausted row that is also past its
/// expiry dies as 'expired', the reason a sweep at the same instant gives. Their row sets are disjoint (budget
/// spent, budget left, or pending), so the CTEs never touch a row twice.
/// SKIP LOCKED on both candidate scans: a row another claimer holds is
/// someone else's, never waited for.
///
/// Lapsed leases are taken in claim order, not deadline order, as the
/// SQLite engine does: any lapsed lease may outrank the others by priority.
/// That sorts every lapsed lease of the queue (a cost that grows with the
/// lapsed leases, never with the backlog), but only the `limit` rows the
/// sort yields are locked.
///
/// `id = ANY(ARRAY(subquery))` rather than `id IN (subquery)`: the array is
/// computed once and probed through the primary key, where a semi-join may
/// be planned as a scan of the whole table when the row estimate for the
/// (runtime-clocked) bound is high.
fn claim(s: &str, limit: &str) -> String {
    let into_dead = format!("INSERT INTO {s}.dead ({LIVE_COLS}, last_error, died_at, purge_at)");
    format!(
        "{NOW}, \
                 exhausted AS ( \
                   DELETE FROM {s}.jobs WHERE id = ANY(ARRAY( \
                     SELECT id FROM {s}.jobs \
                     WHERE queue = $2::text AND state = 'processing' AND deadline < (SELECT t FROM n) \
                       AND attempts >= max_attempts \
                     FOR UPDATE SKIP LOCKED)) \
                   RETURNING *), \
                 buried AS ( \
                   {into_dead} SELECT {DEAD_SELECT}, \
                     CASE WHEN expires_at <= (SELECT t FROM n) THEN 'expired' ELSE 'attempts exhausted' END, \
                     {DEAD_VALUES} FROM exhausted), \
                 ready AS ( \
                   SELECT id, priority, run_at FROM {s}.jobs \
                   WHERE queue = $2::text AND state = 'pending' AND run_at <= (SELECT t FROM n) \
                     AND (expires_at IS NULL OR expires_at > (SELECT t FROM n)) \
                   ORDER BY priority DESC, run_at, id LIMIT {limit} \
                   FOR UPDATE SKIP LOCKED), \
                 lapsed AS ( \
                   SELECT id, priority, run_at FROM {s}.jobs \
                   WHERE queue = $2::text AND state = 'processing' AND deadline < (SELECT t FROM n) \
                     AND attempts < max_attempts \
                     AND (expires_at IS NULL OR expires_at > (SELECT t FROM n)) \
                   ORDER BY priority DESC, run_at, id LIMIT {limit} \
                   FOR UPDATE SKIP LOCKED), \
                 picked AS ( \
                   SELECT id FROM (SELECT * FROM ready UNION ALL SELECT * FROM lapsed) c \
                   ORDER BY priority DESC, run_at, id LIMIT {limit}) \
                 UPDATE {s}.jobs j SET state = 'processing', attempts = j.attempts + 1, \
                   claim_token = j.claim_token + 1, worker_id = $3::text, claimed_at = (SELECT t FROM n), \
                   deadline = (SELECT t FROM n) + j.visibility_timeout_s \
                 FROM picked WHERE j.id = picked.id \
                 RETURNING {CLAIMED_COLS}"
    )
}
