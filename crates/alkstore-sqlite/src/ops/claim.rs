//! The claim (SPEC §4.2, ADR 0001): exhaustion by reclaim, then one
//! index-matched `UPDATE … RETURNING`.
//!
//! Two paths give the same result:
//! - **fast** (the common case): one autocommit statement,
//!   [`CLAIM_READY`], that claims from the ready index only while the
//!   queue has no lapsed lease. With no lapsed lease the exhaustion step has
//!   nothing to move and the leased candidate scan is empty, so this *is* the
//!   ADR claim — without a transaction, a clock read and an empty
//!   INSERT … SELECT around it. A single statement is atomic under SQLite's
//!   one writer, so concurrent claimers still never share a job.
//! - **full**: when the fast statement claims nothing and a lapsed lease
//!   exists, the ADR sequence runs in one `BEGIN IMMEDIATE` transaction at one
//!   bound `now`: exhausted lapsed rows to dead, then [`CLAIM`] over the
//!   union of the ready and leased candidate scans.

use alkstore_core::{ClaimOps, Claimed, Error, Result};
use rusqlite::{params, Connection, Params};

use crate::conn::{atomic, now, Scope};
use crate::engine::SqliteEngine;
use crate::error::DbResult;
use crate::hot::Conn;
use crate::rows;

/// Lapsed leases whose budget is spent: the exhaustion-by-reclaim predicate
/// (a seek on the processing run of `__alkstore_jobs_ready`, migration
/// 0018). `?1` queue, `?2` now.
macro_rules! exhausted {
    () => {
        "queue = ?1 AND state = 'processing' AND deadline < ?2 AND attempts >= max_attempts"
    };
}

/// Claim step 1: exhausted lapsed rows to dead, as 'attempts exhausted' —
/// or as 'expired' when the row is also past its expiry, the reason a sweep
/// at the same instant would give it ([`super::sweep::SWEEP_MOVE`]).
pub(crate) const EXHAUST_MOVE: &str = live_to_dead!(
    "CASE WHEN expires_at IS NOT NULL AND expires_at <= ?2 THEN 'expired' ELSE 'attempts exhausted' END",
    "?2",
    exhausted!()
);
/// Claim step 1, second half: the same rows leave the live table.
pub(crate) const EXHAUST_DELETE: &str = concat!("DELETE FROM __alkstore_jobs WHERE ", exhausted!());

/// A paused queue (SPEC §18) hands out nothing: one probe of the paused
/// table's primary key, in the claim statement itself, so the claim stays
/// one statement and a pause is seen by the very next claim. `?1` queue.
macro_rules! not_paused {
    () => {
        " AND NOT EXISTS (SELECT 1 FROM __alkstore_paused WHERE queue = ?1)"
    };
}

/// A limited queue (SPEC §24) is the limited claim's ([`super::limits`]),
/// but for one common case: a queue whose only limit is `concurrency`, with
/// room for the whole batch (`$n`, the batch size written into the text).
/// Then the ready scan is the claim, as without limits: this statement
/// counts the queue's processing rows and updates under SQLite's one writer,
/// so no other claim can take the same room, and the fast path runs only
/// while no lease has lapsed, so there is nothing to reclaim or bury first.
/// A queue without limits pays one probe of the limits table's primary key
/// (`CASE` evaluates the count only for a limited queue).
macro_rules! limited_room {
    ($n:expr) => {
        concat!(
            " AND (SELECT CASE WHEN l.rate_count IS NOT NULL OR l.group_concurrency IS NOT NULL THEN 0 \
             WHEN l.concurrency IS NULL THEN 1 \
             ELSE l.concurrency - (SELECT count(*) FROM __alkstore_jobs WHERE queue = ?1 AND state = 'processing') >= ",
            $n,
            " END FROM __alkstore_limits l WHERE l.queue = ?1) IS NOT 0"
        )
    };
}

