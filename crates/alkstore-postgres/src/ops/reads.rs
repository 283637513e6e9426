//! Reads (SPEC §4.4): `get_job`, `job_by_id`, `dead_jobs`, `stats`, `live_jobs` /
//! `queue_names` for operators (ADR 0007), and `next_wake` (SPEC §5: when a
//! queue gains claimable work without a commit).

use alkstore_core::{Job, QueueStats, ReadOps, Result, Tx};

use crate::conn::{Ctx, NOW};
use crate::engine::PgEngine;
use crate::rows::{col, job};

/// A job view without `state`, `last_error`, `died_at`, in the order
/// [`crate::rows::job`] reads it (those three are added per table, then
/// `unique_key`).
const VIEW_COLS: &str = "id, queue, payload, priority, attempts, max_attempts, enqueued_at, run_at, \
                         claimed_at, deadline, worker_id, expires_at";

/// The read statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// A live or dead row of a queue: `$1` id, `$2` queue.
    pub(crate) get_job: String,
    /// The live or dead row `$1`, whatever its queue: a primary-key probe of each table.
    pub(crate) job_by_id: String,
    /// Dead rows newest first: `$1` queue, `$2` exclusive upper id, `$3` limit.
    pub(crate) dead_jobs: String,
    /// Live rows newest first: `$1` queue, `$2` exclusive upper id, `$3` limit (ADR 0007).
    pub(crate) live_jobs: String,
    /// Every queue that ever had a job, has a live or dead row, or is paused, sorted (ADR 0007).
    pub(crate) queue_names: String,
    /// The four counts, the oldest ready age, paused, waiting (SPEC §25).
    pub(crate) stats: String,
    /// The earliest future instant `$2`'s queue gains claimable work without a commit.
    pub(crate) next_wake: String,
}

