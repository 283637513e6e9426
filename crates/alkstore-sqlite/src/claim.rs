//! The claim (SPEC §4.2, ADR 0001): exhaustion by reclaim, then one
//! index-matched `UPDATE … RETURNING`.
//!
//! Two paths give the same result:
//! - **fast** (the common case): one autocommit statement,
//!   [`sql::CLAIM_READY`], that claims from the ready index only while the
//!   queue has no lapsed lease. With no lapsed lease the exhaustion step has
//!   nothing to move and the leased candidate scan is empty, so this *is* the
//!   ADR claim — without a transaction, a clock read and an empty
//!   INSERT … SELECT around it. A single statement is atomic under SQLite's
//!   one writer, so concurrent claimers still never share a job.
//! - **full**: when the fast statement claims nothing and a lapsed lease
//!   exists, the ADR sequence runs in one `BEGIN IMMEDIATE` transaction at one
//!   bound `now`: exhausted lapsed rows to dead, then [`sql::CLAIM`] over the
//!   union of the ready and leased candidate scans.

use alkstore_core::{Claimed, Error, Result};
use rusqlite::{params, Connection, Params};

use crate::conn::{atomic, now, Scope};
use crate::error::DbResult;
use crate::rows;
use crate::sql;

/// Claims up to `n` (in `1..=1000`, the Store's range) jobs of `queue` for
/// `worker`, in RETURNING order: the Store sorts them into claim order.
pub(crate) fn claim(conn: &Connection, offset: i64, queue: &str, worker: &str, n: usize) -> Result<Vec<Claimed>> {
    // At most MAX_BATCH (the Store's range rule), so it fits.
    let limit = n as i64;
    let mut claimed = if n == 1 {
        run(conn, sql::CLAIM_READY_ONE, params![queue, worker, offset], n)?
    } else {
        run(conn, &sql::claim_ready_n(n), params![queue, worker, offset], n)?
    };
    if claimed.is_empty() && has_lapsed(conn, queue, offset)? {
        claimed = atomic(conn, Scope::Own, |c| {
            let now = now(c, offset)?;
            exhaust(c, queue, now)?;
            run(c, sql::CLAIM, params![queue, worker, now, limit], n)
        })?;
    }
    Ok(claimed)
}

/// Runs one claim statement and collects what it returned.
#[inline]
fn run(conn: &Connection, sql: &str, params: impl Params, n: usize) -> Result<Vec<Claimed>> {
    let mut stmt = conn.prepare_cached(sql).db()?;
    let mut rows = stmt.query(params).db()?;
    let mut out = Vec::with_capacity(n.min(64));
    while let Some(row) = rows.next().db()? {
        out.push(rows::claimed(row)?);
    }
    Ok(out)
}

/// Whether `queue` has a lease past its deadline (a read: no write lock).
fn has_lapsed(conn: &Connection, queue: &str, offset: i64) -> Result<bool> {
    conn.prepare_cached(sql::HAS_LAPSED).and_then(|mut s| s.query_row(params![queue, offset], |r| r.get(0))).db()
}

/// Moves lapsed leases whose budget is spent to dead as 'attempts exhausted'
/// (or 'expired' when also past their expiry, as a sweep would).
/// Usually matches nothing, and then the DELETE is skipped.
fn exhaust(conn: &Connection, queue: &str, now: i64) -> Result<()> {
    let moved = conn.prepare_cached(sql::EXHAUST_MOVE).and_then(|mut s| s.execute(params![queue, now])).db()?;
    if moved == 0 {
        return Ok(());
    }
    let deleted = conn.prepare_cached(sql::EXHAUST_DELETE).and_then(|mut s| s.execute(params![queue, now])).db()?;
    if deleted != moved {
        // Same predicate, same `now`, one write transaction: cannot differ
        // unless the file changed under us. Abort rather than strand a row.
        return Err(Error::database(
            None,
            format!("exhaustion by reclaim copied {moved} rows to dead but removed {deleted}; rolled back"),
        ));
    }
    Ok(())
}
