//! The queue operations, one file per concept; the Postgres engine has the
//! same files under the same names: `enqueue`, `claim`, `handle` (ack,
//! retry, fail, heartbeat, release), `cancel`, `reads` (get_job, dead_jobs,
//! live_jobs, queue_names, stats, next_wake), `sweep`, `locks`, `schedules`,
//! `streams`, `pause`, `redrive` (requeue_dead, purge_dead), `forget`
//! (forget_queue), `completions` (the chart's per-minute ack counts). Each file
//! implements the core trait of its concept (`EnqueueOps`, `ClaimOps`,
//! `HandleOps`, `CancelOps`, `ReadOps`, `SweepOps`, `LockOps`, `ScheduleOps`,
//! `StreamOps`, `PauseOps`, `RedriveOps`, `ForgetOps`, `CompletionOps`) for the engine, right below its
//! statements; `engine.rs` keeps only the handle (connections, clock, close).
//!
//! The statement convention, shared by both engines: every ops file opens
//! with the SQL it runs, one named statement per step, then the functions
//! that bind and run them. A statement that does the same job carries the
//! same name in both engines (`RETRY` here, `retry` in Postgres's `Sql`).
//! Here the text is final at compile time: a `const NAME: &str`, run through
//! `prepare_cached`, so each connection parses it once (pieces shared inside
//! a file are `macro_rules!` fragments joined with `concat!`, which keeps the
//! result a `const`). Postgres's text names the store's schema, so there each
//! file opens with a `Sql` struct rendered once at open instead.
//!
//! Parameter conventions: `now` is either computed in the statement as
//! `unixepoch() + ?offset` (single-statement ops, so no extra round trip) or
//! bound as a value read once with [`crate::conn::NOW`] (multi-statement ops,
//! so every statement of one transaction judges against the same instant — a
//! move-to-dead must never insert one set of rows and delete another).
//!
//! Adding an operation: its statement, function and trait method in the file
//! of its concept, and the same in the Postgres engine (docs/architecture.md).

// The move to dead, shared by the claim (exhaustion), the handle ops (fail,
// retry at budget) and the sweep, and the pending run of the live index,
// shared by every ready scan. Defined before the modules that use them.

/// A queue's ready rows as the live index (`__alkstore_jobs_ready`,
/// migration 0018, ADR 0033) holds them: pending rows hold no lease (SPEC
/// §4.4), so `deadline IS NULL` completes the equality prefix and the scan
/// reads the run in claim order (priority DESC, run_at, id) without a sort.
/// Every path to pending must leave the deadline NULL, or the row is never
/// claimed.
macro_rules! pending_run {
    () => {
        "state = 'pending' AND deadline IS NULL"
    };
}

/// The `last_error` a claim that may reclaim sets (SPEC §30, migration
/// 0021): a lapsed lease it takes back records that it lapsed and which
/// worker held it (SET reads the row as it was); a pending row keeps its
/// last retry's error. The fast path never reclaims, so the per-op claim
/// neither reads nor writes the column.
macro_rules! reclaim_error {
    () => {
        "last_error = CASE WHEN state = 'processing' THEN 'lease lapsed (worker ' || worker_id || ')' \
         ELSE last_error END"
    };
}

/// The columns a move to dead copies; the SELECT side is `live_to_dead!`.
macro_rules! insert_dead {
    () => {
        "INSERT INTO __alkstore_dead (id, queue, state, payload, priority, attempts, max_attempts, \
         claim_token, visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, \
         claimed_at, deadline, worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, \
         has_children, last_error, died_at, purge_at) "
    };
}

/// `INSERT … SELECT` of live rows matching `$pred` into dead storage, every
/// field kept as it was, with `$err` as last_error and `$now` as died_at.
macro_rules! live_to_dead {
    ($err:literal, $now:literal, $pred:expr) => {
        concat!(
            insert_dead!(),
            "SELECT id, queue, 'dead', payload, priority, attempts, max_attempts, claim_token, \
             visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, \
             deadline, worker_id, expires_at, unique_key, group_key, parents_left, on_failure, keep_result_s, \
             has_children, ",
            $err,
            ", ",
            $now,
            ", ",
            $now,
            " + dead_retention_s FROM __alkstore_jobs WHERE ",
            $pred
        )
    };
}

pub(crate) mod cancel;
pub(crate) mod claim;
pub(crate) mod completions;
pub(crate) mod enqueue;
#[cfg(test)]
mod fan_in;
pub(crate) mod forget;
pub(crate) mod handle;
pub(crate) mod limits;
pub(crate) mod locks;
pub(crate) mod pause;
#[cfg(test)]
mod plans;
pub(crate) mod reads;
pub(crate) mod redrive;
pub(crate) mod schedules;
pub(crate) mod streams;
pub(crate) mod sweep;
pub(crate) mod workflows;
