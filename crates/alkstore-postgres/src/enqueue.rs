//! The producer side: putting jobs in (`enqueue`) and taking them back out
//! (`cancel`).

use alkstore_core::{NewJob, QueueOpts, ReadyAt, Result};

use crate::ctx::Ctx;
use crate::rows::col;

/// `ready` as (absolute run_at, delay): the statement takes
/// `coalesce(run_at, now + delay)` so both forms share one clock read.
fn ready_parts(ready: ReadyAt) -> (Option<i64>, i64) {
    match ready {
        ReadyAt::Now => (None, 0),
        ReadyAt::Delay(d) => (None, d),
        ReadyAt::At(t) => (Some(t), 0),
    }
}

/// Inserts `jobs`, returning their ids in input order. One statement either
/// way — a single INSERT, or one INSERT over arrays for many — so a batch is
/// atomic without BEGIN/COMMIT round trips and shares one `now`.
pub async fn enqueue(cx: &Ctx<'_>, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<Vec<i64>> {
    if let [job] = jobs {
        let (run_at, delay) = ready_parts(job.ready);
        let max_attempts = job.max_attempts.unwrap_or(opts.max_attempts);
        let expires = job.expires_s;
        let row = cx
            .query_one(
                &cx.sql.enqueue_one,
                &[
                    &cx.offset,
                    &queue,
                    &job.payload,
                    &job.priority,
                    &max_attempts,
                    &opts.visibility_timeout_s,
                    &opts.backoff_base_s,
                    &opts.dead_letter_retention_s,
                    &run_at,
                    &delay,
                    &expires,
                ],
            )
            .await?;
        return Ok(vec![col(&row, 0)?]);
    }
    let payloads: Vec<&str> = jobs.iter().map(|j| j.payload.as_str()).collect();
    let priorities: Vec<i32> = jobs.iter().map(|j| j.priority).collect();
    let budgets: Vec<i64> = jobs.iter().map(|j| j.max_attempts.unwrap_or(opts.max_attempts)).collect();
    let (run_ats, delays): (Vec<Option<i64>>, Vec<i64>) = jobs.iter().map(|j| ready_parts(j.ready)).unzip();
    let expires: Vec<Option<i64>> = jobs.iter().map(|j| j.expires_s).collect();
    let rows = cx
        .query(
            &cx.sql.enqueue_many,
            &[
                &cx.offset,
                &queue,
                &opts.visibility_timeout_s,
                &opts.backoff_base_s,
                &opts.dead_letter_retention_s,
                &payloads,
                &priorities,
                &budgets,
                &run_ats,
                &delays,
                &expires,
            ],
        )
        .await?;
    let mut ids = rows.iter().map(|r| col::<i64>(r, 0)).collect::<Result<Vec<_>>>()?;
    // RETURNING order is not promised. The identity sequence hands this
    // statement increasing values in insertion order (ORDER BY ord), so
    // ascending ids are the input order.
    ids.sort_unstable();
    Ok(ids)
}

/// Deletes a pending or processing row of `queue`.
pub async fn cancel(cx: &Ctx<'_>, queue: &str, id: i64) -> Result<bool> {
    Ok(cx.execute(&cx.sql.cancel, &[&id, &queue]).await? > 0)
}
