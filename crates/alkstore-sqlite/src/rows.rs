//! Row → value mapping. Column order is fixed by the statements in
//! [`crate::ops`]; a value of the wrong type (a hand-edited file) becomes a
//! `DatabaseError`, never a panic.

use alkstore_core::{Claimed, Job, JobState, Result};
use rusqlite::Row;

use crate::error::DbResult;

/// A claimed row, in [`crate::ops::claim::CLAIM`]'s RETURNING order.
#[inline]
pub(crate) fn claimed(r: &Row<'_>) -> Result<Claimed> {
    let read = || -> rusqlite::Result<Claimed> {
        Ok(Claimed {
            id: r.get(0)?,
            queue: r.get(1)?,
            payload: r.get(2)?,
            attempts: r.get(3)?,
            max_attempts: r.get(4)?,
            priority: r.get(5)?,
            worker_id: r.get(6)?,
            claim_token: r.get(7)?,
            enqueued_at: r.get(8)?,
            run_at: r.get(9)?,
            claimed_at: r.get(10)?,
            deadline: r.get(11)?,
            expires_at: r.get(12)?,
            visibility_timeout_s: r.get(13)?,
            backoff_base_s: r.get(14)?,
        })
    };
    read().db()
}

/// A live or dead row, in `job_cols!` order (`ops/reads.rs`, unique_key last) plus last_error, died_at.
pub(crate) fn job(r: &Row<'_>) -> Result<Job> {
    let state: String = r.get(2).db()?;
    let read = || -> rusqlite::Result<Job> {
        Ok(Job {
            id: r.get(0)?,
            queue: r.get(1)?,
            state: JobState::Pending, // replaced below, once parsed
            payload: r.get(3)?,
            priority: r.get(4)?,
            attempts: r.get(5)?,
            max_attempts: r.get(6)?,
            enqueued_at: r.get(7)?,
            run_at: r.get(8)?,
            claimed_at: r.get(9)?,
            deadline: r.get(10)?,
            worker_id: r.get(11)?,
            expires_at: r.get(12)?,
            unique_key: r.get(13)?,
            group: r.get(14)?,
            last_error: r.get(15)?,
            died_at: r.get(16)?,
        })
    };
    let mut job = read().db()?;
    job.state = JobState::parse(&state)?;
    Ok(job)
}
