//! The caller's transaction (SPEC §6): one pooled connection inside `BEGIN`.
//!
//! The transaction owns its pool object for its whole life, so the engine's
//! own ops passed `tx=` run on the same connection and see its writes. The
//! connection goes back to the pool only when it is outside a transaction:
//! after a successful COMMIT/ROLLBACK, or — when the transaction is dropped
//! unfinished — after a background ROLLBACK; a connection whose rollback
//! failed is detached from the pool and closed instead.
//!
//! A caller statement must not end the transaction itself (`COMMIT`,
//! `ROLLBACK`, `END`, `ABORT`, `… AND CHAIN`, `PREPARE TRANSACTION`): the
//! SQLite engine refuses that, and so do we. Rather than parse the caller's
//! SQL for every spelling, `BEGIN` sets a transaction-local marker setting
//! and each caller statement is followed by a read of it, pipelined behind
//! the statement (no extra round trip). The server resets the marker at the
//! end of the transaction — also when `AND CHAIN` opens the next one at once
//! — so a marker that no longer reads back means the statement ended it.
use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};

use alkstore_core::{Error, Result, SqlRow, SqlValue, Tx};
use deadpool_postgres::{ClientWrapper, Object};
use tokio_postgres::types::{ToSql, Type};

use crate::error::{pg_error, Exit};
use crate::ops::quote_ident;
use crate::params::{Cell, Param};
use crate::runtime::Rt;

/// The transaction-local setting that marks our transaction.
const MARKER: &str = "alkstore.tx";

/// Reads the marker back; NULL or '' once the transaction has ended.
const READ_MARKER: &str = "SELECT current_setting('alkstore.tx', true)";

/// [`READ_MARKER`] after a caller's query with unnamed statements, and the
/// names of the statements prepared in this session since the transaction
/// began by the protocol (not by SQL `PREPARE`): tokio-postgres looks up a
/// result column of a non-built-in type (an enum, `citext`, a composite)
/// with named statements of its own, which it keeps on the connection. Only
/// the driver makes such statements here, so these are its.
const READ_AFTER_QUERY: &str = "SELECT current_setting('alkstore.tx', true), \
     ARRAY(SELECT name FROM pg_prepared_statements WHERE NOT from_sql AND prepare_time >= now())::text[]";

/// Makes markers unique within the process (with the pid, across processes
/// sharing a pooled server session is impossible, but cheap to rule out).
static NEXT_MARKER: AtomicU64 = AtomicU64::new(1);

/// Postgres's own SQLSTATE for `BEGIN` inside a transaction (active_sql_transaction),
/// which it only reports as a warning.
const ACTIVE_SQL_TRANSACTION: &str = "25001";

/// An open caller transaction on one pooled connection.
pub struct PgTx {
    conn: Option<Object>,
    engine_id: u64,
    /// The runtime of the process that began it (and opened the store).
    rt: Rt,
    /// The store's way out for errors (`error.rs`).
    exit: Exit,
    /// This transaction's value of [`MARKER`].
    marker: String,
    /// Unnamed statements (ADR 0030): nothing cached in the session.
    unnamed: bool,
    /// Closes the connection when the transaction ends instead of giving it
    /// back to the pool: with unnamed statements, the driver prepared named
    /// statements of its own on it (see [`READ_AFTER_QUERY`]), now gone from
    /// the session but still in the driver's cache.
    discard: bool,
}

impl std::fmt::Debug for PgTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTx").field("open", &self.conn.is_some()).finish()
    }
}

impl PgTx {
    /// The statement that opens a caller transaction, marked with `marker`:
    /// one simple-query round trip.
    pub(crate) fn begin_sql(marker: &str) -> String {
        format!("BEGIN; SELECT set_config('{MARKER}', '{marker}', true)")
    }

    /// A fresh marker for the next transaction (digits and '-' only, so it
    /// is safe inside a string literal).
    pub(crate) fn next_marker() -> String {
        format!("{}-{}", std::process::id(), NEXT_MARKER.fetch_add(1, Ordering::Relaxed))
    }

    /// Wraps a connection on which [`PgTx::begin_sql`] for `marker` already ran.
    pub(crate) fn new(conn: Object, engine_id: u64, rt: Rt, exit: Exit, marker: String, unnamed: bool) -> Self {
        PgTx { conn: Some(conn), engine_id, rt, exit, marker, unnamed, discard: false }
    }

    /// Which engine began this transaction.
    pub(crate) fn engine_id(&self) -> u64 {
        self.engine_id
    }

