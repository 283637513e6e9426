//! The claim of a queue whose only limit is `concurrency` (SPEC §24,
//! ADR 0028): numbered slots, each its own advisory lock, so W claimers of
//! a queue limited to W run side by side instead of one at a time behind
//! the queue's lock.
//!
//! A queue limited to W has slots `0..W`. A claimed job of such a queue
//! records its slot (`jobs.slot`), and a slot is taken while a
//! `processing` row holds it: freeing it is whatever moves the row out of
//! `processing` (the fenced ack, fail, cancel, a sweep), as before, with no
//! counter to release twice. One transaction, of one or two round trips:
//! 1. [`Sql::take`]: the queue's advisory lock **shared** (the
//!    multi-statement and rate-limited claims take it exclusively, and
//!    count every processing row, so they never run beside a slot claim),
//!    then `pg_try_advisory_xact_lock` on up to `n` slots that look free,
//!    starting at a place the worker id picks (a Worker tends to take back
//!    the slot its last job freed, so W workers rarely meet). The slots it
//!    got go into a transaction-local setting for step 2. It takes none
//!    when its snapshot has no ready row and no lapsed lease, and step 2
//!    is then not sent (a Worker woken with the other claimers of a job one
//!    of them took pays for this statement alone);
//! 2. [`Sql::claim`], a new statement and so (READ COMMITTED) a new
//!    snapshot, taken after the slot locks: every claim of those slots
//!    committed before is in it. It moves exhausted lapsed leases to dead
//!    (they free their slots), then each held slot that no processing row
//!    holds takes the next ready row, and a held slot whose row's lease
//!    lapsed reclaims that row (a lapsed lease keeps its slot until reclaimed).
//!
//! Hence at most one processing row per slot, and at most W processing
//! rows, as long as every processing row of the queue has a distinct slot
//! below W. Step 2 checks that in its snapshot and otherwise claims nothing
//! and answers "not for slots" (as does a queue whose limits are more than
//! a concurrency): rows claimed before the limit was set or lowered, or by
//! the group or rate claims, which assign no slot. The caller then takes the
//! exclusive claim (`limits.rs`), which counts every processing row and
//! gives its fresh claims free slots, so the queue returns to slots once the
//! slotless rows leave `processing`.

use crate::prep::Arg;
use alkstore_core::{Claimed, Result};

use super::claim::CLAIMED_COLS;
use super::{BURIED, RECLAIM_ERROR};
use crate::conn::NOW;
use crate::engine::PgEngine;
use crate::error::pg_error;
use crate::rows::claimed;

/// The transaction-local setting that carries the held slots from
/// [`Sql::take`] to [`Sql::claim`]: `W:k1,k2,…`, or `-` when the queue is
/// not for slots.
const HELD: &str = "alkstore.held_slots";

/// The slot-claim statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// Locks queue `$2` shared and up to `$4` free-looking slots of it for
    /// worker `$3` (`$1` offset).
    pub(crate) take: String,
    /// Claims for worker `$3` in the held slots of `$2` (`$1` offset).
    pub(crate) claim: String,
    /// Hands the slot the transaction's ack freed to `$2`'s next ready job
    /// for worker `$3` (`$1` offset).
    pub(crate) handover: String,
    /// Wakes the claimers of queue `$1`.
    pub(crate) wake: String,
}

impl Sql {
    /// For the quoted schema `s`, the store's `channel`, the queue-wide lock's key prefix `key`
    /// (the queue's name follows it) and the slots' `slot_key` (slot
    /// number, `:` and the queue's name follow it: digits then the first
    /// `:`, so no two (slot, queue) pairs share a key).
    pub(crate) fn new(s: &str, channel: &str, key: &str, slot_key: &str) -> Self {
        Sql {
            take: take_sql(s, key, slot_key),
            handover: handover_sql(s),
            wake: format!("SELECT pg_notify('{channel}', $1::text)::text"),
            claim: claim_sql(s),
        }
    }
}