/// The columns a claim hands back, in [`crate::rows::claimed`]'s order.
macro_rules! claim_returning {
    () => {
        " RETURNING id, queue, payload, attempts, max_attempts, priority, worker_id, claim_token, \
         enqueued_at, run_at, claimed_at, deadline, expires_at, visibility_timeout_s, backoff_base_s"
    };
}

/// Claim step 2: the best `?4` of (first `?4` ready rows by claim order) ∪
/// (every lapsed lease with an attempt left), both unexpired, updated in one
/// statement. (Step 1 has buried the others, unless their burial failed:
/// see [`exhaust_or_skip`].) Each
/// candidate scan walks its run of the live index (migration 0018). Lapsed
/// leases are not limited by deadline: the claim order is priority first, so
/// any of them may be the best. This path only runs while some lease has
/// lapsed (the fast path below handles the rest), and its cost grows with
/// the number of lapsed leases, never with the backlog. `?1` queue, `?2`
/// worker, `?3` now, `?4` n. `INDEXED BY` pins the ready scan so no
/// statistics can ever turn it into a scan-and-sort of every ready row. A
/// reclaimed lease records that it lapsed (`reclaim_error!`).
/// RETURNING order is unspecified: the caller sorts.
pub(crate) const CLAIM: &str = concat!(
    "\
UPDATE __alkstore_jobs SET state = 'processing', attempts = attempts + 1, \
claim_token = claim_token + 1, worker_id = ?2, claimed_at = ?3, deadline = ?3 + visibility_timeout_s, ",
    reclaim_error!(),
    " WHERE id IN (\
SELECT id FROM (\
SELECT id, priority, run_at FROM (\
SELECT id, priority, run_at FROM __alkstore_jobs INDEXED BY __alkstore_jobs_ready \
WHERE queue = ?1 AND ",
    pending_run!(),
    " AND run_at <= ?3 \
AND (expires_at IS NULL OR expires_at > ?3) \
ORDER BY priority DESC, run_at, id LIMIT ?4) \
UNION ALL \
SELECT id, priority, run_at FROM (\
SELECT id, priority, run_at FROM __alkstore_jobs \
WHERE queue = ?1 AND state = 'processing' AND deadline < ?3 AND attempts < max_attempts \
AND (expires_at IS NULL OR expires_at > ?3))) \
ORDER BY priority DESC, run_at, id LIMIT ?4)",
    not_paused!(),
    claim_returning!()
);

/// The claim's SET clause with `now` computed in-statement (`?3` offset).
macro_rules! claim_set_sql_now {
    () => {
        "UPDATE __alkstore_jobs SET state = 'processing', attempts = attempts + 1, \
         claim_token = claim_token + 1, worker_id = ?2, claimed_at = unixepoch() + ?3, \
         deadline = unixepoch() + ?3 + visibility_timeout_s WHERE "
    };
}

/// The ready-row candidate scan of [`CLAIM`], `now` computed in-statement.
/// `CAST(?1 AS TEXT)`: with an ORDER BY, SQLite's planner reads the value
/// bound to a bare `queue = ?1` and expires the statement whenever it is
/// rebound, so every claim was parsed again; the cast seeks the same index
/// without that (`hot_statements_are_never_reprepared`). [`CLAIM`] keeps the
/// bare parameter: it runs only while a lease has lapsed, and there the
/// re-plan lets ANALYZE statistics never mislead it.
macro_rules! ready_ids_sql_now {
    () => {
        concat!(
            "SELECT id FROM __alkstore_jobs INDEXED BY __alkstore_jobs_ready WHERE queue = CAST(?1 AS TEXT) AND ",
            pending_run!(),
            " AND run_at <= unixepoch() + ?3 AND (expires_at IS NULL OR expires_at > unixepoch() + ?3) \
             ORDER BY priority DESC, run_at, id LIMIT "
        )
    };
}