    /// The connection, while the transaction is open.
    pub(crate) fn client(&self) -> Result<&ClientWrapper> {
        self.conn.as_deref().ok_or(Error::TransactionClosed)
    }

    fn run<T>(&mut self, f: impl AsyncFnOnce(&ClientWrapper) -> Result<T>) -> Result<T> {
        let client = self.client()?;
        self.exit.block_on(self.rt, f(client))
    }

    /// Ends the transaction with `sql` (COMMIT or ROLLBACK). The connection
    /// returns to the pool only if that worked; otherwise it is closed.
    fn finish(&mut self, sql: &'static str) -> Result<()> {
        // Checked before the connection leaves `self`: in a forked child it
        // must stay put, for `Drop` to leave it alone.
        self.rt.runtime()?;
        let conn = self.conn.take().ok_or(Error::TransactionClosed)?;
        let r = self.exit.block_on(self.rt, async { conn.batch_execute(sql).await.map_err(|e| pg_error(&e)) });
        if r.is_err() || self.discard {
            drop(Object::take(conn));
        }
        r
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

/// `params` with the types an unnamed statement declares for them: the
/// server cannot be asked (that takes a named statement, ADR 0030), so a
/// value states its own type, as a literal of that type would — int8,
/// float8, boolean, bytea — and a str or None is left for the server to
/// infer, like a quoted literal.
fn declared<'a>(params: &'a [Param<'a>]) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    params
        .iter()
        .map(|p| {
            let ty = match p.0 {
                SqlValue::Int(_) => Type::INT8,
                SqlValue::Float(_) => Type::FLOAT8,
                SqlValue::Bool(_) => Type::BOOL,
                SqlValue::Bytes(_) => Type::BYTEA,
                SqlValue::Text(_) | SqlValue::Null => Type::UNKNOWN,
            };
            (p as &(dyn ToSql + Sync), ty)
        })
        .collect()
}

/// After a caller's query with unnamed statements: the marker read (not
/// pipelined: the driver's own lookups, if any, follow the query's reply),
/// and the named statements the driver made for them closed again in this
/// same session. True when there were any: the connection must not be
/// reused, its driver-side cache names statements that are gone.
async fn after_unnamed_query(c: &ClientWrapper, marker: &str) -> Result<bool> {
    let row = c.query_typed_one(READ_AFTER_QUERY, &[]).await.map_err(|e| pg_error(&e))?;
    let value: Option<String> = row.try_get(0).map_err(|e| pg_error(&e))?;
    if value.as_deref() != Some(marker) {
        return Err(Error::ended_by_statement());
    }
    let names: Vec<String> = row.try_get(1).map_err(|e| pg_error(&e))?;
    if names.is_empty() {
        return Ok(false);
    }
    let sql: String = names.iter().map(|n| format!("DEALLOCATE {};", quote_ident(n))).collect();
    c.batch_execute(&sql).await.map_err(|e| pg_error(&e))?;
    Ok(true)
}

/// Rows as the caller gets them: column name to value.
fn to_rows(rows: &[tokio_postgres::Row]) -> Result<Vec<SqlRow>> {
    rows.iter()
        .map(|row| {
            row.columns()
                .iter()
                .enumerate()
                .map(|(i, column)| {
                    let cell: Cell = row.try_get(i).map_err(|e| pg_error(&e))?;
                    Ok((column.name().to_owned(), cell.0))
                })
                .collect()
        })
        .collect()
}

/// Refuses `BEGIN` / `START TRANSACTION` before it runs. Inside a
/// transaction Postgres only warns and carries on, so nothing on the server
/// side would tell; SQLite fails the statement, and so do we, with the
/// SQLSTATE Postgres gives the warning. The only keyword look at the
/// caller's SQL: the ways to *end* a transaction are detected by the server.
fn refuse_begin(sql: &str) -> Result<()> {
    let word = first_keyword(sql);
    if word.eq_ignore_ascii_case("BEGIN") || word.eq_ignore_ascii_case("START") {
        return Err(Error::database(
            Some(ACTIVE_SQL_TRANSACTION.to_owned()),
            "there is already a transaction in progress: the transaction block began it",
        ));
    }
    Ok(())
}

/// The first word of `sql` after whitespace and comments (`-- …` and nested `/* … */`).
fn first_keyword(sql: &str) -> &str {
    let mut rest = sql;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, tail)| tail);
        } else if rest.starts_with("/*") {
            let mut depth = 0usize;
            let mut end = rest.len();
            let bytes = rest.as_bytes();
            let mut i = 0;
            while i + 1 < bytes.len() {
                match (bytes[i], bytes[i + 1]) {
                    (b'/', b'*') => {
                        depth += 1;
                        i += 2;
                    }
                    (b'*', b'/') => {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            end = i;
                            break;
                        }
                    }
                    _ => i += 1,
                }
            }
            rest = &rest[end..];
        } else {
            let len = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
            return &rest[..len];
        }
    }
}

