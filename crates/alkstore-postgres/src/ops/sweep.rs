//! `sweep_expired` (SPEC §4.4): expired rows to dead, retention purge.
//!
//! One statement, so it is atomic without a transaction of its own; the
//! rows to move are locked `FOR UPDATE SKIP LOCKED`, so two sweeps running
//! at once split the rows between them and never move one twice.

use alkstore_core::{Result, Swept};

use crate::conn::Ctx;
use crate::rows::col;

/// Sweeps `queue`.
pub async fn sweep_expired(cx: &Ctx<'_>, queue: &str) -> Result<Swept> {
    let row = cx.query_one(&cx.sql.sweep, &[&cx.offset, &queue]).await?;
    Ok(Swept { expired: col(&row, 0)?, purged: col(&row, 1)? })
}

#[cfg(test)]
mod tests {
    use crate::sql::Statements;
    use crate::testing::{Fixture, TestResult};

    #[test]
    fn explain_sweep_uses_the_expiry_and_purge_indexes() -> TestResult {
        let Some(fx) = Fixture::new()? else { return Ok(()) };
        fx.fill()?;
        let sweep = Statements::new(&fx.schema).sweep;
        for plan in fx.plans("bigint, text", &sweep, "0, 'q3'")? {
            assert!(plan.contains("jobs_expiring"), "{plan}");
            assert!(plan.contains("dead_purge"), "{plan}");
            assert!(!plan.contains("Seq Scan"), "{plan}");
        }
        Ok(())
    }
}
