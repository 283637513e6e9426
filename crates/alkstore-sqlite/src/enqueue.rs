//! `enqueue` / `enqueue_many`: stamping the queue's options onto new rows.

use alkstore_core::{NewJob, QueueOpts, ReadyAt, Result};
use rusqlite::{params, Connection};

use crate::conn::{atomic, Scope};
use crate::error::DbResult;
use crate::sql;

/// Inserts `jobs` (non-empty) and returns their ids in order. One job outside
/// a caller transaction is a single autocommit INSERT; several are one
/// transaction (or one savepoint inside the caller's).
pub(crate) fn enqueue(
    conn: &Connection,
    scope: Scope,
    offset: i64,
    queue: &str,
    opts: &QueueOpts,
    jobs: &[NewJob],
) -> Result<Vec<i64>> {
    if let [job] = jobs {
        return Ok(vec![insert(conn, offset, queue, opts, job)?]);
    }
    atomic(conn, scope, |c| jobs.iter().map(|job| insert(c, offset, queue, opts, job)).collect())
}

#[inline]
fn insert(conn: &Connection, offset: i64, queue: &str, opts: &QueueOpts, job: &NewJob) -> Result<i64> {
    let (at, delay) = match job.ready {
        ReadyAt::Now => (None, 0),
        ReadyAt::Delay(d) => (None, d),
        ReadyAt::At(t) => (Some(t), 0),
    };
    let mut stmt = conn.prepare_cached(sql::ENQUEUE).db()?;
    stmt.execute(params![
        queue,
        job.payload,
        job.priority,
        job.max_attempts.unwrap_or(opts.max_attempts),
        opts.visibility_timeout_s,
        opts.backoff_base_s,
        opts.dead_letter_retention_s,
        offset,
        at,
        delay,
        job.expires_s,
    ])
    .db()?;
    Ok(conn.last_insert_rowid())
}
