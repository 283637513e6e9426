//! The job-handle operations (SPEC §4.3): ack, retry, fail, heartbeat,
//! release. Every one applies the validity predicate in the same statement
//! that writes, so a stale, lapsed or cancelled handle changes nothing.

use alkstore_core::{Claimed, Error, Result};
use rusqlite::{params, Connection};

use crate::conn::{atomic, now, Scope};
use crate::error::DbResult;
use crate::sql;

/// Deletes every valid handle's row; returns how many landed. One handle
/// outside a caller transaction is a single autocommit DELETE.
pub(crate) fn ack(conn: &Connection, scope: Scope, offset: i64, jobs: &[&Claimed]) -> Result<usize> {
    let delete_all = |c: &Connection| -> Result<usize> {
        let mut stmt = c.prepare_cached(sql::ACK).db()?;
        let mut landed = 0;
        for job in jobs {
            landed += stmt.execute(params![job.id, job.worker_id, job.claim_token, offset]).db()?;
        }
        Ok(landed)
    };
    if scope == Scope::Caller || jobs.len() == 1 {
        // Inside the caller's transaction each DELETE already lands with it.
        return delete_all(conn);
    }
    atomic(conn, Scope::Own, delete_all)
}

/// Back to pending after `delay` seconds (resolved by the Store, which
/// sends a spent budget to [`fail`] instead). False when the handle is not valid.
pub(crate) fn retry(conn: &Connection, offset: i64, job: &Claimed, delay: i64) -> Result<bool> {
    let changed = conn
        .prepare_cached(sql::RETRY)
        .and_then(|mut s| s.execute(params![job.id, job.worker_id, job.claim_token, offset, delay]))
        .db()?;
    Ok(changed == 1)
}

/// Straight to dead with `error`. False when the handle is not valid.
pub(crate) fn fail(conn: &Connection, scope: Scope, offset: i64, job: &Claimed, error: &str) -> Result<bool> {
    to_dead(conn, scope, offset, job, error)
}

/// `deadline := now + extend_s` for a valid (unlapsed) handle.
pub(crate) fn heartbeat(conn: &Connection, offset: i64, job: &Claimed, extend_s: i64) -> Result<Option<i64>> {
    let mut stmt = conn.prepare_cached(sql::HEARTBEAT).db()?;
    let mut rows = stmt.query(params![job.id, job.worker_id, job.claim_token, offset, extend_s]).db()?;
    let mut deadline = None;
    // Step to the end rather than stopping at the row: the autocommit write
    // commits when the statement finishes, and an error there must surface.
    while let Some(row) = rows.next().db()? {
        deadline = Some(row.get(0).db()?);
    }
    Ok(deadline)
}

/// Back to pending now with the attempt refunded (the claim token is not).
pub(crate) fn release(conn: &Connection, offset: i64, job: &Claimed) -> Result<bool> {
    let changed = conn
        .prepare_cached(sql::RELEASE_JOB)
        .and_then(|mut s| s.execute(params![job.id, job.worker_id, job.claim_token, offset]))
        .db()?;
    Ok(changed == 1)
}

/// Moves a valid handle's row to dead: INSERT … SELECT then DELETE with the
/// same predicate and the same `now`, atomically.
fn to_dead(conn: &Connection, scope: Scope, offset: i64, job: &Claimed, error: &str) -> Result<bool> {
    atomic(conn, scope, |c| {
        let now = now(c, offset)?;
        let moved = c
            .prepare_cached(sql::HANDLE_MOVE)
            .and_then(|mut s| s.execute(params![job.id, job.worker_id, job.claim_token, now, error]))
            .db()?;
        if moved == 0 {
            return Ok(false);
        }
        let deleted = c
            .prepare_cached(sql::HANDLE_DELETE)
            .and_then(|mut s| s.execute(params![job.id, job.worker_id, job.claim_token, now]))
            .db()?;
        if deleted != moved {
            return Err(Error::database(
                None,
                format!("job {} was copied to dead but not removed from the live table; rolled back", job.id),
            ));
        }
        Ok(true)
    })
}
