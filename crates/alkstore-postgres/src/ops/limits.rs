//! Flow control (SPEC §24, ADR 0028): a row of `limits` per limited queue,
//! and the claim of such a queue.
//!
//! The one-statement claim (`claim.rs`) probes `limits` and answers
//! "limited" for such a queue; [`claim`] here then runs one transaction:
//! 1. a transaction-scoped advisory lock on the queue, so the limited
//!    claims of one queue run one at a time over every process and machine
//!    (nothing else takes it: acks, enqueues and other queues' claims run on);
//! 2. exhausted lapsed leases to dead (they free their slots);
//! 3. one read of the limits, the queue's processing rows and the claims in
//!    the rate window, which core turns into a budget
//!    ([`alkstore_core::rules::limits::budget`]);
//! 4. one `UPDATE … RETURNING` over the lapsed leases (a reclaim keeps its
//!    slot) and the first ready rows whose group has room, within budget;
//! 5. the claims logged for the rate window, the older log dropped.
//!
//! No counter is kept: a slot is a processing row, freed by whatever moves
//! it out of `processing` (fenced handle ops, a sweep) — which notify the
//! queue's channel when it has limits (`slot_freed`), so held-back claimers
//! wake for a free slot as they wake for an enqueue.

use alkstore_core::rules::limits::{budget, first_scan, QueueLimits};
use alkstore_core::{Claimed, Engine, LimitOps, Result};

use super::claim::CLAIMED_COLS;
use super::RECLAIM_ERROR;
use crate::conn::{Ctx, NOW};
use crate::engine::PgEngine;
use crate::rows::{claimed, col};

/// The limits statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// `$1`'s limits.
    pub(crate) get: String,
    /// Stores `$1`'s limits and wakes its claimers.
    pub(crate) set: String,
    /// Clears `$1`'s limits and wakes its claimers.
    pub(crate) clear: String,
    /// The advisory lock of queue `$1`, held to the end of the transaction.
    pub(crate) lock: String,
    /// Exhausted lapsed leases of `$2` to dead (`$1` offset).
    pub(crate) exhaust: String,
    /// The limits, processing rows, hires clock and claims in the window of `$2` (`$1` offset).
    pub(crate) counts: String,
    /// The limited claim (see [`claim`]).
    pub(crate) claim: String,
    /// Logs `$3` claims of `$1` at `$2`, and drops those older than `$4`.
    pub(crate) log: String,
    /// How many pending rows `$1` has, counting at most `$2`.
    pub(crate) ready_beyond: String,
    /// The limited claim of a queue without a group limit as one statement
    /// (see [`claim_flight`]); a row of NULLs for a queue with one.
    pub(crate) flight: String,
}

/// The claim of the rows of a `picked (id)` CTE, both limited claims':
/// `$2` queue, `$3` worker. A row is checked again after any lock wait
/// (EvalPlanQual re-reads the `j` qualifiers): still pending, or a lease
/// still lapsed, and the queue not paused. `slot` is empty, or sets the
/// claimed row's slot (`slots.rs`). A reclaimed lease records that it
/// lapsed ([`RECLAIM_ERROR`]).
fn claim_update(s: &str, slot: &str) -> String {
    format!(
        "UPDATE {s}.jobs j SET state = 'processing', attempts = j.attempts + 1, \
         claim_token = j.claim_token + 1, worker_id = $3::text, claimed_at = (SELECT t FROM n), \
         deadline = (SELECT t FROM n) + j.visibility_timeout_s, {RECLAIM_ERROR}{slot} \
         FROM picked WHERE j.id = picked.id \
           AND (j.state = 'pending' OR (j.state = 'processing' AND j.deadline < (SELECT t FROM n))) \
           AND NOT EXISTS (SELECT 1 FROM {s}.paused WHERE queue = $2::text) \
         RETURNING {CLAIMED_COLS}"
    )
}

/// The clock with sub-second precision, offset `$1` included (the rate window).
const HIRES: &str = "(extract(epoch FROM clock_timestamp())::float8 + $1::bigint)";

