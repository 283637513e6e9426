//! The engine's two connections and the rules for using them.
//!
//! One writer connection serialises every write of this handle (SQLite has a
//! single writer per file anyway; queueing on a `parking_lot` mutex is cheaper
//! than queueing on `busy_timeout`). A separate reader connection serves the
//! read-only surfaces (`stats`, `dead_jobs`, `get_job` outside a transaction,
//! `now`) so a slow count never holds up a claim: in WAL mode readers and the
//! writer do not block each other.
//!
//! Closing: [`Conns::close`] marks the handle closed and drops every
//! connection it can lock. A connection that was in use at that moment (a
//! caller transaction, an op in flight) is dropped by whoever releases it,
//! so close waits at most [`CLOSE_WAIT`] and never for a transaction to end
//! (the closing thread may be the one holding it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore_core::{Error, Result};
use parking_lot::Mutex;
use rusqlite::Connection;

use crate::error::DbResult;
use crate::hot::{Conn, Writer};
use crate::tx;
use crate::wal::WalBound;

/// The database clock plus this handle's test offset.
pub(crate) const NOW: &str = "SELECT unixepoch() + ?1";

/// A connection slot: `None` once the handle is closed.
pub(crate) type Slot = Arc<Mutex<Option<Connection>>>;
/// The writer's slot: the connection with its hot statements ([`Writer`]).
pub(crate) type WriterSlot = Arc<Mutex<Option<Writer>>>;

/// How long `close` waits for an op in flight before leaving the connection
/// to be dropped by that op. Ops are short; a caller transaction is not, and
/// must not be waited for (its thread may be the one closing).
const CLOSE_WAIT: Duration = Duration::from_millis(50);

/// The writer and reader of one engine handle, plus its closed flag.
pub(crate) struct Conns {
    /// The single writer; a caller transaction holds it for its whole life.
    pub(crate) writer: WriterSlot,
    /// Read-only surfaces.
    reader: Slot,
    /// The wake watcher's own connection (`wake.rs`), once it starts. Closed
    /// here, first, rather than by the watcher thread, which may be asleep
    /// for a while: a read-only connection left open last would keep the
    /// WAL file from being checkpointed and removed as the writer closes.
    pub(crate) watcher: Slot,
    /// Set once by `close`; shared with caller transactions.
    pub(crate) closed: Arc<AtomicBool>,
    /// Keeps the WAL file bounded; checked after the writer's ops.
    wal: WalBound,
}

impl Conns {
    /// Wraps freshly opened connections.
    pub(crate) fn new(writer: Connection, reader: Connection, wal: WalBound) -> Self {
        Conns {
            writer: Arc::new(Mutex::new(Some(Writer::new(writer)))),
            reader: Arc::new(Mutex::new(Some(reader))),
            watcher: Arc::new(Mutex::new(None)),
            closed: Arc::new(AtomicBool::new(false)),
            wal,
        }
    }

    /// Runs `f` on the writer, holding it for the duration; afterwards,
    /// still holding it, lets the WAL watch look at the file (`wal.rs`).
    #[inline]
    pub(crate) fn with_writer<T>(&self, f: impl FnOnce(&Writer) -> Result<T>) -> Result<T> {
        with_slot(&self.writer, &self.closed, |c| {
            let r = f(c);
            self.wal.after_write(c);
            r
        })
    }

    /// Runs `f` on the reader.
    #[inline]
    pub(crate) fn with_reader<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        with_slot(&self.reader, &self.closed, f)
    }

    /// Marks the handle closed and drops the connections not in use. Idempotent.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        drop_unless_busy(&self.watcher);
        drop_unless_busy(&self.writer);
        drop_unless_busy(&self.reader);
    }
}

/// Drops the connection in `slot` unless an op holds it past [`CLOSE_WAIT`]
/// (that op drops it when it lets go).
fn drop_unless_busy<C>(slot: &Arc<Mutex<Option<C>>>) {
    if let Some(mut conn) = slot.try_lock_for(CLOSE_WAIT) {
        conn.take();
    }
}

#[inline]
pub(crate) fn with_slot<C, T>(
    slot: &Arc<Mutex<Option<C>>>,
    closed: &AtomicBool,
    f: impl FnOnce(&C) -> Result<T>,
) -> Result<T> {
    let mut guard = slot.lock();
    let result = match guard.as_ref() {
        Some(conn) if !closed.load(Ordering::Acquire) => f(conn),
        _ => Err(Error::StoreClosed),
    };
    // `close` may have run while we held the slot and could not take it.
    if closed.load(Ordering::Acquire) {
        guard.take();
    }
    result
}

/// Where a multi-statement op runs: in its own write transaction, or inside
/// the caller's (where it becomes a savepoint so it stays all-or-nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// No caller transaction: `BEGIN IMMEDIATE` … `COMMIT`.
    Own,
    /// Inside the caller's transaction: `SAVEPOINT` … `RELEASE`.
    Caller,
}

/// Runs `f` atomically on `conn`: all of its statements land or none do.
pub(crate) fn atomic<C: Conn + ?Sized, T>(conn: &C, scope: Scope, f: impl FnOnce(&C) -> Result<T>) -> Result<T> {
    let (begin, end) = match scope {
        Scope::Own => (tx::BEGIN_IMMEDIATE, tx::COMMIT),
        Scope::Caller => (tx::SAVEPOINT, tx::RELEASE),
    };
    conn.with_stmt(begin, |s| s.execute([]).db())?;
    let result = f(conn).and_then(|v| conn.with_stmt(end, |s| s.execute([]).db()).map(|_| v));
    if result.is_err() {
        undo(conn.conn(), scope);
    }
    result
}

/// Best-effort rollback after a failure; the original error is what the
/// caller needs to see, so a failing rollback is not reported over it.
fn undo(conn: &Connection, scope: Scope) {
    match scope {
        Scope::Own => {
            // SQLite may already have rolled back on its own (e.g. SQLITE_FULL).
            if !conn.is_autocommit() {
                let _ = conn.execute_batch(tx::ROLLBACK);
            }
        }
        Scope::Caller => {
            let _ = conn.execute_batch(tx::ROLLBACK_TO);
            let _ = conn.execute_batch(tx::RELEASE);
        }
    }
}

/// The database clock plus `offset`, read once for a multi-statement op.
#[inline]
pub(crate) fn now(conn: &Connection, offset: i64) -> Result<i64> {
    conn.prepare_cached(NOW).and_then(|mut s| s.query_row([offset], |r| r.get(0))).db()
}