/// Step 1. Its second column says whether the snapshot has an exhausted
/// lapsed lease, which step 2 must bury even when no slot was taken (every
/// claim runs the exhaustion step; a limit of 0 has no slot to take).
/// No slot is taken when the snapshot has nothing the claim could
/// take (no ready row, no lapsed lease): the caller then skips step 2 (the
/// ready row is probed in the ready index's order, so by that index). A
/// slot looks free when no live lease of the snapshot holds it
/// (a lapsed one may be reclaimed); the lock is tried only on those, in
/// the order from the worker's start (`CASE` so the probe runs before the
/// lock; the `LIMIT` stops the scan, and so the locking, at `$4` slots;
/// the series is in the select list, so it yields one number at a time
/// where in `FROM` it would be built whole first).
fn take_sql(s: &str, queue_key: &str, key: &str) -> String {
    let lapsed = super::claim::lapsed_lease(s);
    format!(
        "{NOW}, \
         shared AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(hashtextextended('{queue_key}' || $2::text, 0))::text), \
         w AS MATERIALIZED (SELECT concurrency AS w FROM {s}.limits, shared WHERE queue = $2::text \
           AND concurrency IS NOT NULL AND rate_count IS NULL AND group_concurrency IS NULL), \
         live AS MATERIALIZED (SELECT slot FROM {s}.jobs WHERE queue = $2::text AND state = 'processing' \
           AND deadline >= (SELECT t FROM n) AND slot IS NOT NULL), \
         got AS MATERIALIZED (SELECT k FROM ( \
             SELECT (abs(hashtext($3::text)::bigint) + g) % ww AS k \
             FROM (SELECT generate_series(0, w.w - 1) AS g, w.w AS ww FROM w \
               WHERE (SELECT id FROM {s}.jobs WHERE queue = $2::text AND state = 'pending' \
                   AND run_at <= (SELECT t FROM n) ORDER BY priority DESC, run_at, id LIMIT 1) IS NOT NULL \
                 OR {lapsed}) s) c \
           WHERE CASE WHEN c.k NOT IN (SELECT slot FROM live) \
             THEN pg_try_advisory_xact_lock(hashtextextended('{key}' || c.k::text || ':' || $2::text, 0)) \
             ELSE false END \
           LIMIT $4::bigint) \
         SELECT set_config('{HELD}', coalesce((SELECT w::text || ':' || coalesce((SELECT string_agg(k::text, ',') \
           FROM got), '') FROM w), '-'), true), \
           EXISTS (SELECT 1 FROM {s}.jobs WHERE queue = $2::text AND state = 'processing' \
             AND deadline < (SELECT t FROM n) AND attempts >= max_attempts)"
    )
}