impl Sql {
    /// For the quoted schema `s`, the unquoted `schema` (the lock's key) and the store's `channel`.
    pub(crate) fn new(s: &str, schema: &str, channel: &str) -> Self {
        let update = claim_update(s, "");
        let (lock_key, _) = lock_keys(schema);
        Sql {
            get: format!(
                "SELECT concurrency, rate_count, rate_period_s, group_concurrency FROM {s}.limits WHERE queue = $1::text"
            ),
            set: format!(
                "WITH up AS (INSERT INTO {s}.limits (queue, concurrency, rate_count, rate_period_s, group_concurrency) \
                 VALUES ($1::text, $2::bigint, $3::bigint, $4::float8, $5::bigint) ON CONFLICT (queue) DO UPDATE SET \
                 concurrency = excluded.concurrency, rate_count = excluded.rate_count, \
                 rate_period_s = excluded.rate_period_s, group_concurrency = excluded.group_concurrency) \
                 SELECT pg_notify('{channel}', $1::text)::text"
            ),
            clear: format!(
                "WITH d AS (DELETE FROM {s}.limits WHERE queue = $1::text) SELECT pg_notify('{channel}', $1::text)::text"
            ),
            lock: format!("SELECT pg_advisory_xact_lock(hashtextextended('{lock_key}' || $1::text, 0))::text"),
            // The exhaustion step (migration 0020's function: a burial that
            // fails leaves the rows processing and the claim goes on).
            exhaust: format!("{NOW} SELECT {s}.bury_exhausted($2::text, (SELECT t FROM n))"),
            counts: format!(
                "WITH h AS (SELECT {HIRES} AS at) \
                 SELECT l.concurrency, l.rate_count, l.rate_period_s, l.group_concurrency, \
                   (SELECT count(*) FROM {s}.jobs WHERE queue = $2::text AND state = 'processing'), \
                   (SELECT at FROM h), \
                   (SELECT coalesce(sum(r.n), 0)::bigint FROM {s}.rate_log r \
                     WHERE r.queue = $2::text AND r.at > (SELECT at FROM h) - l.rate_period_s) \
                 FROM {s}.limits l WHERE l.queue = $2::text"
            ),
            // `$1` offset, `$2` queue, `$3` worker, `$4` total budget, `$5`
            // fresh budget, `$6` how many ready rows to look at, `$7` the
            // group limit (NULL: none). A ready row is the `nth` of its group
            // among the candidates; with the group's processing rows that
            // must stay within the limit ([`claim_update`] takes them).
            claim: format!(
                "{NOW}, picked AS ( \
                   SELECT id FROM ( \
                     SELECT id, priority, run_at FROM {s}.jobs \
                     WHERE queue = $2::text AND state = 'processing' AND deadline < (SELECT t FROM n) \
                       AND attempts < max_attempts AND (expires_at IS NULL OR expires_at > (SELECT t FROM n)) \
                     UNION ALL \
                     SELECT id, priority, run_at FROM ( \
                       SELECT c.id, c.priority, c.run_at FROM ( \
                         SELECT id, priority, run_at, group_key, \
                           row_number() OVER (PARTITION BY group_key ORDER BY priority DESC, run_at, id) AS nth \
                         FROM ( \
                           SELECT id, priority, run_at, group_key FROM {s}.jobs \
                           WHERE queue = $2::text AND state = 'pending' AND run_at <= (SELECT t FROM n) \
                             AND (expires_at IS NULL OR expires_at > (SELECT t FROM n)) \
                           ORDER BY priority DESC, run_at, id LIMIT $6::bigint) r) c \
                       WHERE $7::bigint IS NULL OR c.group_key IS NULL \
                         OR c.nth + (SELECT count(*) FROM {s}.jobs p WHERE p.queue = $2::text \
                           AND p.group_key = c.group_key AND p.state = 'processing') <= $7::bigint \
                       ORDER BY c.priority DESC, c.run_at, c.id LIMIT $5::bigint) f) u \
                   ORDER BY priority DESC, run_at, id LIMIT $4::bigint) \
                 {update}"
            ),
            log: format!(
                "WITH d AS (DELETE FROM {s}.rate_log WHERE queue = $1::text AND at <= $4::float8) \
                 INSERT INTO {s}.rate_log (queue, at, n) SELECT $1::text, $2::float8, $3::bigint WHERE $3::bigint > 0"
            ),
            ready_beyond: format!(
                "SELECT count(*) FROM (SELECT 1 FROM {s}.jobs WHERE queue = $1::text AND state = 'pending' \
                 LIMIT $2::bigint) x"
            ),
            flight: flight_sql(s),
        }
    }
}