/// The guard of the fast path: the queue has no lapsed lease right now,
/// and is not paused.
macro_rules! no_lapsed_lease {
    ($n:expr) => {
        concat!(
            " AND NOT EXISTS (SELECT 1 FROM __alkstore_jobs WHERE queue = ?1 AND state = 'processing' \
             AND deadline < unixepoch() + ?3)",
            not_paused!(),
            limited_room!($n)
        )
    };
}

/// The claim's fast path, one autocommit statement: when the queue has no
/// lapsed lease at this instant, step 1 has nothing to move and the leased
/// candidate scan of [`CLAIM`] is empty, so the claim *is* the ready scan.
/// Same rows, same order, same stamps as [`CLAIM`]; a lapsed lease makes
/// it match nothing and the caller takes the full path. `?1` queue,
/// `?2` worker, `?3` offset, `?4` n (run through [`claim_ready_n`]).
pub(crate) const CLAIM_READY: &str =
    concat!(claim_set_sql_now!(), "id IN (", ready_ids_sql_now!(), "?4)", no_lapsed_lease!("?4"), claim_returning!());

/// [`CLAIM_READY`] with the batch size written into the text instead of
/// bound: a bound LIMIT is read by the planner, so rebinding it expires the
/// statement and re-parses it on every call. One cached statement per batch
/// size in use (callers use one or two).
pub(crate) fn claim_ready_n(n: usize) -> String {
    CLAIM_READY.replace("?4", &n.to_string())
}

/// [`CLAIM_READY`] for one job: `id = (…)` spares SQLite the temporary
/// table an `IN (…)` list needs, and the literal `LIMIT 1` keeps the
/// statement compiled: SQLite's planner reads a bound LIMIT, so rebinding it
/// expires the statement and every call would be parsed again (measured:
/// about a third of the per-op claim). It takes no `?4`.
pub(crate) const CLAIM_READY_ONE: &str =
    concat!(claim_set_sql_now!(), "id = (", ready_ids_sql_now!(), "1)", no_lapsed_lease!("1"), claim_returning!());

/// Whether the queue has a lapsed lease now, and whether it has limits
/// (`?1` queue, `?2` offset): an empty fast-path claim takes the full or the
/// limited path only then, so an idle poll stays two cheap statements.
pub(crate) const HAS_LAPSED: &str = "SELECT EXISTS (SELECT 1 FROM __alkstore_jobs WHERE queue = ?1 \
AND state = 'processing' AND deadline < unixepoch() + ?2), \
EXISTS (SELECT 1 FROM __alkstore_limits WHERE queue = ?1)";

/// Claims up to `n` (in `1..=1000`, the Store's range) jobs of `queue` for
/// `worker`, in RETURNING order: the Store sorts them into claim order.
pub(crate) fn claim<C: Conn + ?Sized>(
    conn: &C,
    offset: i64,
    queue: &str,
    worker: &str,
    n: usize,
) -> Result<Vec<Claimed>> {
    // At most MAX_BATCH (the Store's range rule), so it fits.
    let limit = n as i64;
    let mut claimed = claim_ready(conn, offset, queue, worker, n)?;
    if claimed.is_empty() {
        let (lapsed, limited) = has_lapsed(conn.conn(), queue, offset)?;
        if limited {
            if let Some(got) = super::limits::claim(conn.conn(), offset, queue, worker, n)? {
                return Ok(got);
            }
        }
        if lapsed || limited {
            claimed = atomic(conn.conn(), Scope::Own, |c| {
                let now = now(c, offset)?;
                exhaust_or_skip(c, queue, now)?;
                run(c, CLAIM, params![queue, worker, now, limit], n)
            })?;
        }
    }
    Ok(claimed)
}

