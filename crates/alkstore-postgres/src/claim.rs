//! The claim (SPEC §4.2, ADR 0001): one statement, one round trip.
//!
//! The statement first moves exhausted lapsed rows to dead
//! ('attempts exhausted'), then claims up to `n` rows from the union of the
//! first `n` ready rows and the first `n` lapsed leases, both locked with
//! `FOR UPDATE SKIP LOCKED` so concurrent claimers never wait on each other
//! and never receive the same (job, attempt).

use alkstore_core::{Claimed, Result};

use crate::ctx::Ctx;
use crate::rows::{claimed, sort_claimed};

/// Claims up to `n` jobs of `queue` for `worker_id`, in claim order.
pub async fn claim(cx: &Ctx<'_>, queue: &str, worker_id: &str, n: usize) -> Result<Vec<Claimed>> {
    let limit = i64::try_from(n).unwrap_or(i64::MAX);
    let rows = cx.query(&cx.sql.claim, &[&cx.offset, &queue, &worker_id, &limit]).await?;
    let mut jobs = rows.iter().map(claimed).collect::<Result<Vec<_>>>()?;
    sort_claimed(&mut jobs);
    Ok(jobs)
}
