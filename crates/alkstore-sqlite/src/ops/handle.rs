//! The job-handle operations (SPEC §4.3): ack, retry, fail, heartbeat,
//! release. Every one applies the validity predicate in the same statement
//! that writes, so a stale, lapsed or cancelled handle changes nothing.

use alkstore_core::{Claimed, Error, HandleOps, Result, Tx};
use rusqlite::{params, Connection};

use crate::conn::{atomic, now, Scope};
use crate::engine::SqliteEngine;
use crate::error::DbResult;

/// The validity predicate of every handle op, `now` computed in-statement.
/// `?1` id, `?2` worker, `?3` claim token, `?4` offset.
macro_rules! valid_sql_now {
    () => {
        "id = ?1 AND state = 'processing' AND worker_id = ?2 AND claim_token = ?3 \
         AND deadline >= unixepoch() + ?4"
    };
}

/// The validity predicate with `now` bound as `?4` (multi-statement moves).
macro_rules! valid_bound_now {
    () => {
        "id = ?1 AND state = 'processing' AND worker_id = ?2 AND claim_token = ?3 AND deadline >= ?4"
    };
}

/// `ack`: a valid handle's row is deleted, unless it keeps its result
/// (that is [`super::workflows::ack_flow`]'s). A parent's children are
/// settled by migration 0012's trigger, whose `WHEN has_children` a plain
/// job fails, so a plain ack never reads the edges.
pub(crate) const ACK: &str =
    concat!("DELETE FROM __alkstore_jobs WHERE ", valid_sql_now!(), " AND keep_result_s IS NULL");

/// The ack of a handle given a result: a plain job's, which drops the result
/// (no children to need it, no `keep_result`).
pub(crate) const ACK_DROP_RESULT: &str =
    concat!("DELETE FROM __alkstore_jobs WHERE ", valid_sql_now!(), " AND keep_result_s IS NULL AND has_children = 0");

/// Any valid handle's row deleted: the last step of the workflow ack.
pub(crate) const ACK_ANY: &str = concat!("DELETE FROM __alkstore_jobs WHERE ", valid_sql_now!());

/// `retry` under budget: back to pending after `?5` seconds. A pending job
/// holds no lease (SPEC §4.4): worker_id and deadline are cleared, while
/// claimed_at stays as the last claim's time. The claim token stays too, and
/// it alone fences off the old handle.
pub(crate) const RETRY: &str = concat!(
    "UPDATE __alkstore_jobs SET state = 'pending', run_at = unixepoch() + ?4 + ?5, worker_id = NULL, \
     deadline = NULL WHERE ",
    valid_sql_now!()
);

/// `heartbeat`: an absolute reset, `deadline = now + ?5`; a lapsed lease fails
/// the predicate, so a late heartbeat never steals the job back.
pub(crate) const HEARTBEAT: &str = concat!(
    "UPDATE __alkstore_jobs SET deadline = unixepoch() + ?4 + ?5 WHERE ",
    valid_sql_now!(),
    " RETURNING deadline"
);

/// `release` / `snooze`: pending after `?5` seconds with the attempt refunded
/// and the lease cleared as by [`RETRY`]; the claim token is not refunded,
/// so this handle stays fenced off.
pub(crate) const RELEASE: &str = concat!(
    "UPDATE __alkstore_jobs SET state = 'pending', run_at = unixepoch() + ?4 + ?5, attempts = attempts - 1, \
     worker_id = NULL, deadline = NULL WHERE ",
    valid_sql_now!()
);

/// `fail` / `retry` at budget: a valid handle's row to dead with `?5` as
/// last_error, `?4` now.
pub(crate) const FAIL_MOVE: &str = live_to_dead!("?5", "?4", valid_bound_now!());
/// The second half of [`FAIL_MOVE`], same predicate, same `now`.
pub(crate) const FAIL_DELETE: &str = concat!("DELETE FROM __alkstore_jobs WHERE ", valid_bound_now!());

/// The plain ack of one handle (`sql`: [`ACK`], or [`ACK_DROP_RESULT`]):
/// true when it deleted the row.
pub(crate) fn ack_plain(conn: &Connection, sql: &str, offset: i64, job: &Claimed) -> Result<bool> {
    let n = conn
        .prepare_cached(sql)
        .and_then(|mut s| s.execute(params![job.id, job.worker_id, job.claim_token, offset]))
        .db()?;
    Ok(n == 1)
}