/// The advisory lock keys' prefixes of `schema`'s queues, as SQL string
/// literal bodies: the queue-wide lock's (the queue's name follows) and the
/// slots' (`slots.rs`: the slot number, `:` and the queue's name follow).
pub(crate) fn lock_keys(schema: &str) -> (String, String) {
    let schema = schema.replace('\'', "''");
    (format!("alkstore.limits:{schema}:"), format!("alkstore.slot:{schema}:"))
}

fn limits_of(row: &tokio_postgres::Row) -> Result<QueueLimits> {
    let rate = match (col::<Option<i64>>(row, 1)?, col::<Option<f64>>(row, 2)?) {
        (Some(c), Some(p)) => Some((c, p)),
        _ => None,
    };
    Ok(QueueLimits { concurrency: col(row, 0)?, rate, group_concurrency: col(row, 3)? })
}

/// The limited claim as one statement, for a queue whose limits are
/// concurrency and rate only: `$1` offset, `$2` queue, `$3` worker, `$4` n.
/// It must run after the queue's advisory lock was taken in its
/// transaction, so its snapshot (READ COMMITTED: taken when the statement
/// starts) holds every claim that committed before. The budget is
/// core's `rules::limits::budget` in SQL: `total` the rate's room (every
/// claim, reclaims included), `fresh` the concurrency's room (new starts);
/// no limits row (cleared meanwhile) is no limit. It logs its claims for
/// the rate window and drops the log that left it. A queue with a group
/// limit gets one row of NULLs and nothing is claimed: the multi-statement
/// [`claim`] serves it.
///
/// Its fresh claims take the queue's free slots (`slots.rs`), lowest first:
/// the concurrency's room is at most the slots below the limit that no
/// processing row holds, so there are always enough (none, for a queue
/// without a concurrency limit). A reclaimed lapsed lease keeps its slot.
fn flight_sql(s: &str) -> String {
    let update = claim_update(s, ", slot = CASE WHEN picked.fresh THEN picked.k ELSE j.slot END");
    let nulls = super::claim::null_row();
    format!(
        "{NOW}, \
         h AS MATERIALIZED (SELECT {HIRES} AS at), \
         l AS MATERIALIZED (SELECT concurrency, rate_count, rate_period_s, group_concurrency \
           FROM {s}.limits WHERE queue = $2::text), \
         b AS MATERIALIZED (SELECT CASE WHEN EXISTS (SELECT 1 FROM l WHERE group_concurrency IS NOT NULL) THEN 0 \
           ELSE greatest(0, least($4::bigint, coalesce((SELECT l.rate_count - (SELECT coalesce(sum(r.n), 0) \
             FROM {s}.rate_log r WHERE r.queue = $2::text AND r.at > (SELECT at FROM h) - l.rate_period_s) \
             FROM l WHERE l.rate_count IS NOT NULL), $4::bigint))) END AS total), \
         f AS MATERIALIZED (SELECT greatest(0, least((SELECT total FROM b), coalesce((SELECT l.concurrency \
           - (SELECT count(*) FROM {s}.jobs WHERE queue = $2::text AND state = 'processing') \
           FROM l WHERE l.concurrency IS NOT NULL), $4::bigint))) AS fresh), \
         chosen AS MATERIALIZED ( \
           SELECT id, fresh, CASE WHEN fresh THEN row_number() OVER (PARTITION BY fresh \
             ORDER BY priority DESC, run_at, id) END AS rn FROM ( \
             SELECT id, priority, run_at, false AS fresh FROM {s}.jobs \
             WHERE queue = $2::text AND state = 'processing' AND deadline < (SELECT t FROM n) \
               AND attempts < max_attempts AND (expires_at IS NULL OR expires_at > (SELECT t FROM n)) \
             UNION ALL \
             (SELECT id, priority, run_at, true FROM {s}.jobs \
              WHERE queue = $2::text AND state = 'pending' AND run_at <= (SELECT t FROM n) \
                AND (expires_at IS NULL OR expires_at > (SELECT t FROM n)) \
              ORDER BY priority DESC, run_at, id LIMIT (SELECT fresh FROM f))) u \
           ORDER BY priority DESC, run_at, id LIMIT (SELECT total FROM b)), \
         free AS MATERIALIZED (SELECT k, row_number() OVER (ORDER BY k) AS rn FROM ( \
           SELECT k FROM (SELECT generate_series(0, l.concurrency - 1) AS k FROM l \
             WHERE l.concurrency IS NOT NULL) g \
           WHERE k NOT IN (SELECT slot FROM {s}.jobs WHERE queue = $2::text AND state = 'processing' \
             AND slot IS NOT NULL) \
           LIMIT (SELECT count(*) FROM chosen WHERE fresh)) x), \
         picked AS (SELECT c.id, c.fresh, free.k FROM chosen c LEFT JOIN free ON c.fresh AND free.rn = c.rn), \
         claimed AS ({update}), \
         logged AS ( \
           INSERT INTO {s}.rate_log (queue, at, n) \
           SELECT $2::text, (SELECT at FROM h), count(*) FROM claimed \
           HAVING count(*) > 0 AND EXISTS (SELECT 1 FROM l WHERE rate_count IS NOT NULL)), \
         pruned AS ( \
           DELETE FROM {s}.rate_log WHERE queue = $2::text \
             AND at <= (SELECT at FROM h) - (SELECT rate_period_s FROM l)) \
         SELECT * FROM claimed \
         UNION ALL SELECT {nulls} WHERE EXISTS (SELECT 1 FROM l WHERE group_concurrency IS NOT NULL)"
    )
}

