//! [`SqliteEngine`]: the `alkstore_core::Engine` implementation. It routes
//! each op to the right connection (the caller's transaction, the writer or
//! the reader) and leaves the SQL to the per-concept modules.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore_core::{Claimed, Engine, Error, Job, NewJob, QueueOpts, QueueStats, Result, Swept, Tx, WakeHub};
use rusqlite::Connection;

use crate::conn::{Conns, Scope};
use crate::ops::{cancel, claim, enqueue, handle, reads, sweep};
use crate::options::SqliteOptions;
use crate::tx::SqliteTx;

/// One open SQLite store handle.
pub(crate) struct SqliteEngine {
    pub(crate) conns: Conns,
    /// The test-only clock shift (`_advance_clock`), added to `unixepoch()`.
    offset: AtomicI64,
    /// For the wake watcher's own connection.
    path: String,
    watch_every: Duration,
}

impl SqliteEngine {
    /// Wraps opened and migrated connections.
    pub(crate) fn new(conns: Conns, path: &str, options: &SqliteOptions) -> Self {
        SqliteEngine {
            conns,
            offset: AtomicI64::new(0),
            path: path.to_owned(),
            watch_every: Duration::from_millis(options.watch_interval_ms),
        }
    }

    /// The test-only clock shift to add to `unixepoch()`.
    #[inline]
    pub(crate) fn offset(&self) -> i64 {
        self.offset.load(Ordering::Relaxed)
    }

    /// Runs a write op on the caller's transaction when given, else on the writer.
    #[inline]
    pub(crate) fn write<T>(
        &self,
        tx: Option<&mut dyn Tx>,
        f: impl FnOnce(&Connection, Scope) -> Result<T>,
    ) -> Result<T> {
        match tx {
            Some(tx) => f(self.tx_conn(tx)?, Scope::Caller),
            None => self.conns.with_writer(|c| f(c, Scope::Own)),
        }
    }

    /// Runs a read on the caller's transaction (so it sees its own writes)
    /// when given, else on the reader.
    pub(crate) fn read<T>(&self, tx: Option<&mut dyn Tx>, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        match tx {
            Some(tx) => f(self.tx_conn(tx)?),
            None => self.conns.with_reader(f),
        }
    }

    /// The connection of a caller transaction begun on this very handle.
    fn tx_conn<'t>(&self, tx: &'t mut dyn Tx) -> Result<&'t Connection> {
        let Some(tx) = tx.as_any_mut().downcast_mut::<SqliteTx>() else {
            return Err(Error::Transaction("the transaction belongs to another engine, not this SQLite store".into()));
        };
        if !tx.holds(&self.conns.writer) {
            return Err(Error::Transaction("the transaction belongs to another store handle".into()));
        }
        tx.conn()
    }
}

impl Engine for SqliteEngine {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn begin(&self) -> Result<Box<dyn Tx>> {
        Ok(Box::new(SqliteTx::begin(&self.conns.writer, &self.conns.closed)?))
    }

    fn enqueue(&self, tx: Option<&mut dyn Tx>, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<Vec<i64>> {
        let offset = self.offset();
        self.write(tx, |c, scope| enqueue::enqueue(c, scope, offset, queue, opts, jobs))
    }

    fn claim(&self, queue: &str, worker_id: &str, n: usize) -> Result<Vec<Claimed>> {
        let offset = self.offset();
        self.conns.with_writer(|c| claim::claim(c, offset, queue, worker_id, n))
    }

    fn ack(&self, tx: Option<&mut dyn Tx>, jobs: &[&Claimed]) -> Result<usize> {
        let offset = self.offset();
        self.write(tx, |c, scope| handle::ack(c, scope, offset, jobs))
    }

    fn retry(&self, tx: Option<&mut dyn Tx>, job: &Claimed, delay_s: i64) -> Result<bool> {
        let offset = self.offset();
        self.write(tx, |c, _| handle::retry(c, offset, job, delay_s))
    }

    fn fail(&self, tx: Option<&mut dyn Tx>, job: &Claimed, error: &str) -> Result<bool> {
        let offset = self.offset();
        self.write(tx, |c, scope| handle::fail(c, scope, offset, job, error))
    }

    fn heartbeat(&self, job: &Claimed, extend_s: i64) -> Result<Option<i64>> {
        let offset = self.offset();
        self.conns.with_writer(|c| handle::heartbeat(c, offset, job, extend_s))
    }

    fn release(&self, job: &Claimed) -> Result<bool> {
        let offset = self.offset();
        self.conns.with_writer(|c| handle::release(c, offset, job))
    }

    fn cancel(&self, tx: Option<&mut dyn Tx>, queue: &str, id: i64) -> Result<bool> {
        self.write(tx, |c, _| cancel::cancel(c, queue, id))
    }

    fn get_job(&self, tx: Option<&mut dyn Tx>, queue: &str, id: i64) -> Result<Option<Job>> {
        self.read(tx, |c| reads::get_job(c, queue, id))
    }

    fn dead_jobs(&self, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
        self.conns.with_reader(|c| reads::dead_jobs(c, queue, limit, before_id))
    }

    fn stats(&self, queue: &str) -> Result<QueueStats> {
        let offset = self.offset();
        self.conns.with_reader(|c| reads::stats(c, offset, queue))
    }

    fn live_jobs(&self, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
        self.conns.with_reader(|c| reads::live_jobs(c, queue, limit, before_id))
    }

    fn queue_names(&self) -> Result<Vec<String>> {
        self.conns.with_reader(reads::queue_names)
    }

    fn sweep_expired(&self, queue: &str) -> Result<Swept> {
        let offset = self.offset();
        self.conns.with_writer(|c| sweep::sweep_expired(c, offset, queue))
    }

    fn start_wakes(&self, hub: Arc<WakeHub>) -> Result<()> {
        crate::wake::start(&self.path, self.watch_every, hub, self.conns.closed.clone())
    }

    fn next_wake(&self, queue: &str) -> Result<Option<i64>> {
        let offset = self.offset();
        self.conns.with_reader(|c| reads::next_wake(c, offset, queue))
    }

    fn advance_clock(&self, seconds: i64) {
        self.offset.fetch_add(seconds, Ordering::Relaxed);
    }

    fn now(&self) -> Result<i64> {
        let offset = self.offset();
        self.conns.with_reader(|c| crate::conn::now(c, offset))
    }

    fn close(&self) {
        self.conns.close();
    }
}