/// Deletes every valid handle's row; returns how many landed. One handle
/// outside a caller transaction is a single autocommit DELETE; a handle the
/// plain DELETE leaves (invalid, or keeping its result) goes on to the
/// workflow ack, in a transaction of its own (or a savepoint in the caller's).
pub(crate) fn ack(conn: &Connection, scope: Scope, offset: i64, jobs: &[&Claimed]) -> Result<usize> {
    let ack_all = |c: &Connection, inner: Scope| -> Result<usize> {
        let mut landed = 0;
        for job in jobs {
            if ack_plain(c, ACK, offset, job)? || super::workflows::ack_flow(c, inner, offset, job, None)? {
                landed += 1;
            }
        }
        Ok(landed)
    };
    if scope == Scope::Caller || jobs.len() == 1 {
        // Inside the caller's transaction each DELETE already lands with it.
        return ack_all(conn, scope);
    }
    atomic(conn, Scope::Own, |c| ack_all(c, Scope::Caller))
}

/// Back to pending after `delay` seconds (resolved by the Store, which
/// sends a spent budget to [`fail`] instead). False when the handle is not valid.
pub(crate) fn retry(conn: &Connection, offset: i64, job: &Claimed, delay: i64) -> Result<bool> {
    let changed = conn
        .prepare_cached(RETRY)
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
    let mut stmt = conn.prepare_cached(HEARTBEAT).db()?;
    let mut rows = stmt.query(params![job.id, job.worker_id, job.claim_token, offset, extend_s]).db()?;
    let mut deadline = None;
    // Step to the end rather than stopping at the row: the autocommit write
    // commits when the statement finishes, and an error there must surface.
    while let Some(row) = rows.next().db()? {
        deadline = Some(row.get(0).db()?);
    }
    Ok(deadline)
}

/// Back to pending after `delay_s` with the attempt refunded (the claim token is not).
pub(crate) fn release(conn: &Connection, offset: i64, job: &Claimed, delay_s: i64) -> Result<bool> {
    let changed = conn
        .prepare_cached(RELEASE)
        .and_then(|mut s| s.execute(params![job.id, job.worker_id, job.claim_token, offset, delay_s]))
        .db()?;
    Ok(changed == 1)
}

/// Moves a valid handle's row to dead: INSERT … SELECT then DELETE with the
/// same predicate and the same `now`, atomically.
fn to_dead(conn: &Connection, scope: Scope, offset: i64, job: &Claimed, error: &str) -> Result<bool> {
    atomic(conn, scope, |c| {
        let now = now(c, offset)?;
        let moved = c
            .prepare_cached(FAIL_MOVE)
            .and_then(|mut s| s.execute(params![job.id, job.worker_id, job.claim_token, now, error]))
            .db()?;
        if moved == 0 {
            return Ok(false);
        }
        let deleted = c
            .prepare_cached(FAIL_DELETE)
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

impl HandleOps for SqliteEngine {
    fn ack(&self, tx: Option<&mut dyn Tx>, jobs: &[&Claimed]) -> Result<usize> {
        let offset = self.offset();
        self.write(tx, |c, scope| ack(c, scope, offset, jobs))
    }

    fn retry(&self, tx: Option<&mut dyn Tx>, job: &Claimed, delay_s: i64) -> Result<bool> {
        let offset = self.offset();
        self.write(tx, |c, _| retry(c, offset, job, delay_s))
    }

    fn fail(&self, tx: Option<&mut dyn Tx>, job: &Claimed, error: &str) -> Result<bool> {
        let offset = self.offset();
        self.write(tx, |c, scope| fail(c, scope, offset, job, error))
    }

    fn heartbeat(&self, job: &Claimed, extend_s: i64) -> Result<Option<i64>> {
        let offset = self.offset();
        self.conns.with_writer(|c| heartbeat(c, offset, job, extend_s))
    }

    fn release(&self, job: &Claimed, delay_s: i64) -> Result<bool> {
        let offset = self.offset();
        self.conns.with_writer(|c| release(c, offset, job, delay_s))
    }
}