impl Sql {
    /// For the quoted schema `s`.
    pub(crate) fn new(s: &str) -> Self {
        Sql {
            // One statement, one snapshot: a row moving to dead is seen in
            // exactly one of the two tables. A live row's last_error is its
            // last failure (SPEC §30, migration 0021).
            get_job: format!(
                "SELECT {VIEW_COLS}, state, last_error, NULL::bigint AS died_at, unique_key, group_key \
                 FROM {s}.jobs WHERE id = $1::bigint AND queue = $2::text \
                 UNION ALL \
                 SELECT {VIEW_COLS}, 'dead', last_error, died_at, unique_key, group_key \
                 FROM {s}.dead WHERE id = $1::bigint AND queue = $2::text"
            ),
            job_by_id: format!(
                "SELECT {VIEW_COLS}, state, last_error, NULL::bigint AS died_at, unique_key, group_key \
                 FROM {s}.jobs WHERE id = $1::bigint \
                 UNION ALL \
                 SELECT {VIEW_COLS}, 'dead', last_error, died_at, unique_key, group_key \
                 FROM {s}.dead WHERE id = $1::bigint"
            ),
            dead_jobs: format!(
                "SELECT {VIEW_COLS}, 'dead', last_error, died_at, unique_key, group_key FROM {s}.dead \
                 WHERE queue = $1::text AND id < $2::bigint ORDER BY id DESC LIMIT $3::bigint"
            ),
            // For operators (ADR 0007): a backward walk of the primary key
            // that skips other queues' rows.
            live_jobs: format!(
                "SELECT {VIEW_COLS}, state, last_error, NULL::bigint AS died_at, unique_key, group_key FROM {s}.jobs \
                 WHERE queue = $1::text AND id < $2::bigint ORDER BY id DESC LIMIT $3::bigint"
            ),
            // UNION, not UNION ALL: one name per queue. A scan of both
            // tables, for operators only (ADR 0007), never on a hot path.
            // COLLATE "C" sorts by bytes, as SQLite's BINARY does, so both
            // engines list queues in one order whatever the database locale.
            queue_names: format!(
                "SELECT queue FROM (SELECT queue FROM {s}.queues UNION SELECT queue FROM {s}.jobs \
                 UNION SELECT queue FROM {s}.dead UNION SELECT queue FROM {s}.paused \
                 UNION SELECT queue FROM {s}.limits) q ORDER BY queue COLLATE \"C\""
            ),
            stats: format!(
                "{NOW}, p AS ( \
                   SELECT count(*) FILTER (WHERE run_at <= (SELECT t FROM n)) AS ready, \
                          count(*) FILTER (WHERE run_at > (SELECT t FROM n)) AS scheduled, \
                          min(run_at) FILTER (WHERE run_at <= (SELECT t FROM n)) AS oldest \
                   FROM {s}.jobs WHERE queue = $2::text AND state = 'pending') \
                 SELECT p.ready, p.scheduled, \
                   (SELECT count(*) FROM {s}.jobs WHERE queue = $2::text AND state = 'processing'), \
                   (SELECT count(*) FROM {s}.dead WHERE queue = $2::text), \
                   (SELECT t FROM n) - p.oldest, \
                   EXISTS (SELECT 1 FROM {s}.paused WHERE queue = $2::text), \
                   (SELECT count(*) FROM {s}.jobs WHERE queue = $2::text AND state = 'waiting') \
                 FROM p"
            ),
            // Pending rows: the jobs_ready index orders by priority first, so
            // the earliest future run_at is one seek per distinct priority,
            // found by a recursive skip scan, never a scan of the backlog.
            // Leases: reclaimable once `deadline < now`, i.e. at deadline + 1.
            // Rate windows: open when their oldest logged claim leaves. All
            // three are instants on one sub-second clock read (`h`), whose
            // whole second `n` is what a claim at that instant compares
            // with; the answer is how long until the first of them, to the
            // microsecond: a window of a fractional period opens between
            // two whole seconds (issue 43).
            next_wake: format!(
                "WITH RECURSIVE h AS MATERIALIZED ( \
                   SELECT extract(epoch FROM clock_timestamp())::float8 + $1::bigint AS at), \
                 n AS MATERIALIZED (SELECT floor((SELECT at FROM h))::bigint AS t), \
                 prio AS ( \
                   (SELECT priority FROM {s}.jobs WHERE queue = $2::text AND state = 'pending' \
                    ORDER BY priority DESC LIMIT 1) \
                   UNION ALL \
                   SELECT (SELECT j.priority FROM {s}.jobs j \
                           WHERE j.queue = $2::text AND j.state = 'pending' AND j.priority < prio.priority \
                           ORDER BY j.priority DESC LIMIT 1) \
                   FROM prio WHERE prio.priority IS NOT NULL) \
                 SELECT least( \
                   (SELECT min((SELECT j.run_at FROM {s}.jobs j \
                                WHERE j.queue = $2::text AND j.state = 'pending' AND j.priority = prio.priority \
                                  AND j.run_at > (SELECT t FROM n) \
                                ORDER BY j.run_at LIMIT 1)) \
                    FROM prio WHERE prio.priority IS NOT NULL)::float8, \
                   (SELECT min(deadline) + 1 FROM {s}.jobs \
                    WHERE queue = $2::text AND state = 'processing' AND deadline >= (SELECT t FROM n))::float8, \
                   (SELECT min(r.at + l.rate_period_s) FROM {s}.rate_log r \
                    JOIN {s}.limits l ON l.queue = r.queue \
                    WHERE r.queue = $2::text AND l.rate_count IS NOT NULL \
                      AND r.at > (SELECT at FROM h) - l.rate_period_s)) - (SELECT at FROM h)"
            ),
        }
    }
}

/// A live or dead row of `queue`.
pub(crate) async fn get_job(cx: &Ctx<'_>, queue: &str, id: i64) -> Result<Option<Job>> {
    let rows = cx.query(&cx.sql.reads.get_job, &[&id, &queue]).await?;
    rows.first().map(job).transpose()
}

/// The live or dead row `id`.
pub(crate) async fn job_by_id(cx: &Ctx<'_>, id: i64) -> Result<Option<Job>> {
    let rows = cx.query(&cx.sql.reads.job_by_id, &[&id]).await?;
    rows.first().map(job).transpose()
}

/// Dead rows of `queue`, newest id first, below `before_id` when given.
pub(crate) async fn dead_jobs(cx: &Ctx<'_>, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // A constant bound rather than `$2 IS NULL OR id < $2` keeps the one
    // generic plan an index range scan on dead_queue.
    let below = before_id.unwrap_or(i64::MAX);
    let rows = cx.query(&cx.sql.reads.dead_jobs, &[&queue, &below, &limit]).await?;
    rows.iter().map(job).collect()
}