/// The claim's fast path alone ([`CLAIM_READY`]): empty also while a lease
/// has lapsed, which only the full path in [`claim`] takes.
pub(crate) fn claim_ready<C: Conn + ?Sized>(
    conn: &C,
    offset: i64,
    queue: &str,
    worker: &str,
    n: usize,
) -> Result<Vec<Claimed>> {
    if n == 1 {
        // The per-op claim: its statement held by the writer (ADR 0035).
        conn.with_stmt(CLAIM_READY_ONE, |stmt| collect(stmt, params![queue, worker, offset], n))
    } else {
        run(conn.conn(), &claim_ready_n(n), params![queue, worker, offset], n)
    }
}

/// Runs one claim statement and collects what it returned.
#[inline]
pub(crate) fn run(conn: &Connection, sql: &str, params: impl Params, n: usize) -> Result<Vec<Claimed>> {
    collect(&mut *conn.prepare_cached(sql).db()?, params, n)
}

/// Runs a prepared claim statement and collects what it returned.
#[inline]
fn collect(stmt: &mut rusqlite::Statement<'_>, params: impl Params, n: usize) -> Result<Vec<Claimed>> {
    let mut rows = stmt.query(params).db()?;
    let mut out = Vec::with_capacity(n.min(64));
    while let Some(row) = rows.next().db()? {
        out.push(rows::claimed(row)?);
    }
    Ok(out)
}

/// Whether `queue` has a lease past its deadline, and whether it has limits
/// (a read: no write lock).
fn has_lapsed(conn: &Connection, queue: &str, offset: i64) -> Result<(bool, bool)> {
    conn.prepare_cached(HAS_LAPSED)
        .and_then(|mut s| s.query_row(params![queue, offset], |r| Ok((r.get(0)?, r.get(1)?))))
        .db()
}

/// Moves lapsed leases whose budget is spent to dead as 'attempts exhausted'
/// (or 'expired' when also past their expiry, as a sweep would).
/// Usually matches nothing, and then the DELETE is skipped.
pub(crate) fn exhaust(conn: &Connection, queue: &str, now: i64) -> Result<()> {
    let moved = conn.prepare_cached(EXHAUST_MOVE).and_then(|mut s| s.execute(params![queue, now])).db()?;
    if moved == 0 {
        return Ok(());
    }
    let deleted = conn.prepare_cached(EXHAUST_DELETE).and_then(|mut s| s.execute(params![queue, now])).db()?;
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

/// [`exhaust`] inside a claim's transaction, in a savepoint: a burial that
/// fails — its settlement of the job's descendants, by trigger, is a write
/// like any other — must not keep every other job of the queue from being
/// claimed (issue 43: a burial that always failed wedged its queue). The
/// row then stays `processing` with its lease lapsed, the claim's leased
/// scan passes it over (no attempt left), and the next claim that finds it
/// tries again. An error that is transient (the claim fails, and is tried
/// again as a whole) or that ended the transaction is the claim's.
pub(crate) fn exhaust_or_skip(conn: &Connection, queue: &str, now: i64) -> Result<()> {
    match atomic(conn, Scope::Caller, |c| exhaust(c, queue, now)) {
        Err(e) if !e.is_transient() && !conn.is_autocommit() => Ok(()),
        done => done,
    }
}

impl ClaimOps for SqliteEngine {
    fn claim(&self, queue: &str, worker_id: &str, n: usize) -> Result<Vec<Claimed>> {
        let offset = self.offset();
        self.conns.with_writer(|c| claim(c, offset, queue, worker_id, n))
    }

    /// The ack and the claim's fast path in one write transaction: one
    /// write lock and one WAL commit for the two. The full path (a lapsed
    /// lease) begins a transaction of its own, so it is left to `claim`.
    fn ack_then_claim(&self, done: &Claimed, queue: &str, worker_id: &str, n: usize) -> Result<(usize, Vec<Claimed>)> {
        let offset = self.offset();
        self.conns.with_writer(|c| {
            atomic(c, Scope::Own, |c| {
                let landed = super::handle::ack(c, Scope::Caller, offset, &[done])?;
                Ok((landed, claim_ready(c, offset, queue, worker_id, n)?))
            })
        })
    }
}
