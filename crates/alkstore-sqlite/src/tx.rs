//! The caller's transaction (SPEC §6): it owns the writer connection from
//! `BEGIN IMMEDIATE` to `COMMIT`/`ROLLBACK`, so the caller's own statements
//! and the queue ops passed `tx=` commit or vanish together.

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use alkstore_core::{Error, Result, SqlRow, SqlValue, Tx};
use parking_lot::{ArcMutexGuard, RawMutex};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, Connection, ToSql};

use crate::conn::WriterSlot;
use crate::error::DbResult;
use crate::hot::Writer;

/// Starts an own write transaction: takes the file's write lock up front so
/// two processes never interleave, and waits `busy_timeout` for it.
pub(crate) const BEGIN_IMMEDIATE: &str = "BEGIN IMMEDIATE";
/// Ends an own write transaction.
pub(crate) const COMMIT: &str = "COMMIT";
/// Abandons an own write transaction.
pub(crate) const ROLLBACK: &str = "ROLLBACK";
/// Makes a multi-statement op atomic inside the caller's transaction.
pub(crate) const SAVEPOINT: &str = "SAVEPOINT __alkstore_op";
/// Keeps a savepoint's work (it still lands only if the caller commits).
pub(crate) const RELEASE: &str = "RELEASE __alkstore_op";
/// Undoes a savepoint's work; must be followed by [`RELEASE`].
pub(crate) const ROLLBACK_TO: &str = "ROLLBACK TO __alkstore_op";

/// An open caller transaction on the writer connection.
pub(crate) struct SqliteTx {
    /// The writer, held for the transaction's whole life (an owned guard, so
    /// the transaction can move between threads and outlive the `begin` call).
    /// `None` once it ended.
    guard: Option<ArcMutexGuard<RawMutex, Option<Writer>>>,
    /// The handle's closed flag: a transaction that ends after `close` drops
    /// the connection it was holding.
    closed: Arc<AtomicBool>,
}

impl SqliteTx {
    /// Takes the writer and starts the transaction.
    pub(crate) fn begin(writer: &WriterSlot, closed: &Arc<AtomicBool>) -> Result<Self> {
        let guard = writer.lock_arc();
        let Some(conn) = guard.as_ref().filter(|_| !closed.load(Ordering::Acquire)) else {
            return Err(Error::StoreClosed);
        };
        conn.prepare_cached(BEGIN_IMMEDIATE).and_then(|mut s| s.execute([])).db()?;
        Ok(SqliteTx { guard: Some(guard), closed: closed.clone() })
    }

    /// The connection, while the transaction is open and the handle is not closed.
    pub(crate) fn conn(&self) -> Result<&Writer> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::StoreClosed);
        }
        self.guard.as_ref().and_then(|g| g.as_ref()).ok_or(Error::TransactionClosed)
    }

    /// Whether this transaction holds `writer` (i.e. belongs to that engine handle).
    pub(crate) fn holds(&self, writer: &WriterSlot) -> bool {
        self.guard.as_ref().is_some_and(|g| Arc::ptr_eq(ArcMutexGuard::mutex(g), writer))
    }

    /// Ends the transaction with `end` (COMMIT or ROLLBACK) and lets the
    /// writer go. After `close` nothing lands: a commit rolls back instead
    /// and reports `StoreClosed`.
    fn finish(&mut self, end: &str) -> Result<()> {
        let Some(mut guard) = self.guard.take() else {
            return Err(Error::TransactionClosed);
        };
        let closed = self.closed.load(Ordering::Acquire);
        let result = match guard.as_ref() {
            // The caller's own SQL ended the transaction already (refused by
            // `still_open`, but the work is gone): nothing to roll back, and
            // nothing atomic to commit.
            Some(conn) if conn.is_autocommit() => {
                if end == COMMIT {
                    Err(Error::Transaction("the transaction was already ended by a statement inside it".into()))
                } else {
                    Ok(())
                }
            }
            Some(conn) if closed => {
                let _ = conn.execute_batch(ROLLBACK);
                if end == COMMIT {
                    Err(Error::StoreClosed)
                } else {
                    Ok(())
                }
            }
            Some(conn) => {
                let r = conn.execute_batch(end).db();
                // A failed COMMIT must not leave the shared writer inside a transaction.
                if r.is_err() && !conn.is_autocommit() {
                    let _ = conn.execute_batch(ROLLBACK);
                }
                r
            }
            None => Err(Error::StoreClosed),
        };
        if closed {
            // `close` could not take the writer while we held it.
            guard.take();
        }
        result
    }
}

