//! The claim (SPEC §4.2, ADR 0001): one statement, one round trip.
//!
//! The statement first moves exhausted lapsed rows to dead
//! ('attempts exhausted', or 'expired' when also past their expiry), then claims up to `n` rows from the union of the
//! first `n` ready rows and the first `n` lapsed leases, both locked with
//! `FOR UPDATE SKIP LOCKED` so concurrent claimers never wait on each other
//! and never receive the same (job, attempt).

use alkstore_core::{Claimed, Result};

use crate::ctx::Ctx;
use crate::rows::claimed;

/// Claims up to `n` jobs of `queue` for `worker_id`, in RETURNING order:
/// the Store sorts them into claim order.
pub async fn claim(cx: &Ctx<'_>, queue: &str, worker_id: &str, n: usize) -> Result<Vec<Claimed>> {
    let rows = if n == 1 {
        cx.query(&cx.sql.claim_one, &[&cx.offset, &queue, &worker_id]).await?
    } else {
        let limit = i64::try_from(n).unwrap_or(i64::MAX);
        cx.query(&cx.sql.claim, &[&cx.offset, &queue, &worker_id, &limit]).await?
    };
    rows.iter().map(claimed).collect()
}

#[cfg(test)]
mod tests {
    use crate::sql::Statements;
    use crate::testing::{Fixture, TestResult};

    /// The claim's candidate scans must be the partial indexes, with the
    /// custom plans of the first executions and with the generic plan a
    /// cached statement settles on; never a sequential scan of the jobs.
    #[test]
    fn explain_claim_uses_the_partial_indexes() -> TestResult {
        let Some(fx) = Fixture::new()? else { return Ok(()) };
        fx.fill()?;
        let sql = Statements::new(&fx.schema);
        let one = fx.plans("bigint, text, text", &sql.claim_one, "0, 'q3', 'w'")?;
        let many = fx.plans("bigint, text, text, bigint", &sql.claim, "0, 'q3', 'w', 10")?;
        for plan in one.iter().chain(&many) {
            assert!(plan.contains("Index Scan using jobs_ready"), "{plan}");
            // The lapsed scan is a range of jobs_leased (plain or bitmap), sorted after.
            assert!(
                plan.contains("Index Scan using jobs_leased") || plan.contains("Index Scan on jobs_leased"),
                "{plan}"
            );
            assert!(!plan.contains("Seq Scan"), "{plan}");
        }
        Ok(())
    }
}
