//! Forgetting a queue (SPEC §18, issue 44): the rows keyed by a queue that
//! holds nothing a caller may still read, in one transaction.
//!
//! The race to close is an enqueue in flight: its statement registers the
//! queue (`INSERT INTO queues … ON CONFLICT DO NOTHING`, migration 0008)
//! and inserts the job, but has not committed. Under READ COMMITTED the
//! forget's checks cannot see that job, and deleting the listing row waits
//! for nothing, since a conflict that does nothing takes no row lock: the
//! job would commit into a queue the store no longer lists. So the forget
//! first takes `queues` in SHARE ROW EXCLUSIVE mode. Every enqueue path
//! (the store's statements, `conn=`, the SQL function) holds ROW EXCLUSIVE
//! on `queues` from its INSERT to its commit, so the lock waits for the
//! enqueues in flight to commit, and the checks that follow (a new statement,
//! a new snapshot) see their jobs. Enqueues that start meanwhile wait for
//! the forget to commit, then register the queue again. Claims, acks and
//! every other operation never touch `queues` and run on.
//!
//! The wait is bounded by [`LOCK_WAIT`]: a caller's transaction that
//! enqueued and stays open would otherwise hold the forget, and every
//! enqueue queued behind it, for as long as it stays open.

use alkstore_core::{Error, Forget, ForgetOps, Result};

use crate::conn::{Ctx, NOW};
use crate::engine::PgEngine;
use crate::error::pg_error;
use crate::rows::col;

/// How long a forget waits for enqueues in flight, as Postgres text.
const LOCK_WAIT: &str = "2s";

/// The forget statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// Bounds the transaction's lock waits and plans its statements for
    /// their queue (see `holds`), then waits for the enqueues in flight and
    /// holds off new ones until the forget commits.
    pub(crate) lock: String,
    /// Whether `$2` has a live row (pending, processing, waiting), a dead
    /// row, and a result whose keep runs past now or that a child still
    /// names. `$1` clock offset.
    pub(crate) holds: String,
    /// Deletes the rows keyed by `$1` and counts them. Results kept for a
    /// child (`expires_at` NULL) are the child's: its triggers delete them,
    /// whatever the queue; a queue that passed `holds` has only expired
    /// results left.
    pub(crate) forget: String,
}

impl Sql {
    /// For the quoted schema `s`.
    pub(crate) fn new(s: &str) -> Self {
        Sql {
            lock: format!(
                "SET LOCAL lock_timeout = '{LOCK_WAIT}'; SET LOCAL plan_cache_mode = force_custom_plan; \
                 LOCK TABLE {s}.queues IN SHARE ROW EXCLUSIVE MODE"
            ),
            // One probe per live state, each the partial index of that
            // state (jobs_ready, jobs_leased, jobs_waiting): no index holds
            // every live row of a queue. Planned for the queue at hand: a
            // generic plan counts on finding a row early and scans, which for
            // the empty queue a forget goes through with reads the table
            // whole, holding off every enqueue meanwhile.
            holds: format!(
                "{NOW} SELECT EXISTS (SELECT 1 FROM {s}.jobs WHERE queue = $2::text AND state = 'pending') \
                   OR EXISTS (SELECT 1 FROM {s}.jobs WHERE queue = $2::text AND state = 'processing') \
                   OR EXISTS (SELECT 1 FROM {s}.jobs WHERE queue = $2::text AND state = 'waiting'), \
                 EXISTS (SELECT 1 FROM {s}.dead WHERE queue = $2::text), \
                 EXISTS (SELECT 1 FROM {s}.results r WHERE r.queue = $2::text AND r.expires_at IS NOT NULL \
                         AND (r.expires_at > (SELECT t FROM n) \
                              OR EXISTS (SELECT 1 FROM {s}.edges e WHERE e.parent_id = r.id)))"
            ),
            forget: format!(
                "WITH a AS (DELETE FROM {s}.queues WHERE queue = $1::text RETURNING 1), \
                 b AS (DELETE FROM {s}.paused WHERE queue = $1::text RETURNING 1), \
                 c AS (DELETE FROM {s}.limits WHERE queue = $1::text RETURNING 1), \
                 d AS (DELETE FROM {s}.rate_log WHERE queue = $1::text RETURNING 1), \
                 e AS (DELETE FROM {s}.completions WHERE queue = $1::text RETURNING 1), \
                 f AS (DELETE FROM {s}.results WHERE queue = $1::text AND expires_at IS NOT NULL RETURNING 1) \
                 SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM b) + (SELECT count(*) FROM c) \
                      + (SELECT count(*) FROM d) + (SELECT count(*) FROM e) + (SELECT count(*) FROM f)"
            ),
        }
    }
}

/// In the op's own transaction (`run_atomic`): the lock, the checks, the deletes.
async fn forget(cx: &Ctx<'_>, queue: &str) -> Result<Forget> {
    if let Err(e) = cx.client.batch_execute(&cx.sql.forget.lock).await {
        let e = pg_error(&e);
        if let Error::Database { code: Some(code), .. } = &e {
            if code == "55P03" {
                return Err(Error::database(
                    Some(code.clone()),
                    format!(
                        "forget_queue waited {LOCK_WAIT} for enqueues in flight to commit (a transaction that \
                         enqueued is still open); nothing was changed: try again"
                    ),
                ));
            }
        }
        return Err(e);
    }
    let row = cx.query_one(&cx.sql.forget.holds, &[&cx.offset, &queue]).await?;
    let (live, dead, results) = (col(&row, 0)?, col(&row, 1)?, col(&row, 2)?);
    if live || dead || results {
        return Ok(Forget::Holds { live, dead, results });
    }
    let deleted: i64 = col(&cx.query_one(&cx.sql.forget.forget, &[&queue]).await?, 0)?;
    Ok(Forget::Forgotten { known: deleted > 0 })
}

impl ForgetOps for PgEngine {
    fn forget_queue(&self, queue: &str) -> Result<Forget> {
        self.run_atomic(None, async |cx| forget(cx, queue).await)
    }
}

#[cfg(test)]
mod tests {
    use crate::ops::Statements;
    use crate::testing::{Fixture, TestResult};

    /// The store's read by id and the forget's checks seek by index, custom
    /// plan or generic: never a scan of the live or the dead table, however
    /// many queues there are (issue 44: the dashboard walked every queue).
    #[test]
    fn the_read_by_id_and_the_forget_checks_seek() -> TestResult {
        let Some(fx) = Fixture::new()? else { return Ok(()) };
        fx.fill()?;
        let sql = Statements::new(&fx.schema);
        let by_id = fx.plans("bigint", &sql.reads.job_by_id, "100007")?;
        // A queue that holds nothing, the case a forget goes through with,
        // planned for its value as the forget's transaction has it.
        let holds = fx.plans("bigint, text", &sql.forget.holds, "0, 'gone'")?;
        let custom: Vec<&String> = holds.iter().filter(|p| p.starts_with("force_custom_plan")).collect();
        assert_eq!(custom.len(), 1);
        for plan in by_id.iter().chain(custom) {
            assert!(!plan.contains("Seq Scan on jobs") && !plan.contains("Seq Scan on dead"), "{plan}");
        }
        for plan in &by_id {
            assert!(plan.contains("jobs_pkey") && plan.contains("dead_pkey"), "{plan}");
        }
        Ok(())
    }
}
