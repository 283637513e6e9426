//! The caller's transaction as the Store hands it out (SPEC §6), and the one
//! "doomed transaction" rule: a statement that fails inside it — the
//! caller's own or an engine op passed `tx=` — dooms it; a doomed
//! transaction refuses further statements and only rolls back, and its
//! commit rolls back and reports `TransactionError`. Engines do not track
//! failures themselves: they are never asked to commit a doomed transaction.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;

use crate::engine::sql::{SqlRow, SqlValue};
use crate::engine::Tx;
use crate::error::{Error, Result};
use crate::store::completions::Tally;
use crate::store::txguard::TxThreads;

/// A caller transaction plus the seam's bookkeeping: a failed statement dooms
/// it; a finished one refuses further use.
pub struct TxSession {
    pub(super) inner: Option<Box<dyn Tx>>,
    pub(super) doomed: bool,
    pub(super) thread: ThreadId,
    pub(super) threads: Arc<TxThreads>,
    /// The store's closed flag (SPEC §2: any use after close raises StoreClosed).
    pub(super) closed: Arc<AtomicBool>,
    /// Acks made inside, per queue: counted for the chart only at commit.
    pub(super) acked: Vec<(String, u64)>,
    pub(super) done: Arc<Tally>,
}

impl TxSession {
    pub(super) fn live(&mut self) -> Result<&mut dyn Tx> {
        if self.closed.load(Ordering::SeqCst) && self.inner.is_some() {
            return Err(Error::StoreClosed);
        }
        if self.doomed {
            return Err(Error::Transaction(
                "the transaction failed earlier and can only roll back; leave the block".into(),
            ));
        }
        match self.inner.as_deref_mut() {
            Some(t) => Ok(t),
            None => Err(Error::TransactionClosed),
        }
    }

    fn finish(&mut self) -> Result<Box<dyn Tx>> {
        let t = self.inner.take().ok_or(Error::TransactionClosed)?;
        self.threads.leave(self.thread);
        Ok(t)
    }

    /// Runs an engine op passed `tx=`: a database error (the statement
    /// failed, or the connection did) dooms the transaction, as Postgres
    /// has aborted it and SQLite's would commit only part of the caller's
    /// work. Other errors (an invalid handle, a value the op refused) leave
    /// it usable.
    pub(super) fn op<T>(&mut self, f: impl FnOnce(&mut dyn Tx) -> Result<T>) -> Result<T> {
        let r = f(self.live()?);
        if matches!(r, Err(Error::Database { .. } | Error::ConnectionLost { .. })) {
            self.doomed = true;
        }
        r
    }

    /// Whether a failed statement doomed the transaction.
    pub fn is_doomed(&self) -> bool {
        self.doomed
    }

    /// Whether commit or rollback already ran.
    pub fn is_finished(&self) -> bool {
        self.inner.is_none()
    }

    /// The caller's statement; a database error dooms the transaction.
    pub fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64> {
        let r = self.live()?.execute(sql, params);
        if r.is_err() {
            self.doomed = true;
        }
        r
    }

    /// The caller's query; a database error dooms the transaction.
    pub fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<SqlRow>> {
        let r = self.live()?.query(sql, params);
        if r.is_err() {
            self.doomed = true;
        }
        r
    }

    /// Commits, or — when doomed — rolls back and reports `TransactionError`.
    /// After the store closed, rolls back and reports `StoreClosed`.
    pub fn commit(&mut self) -> Result<()> {
        let doomed = self.doomed;
        let t = self.finish()?;
        if self.closed.load(Ordering::SeqCst) {
            // The outcome is StoreClosed whatever the rollback says.
            let _ = t.rollback();
            return Err(Error::StoreClosed);
        }
        if doomed {
            t.rollback()?;
            return Err(Error::Transaction("the transaction was rolled back: a statement inside it failed".into()));
        }
        t.commit()?;
        for (queue, n) in self.acked.drain(..) {
            self.done.add(&queue, n);
        }
        Ok(())
    }

    /// Rolls back. Idempotent once finished.
    pub fn rollback(&mut self) -> Result<()> {
        match self.finish() {
            Ok(t) => t.rollback(),
            Err(_) => Ok(()),
        }
    }
}

impl Drop for TxSession {
    fn drop(&mut self) {
        let _ = self.rollback();
    }
}