/// The limited claim of a queue without a group limit in one round trip,
/// pipelined on one connection: the ack of `done` (a Worker's finished job,
/// whose slot the claim may then take) as its own autocommit statement,
/// then BEGIN, asynchronous commit for this transaction, the queue's
/// advisory lock, exhausted leases to dead, the claim ([`flight_sql`]) and
/// COMMIT. Returns the acked count and the jobs, or None for a queue with a
/// group limit (nothing was claimed; [`claim`] serves it).
///
/// Asynchronous commit: the advisory lock is held until COMMIT returns, and
/// a synchronous COMMIT waits for its WAL flush, so every claim of the queue
/// would wait for the one before it to reach the disk (measured: 0.48× the
/// unlimited drain with 8 workers). A claim lost to a server crash puts its
/// job back to pending, as if never claimed, and its holder's ack then
/// fails; the job runs again, which at-least-once allows after a fault.
/// Anything durable that follows the claim (the ack of its job) flushes the
/// WAL up to it first. The ack itself stays a synchronous commit of its own.
pub(crate) fn claim_flight(
    engine: &PgEngine,
    done: Option<&Claimed>,
    queue: &str,
    worker: &str,
    n: usize,
) -> Result<(usize, Option<Vec<Claimed>>)> {
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    engine.run(None, async |cx| {
        // Prepared (or found in the connection's cache) first: a prepare
        // waits for its reply, and COMMIT must not overtake the statements.
        for text in [&cx.sql.handle.ack_one, &cx.sql.limits.lock, &cx.sql.limits.exhaust, &cx.sql.limits.flight] {
            cx.ready(text).await?;
        }
        let lock_params: [&dyn crate::prep::Arg; 1] = [&queue];
        let exhaust_params: [&dyn crate::prep::Arg; 2] = [&cx.offset, &queue];
        let flight_params: [&dyn crate::prep::Arg; 4] = [&cx.offset, &queue, &worker, &n];
        let acked = async {
            match done {
                Some(job) => super::handle::ack(cx, &[job]).await,
                None => Ok(0),
            }
        };
        let (acked, begin, lock, exhaust, rows, commit) = tokio::join!(
            acked,
            cx.client.batch_execute("BEGIN; SET LOCAL synchronous_commit = off"),
            cx.query_one(&cx.sql.limits.lock, &lock_params),
            cx.execute(&cx.sql.limits.exhaust, &exhaust_params),
            cx.query(&cx.sql.limits.flight, &flight_params),
            cx.client.batch_execute("COMMIT"),
        );
        // An ack that failed is the error to report, even if the claim after it
        // landed: those jobs come back when their leases lapse (at-least-once).
        let acked = acked?;
        let claimed = (|| {
            begin.map_err(|e| crate::error::pg_error(&e))?;
            lock?;
            exhaust?;
            let rows = rows?;
            commit.map_err(|e| crate::error::pg_error(&e))?;
            if super::claim::is_marker(&rows) {
                return Ok(None);
            }
            Ok(Some(rows.iter().map(claimed).collect::<Result<Vec<_>>>()?))
        })();
        match claimed {
            Ok(jobs) => Ok((acked, jobs)),
            // The ack landed on its own: report it; the next claim meets the error again.
            Err(_) if done.is_some() => Ok((acked, Some(Vec::new()))),
            Err(e) => Err(e),
        }
    })
}

