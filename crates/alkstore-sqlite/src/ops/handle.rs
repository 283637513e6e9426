//! The job-handle operations (SPEC §4.3): ack, retry, fail, heartbeat,
//! release. Every one applies the validity predicate in the same statement
//! that writes, so a stale, lapsed or cancelled handle changes nothing.

use alkstore_core::{Claimed, Error, HandleOps, Result, Tx};
use rusqlite::{params, Connection};

use crate::conn::{atomic, now, Scope};
use crate::engine::SqliteEngine;
use crate::error::DbResult;
use crate::hot::Conn;

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

/// `retry` under budget: back to pending after `?5` seconds, with `?6` as
/// its last error (SPEC §30). A pending job holds no lease (SPEC §4.4):
/// worker_id and deadline are cleared, while claimed_at stays as the last
/// claim's time. The claim token stays too, and it alone fences off the old
/// handle.
pub(crate) const RETRY: &str = concat!(
    "UPDATE __alkstore_jobs SET state = 'pending', run_at = unixepoch() + ?4 + ?5, worker_id = NULL, \
     deadline = NULL, last_error = ?6 WHERE ",
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
pub(crate) fn ack_plain<C: Conn + ?Sized>(conn: &C, sql: &'static str, offset: i64, job: &Claimed) -> Result<bool> {
    let n = conn.with_stmt(sql, |s| s.execute(params![job.id, job.worker_id, job.claim_token, offset]).db())?;
    Ok(n == 1)
}

/// Handles per [`ack_many_sql`] statement: a chunk is padded up to the
/// next of these by repeating its last handle, so a few texts serve every
/// batch (each stays compiled in the statement cache).
const ACK_MANY_SIZES: [usize; 3] = [8, 32, 128];
/// The most handles one [`ack_many_sql`] statement takes.
const ACK_MANY_MAX: usize = ACK_MANY_SIZES[ACK_MANY_SIZES.len() - 1];

/// The plain ack of up to `n` handles of one worker in one statement (the
/// batch twin of [`ACK`], and of Postgres's `ack_many`): `?1..?n` the ids in
/// ascending order, `?n+1..?2n` their claim tokens in the same order,
/// `?2n+1` the worker, `?2n+2` now. Per-handle DELETEs inside one
/// transaction each opened a statement journal (the jobs table's triggers
/// make every DELETE a multi-write that may abort) and paid a statement's
/// setup; one statement pays both once (ADR 0034). A row's token is picked
/// by a binary `CASE` over the sorted ids, seven comparisons for 128, where
/// an `IN (VALUES …)` of pairs or a linear `CASE` costs more per row than it
/// saves. Where ids repeat with different tokens (a stale and a live handle
/// of one job) the `CASE` tests one of them; the row it leaves goes on to
/// the one-handle ack.
pub(crate) fn ack_many_sql(n: usize) -> String {
    fn token(lo: usize, hi: usize, n: usize) -> String {
        if hi - lo == 1 {
            return format!("?{}", n + lo + 1);
        }
        let mid = (lo + hi) / 2;
        format!("CASE WHEN id < ?{} THEN {} ELSE {} END", mid + 1, token(lo, mid, n), token(mid, hi, n))
    }
    let ids = (1..=n).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ");
    format!(
        "DELETE FROM __alkstore_jobs WHERE id IN ({ids}) AND state = 'processing' AND worker_id = ?{w} \
         AND deadline >= ?{now} AND keep_result_s IS NULL AND claim_token = {tokens} RETURNING id",
        w = 2 * n + 1,
        now = 2 * n + 2,
        tokens = token(0, n, n)
    )
}

/// The texts of [`ack_many_sql`], one per size of [`ACK_MANY_SIZES`], built once.
fn ack_many_texts() -> &'static [String; 3] {
    static TEXTS: std::sync::OnceLock<[String; 3]> = std::sync::OnceLock::new();
    TEXTS.get_or_init(|| ACK_MANY_SIZES.map(ack_many_sql))
}

/// Deletes the rows of every valid plain handle of `jobs` through
/// [`ack_many_sql`], one statement per worker and chunk of up to 128, at
/// one bound `now`; returns the deleted ids. Runs inside a transaction.
fn ack_many(conn: &Connection, offset: i64, jobs: &[&Claimed]) -> Result<std::collections::HashSet<i64>> {
    let now = now(conn, offset)?;
    let mut sorted: Vec<&Claimed> = jobs.to_vec();
    sorted.sort_unstable_by(|a, b| (&a.worker_id, a.id).cmp(&(&b.worker_id, b.id)));
    let mut deleted = std::collections::HashSet::with_capacity(jobs.len());
    for group in sorted.chunk_by(|a, b| a.worker_id == b.worker_id) {
        for chunk in group.chunks(ACK_MANY_MAX) {
            // The smallest size that fits the chunk (one always does).
            let size = ACK_MANY_SIZES.partition_point(|&s| s < chunk.len());
            let n = ACK_MANY_SIZES[size];
            let last = chunk[chunk.len() - 1];
            let mut stmt = conn.prepare_cached(&ack_many_texts()[size]).db()?;
            for (i, job) in chunk.iter().copied().chain(std::iter::repeat(last)).take(n).enumerate() {
                stmt.raw_bind_parameter(i + 1, job.id).db()?;
                stmt.raw_bind_parameter(n + i + 1, job.claim_token).db()?;
            }
            stmt.raw_bind_parameter(2 * n + 1, last.worker_id.as_str()).db()?;
            stmt.raw_bind_parameter(2 * n + 2, now).db()?;
            let mut rows = stmt.raw_query();
            while let Some(row) = rows.next().db()? {
                deleted.insert(row.get::<_, i64>(0).db()?);
            }
        }
    }
    Ok(deleted)
}

