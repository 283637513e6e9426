//! Read-only surfaces (SPEC §4.4): `get_job`, `job_by_id`, `dead_jobs`, `stats`,
//! `live_jobs` / `queue_names` for operators (ADR 0007), and `next_wake`
//! (SPEC §5: when a queue gains claimable work without a commit). Outside a
//! caller transaction they run on the reader connection.

use alkstore_core::{Job, QueueStats, ReadOps, Result, Tx};
use rusqlite::{params, Connection, OptionalExtension};

use crate::engine::SqliteEngine;
use crate::error::DbResult;
use crate::rows;

/// The columns of a [`alkstore_core::Job`], in [`crate::rows::job`]'s order.
macro_rules! job_cols {
    () => {
        "id, queue, state, payload, priority, attempts, max_attempts, enqueued_at, run_at, \
         claimed_at, deadline, worker_id, expires_at, unique_key, group_key"
    };
}

/// `get_job`: the live row or else the dead one, this queue only (an id lives
/// in exactly one of the two tables). A live row's `last_error` is its last
/// failure (SPEC §30, migration 0021); only a dead row has `died_at`.
pub(crate) const GET_JOB: &str = concat!(
    "SELECT ",
    job_cols!(),
    ", last_error, NULL FROM __alkstore_jobs WHERE id = ?1 AND queue = ?2 UNION ALL SELECT ",
    job_cols!(),
    ", last_error, died_at FROM __alkstore_dead WHERE id = ?1 AND queue = ?2"
);

/// `job_by_id`: the row with id `?1`, live or else dead, whatever its queue:
/// a primary-key probe of each table (a live row's `last_error` as in [`GET_JOB`]).
pub(crate) const JOB_BY_ID: &str = concat!(
    "SELECT ",
    job_cols!(),
    ", last_error, NULL FROM __alkstore_jobs WHERE id = ?1 UNION ALL SELECT ",
    job_cols!(),
    ", last_error, died_at FROM __alkstore_dead WHERE id = ?1"
);

/// `dead_jobs`: newest first, ids below `?2`, at most `?3` (walks `__alkstore_dead_queue` backwards).
pub(crate) const DEAD_JOBS: &str = concat!(
    "SELECT ",
    job_cols!(),
    ", last_error, died_at FROM __alkstore_dead WHERE queue = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3"
);

/// `live_jobs` (ADR 0007): pending and processing rows newest first, ids
/// below `?2`, at most `?3`. For operators: it walks the primary key
/// backwards and skips other queues' rows, so its cost grows with them.
pub(crate) const LIVE_JOBS: &str = concat!(
    "SELECT ",
    job_cols!(),
    ", last_error, NULL FROM __alkstore_jobs WHERE queue = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3"
);

/// `queue_names` (ADR 0007): every queue that ever had a job (migration
/// 0008), or with a live or a dead row, or paused, sorted by bytes
/// (`BINARY`, as Postgres sorts with `COLLATE "C"`). `UNION`, not `UNION
/// ALL`, removes duplicates. It scans the job table: for operators.
pub(crate) const QUEUE_NAMES: &str = "SELECT queue FROM __alkstore_queues UNION SELECT queue FROM __alkstore_jobs \
UNION SELECT queue FROM __alkstore_dead UNION SELECT queue FROM __alkstore_paused \
UNION SELECT queue FROM __alkstore_limits ORDER BY queue";

/// `stats` (SPEC §4.4): ready pending (unswept expired included), scheduled,
/// processing (lapsed included), dead, age of the oldest ready row, paused,
/// waiting for parents (SPEC §25).
/// One statement, so `unixepoch()` is one instant for every count.
pub(crate) const STATS: &str = "\
SELECT r.ready, \
(SELECT count(*) FROM __alkstore_jobs WHERE queue = ?1 AND state = 'pending' AND run_at > unixepoch() + ?2), \
(SELECT count(*) FROM __alkstore_jobs WHERE queue = ?1 AND state = 'processing'), \
(SELECT count(*) FROM __alkstore_dead WHERE queue = ?1), \
unixepoch() + ?2 - r.oldest, \
EXISTS (SELECT 1 FROM __alkstore_paused WHERE queue = ?1), \
(SELECT count(*) FROM __alkstore_jobs WHERE queue = ?1 AND state = 'waiting') \
FROM (SELECT count(*) AS ready, min(run_at) AS oldest FROM __alkstore_jobs \
WHERE queue = ?1 AND state = 'pending' AND run_at <= unixepoch() + ?2) AS r";

/// The earliest future `run_at` of a pending row, or the second the earliest
/// unexpired lease becomes reclaimable (`deadline + 1`: claimable once
/// `deadline < now`), of one queue. Lapsed leases are left out: they are
/// claimable already, or expired and waiting for a sweep. The lease side is
/// a seek on the processing run of `jobs_ready`; the run_at side walks its
/// pending run (ordered by priority first, so it cannot seek), which is why
/// the core rate-limits this query. A dedicated run_at index would answer it with a seek but
/// cost every enqueue and claim one more page write (measured: half the
/// per-op enqueue rate).
/// Aggregate `min` over a union, because scalar `min(a, b)` is NULL when
/// either side is.
pub(crate) const NEXT_WAKE: &str = concat!(
    "SELECT min(t) FROM (
       SELECT min(run_at) AS t FROM __alkstore_jobs INDEXED BY __alkstore_jobs_ready
        WHERE queue = ?1 AND ",
    pending_run!(),
    " AND run_at > ?2
       UNION ALL
       SELECT min(deadline) + 1 FROM __alkstore_jobs
        WHERE queue = ?1 AND state = 'processing' AND deadline >= ?2)"
);