impl Tx for SqliteTx {
    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64> {
        let conn = self.conn()?;
        // Plain `prepare`, not the cache: the caller's ad-hoc statements would
        // evict the engine's hot ones.
        let mut stmt = conn.prepare(sql).db()?;
        let before = conn.total_changes();
        // Run to the end, draining any rows (`INSERT … RETURNING`, a SELECT).
        let mut rows = stmt.query(params_from_iter(params.iter().map(Param))).db()?;
        let mut returned = 0;
        while rows.next().db()?.is_some() {
            returned += 1;
        }
        drop(rows);
        drop(stmt);
        // sqlite3_changes() keeps the count of the last INSERT/UPDATE/DELETE,
        // so a SELECT or DDL would report a stale number. Like Postgres's
        // command tag: rows changed, else rows returned (a SELECT), else 0.
        let changed = if conn.total_changes() == before { returned } else { conn.changes() };
        still_open(conn)?;
        Ok(changed)
    }

    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<SqlRow>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(sql).db()?;
        let names: Vec<String> = stmt.column_names().map(str::to_owned).collect();
        let mut rows = stmt.query(params_from_iter(params.iter().map(Param))).db()?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().db()? {
            let mut cells = Vec::with_capacity(names.len());
            for (i, name) in names.iter().enumerate() {
                cells.push((name.clone(), value(row.get_ref(i).db()?)));
            }
            out.push(cells);
        }
        drop(rows);
        drop(stmt);
        still_open(conn)?;
        Ok(out)
    }

    fn commit(mut self: Box<Self>) -> Result<()> {
        self.finish(COMMIT)
    }

    fn rollback(mut self: Box<Self>) -> Result<()> {
        self.finish(ROLLBACK)
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl Drop for SqliteTx {
    /// A transaction dropped without commit or rollback rolls back, so the
    /// shared writer is never left inside it.
    fn drop(&mut self) {
        if self.guard.is_some() {
            let _ = self.finish(ROLLBACK);
        }
    }
}

/// Refuses a caller statement that ended the transaction itself (`COMMIT`,
/// `ROLLBACK`, `END`): the work so far is no longer atomic with what follows.
fn still_open(conn: &Connection) -> Result<()> {
    if conn.is_autocommit() {
        return Err(Error::ended_by_statement());
    }
    Ok(())
}

/// A caller parameter as SQLite binds it (a bool as 0/1).
struct Param<'a>(&'a SqlValue);

impl ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            SqlValue::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            SqlValue::Bool(b) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(*b))),
            SqlValue::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            SqlValue::Float(f) => ToSqlOutput::Borrowed(ValueRef::Real(*f)),
            SqlValue::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            SqlValue::Bytes(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

/// A result cell by its storage class. Text that is not valid UTF-8 (SQLite
/// does not enforce it) is decoded lossily rather than failing the query.
fn value(v: ValueRef<'_>) -> SqlValue {
    match v {
        ValueRef::Null => SqlValue::Null,
        ValueRef::Integer(i) => SqlValue::Int(i),
        ValueRef::Real(f) => SqlValue::Float(f),
        ValueRef::Text(t) => SqlValue::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => SqlValue::Bytes(b.to_vec()),
    }
}