/// Step 2: `$1` offset, `$2` queue, `$3` worker. Returns the claimed rows,
/// or one row of NULLs but `queue` = 'exclusive' when the queue is not (or
/// no longer) for slots and nothing was claimed.
fn claim_sql(s: &str) -> String {
    let bury = super::bury_step(s);
    let marker = format!("NULL, 'exclusive', {}", vec!["NULL"; CLAIMED_COLS.split(',').count() - 2].join(", "));
    format!(
        "{NOW}, \
         cfg AS MATERIALIZED (SELECT coalesce(nullif(current_setting('{HELD}', true), ''), '-') AS v), \
         w AS MATERIALIZED (SELECT split_part(v, ':', 1)::bigint AS w FROM cfg WHERE v <> '-'), \
         mine AS MATERIALIZED (SELECT k::bigint AS k FROM cfg, \
           unnest(string_to_array(nullif(split_part(cfg.v, ':', 2), ''), ',')) k WHERE cfg.v <> '-'), \
         {bury}, \
         busy AS MATERIALIZED (SELECT id, slot, deadline, attempts, max_attempts, expires_at FROM {s}.jobs \
           WHERE queue = $2::text AND state = 'processing' \
             AND NOT (deadline < (SELECT t FROM n) AND attempts >= max_attempts)), \
         ok AS MATERIALIZED (SELECT EXISTS (SELECT 1 FROM {s}.limits l, w WHERE l.queue = $2::text \
             AND l.concurrency = w.w AND l.rate_count IS NULL AND l.group_concurrency IS NULL) \
           AND NOT EXISTS (SELECT 1 FROM busy, w WHERE busy.slot IS NULL OR busy.slot < 0 OR busy.slot >= w.w) \
           AND NOT EXISTS (SELECT slot FROM busy GROUP BY slot HAVING count(*) > 1) AS ok), \
         lapsed AS MATERIALIZED (SELECT b.id, b.slot AS k FROM busy b JOIN mine m ON b.slot = m.k \
           WHERE (SELECT ok FROM ok) AND b.deadline < (SELECT t FROM n) AND b.attempts < b.max_attempts \
             AND (b.expires_at IS NULL OR b.expires_at > (SELECT t FROM n))), \
         free AS MATERIALIZED (SELECT k, row_number() OVER (ORDER BY k) AS rn FROM mine m \
           WHERE (SELECT ok FROM ok) AND NOT EXISTS (SELECT 1 FROM busy b WHERE b.slot = m.k)), \
         fresh AS MATERIALIZED (SELECT id, row_number() OVER (ORDER BY priority DESC, run_at, id) AS rn FROM ( \
           SELECT id, priority, run_at FROM {s}.jobs \
           WHERE queue = $2::text AND state = 'pending' AND run_at <= (SELECT t FROM n) \
             AND (expires_at IS NULL OR expires_at > (SELECT t FROM n)) \
           ORDER BY priority DESC, run_at, id LIMIT (SELECT count(*) FROM free) \
           FOR UPDATE SKIP LOCKED) r), \
         picked AS (SELECT id, k FROM lapsed UNION ALL SELECT fresh.id, free.k FROM fresh JOIN free USING (rn)), \
         claimed AS ( \
           UPDATE {s}.jobs j SET state = 'processing', attempts = j.attempts + 1, \
             claim_token = j.claim_token + 1, worker_id = $3::text, claimed_at = (SELECT t FROM n), \
             deadline = (SELECT t FROM n) + j.visibility_timeout_s, slot = picked.k, {RECLAIM_ERROR} \
           FROM picked WHERE j.id = picked.id AND {BURIED} \
             AND (j.state = 'pending' OR (j.state = 'processing' AND j.deadline < (SELECT t FROM n))) \
             AND NOT EXISTS (SELECT 1 FROM {s}.paused WHERE queue = $2::text) \
           RETURNING {CLAIMED_COLS}) \
         SELECT * FROM claimed UNION ALL SELECT {marker} WHERE NOT (SELECT ok FROM ok)"
    )
}

/// The handover: after the Worker's ack freed slot `k` of queue `$2` in
/// this transaction ([`FREED`]), the next ready job of `$2` takes slot `k`
/// at once, with no slot lock. That is safe because a slot only goes from
/// empty to taken under its lock (step 1) and the ack and this claim commit
/// together: no snapshot ever sees slot `k` empty, so no slot claim takes
/// it, and a slot claim that saw the acked job's lease lapsed finds that row
/// gone when it tries to reclaim it. The processing count never grows, but
/// the handover is only made while the queue is still for slots, `k` below
/// its limit and the queue under it (a lowered limit waits for the jobs
/// above it). One ready row, as the plain claim of one job.
fn handover_sql(s: &str) -> String {
    format!(
        "{NOW}, \
         cfg AS MATERIALIZED (SELECT coalesce(current_setting('{FREED}', true), '') AS v), \
         freed AS MATERIALIZED (SELECT nullif(split_part(v, ':', 1), '')::bigint AS k FROM cfg \
           WHERE strpos(v, ':') > 0 AND substr(v, strpos(v, ':') + 1) = $2::text), \
         ok AS MATERIALIZED (SELECT f.k FROM freed f, {s}.limits l \
           WHERE f.k IS NOT NULL AND l.queue = $2::text AND l.rate_count IS NULL \
             AND l.group_concurrency IS NULL AND f.k < l.concurrency \
             AND (SELECT count(*) FROM {s}.jobs WHERE queue = $2::text AND state = 'processing') < l.concurrency), \
         picked AS ( \
           SELECT id FROM {s}.jobs \
           WHERE queue = $2::text AND state = 'pending' AND run_at <= (SELECT t FROM n) \
             AND (expires_at IS NULL OR expires_at > (SELECT t FROM n)) AND EXISTS (SELECT 1 FROM ok) \
           ORDER BY priority DESC, run_at, id LIMIT 1 \
           FOR UPDATE SKIP LOCKED) \
         UPDATE {s}.jobs j SET state = 'processing', attempts = j.attempts + 1, \
           claim_token = j.claim_token + 1, worker_id = $3::text, claimed_at = (SELECT t FROM n), \
           deadline = (SELECT t FROM n) + j.visibility_timeout_s, slot = (SELECT k FROM ok) \
         FROM picked WHERE j.id = picked.id AND j.state = 'pending' \
           AND NOT EXISTS (SELECT 1 FROM {s}.paused WHERE queue = $2::text) \
         RETURNING {CLAIMED_COLS}"
    )
}