/// Whether the transaction marked `marker` is still the open one, read on
/// `c` right after the caller's statement.
/// With `unnamed`, the read is an unnamed statement: a cached one would
/// outlive the transaction's server session behind a pooler.
async fn still_open(c: &ClientWrapper, marker: &str, unnamed: bool) -> Result<()> {
    let row = if unnamed {
        c.query_typed_one(READ_MARKER, &[]).await
    } else {
        let stmt = c.prepare_cached(READ_MARKER).await.map_err(|e| pg_error(&e))?;
        c.query_one(&stmt, &[]).await
    };
    let row = row.map_err(|e| pg_error(&e))?;
    let value: Option<String> = row.try_get(0).map_err(|e| pg_error(&e))?;
    if value.as_deref() == Some(marker) {
        Ok(())
    } else {
        Err(Error::ended_by_statement())
    }
}

impl Tx for PgTx {
    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64> {
        refuse_begin(sql)?;
        let (marker, unnamed) = (self.marker.clone(), self.unnamed);
        self.run(async |c| {
            // Both requests go out before either reply is read, in this order.
            let (done, open) = if unnamed {
                let ps: Vec<Param<'_>> = params.iter().map(Param).collect();
                let typed = declared(&ps);
                tokio::join!(c.execute_typed(sql, &typed), still_open(c, &marker, true))
            } else {
                let (stmt, ps) = bind(c, sql, params).await?;
                let args = refs(&ps);
                tokio::join!(c.execute(&stmt, &args), still_open(c, &marker, false))
            };
            let n = done.map_err(|e| pg_error(&e))?;
            open?;
            Ok(n)
        })
    }

    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<SqlRow>> {
        refuse_begin(sql)?;
        let (marker, unnamed) = (self.marker.clone(), self.unnamed);
        if unnamed {
            let (rows, discard) = self.run(async |c| {
                let ps: Vec<Param<'_>> = params.iter().map(Param).collect();
                match c.query_typed(sql, &declared(&ps)).await {
                    Ok(rows) => Ok((to_rows(&rows), after_unnamed_query(c, &marker).await?)),
                    // Aborted: nothing more runs in this transaction. Had the
                    // driver looked a type up first, its statements stay in
                    // its cache: close the connection at the end to be safe.
                    Err(e) => Ok((Err(pg_error(&e)), true)),
                }
            })?;
            self.discard |= discard;
            return self.exit.leave(rows);
        }
        self.run(async |c| {
            let (stmt, ps) = bind(c, sql, params).await?;
            let args = refs(&ps);
            let (rows, open) = tokio::join!(c.query(&stmt, &args), still_open(c, &marker, false));
            let rows = rows.map_err(|e| pg_error(&e))?;
            open?;
            to_rows(&rows)
        })
    }

    /// Never called after a failed statement: Postgres has aborted the
    /// transaction then and COMMIT would silently roll back, so the Store's
    /// session rolls back and reports `TransactionError` instead.
    fn commit(mut self: Box<Self>) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_keyword_skips_whitespace_and_comments() {
        assert_eq!(first_keyword("  BEGIN"), "BEGIN");
        assert_eq!(first_keyword("-- a\n-- b\n start transaction"), "start");
        assert_eq!(first_keyword("/* a /* nested */ still */begin;"), "begin");
        assert_eq!(first_keyword("SELECT 1"), "SELECT");
        assert_eq!(first_keyword("/* unterminated"), "");
        assert_eq!(first_keyword(""), "");
    }

    #[test]
    fn begin_is_refused_with_the_servers_sqlstate() {
        for sql in ["BEGIN", "begin isolation level serializable", "/**/START TRANSACTION"] {
            match refuse_begin(sql) {
                Err(Error::Database { code: Some(c), .. }) => assert_eq!(c, ACTIVE_SQL_TRANSACTION),
                other => panic!("{sql}: {other:?}"),
            }
        }
        for sql in ["BEGINNING", "SELECT 'BEGIN'", "COMMIT", "DO $$BEGIN NULL; END$$"] {
            assert_eq!(refuse_begin(sql), Ok(()), "{sql}");
        }
    }
}
