//! What a claim's holder does with it (SPEC §4.3): ack, retry, fail,
//! heartbeat, release.
//!
//! Every op is one statement guarded by the validity predicate (processing,
//! same worker, same claim token, lease not lapsed), so a stale or lapsed
//! handle changes nothing and the op reports `false`. Moves to dead are a
//! single `DELETE … RETURNING` feeding an `INSERT`: atomic on their own and
//! inside a caller's transaction alike, so no savepoint is needed.

use alkstore_core::{Claimed, Result};

use crate::ctx::Ctx;
use crate::rows::col;

/// Deletes every valid handle in one statement; returns how many landed.
pub async fn ack(cx: &Ctx<'_>, jobs: &[&Claimed]) -> Result<usize> {
    let n = if let [job] = jobs {
        cx.execute(&cx.sql.ack_one, &[&cx.offset, &job.id, &job.worker_id, &job.claim_token]).await?
    } else {
        let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
        let workers: Vec<&str> = jobs.iter().map(|j| j.worker_id.as_str()).collect();
        let tokens: Vec<i64> = jobs.iter().map(|j| j.claim_token).collect();
        cx.execute(&cx.sql.ack_many, &[&cx.offset, &ids, &workers, &tokens]).await?
    };
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// Back to pending after `delay` seconds (resolved by the Store, which
/// sends a spent budget to [`kill`] instead).
pub async fn retry(cx: &Ctx<'_>, job: &Claimed, delay: i64) -> Result<bool> {
    let n = cx.execute(&cx.sql.retry, &[&cx.offset, &job.id, &job.worker_id, &job.claim_token, &delay]).await?;
    Ok(n > 0)
}

/// Straight to dead with `error`.
pub async fn kill(cx: &Ctx<'_>, job: &Claimed, error: &str) -> Result<bool> {
    let n = cx.execute(&cx.sql.kill, &[&cx.offset, &job.id, &job.worker_id, &job.claim_token, &error]).await?;
    Ok(n > 0)
}

/// `deadline := now + extend_s`; the new deadline, or None when refused.
pub async fn heartbeat(cx: &Ctx<'_>, job: &Claimed, extend_s: i64) -> Result<Option<i64>> {
    let rows = cx.query(&cx.sql.heartbeat, &[&cx.offset, &job.id, &job.worker_id, &job.claim_token, &extend_s]).await?;
    rows.first().map(|r| col(r, 0)).transpose()
}

/// Back to pending now with the attempt refunded (the claim token is not).
pub async fn release(cx: &Ctx<'_>, job: &Claimed) -> Result<bool> {
    let n = cx.execute(&cx.sql.release, &[&cx.offset, &job.id, &job.worker_id, &job.claim_token]).await?;
    Ok(n > 0)
}
