//! The storage-engine trait: what SQLite and Postgres each implement once.
//!
//! Engines are pure storage: they receive resolved inputs and only run SQL.
//! [`crate::store::Store`] decides everything the contract fixes before an
//! engine is called, once for every engine:
//! - arguments are valid: names, options, payload size, counts in range
//!   (`n` and `limit` in `1..=1000`), every duration within
//!   [`crate::MAX_DURATION_S`] (so `now + d` never overflows) — engines
//!   neither re-check nor clamp;
//! - batches are non-empty (`enqueue`, `ack` never see an empty slice);
//! - a retry is resolved: dead (the engine's `fail`) when the budget is
//!   spent, else pending after a concrete delay (the caller's or a draw
//!   from the retry curve);
//! - claimed jobs are put in claim order after the engine returns them, in
//!   whatever order its statement produced;
//! - a statement that fails inside a caller transaction dooms it
//!   ([`crate::store::session`]): engines track no failure state and are
//!   never asked to commit a doomed transaction;
//! - the schedule tick loop and what a fire enqueues
//!   ([`crate::schedule::tick`]); the engine supplies the due list and the
//!   atomic fire-and-advance primitive.
//!
//! The Store also enforces the closed-store and one-transaction-per-thread
//! rules. Every method that takes `tx` runs inside the caller's transaction
//! when it is `Some` (the engine downcasts it to its own type with
//! [`Tx::as_any_mut`]) and in its own short transaction otherwise.

pub mod locks;
pub mod model;
pub mod schedules;
pub mod sql;
pub mod streams;

use std::any::Any;

use crate::engine::locks::LockOps;
use crate::engine::model::{Claimed, Job, NewJob, QueueOpts, QueueStats, Swept};
use crate::engine::schedules::ScheduleOps;
use crate::engine::sql::{SqlRow, SqlValue};
use crate::engine::streams::StreamOps;
use crate::error::Result;

/// An open transaction of the caller's (SPEC §6).
pub trait Tx: Send {
    /// Runs the caller's statement, returning the affected row count.
    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64>;
    /// Runs the caller's query, returning its rows.
    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<SqlRow>>;
    /// Commits.
    fn commit(self: Box<Self>) -> Result<()>;
    /// Rolls back.
    fn rollback(self: Box<Self>) -> Result<()>;
    /// For the owning engine to reach its own transaction type.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// One storage engine. All methods are blocking; the binding calls them with
/// the GIL released. Locks, schedules and streams are supertraits so the
/// loops built on them in this crate reach them through `dyn Engine`.
pub trait Engine: Send + Sync + LockOps + ScheduleOps + StreamOps {
    /// `"sqlite"` or `"postgres"`.
    fn kind(&self) -> &'static str;

    /// Begins a caller transaction (SQLite: `BEGIN IMMEDIATE` on the writer).
    fn begin(&self) -> Result<Box<dyn Tx>>;

    /// Inserts `jobs` (never empty) into `queue` stamped with `opts`, all in
    /// one transaction; returns their ids in order.
    fn enqueue(&self, tx: Option<&mut dyn Tx>, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<Vec<i64>>;

    /// Claims up to `n` (`1..=1000`) jobs (SPEC §4.2): exhausted lapsed rows
    /// move to dead first, then one index-matched claim statement. Any
    /// order: the Store sorts them into claim order.
    fn claim(&self, queue: &str, worker_id: &str, n: usize) -> Result<Vec<Claimed>>;

    /// Deletes every handle (never empty) that passes the validity
    /// predicate, in one transaction; returns how many landed.
    fn ack(&self, tx: Option<&mut dyn Tx>, jobs: &[&Claimed]) -> Result<usize>;

    /// Back to pending, ready `delay_s` seconds from now (resolved by the
    /// Store; a spent budget goes to [`Engine::fail`] instead). False when
    /// the handle is not valid.
    fn retry(&self, tx: Option<&mut dyn Tx>, job: &Claimed, delay_s: i64) -> Result<bool>;

    /// Straight to dead with `error` (`job.fail`, and a retry past the
    /// budget). False when the handle is not valid.
    fn fail(&self, tx: Option<&mut dyn Tx>, job: &Claimed, error: &str) -> Result<bool>;

    /// `deadline := now + extend_s` for a valid handle; returns the new deadline.
    fn heartbeat(&self, job: &Claimed, extend_s: i64) -> Result<Option<i64>>;

    /// Back to pending now, refunding the attempt (not the claim token).
    fn release(&self, job: &Claimed) -> Result<bool>;

    /// Deletes a pending or processing row of `queue`.
    fn cancel(&self, tx: Option<&mut dyn Tx>, queue: &str, id: i64) -> Result<bool>;

    /// A live or dead row of `queue`.
    fn get_job(&self, tx: Option<&mut dyn Tx>, queue: &str, id: i64) -> Result<Option<Job>>;

    /// Dead rows of `queue`, newest id first, ids below `before_id` when given.
    fn dead_jobs(&self, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>>;

    /// Counts for `queue`.
    fn stats(&self, queue: &str) -> Result<QueueStats>;

    /// Live (pending and processing) rows of `queue`, newest id first, ids
    /// below `before_id` when given (ADR 0007: for operators, not the hot path).
    fn live_jobs(&self, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>>;

    /// Every distinct queue name with a live or a dead row, sorted, the
    /// engine-owned outbox queues included (ADR 0007). A scan for operators
    /// (`alkstore stats URL`), never on a hot path.
    fn queue_names(&self) -> Result<Vec<String>>;

    /// Expired rows to dead, retention purge of dead rows; atomic per queue.
    fn sweep_expired(&self, queue: &str) -> Result<Swept>;

    /// Starts feeding `hub` with a bump after every commit that may concern a
    /// waiter (SQLite: a `data_version` watcher thread; pg: LISTEN), until
    /// `close`. Called once by [`crate::store::Store::new`].
    fn start_wakes(&self, hub: std::sync::Arc<crate::store::wake::WakeHub>) -> Result<()>;

    /// The earliest instant after `now` at which `queue` gains claimable work
    /// without a commit: the earliest future `run_at` of a pending row or the
    /// earliest deadline of a processing row. `None` when there is neither.
    fn next_wake(&self, queue: &str) -> Result<Option<i64>>;

    /// Shifts this handle's clock (tests only).
    fn advance_clock(&self, seconds: i64);

    /// The database clock now, offset included.
    fn now(&self) -> Result<i64>;

    /// Releases connections and threads. Idempotent.
    fn close(&self);
}
