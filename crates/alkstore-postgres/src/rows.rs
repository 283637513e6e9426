//! Result rows of the engine's own statements to the core's value types.
//!
//! Column positions match the lists in [`crate::ops`]. `try_get` rather
//! than `get`: a schema that drifted from the code must be an error, not a
//! panic inside the caller's thread.

use alkstore_core::{Claimed, Error, Job, JobState, Result};
use tokio_postgres::types::FromSql;
use tokio_postgres::Row;

/// Column `idx` of `row` as `T`.
pub fn col<'a, T: FromSql<'a>>(row: &'a Row, idx: usize) -> Result<T> {
    row.try_get(idx)
        .map_err(|e| Error::database(None, format!("unexpected value in column {idx} of an alkstore table: {e}")))
}

/// A claim's `RETURNING` row.
pub fn claimed(row: &Row) -> Result<Claimed> {
    Ok(Claimed {
        id: col(row, 0)?,
        queue: col(row, 1)?,
        payload: col(row, 2)?,
        attempts: col(row, 3)?,
        max_attempts: col(row, 4)?,
        priority: col(row, 5)?,
        worker_id: col(row, 6)?,
        claim_token: col(row, 7)?,
        enqueued_at: col(row, 8)?,
        run_at: col(row, 9)?,
        claimed_at: col(row, 10)?,
        deadline: col(row, 11)?,
        expires_at: col(row, 12)?,
        visibility_timeout_s: col(row, 13)?,
        backoff_base_s: col(row, 14)?,
    })
}

/// A `get_job` / `dead_jobs` row.
pub fn job(row: &Row) -> Result<Job> {
    Ok(Job {
        id: col(row, 0)?,
        queue: col(row, 1)?,
        payload: col(row, 2)?,
        priority: col(row, 3)?,
        attempts: col(row, 4)?,
        max_attempts: col(row, 5)?,
        enqueued_at: col(row, 6)?,
        run_at: col(row, 7)?,
        claimed_at: col(row, 8)?,
        deadline: col(row, 9)?,
        worker_id: col(row, 10)?,
        expires_at: col(row, 11)?,
        state: JobState::parse(col(row, 12)?)?,
        last_error: col(row, 13)?,
        died_at: col(row, 14)?,
        unique_key: col(row, 15)?,
        group: col(row, 16)?,
    })
}
