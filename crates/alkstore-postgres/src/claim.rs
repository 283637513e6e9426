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

#[cfg(test)]
mod tests {
    use crate::sql::{quote_ident, Statements};
    use crate::testing::{Fixture, TestResult};

    /// The claim's candidate scans must be the partial indexes, with the
    /// custom plans of the first executions and with the generic plan a
    /// cached statement settles on; never a sequential scan of the jobs.
    #[test]
    fn explain_claim_uses_the_partial_indexes() -> TestResult {
        let Some(fx) = Fixture::new()? else { return Ok(()) };
        let s = quote_ident(&fx.schema);
        fx.batch(&format!(
            "INSERT INTO {s}.jobs (queue, state, payload, priority, attempts, max_attempts, claim_token, \
               visibility_timeout_s, backoff_base_s, enqueued_at, run_at, deadline) \
             SELECT 'q' || (i % 20), CASE WHEN i % 4 = 0 THEN 'processing' ELSE 'pending' END, '{{}}', \
               i % 3, 1, 3, 1, 30, 5, 0, i, i \
             FROM generate_series(1, 20000) i; \
             ANALYZE {s}.jobs;"
        ))?;
        let claim = Statements::new(&fx.schema).claim;
        fx.batch(&format!("PREPARE c(bigint, text, text, bigint) AS {claim}"))?;
        for mode in ["force_custom_plan", "force_generic_plan"] {
            fx.batch(&format!("SET plan_cache_mode = {mode}"))?;
            let plan = fx.lines("EXPLAIN (COSTS OFF) EXECUTE c(0, 'q3', 'w', 10)")?.join("\n");
            assert!(plan.contains("Index Scan using jobs_ready"), "{mode}:\n{plan}");
            assert!(plan.contains("Index Scan using jobs_leased"), "{mode}:\n{plan}");
            assert!(!plan.contains("Seq Scan"), "{mode}:\n{plan}");
        }
        Ok(())
    }
}