/// The Worker's ack of `done` and the claim of one job of `queue` into the
/// slot the ack freed ([`handover_sql`]), in one round trip and one
/// transaction: BEGIN (quiet), the ack, the handover, COMMIT. Returns the
/// acked count and the job, if any. When the ack freed a slot and nothing
/// took it (no ready job, or the queue is no longer for handing over), a
/// notification follows the commit, as an ack outside this would send.
pub(crate) fn ack_handover(
    engine: &PgEngine,
    done: &Claimed,
    queue: &str,
    worker: &str,
) -> Result<(usize, Vec<Claimed>)> {
    engine.run(None, async |cx| {
        let sql = &cx.sql.slots;
        for text in [&cx.sql.handle.ack_one, &sql.handover] {
            cx.ready(text).await?;
        }
        let params: [&dyn Arg; 3] = [&cx.offset, &queue, &worker];
        let done = [done];
        let (begin, acked, rows, commit) = tokio::join!(
            cx.client.batch_execute(BEGIN_QUIET),
            super::handle::ack(cx, &done),
            cx.query(&sql.handover, &params),
            cx.client.batch_execute("COMMIT"),
        );
        begin.map_err(|e| pg_error(&e))?;
        let (acked, rows) = (acked?, rows?);
        commit.map_err(|e| pg_error(&e))?;
        let jobs = rows.iter().map(claimed).collect::<Result<Vec<_>>>()?;
        if acked > 0 && jobs.is_empty() {
            cx.query_one(&sql.wake, &[&done[0].queue]).await?;
        }
        Ok((acked, jobs))
    })
}

/// What a slot claim found.
pub(crate) enum SlotClaim {
    /// The jobs it claimed (none: no free slot or nothing ready).
    Jobs(Vec<Claimed>),
    /// The queue is not for slots now: the exclusive claim is the one to run.
    Exclusive,
}

