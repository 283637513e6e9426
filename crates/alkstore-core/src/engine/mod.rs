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
//! The Store also enforces the closed-store rule (a transaction begun
//! before `close` runs and commits nothing after it) and the
//! one-transaction-per-thread rule. Every method that takes `tx` runs inside the caller's transaction
//! when it is `Some` (the engine downcasts it to its own type with
//! [`Tx::as_any_mut`]) and in its own short transaction otherwise.

pub mod completions;
pub mod locks;
pub mod model;
pub mod paramstyle;
pub mod queue;
pub mod schedules;
pub mod sql;
pub mod streams;
pub mod workflows;

use std::any::Any;

use crate::engine::completions::CompletionOps;
use crate::engine::locks::LockOps;
use crate::engine::queue::{
    CancelOps, ClaimOps, EnqueueOps, ForgetOps, HandleOps, LimitOps, PauseOps, ReadOps, RedriveOps, SweepOps,
};
use crate::engine::schedules::ScheduleOps;
use crate::engine::sql::{SqlRow, SqlValue};
use crate::engine::streams::StreamOps;
use crate::engine::workflows::WorkflowOps;
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
/// the GIL released. The operations are supertraits, one per concept
/// ([`queue`], [`locks`], [`schedules`], [`streams`]), each implemented in
/// the engine's ops file of that name; what is left here is the handle
/// itself: its transactions, wakes, clock and lifetime.
pub trait Engine:
    Send
    + Sync
    + EnqueueOps
    + ClaimOps
    + HandleOps
    + CancelOps
    + ReadOps
    + SweepOps
    + PauseOps
    + LimitOps
    + RedriveOps
    + ForgetOps
    + LockOps
    + ScheduleOps
    + StreamOps
    + CompletionOps
    + WorkflowOps
{
    /// `"sqlite"` or `"postgres"`.
    fn kind(&self) -> &'static str;

    /// Begins a caller transaction (SQLite: `BEGIN IMMEDIATE` on the writer).
    fn begin(&self) -> Result<Box<dyn Tx>>;

    /// Starts feeding `hub` with a bump after every commit that may concern a
    /// waiter (SQLite: a `data_version` watcher thread; pg: LISTEN), until
    /// `close`. Called once by [`crate::store::Store::new`].
    fn start_wakes(&self, hub: std::sync::Arc<crate::store::wake::WakeHub>) -> Result<()>;

    /// The store's identity: a random id in its meta table joined with where
    /// the store lives (SQLite: the file's resolved path; Postgres: the
    /// database's oid), the same for every handle on the store and different
    /// for every other store, a copy of this one included (ADR 0015). A
    /// statement run on a caller's own connection checks it.
    fn store_id(&self) -> &str;

    /// Where the store lives, for messages: the SQLite file, or the Postgres
    /// schema and URL with its password masked.
    fn location(&self) -> String;

    /// Shifts this handle's clock (tests only).
    fn advance_clock(&self, seconds: i64);

    /// The database clock now, offset included.
    fn now(&self) -> Result<i64>;

    /// Releases connections and threads. Idempotent.
    fn close(&self);
}
