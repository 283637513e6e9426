//! The writer connection with its hot statements held prepared (ADR 0035).
//!
//! rusqlite's statement cache finds a statement by its text: each use hashes
//! the whole text twice, copies it into a fresh key and moves the statement
//! out of and back into the LRU — about 2,400 instructions per use (a
//! Python claim + ack costs about 112,000). The few statements every per-op call runs (the one-job
//! claim, the ack, the enqueue) are instead held here, beside the connection
//! they borrow, and found by the address of their `&'static str`.

use std::cell::RefCell;
use std::ops::Deref;

use alkstore_core::Result;
use rusqlite::{Connection, PrepFlags, Statement};

use crate::error::DbResult;

/// Prepared statements keyed by the address and length of their text.
type Held<'c> = RefCell<Vec<((usize, usize), Statement<'c>)>>;

self_cell::self_cell!(
    struct Cell {
        owner: Connection,
        #[not_covariant]
        dependent: Held,
    }
);

/// The engine's writer: a connection and the hot statements prepared on it.
pub(crate) struct Writer(Cell);

// SAFETY: `Statement` is not `Send` only because it borrows a `Connection`,
// which is not `Sync`. Every statement held here borrows the connection of
// this same cell, so they move between threads together, and nothing else
// can reach either: the engine only touches a `Writer` under its mutex.
unsafe impl Send for Writer {}

impl Writer {
    pub(crate) fn new(conn: Connection) -> Self {
        Writer(Cell::new(conn, |_| RefCell::new(Vec::new())))
    }
}

impl Deref for Writer {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.0.borrow_owner()
    }
}

/// A connection that can run a statement given by its `'static` text: the
/// writer from the statements it holds, a bare connection (inside a
/// transaction's closure, in tests) through rusqlite's cache.
pub(crate) trait Conn {
    /// The connection itself.
    fn conn(&self) -> &Connection;
    /// Runs `f` on the prepared statement of `sql`.
    fn with_stmt<T>(&self, sql: &'static str, f: impl FnOnce(&mut Statement<'_>) -> Result<T>) -> Result<T>;
}

impl Conn for Writer {
    #[inline]
    fn conn(&self) -> &Connection {
        self
    }

    fn with_stmt<T>(&self, sql: &'static str, f: impl FnOnce(&mut Statement<'_>) -> Result<T>) -> Result<T> {
        self.0.with_dependent(|conn, held| {
            // A statement already in use further up this call (no op does
            // that today) gets a cached one rather than a second borrow.
            let Ok(mut held) = held.try_borrow_mut() else {
                return f(&mut *conn.prepare_cached(sql).db()?);
            };
            let key = (sql.as_ptr() as usize, sql.len());
            let i = match held.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    // Persistent, as rusqlite's cache prepares: a statement kept
                    // out of the lookaside pool leaves it to each run's cursors
                    // (without the flag, malloc and its mutex took their place).
                    held.push((key, conn.prepare_with_flags(sql, PrepFlags::SQLITE_PREPARE_PERSISTENT).db()?));
                    held.len() - 1
                }
            };
            f(&mut held[i].1)
        })
    }
}

impl Conn for Connection {
    #[inline]
    fn conn(&self) -> &Connection {
        self
    }

    fn with_stmt<T>(&self, sql: &'static str, f: impl FnOnce(&mut Statement<'_>) -> Result<T>) -> Result<T> {
        f(&mut *self.prepare_cached(sql).db()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A held statement is prepared once and found again by its text's
    /// address; a nested use of the same text still runs.
    #[test]
    fn a_held_statement_is_prepared_once_and_reused() -> Result<()> {
        const ONE: &str = "SELECT ?1 + 1";
        let w = Writer::new(Connection::open_in_memory().db()?);
        for i in 0..3_i64 {
            let got: i64 = w.with_stmt(ONE, |s| s.query_row([i], |r| r.get(0)).db())?;
            assert_eq!(got, i + 1);
        }
        let nested: i64 = w.with_stmt(ONE, |outer| {
            let inner: i64 = w.with_stmt(ONE, |s| s.query_row([10_i64], |r| r.get(0)).db())?;
            Ok(inner + outer.query_row([0_i64], |r| r.get::<_, i64>(0)).db()?)
        })?;
        assert_eq!(nested, 12);
        w.0.with_dependent(|_, held| assert_eq!(held.borrow().len(), 1));
        Ok(())
    }
}