/// The slot claim in one transaction on one connection: BEGIN, the ack of
/// `done` (a Worker's finished job, whose slot the claim may then take) and
/// [`Sql::take`] pipelined; then, only if it took a slot, [`Sql::claim`]
/// and COMMIT pipelined (else COMMIT alone): a second round trip where there
/// is something to claim, instead of a claim statement where there is not.
/// If any of them fails the transaction rolls back and nothing lands, the
/// ack included, and the error is returned (as the unlimited ack-and-claim).
///
/// With an ack, a synchronous commit (the ack must be durable when this
/// returns); a slot's lock only holds back claimers of that slot, which
/// find another, so waiting for the WAL flush with it held serialises
/// nothing. A claim alone commits asynchronously, as the exclusive claim
/// (`limits::claim_flight` says why that is safe): the ack of its job, a
/// synchronous commit, flushes the WAL up to it anyway.
///
/// The ack does not notify the queue's claimers of the slot it frees
/// (`slot_freed` is quiet in this transaction): the claim that follows takes
/// it. Only when that claim takes nothing (or is of another queue) does a
/// notification follow, after the commit, so a freed slot with a job for it
/// never waits unseen.
pub(crate) fn claim(
    engine: &PgEngine,
    done: Option<&Claimed>,
    queue: &str,
    worker: &str,
    n: usize,
) -> Result<(usize, SlotClaim)> {
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    engine.run(None, async |cx| {
        let sql = &cx.sql.slots;
        // Prepared first: a prepare waits for its reply, and COMMIT must not
        // overtake the statements.
        for text in [&cx.sql.handle.ack_one, &sql.take, &sql.claim] {
            cx.ready(text).await?;
        }
        let take_params: [&dyn Arg; 4] = [&cx.offset, &queue, &worker, &n];
        let claim_params: [&dyn Arg; 3] = [&cx.offset, &queue, &worker];
        let acked = async {
            match done {
                Some(job) => super::handle::ack(cx, &[job]).await,
                None => Ok(0),
            }
        };
        let (begin, acked, take) = tokio::join!(
            cx.client.batch_execute(if done.is_some() { BEGIN_QUIET } else { BEGIN_ASYNC }),
            acked,
            cx.query_one(&sql.take, &take_params),
        );
        let held = (|| {
            begin.map_err(|e| pg_error(&e))?;
            let acked = acked?;
            let take = take?;
            let held: String = take.try_get(0).map_err(|e| pg_error(&e))?;
            let exhausted: bool = take.try_get(1).map_err(|e| pg_error(&e))?;
            Ok((acked, held, exhausted))
        })();
        let (acked, held, exhausted) = match held {
            Ok(held) => held,
            Err(e) => {
                // Nothing lands: the ack rolls back with the rest. The first
                // error is the caller's; a failed ROLLBACK leaves a connection
                // the pool discards.
                let _ = cx.client.batch_execute("ROLLBACK").await;
                return Err(e);
            }
        };
        // Step 2 only for slots taken, or an exhausted lease to bury: with
        // neither (nothing to claim, or every slot busy) it would do nothing,
        // and a queue not for slots goes to the exclusive claim (which buries
        // them itself).
        let found = match held_slots(&held) {
            None => {
                commit(cx).await?;
                SlotClaim::Exclusive
            }
            Some(false) if !exhausted => {
                commit(cx).await?;
                SlotClaim::Jobs(Vec::new())
            }
            Some(_) => {
                let (rows, commit) =
                    tokio::join!(cx.query(&sql.claim, &claim_params), cx.client.batch_execute("COMMIT"));
                let rows = rows?;
                commit.map_err(|e| pg_error(&e))?;
                if super::claim::is_marker(&rows) {
                    SlotClaim::Exclusive
                } else {
                    SlotClaim::Jobs(rows.iter().map(claimed).collect::<Result<Vec<_>>>()?)
                }
            }
        };
        // The freed slot is taken only by a claim of its own queue that got a job.
        let taken = |job: &Claimed| job.queue == queue && matches!(&found, SlotClaim::Jobs(jobs) if !jobs.is_empty());
        if let Some(job) = done.filter(|job| acked > 0 && !taken(job)) {
            cx.query_one(&sql.wake, &[&job.queue]).await?;
        }
        Ok((acked, found))
    })
}

/// What [`Sql::take`] put in [`HELD`]: `None` when the queue is not for
/// slots (`-`), else whether it holds any slot (`W:k1,k2,…`, or `W:`).
fn held_slots(held: &str) -> Option<bool> {
    if held == "-" {
        return None;
    }
    Some(held.split_once(':').is_some_and(|(_, slots)| !slots.is_empty()))
}

/// COMMIT of a slot claim's transaction.
async fn commit(cx: &crate::conn::Ctx<'_>) -> Result<()> {
    cx.client.batch_execute("COMMIT").await.map_err(|e| pg_error(&e))
}

/// The transaction-local setting under which `slot_freed` sends nothing
/// and notes the slot in [`FREED`].
pub(crate) const QUIET: &str = "alkstore.quiet_slots";

/// The transaction-local setting where a quiet `slot_freed` notes the slot
/// it freed and its queue: `k:queue` (`:queue` for a row without a slot).
pub(crate) const FREED: &str = "alkstore.freed_slot";

/// BEGIN, with [`QUIET`] on to the end of the transaction, and the slot
/// statements' generic plans (see [`BEGIN_ASYNC`]).
const BEGIN_QUIET: &str =
    "BEGIN; SET LOCAL alkstore.quiet_slots = 'on'; SET LOCAL plan_cache_mode = force_generic_plan";

/// BEGIN, committing asynchronously (a claim without an ack), with the
/// slot statements' generic plans.
///
/// Generic plans: a slot claim's statements are planned once per connection, not
/// at each bind. Left to itself the server re-plans them for every
/// execution of a connection's first five and then whenever their generic
/// cost looks worse than the custom plans': 0.3-0.4 ms of planning per slot
/// claim (`take` and `claim` together), more than executing them. Their
/// generic plans reach the rows by the same partial indexes as the custom
/// ones (`explain_slot_statements_use_the_partial_indexes` checks both).
const BEGIN_ASYNC: &str = "BEGIN; SET LOCAL synchronous_commit = off; SET LOCAL plan_cache_mode = force_generic_plan";

