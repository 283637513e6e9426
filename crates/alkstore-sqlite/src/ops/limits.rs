//! Flow control (SPEC §24, ADR 0028): a row of `__alkstore_limits` per
//! limited queue, and the claim of such a queue.
//!
//! The one-statement claim ([`super::claim::CLAIM_READY`]) probes the limits
//! table. It claims from a limited queue only when concurrency is the
//! queue's one limit and has room for the whole batch (it counts and claims
//! in that one statement); otherwise it claims nothing, and [`claim`] here runs in
//! one `BEGIN IMMEDIATE` transaction, which SQLite's single writer already
//! serialises against every other claim, ack and enqueue of the file, so the
//! counts it reads are the counts it writes against:
//! 1. exhausted lapsed leases to dead (they free their slots);
//! 2. count the queue's processing rows and the claims in the rate window,
//!    and let core budget the claim ([`alkstore_core::rules::limits::budget`]);
//! 3. one `UPDATE … RETURNING` over the lapsed leases (a reclaim keeps its
//!    slot) and the first ready rows whose group has room, at most the budget;
//! 4. log the claims for the rate window and drop what fell out of it.
//!
//! A slot is never freed here: a job frees it by leaving `processing`,
//! through a fenced handle op or a sweep (see `rules::limits`).

use alkstore_core::rules::limits::{budget, first_scan, rate_slot, QueueLimits};
use alkstore_core::{Claimed, LimitOps, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::conn::{atomic, now, Scope};
use crate::engine::SqliteEngine;
use crate::error::DbResult;

/// `?1`'s limits.
pub(crate) const GET: &str =
    "SELECT concurrency, rate_count, rate_period_s, group_concurrency FROM __alkstore_limits WHERE queue = ?1";

/// Stores `?1`'s limits.
pub(crate) const SET: &str = "INSERT INTO __alkstore_limits (queue, concurrency, rate_count, rate_period_s, \
group_concurrency) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (queue) DO UPDATE SET concurrency = excluded.concurrency, \
rate_count = excluded.rate_count, rate_period_s = excluded.rate_period_s, group_concurrency = excluded.group_concurrency";

/// Clears `?1`'s limits.
pub(crate) const CLEAR: &str = "DELETE FROM __alkstore_limits WHERE queue = ?1";

/// The clock with sub-second precision (the rate window), `?1` the offset.
pub(crate) const HIRES_NOW: &str = "SELECT unixepoch('subsec') + ?1";

/// `?1`'s processing rows, lapsed leases included: a range of the live index's processing run.
pub(crate) const RUNNING: &str = "SELECT count(*) FROM __alkstore_jobs WHERE queue = ?1 AND state = 'processing'";

/// Claims of `?1` inside the window that started at `?2`.
pub(crate) const RECENT: &str = "SELECT coalesce(sum(n), 0) FROM __alkstore_rate_log WHERE queue = ?1 AND at > ?2";

/// Logs `?3` claims of `?1` at `?2`.
pub(crate) const LOG: &str = "INSERT INTO __alkstore_rate_log (queue, at, n) VALUES (?1, ?2, ?3)";

/// Adds `?3` claims to `?1`'s log row at `?2` (its slice, see
/// [`alkstore_core::rules::limits::rate_slot`]), if there is one.
pub(crate) const LOG_ADD: &str = "UPDATE __alkstore_rate_log SET n = n + ?3 WHERE queue = ?1 AND at = ?2";

/// Drops `?1`'s claims that left the window starting at `?2`.
pub(crate) const PRUNE: &str = "DELETE FROM __alkstore_rate_log WHERE queue = ?1 AND at <= ?2";

/// When `?1`'s rate window next opens (its oldest logged claim leaves it),
/// Unix seconds to the sub-second, as the claim compares them; `?2` hires
/// now. Not rounded to a whole second: a window of a fractional period
/// opens between two, and a waiter told the next whole second slept
/// through it (issue 43).
pub(crate) const RATE_WAKE: &str = "SELECT min(l.at) + m.rate_period_s FROM __alkstore_rate_log l \
JOIN __alkstore_limits m ON m.queue = l.queue WHERE l.queue = ?1 AND m.rate_count IS NOT NULL \
AND l.at > ?2 - m.rate_period_s";

/// Whether the first `?3` ready rows of `?1` at `?2` are all there are (a
/// limited claim that found too few looks further only when they are not).
pub(crate) const READY_BEYOND: &str = concat!(
    "SELECT count(*) FROM (SELECT 1 FROM __alkstore_jobs INDEXED BY __alkstore_jobs_ready WHERE queue = ?1 AND ",
    pending_run!(),
    " AND run_at <= ?2 LIMIT ?3 + 1)"
);

/// The limited claim: the best `?4` (total budget) of every lapsed lease
/// with an attempt left and the best `?5` (fresh budget) ready rows among
/// the first `?6` whose group
/// has room under `?7` (group_concurrency, NULL: none): a row is the `nth`
/// of its group among the candidates, and `nth` plus the group's processing
/// rows must stay within the limit. `?1` queue, `?2` worker, `?3` now. A
/// reclaimed lease records that it lapsed (`reclaim_error!`).
///
/// Each LIMIT is `0 + ?n`, not a bare `?n`, and the ready scan's queue is
/// `CAST(?1 AS TEXT)` (as in the fast path's scan): SQLite's planner reads a bare bound LIMIT, and the bare queue
/// parameter of the scan under the window function, and such a statement
/// is expired whenever its bindings change or are cleared (rusqlite's cache
/// clears them), so it was parsed again on every call (measured: most of a
/// limited claim). An expression is evaluated at run time instead; the plan
/// is the same (`plans.rs` checks both).
pub(crate) const CLAIM: &str = concat!(
    "\
UPDATE __alkstore_jobs SET state = 'processing', attempts = attempts + 1, \
claim_token = claim_token + 1, worker_id = ?2, claimed_at = ?3, deadline = ?3 + visibility_timeout_s, ",
    reclaim_error!(),
    " WHERE id IN (\
SELECT id FROM (\
SELECT id, priority, run_at FROM __alkstore_jobs \
WHERE queue = ?1 AND state = 'processing' AND deadline < ?3 AND attempts < max_attempts \
AND (expires_at IS NULL OR expires_at > ?3) \
UNION ALL \
SELECT id, priority, run_at FROM (\
SELECT c.id, c.priority, c.run_at FROM (\
SELECT id, priority, run_at, group_key, \
row_number() OVER (PARTITION BY group_key ORDER BY priority DESC, run_at, id) AS nth FROM (\
SELECT id, priority, run_at, group_key FROM __alkstore_jobs INDEXED BY __alkstore_jobs_ready \
WHERE queue = CAST(?1 AS TEXT) AND ",
    pending_run!(),
    " AND run_at <= ?3 AND (expires_at IS NULL OR expires_at > ?3) \
ORDER BY priority DESC, run_at, id LIMIT 0 + ?6)) c \
WHERE ?7 IS NULL OR c.group_key IS NULL OR c.nth + (SELECT count(*) FROM __alkstore_jobs p \
INDEXED BY __alkstore_jobs_group_running WHERE p.queue = ?1 AND p.group_key = c.group_key \
AND p.state = 'processing') <= ?7 \
ORDER BY c.priority DESC, c.run_at, c.id LIMIT 0 + ?5)) \
ORDER BY priority DESC, run_at, id LIMIT 0 + ?4) \
AND NOT EXISTS (SELECT 1 FROM __alkstore_paused WHERE queue = ?1)",
    " RETURNING id, queue, payload, attempts, max_attempts, priority, worker_id, claim_token, \
     enqueued_at, run_at, claimed_at, deadline, expires_at, visibility_timeout_s, backoff_base_s"
);

pub(crate) fn get(conn: &Connection, queue: &str) -> Result<Option<QueueLimits>> {
    conn.prepare_cached(GET)
        .and_then(|mut s| {
            s.query_row([queue], |r| {
                let rate = match (r.get::<_, Option<i64>>(1)?, r.get::<_, Option<f64>>(2)?) {
                    (Some(c), Some(p)) => Some((c, p)),
                    _ => None,
                };
                Ok(QueueLimits { concurrency: r.get(0)?, rate, group_concurrency: r.get(3)? })
            })
            .optional()
        })
        .db()
}

/// The clock with sub-second precision (to the millisecond), offset included.
pub(crate) fn hires_now(conn: &Connection, offset: i64) -> Result<f64> {
    conn.prepare_cached(HIRES_NOW).and_then(|mut s| s.query_row([offset], |r| r.get(0))).db()
}

fn count(conn: &Connection, sql: &str, p: impl rusqlite::Params) -> Result<i64> {
    conn.prepare_cached(sql).and_then(|mut s| s.query_row(p, |r| r.get(0))).db()
}

/// The claim of a limited queue, in its own write transaction. None when
/// the queue has no limits after all (cleared since the fast path looked).
pub(crate) fn claim(
    conn: &Connection,
    offset: i64,
    queue: &str,
    worker: &str,
    n: usize,
) -> Result<Option<Vec<Claimed>>> {
    atomic(conn, Scope::Own, |c| {
        let Some(limits) = get(c, queue)? else { return Ok(None) };
        let now = now(c, offset)?;
        super::claim::exhaust_or_skip(c, queue, now)?;
        let running = if limits.concurrency.is_some() { count(c, RUNNING, [queue])? } else { 0 };
        let (hires, recent) = match limits.rate {
            Some((_, period)) => {
                let t = hires_now(c, offset)?;
                (t, count(c, RECENT, params![queue, t - period])?)
            }
            None => (0.0, 0),
        };
        let b = budget(&limits, n, running, recent);
        let mut claimed: Vec<Claimed> = Vec::new();
        let mut scan = first_scan(&limits, n, b.fresh);
        while claimed.len() < b.total {
            let (total, fresh) = (b.total - claimed.len(), b.fresh.saturating_sub(claimed.len()));
            let got = super::claim::run(
                c,
                CLAIM,
                params![queue, worker, now, total as i64, fresh as i64, scan, limits.group_concurrency],
                total,
            )?;
            let enough = got.len() >= total.min(fresh);
            claimed.extend(got);
            // Too few for the groups' room: look further only when the scan
            // stopped short of the ready rows.
            if enough
                || fresh == 0
                || limits.group_concurrency.is_none()
                || count(c, READY_BEYOND, params![queue, now, scan])? <= scan
            {
                break;
            }
            scan = scan.saturating_mul(10);
        }
        if let Some((_, period)) = limits.rate {
            if !claimed.is_empty() {
                // One row per slice of the window, so the sum above reads a
                // bounded number of rows however fast the queue is claimed.
                let slot = rate_slot(hires, period);
                let k = claimed.len() as i64;
                let added = c.prepare_cached(LOG_ADD).and_then(|mut s| s.execute(params![queue, slot, k])).db()?;
                if added == 0 {
                    c.prepare_cached(LOG).and_then(|mut s| s.execute(params![queue, slot, k])).db()?;
                }
            }
            c.prepare_cached(PRUNE).and_then(|mut s| s.execute(params![queue, hires - period])).db()?;
        }
        Ok(Some(claimed))
    })
}

/// When `queue`'s rate window next opens, seen at hires `now` (None: no
/// rate, or nothing logged).
pub(crate) fn rate_wake(conn: &Connection, now: f64, queue: &str) -> Result<Option<f64>> {
    conn.prepare_cached(RATE_WAKE).and_then(|mut s| s.query_row(params![queue, now], |r| r.get(0))).db()
}

impl LimitOps for SqliteEngine {
    fn set_limits(&self, queue: &str, l: &QueueLimits) -> Result<()> {
        self.write(None, |c, _| {
            if !l.any() {
                return c.prepare_cached(CLEAR).and_then(|mut s| s.execute([queue])).db().map(drop);
            }
            let (count, period) = l.rate.map_or((None, None), |(c, p)| (Some(c), Some(p)));
            c.prepare_cached(SET)
                .and_then(|mut s| s.execute(params![queue, l.concurrency, count, period, l.group_concurrency]))
                .db()
                .map(drop)
        })
    }

    fn limits(&self, queue: &str) -> Result<QueueLimits> {
        self.read(None, |c| get(c, queue).map(Option::unwrap_or_default))
    }
}
