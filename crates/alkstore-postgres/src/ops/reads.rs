//! Reads (SPEC §4.4): `get_job`, `dead_jobs`, `stats`, the clock, and
//! `live_jobs` / `queue_names` for operators (ADR 0007).

use alkstore_core::{Job, QueueStats, Result};

use crate::conn::Ctx;
use crate::rows::{col, job};

/// A live or dead row of `queue`.
pub async fn get_job(cx: &Ctx<'_>, queue: &str, id: i64) -> Result<Option<Job>> {
    let rows = cx.query(&cx.sql.get_job, &[&id, &queue]).await?;
    rows.first().map(job).transpose()
}

/// Dead rows of `queue`, newest id first, below `before_id` when given.
pub async fn dead_jobs(cx: &Ctx<'_>, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // A constant bound rather than `$2 IS NULL OR id < $2` keeps the one
    // generic plan an index range scan on dead_queue.
    let below = before_id.unwrap_or(i64::MAX);
    let rows = cx.query(&cx.sql.dead_jobs, &[&queue, &below, &limit]).await?;
    rows.iter().map(job).collect()
}

/// Live rows of `queue`, newest id first, below `before_id` when given.
pub async fn live_jobs(cx: &Ctx<'_>, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let below = before_id.unwrap_or(i64::MAX);
    let rows = cx.query(&cx.sql.live_jobs, &[&queue, &below, &limit]).await?;
    rows.iter().map(job).collect()
}

/// Counts for `queue`, all from one snapshot and one clock read.
pub async fn stats(cx: &Ctx<'_>, queue: &str) -> Result<QueueStats> {
    let row = cx.query_one(&cx.sql.stats, &[&cx.offset, &queue]).await?;
    Ok(QueueStats {
        pending: col(&row, 0)?,
        scheduled: col(&row, 1)?,
        processing: col(&row, 2)?,
        dead: col(&row, 3)?,
        oldest_ready_age_s: col(&row, 4)?,
    })
}

/// Every queue name with a live or dead row, sorted (a scan: for operators).
pub async fn queue_names(cx: &Ctx<'_>) -> Result<Vec<String>> {
    let rows = cx.query(&cx.sql.queue_names, &[]).await?;
    rows.iter().map(|r| col(r, 0)).collect()
}

/// The database clock, offset included.
pub async fn now(cx: &Ctx<'_>) -> Result<i64> {
    let row = cx.query_one(&cx.sql.now, &[&cx.offset]).await?;
    col(&row, 0)
}

/// When `queue` next gains claimable work without a commit: the earliest
/// future `run_at` of a pending row, or the second after the earliest
/// unexpired lease ends (a lease is reclaimable once `deadline < now`).
pub async fn next_wake(cx: &Ctx<'_>, queue: &str) -> Result<Option<i64>> {
    let row = cx.query_one(&cx.sql.next_wake, &[&cx.offset, &queue]).await?;
    col(&row, 0)
}

#[cfg(test)]
mod tests {
    use crate::sql::Statements;
    use crate::testing::{Fixture, TestResult};

    /// The reads a waiter or a dashboard repeats must stay index seeks.
    #[test]
    fn explain_reads_use_the_indexes() -> TestResult {
        let Some(fx) = Fixture::new()? else { return Ok(()) };
        fx.fill()?;
        let sql = Statements::new(&fx.schema);
        for plan in fx.plans("bigint, text", &sql.next_wake, "0, 'q3'")? {
            assert!(plan.contains("jobs_ready") && plan.contains("jobs_leased"), "{plan}");
            assert!(!plan.contains("Seq Scan"), "{plan}");
        }
        // Either dead_queue or a backward walk of the primary key, by cost.
        for plan in fx.plans("text, bigint, bigint", &sql.dead_jobs, "'q3', 9223372036854775807, 100")? {
            assert!(plan.contains("Index Scan Backward"), "{plan}");
            assert!(!plan.contains("Seq Scan"), "{plan}");
        }
        for plan in fx.plans("bigint, text", &sql.get_job, "5, 'q5'")? {
            // One unique seek per table (dead_pkey or dead_queue, both exact).
            assert!(plan.contains("using jobs_pkey") && plan.matches("Index Scan").count() == 2, "{plan}");
            assert!(!plan.contains("Seq Scan"), "{plan}");
        }
        Ok(())
    }
}
