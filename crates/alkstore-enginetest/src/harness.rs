//! What an engine provides to run the suite, and the per-case fixture built on it.

use std::sync::Arc;

use alkstore_core::store::foreign::ForeignCall;
use alkstore_core::{Claimed, Engine, EngineOptions, NewJob, QueueOpts, SqlValue, Store};

/// What every case returns: `?` takes core errors and plain messages alike.
pub type TestResult<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

/// One engine's way to a fresh database. Dropping the harness removes the
/// database (Postgres: drops the case's schema), so it outlives every handle.
pub trait Harness: Sized {
    /// Whether every one of several handles draining one queue together is
    /// sure to get part of it. Postgres: row locks skip each other, so yes.
    /// SQLite: one writer, taken by busy-wait retries with no queue, so a
    /// handle can lose every race of a drain (correct, but not fair).
    const FAIR_UNDER_CONTENTION: bool = true;

    /// A fresh, empty database with one engine handle open on it. `Ok(None)`
    /// when the engine cannot run here and is not required to (the case then
    /// passes with a message saying it skipped); an error when it is required.
    fn fresh() -> TestResult<Option<Self>>;

    /// The handle `fresh` opened.
    fn engine(&self) -> &Arc<dyn Engine>;

    /// The engine's open options (each engine crate parses its own).
    type Options: EngineOptions + Clone;

    /// The options `fresh` opened it with (Postgres: the case's schema).
    fn options(&self) -> Self::Options;

    /// Another independent handle on the same database (its own connections
    /// and its own test clock, like another process), opened with `options`.
    fn open(&self, options: &Self::Options) -> TestResult<Arc<dyn Engine>>;

    /// Limits `options` to one connection for writes (Postgres: a pool of
    /// one). SQLite already writes through one connection per handle.
    fn one_connection(_options: &mut Self::Options) {}

    /// The name caller SQL uses for table `name` of this database
    /// (Postgres: qualified with the case's schema, so cases never share one).
    fn table(&self, name: &str) -> String;
}

/// One case's database: the harness plus a [`Store`] over its first handle.
pub struct Db<H: Harness> {
    /// The front under test. Declared first: it closes before the harness
    /// removes the database.
    pub store: Store,
    /// The engine's side.
    pub harness: H,
}

/// The options every engine shares, out of an engine's own.
pub fn common<O: EngineOptions>(mut options: O) -> alkstore_core::OpenOptions {
    std::mem::take(options.common_mut())
}

/// Runs `case` on a fresh database of `H`; panics with the case's error.
pub fn run<H: Harness>(case: fn(&Db<H>) -> TestResult) {
    let harness = match H::fresh() {
        Ok(Some(h)) => h,
        Ok(None) => return,
        Err(e) => panic!("the harness could not make a fresh database: {e}"),
    };
    let db = Db { store: Store::new(harness.engine().clone(), common(harness.options())), harness };
    if let Err(e) = case(&db) {
        panic!("{e}");
    }
}

impl<H: Harness> Db<H> {
    /// The raw engine under the store, for what the front does not offer.
    pub fn engine(&self) -> &Arc<dyn Engine> {
        self.store.engine()
    }

    /// Another independent handle on this database.
    pub fn reopen_engine(&self) -> TestResult<Arc<dyn Engine>> {
        self.harness.open(&self.harness.options())
    }

    /// A [`Store`] over another independent handle, opened with the
    /// harness's options changed by `change`.
    pub fn reopen_with(&self, change: impl FnOnce(&mut H::Options)) -> TestResult<Store> {
        let mut options = self.harness.options();
        change(&mut options);
        Ok(Store::new(self.harness.open(&options)?, common(options)))
    }

    /// A [`Store`] over another independent handle.
    pub fn reopen(&self) -> TestResult<Store> {
        self.reopen_with(|_| {})
    }

    /// Runs `call` (a `conn=` enqueue's statement) in a committed transaction
    /// of another handle, as the application would, and lands its rows: the
    /// ids, one per job, in input order.
    pub fn run_foreign(&self, call: &ForeignCall) -> TestResult<Vec<i64>> {
        let caller = self.reopen()?;
        let mut tx = caller.begin()?;
        let mut rows = tx.query(&call.rendered.sql, &call.rendered.params)?;
        if rows.len() != call.rows() {
            if let Some(why) = call.refusal() {
                rows = tx.query(&why.sql, &why.params)?;
            }
        }
        tx.commit()?;
        let rows = rows
            .iter()
            .map(|r| match (r.first(), r.get(1)) {
                (Some((_, SqlValue::Int(id))), Some((_, SqlValue::Text(k)))) => Ok((*id, Some(k.clone()))),
                (Some((_, SqlValue::Int(id))), Some((_, SqlValue::Null))) => Ok((*id, None)),
                other => Err(format!("not (id, key): {other:?}")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(call.land(rows)?.ok_or("every job has its row")?)
    }

    /// Enqueues one ready job with `payload` under `o`.
    pub fn put(&self, queue: &str, o: &QueueOpts, payload: &str) -> TestResult<i64> {
        self.put_job(queue, o, job(payload))
    }

    /// Enqueues `j` under `o`.
    pub fn put_job(&self, queue: &str, o: &QueueOpts, j: NewJob) -> TestResult<i64> {
        Ok(self.store.enqueue(None, queue, o, &[j])?[0])
    }

    /// Claims at most one job.
    pub fn one(&self, queue: &str, worker: &str) -> TestResult<Option<Claimed>> {
        Ok(self.store.claim(queue, worker, 1)?.pop())
    }

    /// Claims exactly one job; an error when there is none.
    pub fn take(&self, queue: &str, worker: &str) -> TestResult<Claimed> {
        self.one(queue, worker)?.ok_or_else(|| "expected a claimable job".into())
    }

    /// Moves this store's clock.
    pub fn clock(&self, seconds: i64) -> TestResult {
        Ok(self.store.advance_clock(seconds)?)
    }

    /// The database clock of this store's handle.
    pub fn now(&self) -> TestResult<i64> {
        Ok(self.engine().now()?)
    }
}

/// A ready-now job with priority 0 and the queue's budget.
pub fn job(payload: &str) -> NewJob {
    NewJob::of(payload)
}

/// Queue options with a 30 s lease, 3 attempts and no backoff.
pub fn opts() -> QueueOpts {
    QueueOpts { visibility_timeout_s: 30, max_attempts: 3, backoff_base_s: 0.0, dead_letter_retention_s: None }
}
