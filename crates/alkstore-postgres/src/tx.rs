//! The caller's transaction (SPEC §6): one pooled connection inside `BEGIN`.
//!
//! The transaction owns its pool object for its whole life, so the engine's
//! own ops passed `tx=` run on the same connection and see its writes. The
//! connection goes back to the pool only when it is outside a transaction:
//! after a successful COMMIT/ROLLBACK, or — when the transaction is dropped
//! unfinished — after a background ROLLBACK; a connection whose rollback
//! failed is detached from the pool and closed instead.

use std::any::Any;

use alkstore_core::{Error, Result, SqlRow, SqlValue, Tx};
use deadpool_postgres::{ClientWrapper, Object};
use tokio_postgres::types::ToSql;

use crate::error::{pg_error, Redactor};
use crate::params::{Cell, Param};
use crate::runtime::Rt;

/// An open caller transaction on one pooled connection.
pub struct PgTx {
    conn: Option<Object>,
    engine_id: u64,
    /// The runtime of the process that began it (and opened the store).
    rt: Rt,
    redactor: Redactor,
    /// A statement failed: Postgres has aborted the transaction, so COMMIT
    /// would silently roll back. We refuse it instead.
    failed: bool,
}

impl std::fmt::Debug for PgTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTx").field("open", &self.conn.is_some()).field("failed", &self.failed).finish()
    }
}

impl PgTx {
    /// Wraps a connection on which `BEGIN` already ran.
    pub(crate) fn new(conn: Object, engine_id: u64, rt: Rt, redactor: Redactor) -> Self {
        PgTx { conn: Some(conn), engine_id, rt, redactor, failed: false }
    }

    /// Which engine began this transaction.
    pub(crate) fn engine_id(&self) -> u64 {
        self.engine_id
    }

    /// The connection, while the transaction is open.
    pub(crate) fn client(&self) -> Result<&ClientWrapper> {
        self.conn.as_deref().ok_or(Error::TransactionClosed)
    }

    /// Records that a statement failed inside this transaction.
    pub(crate) fn mark_failed(&mut self) {
        self.failed = true;
    }

    fn run<T>(&mut self, f: impl AsyncFnOnce(&ClientWrapper) -> Result<T>) -> Result<T> {
        let client = self.client()?;
        let r = self.rt.block_on(f(client))?;
        if r.is_err() {
            self.failed = true;
        }
        r.map_err(|e| self.redactor.scrub(e))
    }

    /// Ends the transaction with `sql` (COMMIT or ROLLBACK). The connection
    /// returns to the pool only if that worked; otherwise it is closed.
    fn finish(&mut self, sql: &'static str) -> Result<()> {
        // Checked before the connection leaves `self`: in a forked child it
        // must stay put, for `Drop` to leave it alone.
        let rt = self.rt.runtime()?;
        let conn = self.conn.take().ok_or(Error::TransactionClosed)?;
        let r = rt.block_on(conn.batch_execute(sql));
        match r {
            Ok(()) => Ok(()),
            Err(e) => {
                drop(Object::take(conn));
                Err(self.redactor.scrub(pg_error(&e)))
            }
        }
    }
}

/// Prepares `sql` and binds `params` to the types the server inferred.
async fn bind<'p>(
    c: &ClientWrapper,
    sql: &str,
    params: &'p [SqlValue],
) -> Result<(tokio_postgres::Statement, Vec<Param<'p>>)> {
    // Not the statement cache: the caller's SQL is unbounded in variety, and
    // a cached plan breaks ("cached plan must not change result type") when
    // the caller alters their own tables.
    let stmt = c.prepare(sql).await.map_err(|e| pg_error(&e))?;
    if stmt.params().len() != params.len() {
        return Err(Error::database(
            None,
            format!("the statement has {} parameter(s) but {} were given", stmt.params().len(), params.len()),
        ));
    }
    Ok((stmt, params.iter().map(Param).collect()))
}

fn refs<'a>(params: &'a [Param<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl Tx for PgTx {
    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64> {
        self.run(async |c| {
            let (stmt, ps) = bind(c, sql, params).await?;
            c.execute(&stmt, &refs(&ps)).await.map_err(|e| pg_error(&e))
        })
    }

    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<SqlRow>> {
        self.run(async |c| {
            let (stmt, ps) = bind(c, sql, params).await?;
            let rows = c.query(&stmt, &refs(&ps)).await.map_err(|e| pg_error(&e))?;
            let names: Vec<String> = stmt.columns().iter().map(|c| c.name().to_owned()).collect();
            rows.iter()
                .map(|row| {
                    names
                        .iter()
                        .enumerate()
                        .map(|(i, name)| {
                            let cell: Cell = row.try_get(i).map_err(|e| pg_error(&e))?;
                            Ok((name.clone(), cell.0))
                        })
                        .collect()
                })
                .collect()
        })
    }

    fn commit(mut self: Box<Self>) -> Result<()> {
        if self.failed {
            self.finish("ROLLBACK")?;
            return Err(Error::Transaction("the transaction was rolled back: a statement inside it failed".into()));
        }
        self.finish("COMMIT")
    }

    fn rollback(mut self: Box<Self>) -> Result<()> {
        self.finish("ROLLBACK")
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl Drop for PgTx {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        // Never block in a destructor (it may run on the runtime itself):
        // roll back in the background and only then let the connection go
        // back to the pool.
        match self.rt.runtime() {
            Ok(rt) => {
                rt.spawn(async move {
                    if conn.batch_execute("ROLLBACK").await.is_err() {
                        drop(Object::take(conn));
                    }
                });
            }
            // A forked child: the socket is the parent's and the runtime's
            // threads are gone. Touch neither; the parent still owns both.
            Err(_) => std::mem::forget(conn),
        }
    }
}