/// The claim of a limited queue in its own transaction; None when the queue
/// has no limits after all (cleared since the plain claim looked).
pub(crate) fn claim(engine: &PgEngine, queue: &str, worker: &str, n: usize) -> Result<Option<Vec<Claimed>>> {
    let mut tx = engine.begin()?;
    let result = engine.run(Some(tx.as_mut()), async |cx| claim_in(cx, queue, worker, n).await);
    match result {
        Ok(found) => tx.commit().map(|()| found),
        Err(e) => {
            // The original error is the one to report.
            let _ = tx.rollback();
            Err(e)
        }
    }
}

async fn claim_in(cx: &Ctx<'_>, queue: &str, worker: &str, n: usize) -> Result<Option<Vec<Claimed>>> {
    cx.query_one(&cx.sql.limits.lock, &[&queue]).await?;
    cx.execute(&cx.sql.limits.exhaust, &[&cx.offset, &queue]).await?;
    let Some(row) = cx.query(&cx.sql.limits.counts, &[&cx.offset, &queue]).await?.into_iter().next() else {
        return Ok(None);
    };
    let limits = limits_of(&row)?;
    let (running, hires, recent): (i64, f64, i64) = (col(&row, 4)?, col(&row, 5)?, col(&row, 6)?);
    let b = budget(&limits, n, running, recent);
    let mut got: Vec<Claimed> = Vec::new();
    let mut scan = first_scan(&limits, n, b.fresh);
    while got.len() < b.total {
        let (total, fresh) = (b.total - got.len(), b.fresh.saturating_sub(got.len()));
        let (t, f) = (i64::try_from(total).unwrap_or(i64::MAX), i64::try_from(fresh).unwrap_or(i64::MAX));
        let rows = cx
            .query(&cx.sql.limits.claim, &[&cx.offset, &queue, &worker, &t, &f, &scan, &limits.group_concurrency])
            .await?;
        let enough = rows.len() >= total.min(fresh);
        got.extend(rows.iter().map(claimed).collect::<Result<Vec<_>>>()?);
        // Too few for the groups' room: look further only when the scan may have
        // stopped short of rows whose group has room (it looked at all it asked for).
        if enough || fresh == 0 || limits.group_concurrency.is_none() || scan >= 1_000_000_000 {
            break;
        }
        let ready: i64 = col(&cx.query_one(&cx.sql.limits.ready_beyond, &[&queue, &(scan + 1)]).await?, 0)?;
        if ready <= scan {
            break;
        }
        scan = scan.saturating_mul(10);
    }
    if let Some((_, period)) = limits.rate {
        let k = i64::try_from(got.len()).unwrap_or(i64::MAX);
        cx.execute(&cx.sql.limits.log, &[&queue, &hires, &k, &(hires - period)]).await?;
    }
    Ok(Some(got))
}

impl LimitOps for PgEngine {
    fn set_limits(&self, queue: &str, l: &QueueLimits) -> Result<()> {
        self.run(None, async |cx| {
            if !l.any() {
                return cx.query_one(&cx.sql.limits.clear, &[&queue]).await.map(drop);
            }
            let (count, period) = l.rate.map_or((None, None), |(c, p)| (Some(c), Some(p)));
            cx.query_one(&cx.sql.limits.set, &[&queue, &l.concurrency, &count, &period, &l.group_concurrency])
                .await
                .map(drop)
        })
    }

    fn limits(&self, queue: &str) -> Result<QueueLimits> {
        self.run(None, async |cx| match cx.query(&cx.sql.limits.get, &[&queue]).await?.first() {
            Some(r) => limits_of(r),
            None => Ok(QueueLimits::default()),
        })
    }
}