/// A live or dead row of `queue`.
pub(crate) fn get_job(conn: &Connection, queue: &str, id: i64) -> Result<Option<Job>> {
    let mut stmt = conn.prepare_cached(GET_JOB).db()?;
    let mut rows = stmt.query(params![id, queue]).db()?;
    match rows.next().db()? {
        Some(row) => rows::job(row).map(Some),
        None => Ok(None),
    }
}

/// The live or dead row `id`.
pub(crate) fn job_by_id(conn: &Connection, id: i64) -> Result<Option<Job>> {
    let mut stmt = conn.prepare_cached(JOB_BY_ID).db()?;
    let mut rows = stmt.query([id]).db()?;
    match rows.next().db()? {
        Some(row) => rows::job(row).map(Some),
        None => Ok(None),
    }
}

/// Dead rows of `queue`, newest id first, ids below `before_id` when given.
pub(crate) fn dead_jobs(conn: &Connection, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut stmt = conn.prepare_cached(DEAD_JOBS).db()?;
    let mut rows = stmt.query(params![queue, before_id.unwrap_or(i64::MAX), limit]).db()?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().db()? {
        out.push(rows::job(row)?);
    }
    Ok(out)
}

/// Live rows of `queue`, newest id first, ids below `before_id` when given.
pub(crate) fn live_jobs(conn: &Connection, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut stmt = conn.prepare_cached(LIVE_JOBS).db()?;
    let mut rows = stmt.query(params![queue, before_id.unwrap_or(i64::MAX), limit]).db()?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().db()? {
        out.push(rows::job(row)?);
    }
    Ok(out)
}

/// Counts for `queue` at one instant.
pub(crate) fn stats(conn: &Connection, offset: i64, queue: &str) -> Result<QueueStats> {
    conn.prepare_cached(STATS)
        .and_then(|mut s| {
            s.query_row(params![queue, offset], |r| {
                Ok(QueueStats {
                    pending: r.get(0)?,
                    scheduled: r.get(1)?,
                    processing: r.get(2)?,
                    dead: r.get(3)?,
                    oldest_ready_age_s: r.get(4)?,
                    paused: r.get(5)?,
                    waiting: r.get(6)?,
                })
            })
        })
        .db()
}

/// Every queue name with a live or dead row, sorted.
pub(crate) fn queue_names(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(QUEUE_NAMES).db()?;
    let names = stmt.query_map([], |r| r.get(0)).db()?;
    names.collect::<rusqlite::Result<Vec<String>>>().db()
}

/// How long until `queue` next gains claimable work without a commit (see
/// [`NEXT_WAKE`]), in seconds from one sub-second clock read: the whole
/// seconds of `run_at` and `deadline + 1` are instants on that clock too.
/// A rate-limited queue (SPEC §24) also gains claimable work when its rate
/// window opens.
pub(crate) fn next_wake(conn: &Connection, offset: i64, queue: &str) -> Result<Option<f64>> {
    let hires = super::limits::hires_now(conn, offset)?;
    // The whole second the claim's `unixepoch()` reads at the same instant.
    let now = hires.floor() as i64;
    let due: Option<i64> = conn
        .prepare_cached(NEXT_WAKE)
        .and_then(|mut s| s.query_row(rusqlite::params![queue, now], |r| r.get(0)).optional())
        .db()
        .map(Option::flatten)?;
    let opens = super::limits::rate_wake(conn, hires, queue)?;
    let first = match (due.map(|d| d as f64), opens) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Ok(first.map(|at| at - hires))
}

impl ReadOps for SqliteEngine {
    fn get_job(&self, tx: Option<&mut dyn Tx>, queue: &str, id: i64) -> Result<Option<Job>> {
        self.read(tx, |c| get_job(c, queue, id))
    }

    fn job_by_id(&self, id: i64) -> Result<Option<Job>> {
        self.conns.with_reader(|c| job_by_id(c, id))
    }

    fn dead_jobs(&self, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
        self.conns.with_reader(|c| dead_jobs(c, queue, limit, before_id))
    }

    fn stats(&self, queue: &str) -> Result<QueueStats> {
        let offset = self.offset();
        self.conns.with_reader(|c| stats(c, offset, queue))
    }

    fn live_jobs(&self, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
        self.conns.with_reader(|c| live_jobs(c, queue, limit, before_id))
    }

    fn queue_names(&self) -> Result<Vec<String>> {
        self.conns.with_reader(queue_names)
    }

    fn next_wake(&self, queue: &str) -> Result<Option<f64>> {
        let offset = self.offset();
        self.conns.with_reader(|c| next_wake(c, offset, queue))
    }
}
