//! Read-only surfaces (SPEC §4.4): `get_job`, `dead_jobs`, `stats`, and
//! `live_jobs` / `queue_names` for operators (ADR 0007). Outside a caller transaction they
//! run on the reader connection.

use alkstore_core::{Job, QueueStats, Result};
use rusqlite::{params, Connection};

use crate::error::DbResult;
use crate::rows;
use crate::sql;

/// A live or dead row of `queue`.
pub(crate) fn get_job(conn: &Connection, queue: &str, id: i64) -> Result<Option<Job>> {
    let mut stmt = conn.prepare_cached(sql::GET_JOB).db()?;
    let mut rows = stmt.query(params![id, queue]).db()?;
    match rows.next().db()? {
        Some(row) => rows::job(row).map(Some),
        None => Ok(None),
    }
}

/// Dead rows of `queue`, newest id first, ids below `before_id` when given.
pub(crate) fn dead_jobs(conn: &Connection, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut stmt = conn.prepare_cached(sql::DEAD_JOBS).db()?;
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
    let mut stmt = conn.prepare_cached(sql::LIVE_JOBS).db()?;
    let mut rows = stmt.query(params![queue, before_id.unwrap_or(i64::MAX), limit]).db()?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().db()? {
        out.push(rows::job(row)?);
    }
    Ok(out)
}

/// Counts for `queue` at one instant.
pub(crate) fn stats(conn: &Connection, offset: i64, queue: &str) -> Result<QueueStats> {
    conn.prepare_cached(sql::STATS)
        .and_then(|mut s| {
            s.query_row(params![queue, offset], |r| {
                Ok(QueueStats {
                    pending: r.get(0)?,
                    scheduled: r.get(1)?,
                    processing: r.get(2)?,
                    dead: r.get(3)?,
                    oldest_ready_age_s: r.get(4)?,
                })
            })
        })
        .db()
}

/// Every queue name with a live or dead row, sorted.
pub(crate) fn queue_names(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(sql::QUEUE_NAMES).db()?;
    let names = stmt.query_map([], |r| r.get(0)).db()?;
    names.collect::<rusqlite::Result<Vec<String>>>().db()
}