/// Deletes every valid handle's row; returns how many landed. One handle
/// outside a caller transaction is a single autocommit DELETE. More go
/// through [`ack_many`] in one transaction (or the caller's), and each
/// handle whose row it left (invalid, keeping its result, or a duplicate id)
/// goes on to the one-handle ack and then the workflow ack, as a lone handle would.
pub(crate) fn ack<C: Conn + ?Sized>(conn: &C, scope: Scope, offset: i64, jobs: &[&Claimed]) -> Result<usize> {
    match jobs {
        [] => return Ok(0),
        [job] => {
            let acked = ack_plain(conn, ACK, offset, job)?
                || super::workflows::ack_flow(conn.conn(), scope, offset, job, None)?;
            return Ok(usize::from(acked));
        }
        _ => {}
    }
    let ack_all = |c: &C| -> Result<usize> {
        let deleted = ack_many(c.conn(), offset, jobs)?;
        let mut landed = deleted.len();
        for job in jobs.iter().filter(|j| !deleted.contains(&j.id)) {
            if ack_plain(c, ACK, offset, job)?
                || super::workflows::ack_flow(c.conn(), Scope::Caller, offset, job, None)?
            {
                landed += 1;
            }
        }
        Ok(landed)
    };
    if scope == Scope::Caller {
        return ack_all(conn);
    }
    atomic(conn, Scope::Own, ack_all)
}

/// Back to pending after `delay` seconds with `error` as its last error
/// (resolved by the Store, which sends a spent budget to [`fail`] instead).
/// False when the handle is not valid.
pub(crate) fn retry(conn: &Connection, offset: i64, job: &Claimed, delay: i64, error: &str) -> Result<bool> {
    let changed = conn
        .prepare_cached(RETRY)
        .and_then(|mut s| s.execute(params![job.id, job.worker_id, job.claim_token, offset, delay, error]))
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

    fn retry(&self, tx: Option<&mut dyn Tx>, job: &Claimed, delay_s: i64, error: &str) -> Result<bool> {
        let offset = self.offset();
        self.write(tx, |c, _| retry(c, offset, job, delay_s, error))
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

#[cfg(test)]
mod tests {
    use alkstore_core::{Claimed, Result};
    use rusqlite::{params, Connection};

    use crate::error::DbResult;
    use crate::migrate::migrate;

    /// `n` claimed rows of worker `w`, ids 1..=n, each with its own token.
    fn claimed(conn: &Connection, n: i64) -> Result<Vec<Claimed>> {
        for id in 1..=n {
            conn.execute(
                "INSERT INTO __alkstore_jobs (id, queue, state, payload, priority, attempts, max_attempts, \
                 claim_token, visibility_timeout_s, backoff_base_s, enqueued_at, run_at, claimed_at, deadline, \
                 worker_id) VALUES (?1, 'q', 'processing', '{}', 0, 1, 3, ?2, 30, 5, 0, 0, 0, unixepoch() + 60, 'w')",
                params![id, id * 3 + 1],
            )
            .db()?;
        }
        let mut stmt = conn
            .prepare(
                "SELECT id, queue, payload, attempts, max_attempts, priority, worker_id, claim_token, enqueued_at, \
                 run_at, claimed_at, deadline, expires_at, visibility_timeout_s, backoff_base_s \
                 FROM __alkstore_jobs ORDER BY id",
            )
            .db()?;
        let mut rows = stmt.query([]).db()?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().db()? {
            out.push(crate::rows::claimed(row)?);
        }
        Ok(out)
    }

    /// Every valid handle is deleted by the batch statement itself, at every
    /// batch size and position: the token `CASE` picks each row's own token.
    /// (The one-handle ack behind it would mend a wrong pick, so only this
    /// test can see one.)
    #[test]
    fn the_batch_statement_deletes_every_valid_handle_it_is_given() -> Result<()> {
        for n in [2_i64, 7, 8, 9, 31, 33, 127, 128, 129, 300] {
            let conn = Connection::open_in_memory().db()?;
            migrate(&conn)?;
            let jobs = claimed(&conn, n)?;
            let mut refs: Vec<&Claimed> = jobs.iter().rev().collect();
            refs.push(&jobs[0]);
            let deleted = super::ack_many(&conn, 0, &refs)?;
            assert_eq!(deleted.len() as i64, n, "batch of {n}");
            let left: i64 = conn.query_row("SELECT count(*) FROM __alkstore_jobs", [], |r| r.get(0)).db()?;
            assert_eq!(left, 0, "batch of {n}");
        }
        Ok(())
    }
}