/// Live rows of `queue`, newest id first, below `before_id` when given.
pub(crate) async fn live_jobs(cx: &Ctx<'_>, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let below = before_id.unwrap_or(i64::MAX);
    let rows = cx.query(&cx.sql.reads.live_jobs, &[&queue, &below, &limit]).await?;
    rows.iter().map(job).collect()
}

/// Counts for `queue`, all from one snapshot and one clock read.
pub(crate) async fn stats(cx: &Ctx<'_>, queue: &str) -> Result<QueueStats> {
    let row = cx.query_one(&cx.sql.reads.stats, &[&cx.offset, &queue]).await?;
    Ok(QueueStats {
        pending: col(&row, 0)?,
        scheduled: col(&row, 1)?,
        processing: col(&row, 2)?,
        dead: col(&row, 3)?,
        oldest_ready_age_s: col(&row, 4)?,
        paused: col(&row, 5)?,
        waiting: col(&row, 6)?,
    })
}

/// Every queue name with a live or dead row, sorted (a scan: for operators).
pub(crate) async fn queue_names(cx: &Ctx<'_>) -> Result<Vec<String>> {
    let rows = cx.query(&cx.sql.reads.queue_names, &[]).await?;
    rows.iter().map(|r| col(r, 0)).collect()
}

/// How long (seconds, sub-second) until `queue` next gains claimable work
/// without a commit: the earliest future `run_at` of a pending row, the
/// second after the earliest unexpired lease ends (a lease is reclaimable
/// once `deadline < now`), or the opening of its rate window.
pub(crate) async fn next_wake(cx: &Ctx<'_>, queue: &str) -> Result<Option<f64>> {
    let row = cx.query_one(&cx.sql.reads.next_wake, &[&cx.offset, &queue]).await?;
    col(&row, 0)
}

impl ReadOps for PgEngine {
    fn get_job(&self, tx: Option<&mut dyn Tx>, queue: &str, id: i64) -> Result<Option<Job>> {
        self.run(tx, async |cx| get_job(cx, queue, id).await)
    }

    fn job_by_id(&self, id: i64) -> Result<Option<Job>> {
        self.run(None, async |cx| job_by_id(cx, id).await)
    }

    fn dead_jobs(&self, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
        self.run(None, async |cx| dead_jobs(cx, queue, limit, before_id).await)
    }

    fn stats(&self, queue: &str) -> Result<QueueStats> {
        self.run(None, async |cx| stats(cx, queue).await)
    }

    fn live_jobs(&self, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
        self.run(None, async |cx| live_jobs(cx, queue, limit, before_id).await)
    }

    fn queue_names(&self) -> Result<Vec<String>> {
        self.run(None, async |cx| queue_names(cx).await)
    }

    fn next_wake(&self, queue: &str) -> Result<Option<f64>> {
        self.run(None, async |cx| next_wake(cx, queue).await)
    }
}

#[cfg(test)]
mod tests {
    use crate::ops::Statements;
    use crate::testing::{Fixture, TestResult};

    /// The reads a waiter or a dashboard repeats must stay index seeks.
    #[test]
    fn explain_reads_use_the_indexes() -> TestResult {
        let Some(fx) = Fixture::new()? else { return Ok(()) };
        fx.fill()?;
        let sql = Statements::new(&fx.schema);
        for plan in fx.plans("bigint, text", &sql.reads.next_wake, "0, 'q3'")? {
            assert!(plan.contains("jobs_ready") && plan.contains("jobs_leased"), "{plan}");
            assert!(!plan.contains("Seq Scan"), "{plan}");
        }
        // Either dead_queue or a backward walk of the primary key, by cost.
        for plan in fx.plans("text, bigint, bigint", &sql.reads.dead_jobs, "'q3', 9223372036854775807, 100")? {
            assert!(plan.contains("Index Scan Backward"), "{plan}");
            assert!(!plan.contains("Seq Scan"), "{plan}");
        }
        for plan in fx.plans("bigint, text", &sql.reads.get_job, "5, 'q5'")? {
            // One unique seek per table (dead_pkey or dead_queue, both exact).
            assert!(plan.contains("using jobs_pkey") && plan.matches("Index Scan").count() == 2, "{plan}");
            assert!(!plan.contains("Seq Scan"), "{plan}");
        }
        Ok(())
    }
}
