//! Queue storage, one trait per operation family. Each engine implements
//! each trait in its ops file of the same name (`ops/enqueue.rs`,
//! `ops/claim.rs`, …), next to the statements it runs, so adding a queue
//! operation touches the trait here and one file per engine — no routing
//! table in between.

use crate::engine::model::{Claimed, Forget, Job, NewJob, QueueOpts, QueueStats, Swept};
use crate::engine::sql::SqlValue;
use crate::engine::Tx;
use crate::error::Result;
use crate::rules::limits::QueueLimits;

/// Adds jobs (SPEC §4.1); `ops/enqueue.rs` in each engine.
pub trait EnqueueOps {
    /// Inserts `jobs` (never empty) into `queue` stamped with `opts`, all in
    /// one transaction; returns their ids in order. No two jobs share a
    /// `unique_key` (the Store keeps the first, `rules::unique`); a job whose
    /// key is live already gets that job's id and writes nothing (SPEC §18),
    /// decided by the unique index, never by a read before the write.
    fn enqueue(&self, tx: Option<&mut dyn Tx>, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<Vec<i64>>;

    /// The enqueue of `jobs` (never empty, no key twice) as one statement for
    /// a caller's own connection (ADR 0015), with `$N` placeholders and their
    /// values; nothing runs here. The statement inserts only where the
    /// connection reaches this store (its `store_id`), returns one row per
    /// job — `(id, unique_key)`, in any order, a live key's row being the
    /// live job's — and on Postgres notifies. Its values are
    /// [`foreign_params`], in that order.
    fn foreign_enqueue(&self, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<(String, Vec<SqlValue>)>;

    /// Where the statement of [`EnqueueOps::foreign_enqueue`] for `jobs`
    /// answers a refused parent with no rows rather than a row of its own: a
    /// second statement, on the same values, run only when rows are missing,
    /// returning one row `(-issued, NULL)` when the connection reaches this
    /// store and some parent is above the highest id it has issued, and no
    /// row otherwise (the connection reaches another database).
    fn foreign_refusal(&self, jobs: &[NewJob]) -> Option<String> {
        let _ = jobs;
        None
    }
}

/// The values of a foreign enqueue, the same for every engine: `$1` the
/// store's identity, `$2` queue, `$3` visibility timeout, `$4` backoff base,
/// `$5` dead-letter retention, `$6` the handle's clock offset, `$7` the jobs
/// as one JSON array (see [`foreign_rows`]).
pub fn foreign_params(store_id: &str, queue: &str, opts: &QueueOpts, offset: i64, jobs: &[NewJob]) -> Vec<SqlValue> {
    vec![
        SqlValue::Text(store_id.to_owned()),
        SqlValue::Text(queue.to_owned()),
        SqlValue::Int(opts.visibility_timeout_s),
        SqlValue::Float(opts.backoff_base_s),
        opts.dead_letter_retention_s.map_or(SqlValue::Null, SqlValue::Int),
        SqlValue::Int(offset),
        SqlValue::Text(foreign_rows(opts, jobs)),
    ]
}

/// The jobs of a foreign enqueue as one JSON array, one
/// `[payload, priority, max_attempts, run_at, delay, expires_s, unique_key, group]`
/// per job, a workflow job's followed by `after, on_failure, keep_result_s` (`run_at`, `expires_s`, `unique_key` and `group` may be null; the payload
/// is its JSON text as a string), so a batch is one statement on every
/// driver, arrays or not.
pub fn foreign_rows(opts: &QueueOpts, jobs: &[NewJob]) -> String {
    use serde_json::{json, Value};
    let rows: Vec<Value> = jobs
        .iter()
        .map(|j| {
            let (run_at, delay) = j.ready.parts();
            let mut row = json!([
                j.payload,
                j.priority,
                j.max_attempts.unwrap_or(opts.max_attempts),
                run_at,
                delay,
                j.expires_s,
                j.unique_key,
                j.group
            ]);
            if j.in_workflow() {
                // A workflow job (SPEC §25) adds `after` (sorted, distinct),
                // `on_failure` (null without parents) and `keep_result_s`;
                // a plain job's row stays as it was.
                let mode = (!j.after.is_empty()).then(|| j.on_failure.as_str());
                if let Value::Array(a) = &mut row {
                    a.extend([json!(j.after), json!(mode), json!(j.keep_result_s)]);
                }
            }
            row
        })
        .collect();
    Value::Array(rows).to_string()
}

/// Takes jobs (SPEC §4.2); `ops/claim.rs` in each engine.
pub trait ClaimOps {
    /// Claims up to `n` (`1..=1000`) jobs (SPEC §4.2): exhausted lapsed rows
    /// move to dead first, then one index-matched claim statement. Any
    /// order: the Store sorts them into claim order.
    fn claim(&self, queue: &str, worker_id: &str, n: usize) -> Result<Vec<Claimed>>;

    /// Acks `done` (a valid handle) and claims up to `n` jobs of `queue`
    /// for `worker_id`, as one transaction where the engine can (ADR 0022):
    /// the Worker's finished job and its next. Returns how many acks landed
    /// (0 or 1) and what was claimed, in any order. The claim may be the
    /// engine's fast path only, which comes back empty whenever the full
    /// claim has work to do first (a lapsed lease): empty never means the
    /// queue has nothing, and the caller then claims with [`Self::claim`].
    fn ack_then_claim(&self, done: &Claimed, queue: &str, worker_id: &str, n: usize) -> Result<(usize, Vec<Claimed>)>;
}

/// What a claim's holder does with it (SPEC §4.3); `ops/handle.rs` in each engine.
pub trait HandleOps {
    /// Deletes every handle (never empty) that passes the validity
    /// predicate, in one transaction; returns how many landed.
    fn ack(&self, tx: Option<&mut dyn Tx>, jobs: &[&Claimed]) -> Result<usize>;

    /// Back to pending, ready `delay_s` seconds from now (resolved by the
    /// Store; a spent budget goes to [`HandleOps::fail`] instead), with
    /// `error` as the row's `last_error` (SPEC §30: a pending job reads its
    /// latest retry's error). False when the handle is not valid.
    fn retry(&self, tx: Option<&mut dyn Tx>, job: &Claimed, delay_s: i64, error: &str) -> Result<bool>;

    /// Straight to dead with `error` (`job.fail`, and a retry past the
    /// budget). False when the handle is not valid.
    fn fail(&self, tx: Option<&mut dyn Tx>, job: &Claimed, error: &str) -> Result<bool>;

    /// `deadline := now + extend_s` for a valid handle; returns the new deadline.
    fn heartbeat(&self, job: &Claimed, extend_s: i64) -> Result<Option<i64>>;

    /// Back to pending, ready `delay_s` seconds from now, refunding the
    /// attempt (not the claim token): `release` (delay 0) and `snooze`.
    fn release(&self, job: &Claimed, delay_s: i64) -> Result<bool>;
}

/// Another party deletes a live row (SPEC §4.4); `ops/cancel.rs` in each engine.
pub trait CancelOps {
    /// Deletes a pending or processing row of `queue`.
    fn cancel(&self, tx: Option<&mut dyn Tx>, queue: &str, id: i64) -> Result<bool>;
}

/// Reads of one queue and of the store (SPEC §4.4); `ops/reads.rs` in each engine.
pub trait ReadOps {
    /// A live or dead row of `queue`.
    fn get_job(&self, tx: Option<&mut dyn Tx>, queue: &str, id: i64) -> Result<Option<Job>>;

    /// The live or dead row `id`, whatever its queue: a primary-key probe of
    /// the live table, then of the dead one, read at one instant (a row
    /// moving to dead is seen in exactly one of them).
    fn job_by_id(&self, id: i64) -> Result<Option<Job>>;

    /// Dead rows of `queue`, newest id first, ids below `before_id` when given.
    fn dead_jobs(&self, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>>;

    /// Counts for `queue`.
    fn stats(&self, queue: &str) -> Result<QueueStats>;

    /// Live (pending and processing) rows of `queue`, newest id first, ids
    /// below `before_id` when given (ADR 0007: for operators, not the hot path).
    fn live_jobs(&self, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>>;

    /// Every distinct queue name that ever had a job (even once all its jobs
    /// are acked), has a live or a dead row, or is paused, sorted, the
    /// engine-owned outbox queues included (ADR 0007). A scan for operators
    /// (`alkstore stats URL`), never on a hot path.
    fn queue_names(&self) -> Result<Vec<String>>;

    /// How long, in seconds from the database clock's present instant read
    /// to the sub-second, until `queue` gains claimable work without a
    /// commit: the earliest future `run_at` of a pending row, the instant
    /// after the earliest deadline of a processing row (`deadline + 1`: a
    /// lease is reclaimable once `deadline < now`), or, on a rate-limited
    /// queue (SPEC §24), the instant its oldest logged claim leaves the
    /// window. `None` when there is none of these. Sub-second, because a
    /// window of a fractional period opens between two whole seconds
    /// (issue 43: a waiter told the next whole second slept through it).
    /// The wait loop turns it into a wake ([`crate::store::waiting`]).
    fn next_wake(&self, queue: &str) -> Result<Option<f64>>;
}

/// Pausing a queue (SPEC §18); `ops/pause.rs` in each engine. The pause is a
/// row in the store, so every process sees it; the claim statement checks
/// it (one primary-key probe), and nothing else does.
pub trait PauseOps {
    /// Marks `queue` paused; idempotent.
    fn pause(&self, queue: &str) -> Result<()>;
    /// Clears the mark and wakes the queue's waiting claimers; idempotent.
    fn resume(&self, queue: &str) -> Result<()>;
    /// Whether `queue` is paused.
    fn is_paused(&self, queue: &str) -> Result<bool>;
}

/// A queue's limits (SPEC §24); `ops/limits.rs` in each engine. Like a
/// pause, the limits are a row every process reads at its next claim.
///
/// The claim of a queue with limits is the engine's to serialise (one
/// writer; a Postgres advisory lock per queue) and to budget with
/// [`crate::rules::limits::budget`] from what it counts in that transaction:
/// the queue's processing rows (lapsed leases included), each candidate
/// group's processing rows, and the claims logged in the rate window. A queue
/// without limits keeps the one-statement claim: that statement probes the
/// limits table as it probes the paused one.
pub trait LimitOps {
    /// Stores `limits` for `queue` (all `None`: no row, no limits) and wakes
    /// its waiting claimers (a raised limit may let them claim).
    fn set_limits(&self, queue: &str, limits: &QueueLimits) -> Result<()>;
    /// `queue`'s limits (all `None` when it has none).
    fn limits(&self, queue: &str) -> Result<QueueLimits>;
}

/// Which dead rows of a queue `requeue_dead` and `purge_dead` take: those
/// among `ids` (when given) that died at least `older_than_s` seconds ago
/// (when given), oldest death first, at most `limit` (`1..=1000`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeadPick<'a> {
    /// Only these ids (others, and rows that are not dead in the queue, are skipped).
    pub ids: Option<&'a [i64]>,
    /// Only rows dead for at least this long.
    pub older_than_s: Option<i64>,
    /// At most this many rows.
    pub limit: usize,
}

/// Dead letters back to work, or gone (SPEC §18); `ops/redrive.rs` in each engine.
pub trait RedriveOps {
    /// Moves the picked dead rows back to pending in one transaction: same
    /// id, payload and stamps (claim token included), `attempts = 0`, ready
    /// now. A row whose `unique_key` is live again stays dead. Returns the
    /// ids moved, ascending; wakes the queue's claimers when any moved.
    fn requeue_dead(&self, tx: Option<&mut dyn Tx>, queue: &str, pick: &DeadPick<'_>) -> Result<Vec<i64>>;
    /// Deletes the picked dead rows in one statement; returns how many.
    fn purge_dead(&self, tx: Option<&mut dyn Tx>, queue: &str, pick: &DeadPick<'_>) -> Result<i64>;
}

/// Forgetting a queue (SPEC §18, issue 44): `ops/forget.rs` in each engine.
/// A queue stays listed (`queue_names`, so `/metrics` and the dashboard)
/// once it has had a job; this is the operator's way to drop one that is
/// done with.
pub trait ForgetOps {
    /// In one transaction: when `queue` holds no live, waiting or dead row
    /// and no result whose `keep_result` still runs (or that a child still
    /// names), deletes every row keyed by the queue — its listing, pause,
    /// limits, rate log, completion counts and its expired results — and
    /// says whether there was any; otherwise changes nothing and says what
    /// it holds. Atomic with every enqueue: an enqueue that commits first is
    /// seen (and refuses the forget); one that commits after finds the queue
    /// gone and lists it again. Nothing else keyed by a queue name is
    /// touched: schedules that target it stay and enqueue at their next fire.
    fn forget_queue(&self, queue: &str) -> Result<Forget>;
}

/// Expiry and retention (SPEC §4.4, §4.6); `ops/sweep.rs` in each engine.
pub trait SweepOps {
    /// Expired rows to dead, retention purge of dead rows; atomic per queue.
    fn sweep_expired(&self, queue: &str) -> Result<Swept>;
}
