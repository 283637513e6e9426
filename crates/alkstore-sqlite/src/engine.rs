//! [`SqliteEngine`]: one open store handle and the `alkstore_core::Engine`
//! part that is the handle itself (transactions, wakes, clock, close). The
//! operations are implemented in `ops/`, one core trait per file; they reach
//! the right connection (the caller's transaction, the writer or the
//! reader) through [`SqliteEngine::write`] and [`SqliteEngine::read`].

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore_core::{Engine, Error, Result, Tx, WakeHub};
use rusqlite::Connection;

use crate::conn::{Conns, Scope};
use crate::hot::Writer;
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
    /// The store's identity (ADR 0015).
    store_id: String,
}

impl SqliteEngine {
    /// Wraps opened and migrated connections.
    pub(crate) fn new(conns: Conns, path: &str, options: &SqliteOptions, store_id: String) -> Self {
        SqliteEngine {
            conns,
            offset: AtomicI64::new(0),
            path: path.to_owned(),
            watch_every: Duration::from_millis(options.watch_interval_ms),
            store_id,
        }
    }

    /// The test-only clock shift to add to `unixepoch()`.
    #[inline]
    pub(crate) fn offset(&self) -> i64 {
        self.offset.load(Ordering::Relaxed)
    }

    /// Runs a write op on the caller's transaction when given, else on the writer.
    #[inline]
    pub(crate) fn write<T>(&self, tx: Option<&mut dyn Tx>, f: impl FnOnce(&Writer, Scope) -> Result<T>) -> Result<T> {
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
    fn tx_conn<'t>(&self, tx: &'t mut dyn Tx) -> Result<&'t Writer> {
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

    fn start_wakes(&self, hub: Arc<WakeHub>) -> Result<()> {
        crate::wake::start(&self.path, self.watch_every, hub, self.conns.watcher.clone(), self.conns.closed.clone())
    }

    fn store_id(&self) -> &str {
        &self.store_id
    }

    fn location(&self) -> String {
        format!("the SQLite file {:?}", self.path)
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
