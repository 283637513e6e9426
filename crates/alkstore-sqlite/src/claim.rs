//! The claim (SPEC §4.2, ADR 0001): exhaustion by reclaim, then one
//! index-matched `UPDATE … RETURNING`, both in one `BEGIN IMMEDIATE`
//! transaction so the two steps judge against the same `now` and no other
//! process's write falls between them.

use std::cmp::Reverse;

use alkstore_core::{Claimed, Error, Result};
use rusqlite::{params, Connection};

use crate::conn::{atomic, now, Scope};
use crate::error::DbResult;
use crate::rows;
use crate::sql;

/// Claims up to `n` jobs of `queue` for `worker`, best first.
pub(crate) fn claim(
    conn: &Connection,
    offset: i64,
    queue: &str,
    worker: &str,
    n: usize,
) -> Result<Vec<Claimed>> {
    let limit = i64::try_from(n).map_err(|_| Error::Value(format!("n is too large: {n}")))?;
    let mut claimed = atomic(conn, Scope::Own, |c| {
        let now = now(c, offset)?;
        exhaust(c, queue, now)?;
        let mut stmt = c.prepare_cached(sql::CLAIM).db()?;
        let mut rows = stmt.query(params![queue, worker, now, limit]).db()?;
        let mut out = Vec::with_capacity(n.min(64));
        while let Some(row) = rows.next().db()? {
            out.push(rows::claimed(row)?);
        }
        Ok(out)
    })?;
    // RETURNING order is unspecified; hand jobs out in claim order.
    if claimed.len() > 1 {
        claimed.sort_unstable_by_key(|j| (Reverse(j.priority), j.run_at, j.id));
    }
    Ok(claimed)
}

/// Moves lapsed leases whose budget is spent to dead as 'attempts exhausted'.
/// Normally matches nothing, and then the DELETE is skipped.
fn exhaust(conn: &Connection, queue: &str, now: i64) -> Result<()> {
    let moved = conn
        .prepare_cached(sql::EXHAUST_MOVE)
        .and_then(|mut s| s.execute(params![queue, now]))
        .db()?;
    if moved == 0 {
        return Ok(());
    }
    let deleted = conn
        .prepare_cached(sql::EXHAUST_DELETE)
        .and_then(|mut s| s.execute(params![queue, now]))
        .db()?;
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