#[cfg(test)]
mod tests {
    use crate::ops::Statements;
    use crate::testing::{Fixture, TestResult};

    #[test]
    fn held_slots_reads_what_take_set() {
        assert_eq!(super::held_slots("-"), None);
        assert_eq!(super::held_slots("8:"), Some(false));
        assert_eq!(super::held_slots("8:3"), Some(true));
        assert_eq!(super::held_slots("8:3,5"), Some(true));
    }

    /// The take statement locks no slot while the queue holds nothing a
    /// claim could take (the caller then sends no claim statement): none
    /// for an empty queue or a job not yet due; slots for a ready job, and
    /// for a lapsed lease alone (its reclaim, or its burial, needs one).
    #[test]
    fn take_holds_no_slot_without_a_ready_row_or_a_lapsed_lease() -> TestResult {
        let Some(fx) = Fixture::new()? else { return Ok(()) };
        let s = crate::ops::quote_ident(&fx.schema);
        let sql = Statements::new(&fx.schema);
        fx.batch(&format!(
            "INSERT INTO {s}.limits (queue, concurrency) VALUES ('lq', 4); \
             PREPARE take(bigint, text, text, bigint) AS {}",
            sql.slots.take
        ))?;
        let held = || -> Result<Vec<String>, Box<dyn std::error::Error>> {
            fx.batch("BEGIN")?;
            let held = fx.lines("EXECUTE take(0, 'lq', 'w', 2)");
            fx.batch("ROLLBACK")?;
            held
        };
        let job = |id: i64, state: &str, run_at: &str, deadline: &str| {
            fx.batch(&format!(
                "INSERT INTO {s}.jobs (id, queue, state, payload, priority, attempts, max_attempts, claim_token, \
                   visibility_timeout_s, backoff_base_s, enqueued_at, run_at, deadline, slot) OVERRIDING SYSTEM VALUE \
                 VALUES ({id}, 'lq', '{state}', '{{}}', 0, 1, 3, 1, 30, 5, 0, {run_at}, {deadline}, \
                   CASE WHEN '{state}' = 'processing' THEN 0 END)"
            ))
        };
        assert_eq!(held()?, ["4:"], "an empty queue");
        job(1, "pending", "extract(epoch FROM now())::bigint + 3600", "NULL")?;
        assert_eq!(held()?, ["4:"], "a job due in an hour");
        job(2, "processing", "0", "extract(epoch FROM now())::bigint - 60")?;
        let lapsed = held()?;
        assert!(lapsed.len() == 1 && lapsed[0].len() > "4:".len(), "a lapsed lease: {lapsed:?}");
        fx.batch(&format!("DELETE FROM {s}.jobs WHERE id = 2"))?;
        job(3, "pending", "0", "NULL")?;
        let ready = held()?;
        assert!(ready.len() == 1 && ready[0].split(':').nth(1).is_some_and(|k| k.split(',').count() == 2), "{ready:?}");
        Ok(())
    }

    /// Every slot statement reaches the queue's rows through the partial
    /// indexes (ready rows by `jobs_ready`, processing rows by
    /// `jobs_leased`), with custom and generic plans; never a sequential
    /// scan of the jobs.
    #[test]
    fn explain_slot_statements_use_the_partial_indexes() -> TestResult {
        let Some(fx) = Fixture::new()? else { return Ok(()) };
        fx.fill()?;
        let sql = Statements::new(&fx.schema);
        let take = fx.plans("bigint, text, text, bigint", &sql.slots.take, "0, 'q3', 'w', 2")?;
        let claim = fx.plans("bigint, text, text", &sql.slots.claim, "0, 'q3', 'w'")?;
        let handover = fx.plans("bigint, text, text", &sql.slots.handover, "0, 'q3', 'w'")?;
        for plan in take.iter().chain(&claim).chain(&handover) {
            assert!(!plan.contains("Seq Scan on jobs"), "{plan}");
        }
        for plan in claim.iter().chain(&handover) {
            assert!(plan.contains("Index Scan using jobs_ready"), "{plan}");
        }
        for plan in take.iter().chain(&claim) {
            assert!(plan.contains("jobs_leased"), "{plan}");
        }
        Ok(())
    }
}
