//! `sweep_expired` (SPEC §4.4): expired rows to dead, retention purge.
//!
//! One statement, so it is atomic without a transaction of its own; the
//! rows to move are locked `FOR UPDATE SKIP LOCKED`, so two sweeps running
//! at once split the rows between them and never move one twice.

use alkstore_core::{Result, SweepOps, Swept};

use super::{into_dead, DEAD_SELECT, DEAD_VALUES};
use crate::conn::{Ctx, NOW};
use crate::engine::PgEngine;
use crate::rows::col;

/// The sweep statement of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// Expired rows to dead, retention purge; returns (expired, purged).
    pub(crate) sweep: String,
}

impl Sql {
    /// For the quoted schema `s`.
    pub(crate) fn new(s: &str, channel: &str) -> Self {
        // Expired processing jobs of a limited queue free their slots.
        let freed = super::slot_freed(s, channel, "queue");
        let into_dead = into_dead(s);
        Sql {
            // ADR 0001 sweeps in two steps: move expired rows, then purge
            // dead rows with purge_at <= now. One statement sees one snapshot,
            // so the purge cannot see the rows it just moved; instead a moved
            // row whose retention is 0 (purge_at = now) is not inserted and is
            // counted as purged — the same end state and counts as the two steps.
            // A parent (has_children) is inserted all the same, so migration
            // 0012's trigger reads its death as one; the next sweep purges it.
            sweep: format!(
                "{NOW}, \
                 moved AS ( \
                   DELETE FROM {s}.jobs WHERE id = ANY(ARRAY( \
                     SELECT id FROM {s}.jobs WHERE queue = $2::text AND expires_at <= (SELECT t FROM n) \
                     FOR UPDATE SKIP LOCKED)) \
                   RETURNING *), \
                 kept AS ( \
                   {into_dead} SELECT {DEAD_SELECT}, 'expired', {DEAD_VALUES} FROM moved \
                   WHERE dead_retention_s IS NULL OR dead_retention_s > 0 OR has_children), \
                 purged AS ( \
                   DELETE FROM {s}.dead WHERE queue = $2::text AND purge_at <= (SELECT t FROM n) RETURNING 1), \
                 freed AS (SELECT {freed} FROM moved WHERE state = 'processing' LIMIT 1) \
                 SELECT (SELECT count(*) FROM moved), \
                   (SELECT count(*) FROM purged) \
                   + (SELECT count(*) FROM moved WHERE dead_retention_s IS NOT NULL AND dead_retention_s <= 0), \
                   (SELECT count(*) FROM freed)"
            ),
        }
    }
}

/// Sweeps `queue`.
pub(crate) async fn sweep_expired(cx: &Ctx<'_>, queue: &str) -> Result<Swept> {
    let row = cx.query_one(&cx.sql.sweep.sweep, &[&cx.offset, &queue]).await?;
    // Kept results past their keep_result (SPEC §25) go with the sweep too.
    cx.execute(&cx.sql.workflows.purge_results, &[&cx.offset, &queue]).await?;
    Ok(Swept { expired: col(&row, 0)?, purged: col(&row, 1)? })
}

impl SweepOps for PgEngine {
    fn sweep_expired(&self, queue: &str) -> Result<Swept> {
        self.run(None, async |cx| sweep_expired(cx, queue).await)
    }
}

#[cfg(test)]
mod tests {
    use crate::ops::Statements;
    use crate::testing::{Fixture, TestResult};

    #[test]
    fn explain_sweep_uses_the_expiry_and_purge_indexes() -> TestResult {
        let Some(fx) = Fixture::new()? else { return Ok(()) };
        fx.fill()?;
        let sweep = Statements::new(&fx.schema).sweep.sweep;
        for plan in fx.plans("bigint, text", &sweep, "0, 'q3'")? {
            assert!(plan.contains("jobs_expiring"), "{plan}");
            assert!(plan.contains("dead_purge"), "{plan}");
            // `limits` is a handful of rows keyed by queue: the planner may scan it.
            assert!(!plan.contains("Seq Scan on jobs") && !plan.contains("Seq Scan on dead"), "{plan}");
        }
        Ok(())
    }
}
