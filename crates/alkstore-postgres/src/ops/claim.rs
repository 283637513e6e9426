//! The claim (SPEC §4.2, ADR 0001): one statement, one round trip.
//!
//! The statement first moves exhausted lapsed rows to dead
//! ('attempts exhausted', or 'expired' when also past their expiry), then claims up to `n` rows from the union of the
//! first `n` ready rows and the first `n` lapsed leases, both locked with
//! `FOR UPDATE SKIP LOCKED` so concurrent claimers never wait on each other
//! and never receive the same (job, attempt).

use std::time::{Duration, Instant};

use alkstore_core::{ClaimOps, Claimed, Result};

use super::slots::SlotClaim;
use super::{BURIED, RECLAIM_ERROR};
use crate::conn::{Ctx, NOW};
use crate::engine::PgEngine;
use crate::error::pg_error;
use crate::rows::claimed;

/// What every claim hands out (the limited and slot claims too), in the
/// order [`crate::rows::claimed`] reads it.
pub(crate) const CLAIMED_COLS: &str = "j.id, j.queue, j.payload, j.attempts, j.max_attempts, j.priority, j.worker_id, \
                            j.claim_token, j.enqueued_at, j.run_at, j.claimed_at, j.deadline, j.expires_at, \
                            j.visibility_timeout_s, j.backoff_base_s";

/// A row of NULLs as wide as [`CLAIMED_COLS`]: the claims' "not here" marker.
pub(crate) fn null_row() -> String {
    vec!["NULL"; CLAIMED_COLS.split(',').count()].join(", ")
}

/// Whether a claim's rows are its marker row (a NULL id) rather than jobs.
pub(crate) fn is_marker(rows: &[tokio_postgres::Row]) -> bool {
    rows.first().is_some_and(|r| matches!(r.try_get::<_, Option<i64>>(0), Ok(None)))
}

/// Whether queue `$2` has a lapsed lease at `n.t`: the probe that sends a
/// one-job claim to the full claim, and lets a slot claim take a slot with
/// nothing ready (its reclaim or burial needs one). By `jobs_leased`.
pub(crate) fn lapsed_lease(s: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM {s}.jobs WHERE queue = $2::text AND state = 'processing' \
           AND deadline < (SELECT t FROM n))"
    )
}

/// The claim statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// The claim of one job while the queue has no lapsed lease and no
    /// limits ([`fast_sql`]); otherwise it declines and `one` runs.
    pub(crate) fast: String,
    /// The claim of one job, its bound a literal: with `LIMIT $4` the
    /// planner assumes a large limit for the generic plan, keeps choosing a
    /// custom plan, and re-plans this big statement on every call.
    pub(crate) one: String,
    /// The claim of up to `$4` jobs (planned per call; the cost is shared
    /// by the batch).
    pub(crate) many: String,
}

impl Sql {
    /// For the quoted schema `s`.
    pub(crate) fn new(s: &str) -> Self {
        Sql { fast: fast_sql(s), one: claim_sql(s, "1"), many: claim_sql(s, "$4::bigint") }
    }
}

/// The claim (ADR 0001) with `limit` as its row bound: `$1` offset, `$2`
/// queue, `$3` worker, and `$4` the bound when `limit` is `$4::bigint`.
///
/// The exhaustion step and the claim are one statement, hence one
/// transaction and one round trip. An exhausted row that is also past its
/// expiry dies as 'expired', the reason a sweep at the same instant gives. Their row sets are disjoint (budget
/// spent, budget left, or pending), so the CTEs never touch a row twice.
/// SKIP LOCKED on both candidate scans: a row another claimer holds is
/// someone else's, never waited for.
///
/// Lapsed leases are taken in claim order, not deadline order, as the
/// SQLite engine does: any lapsed lease may outrank the others by priority.
/// That sorts every lapsed lease of the queue (a cost that grows with the
/// lapsed leases, never with the backlog), but only the `limit` rows the
/// sort yields are locked.
///
/// The exhaustion step is `bury_step`: gated, so that a claim that finds
/// nothing exhausted never calls it, and in a subtransaction of its own, so
/// that a burial that fails does not fail the claim (see there).
///
/// A paused queue (SPEC §18) hands out nothing: both candidate scans carry
/// an uncorrelated probe of `paused`'s primary key, which Postgres runs once,
/// before the scan, and which skips the scan (and its row locks) entirely
/// while the queue is paused. The exhaustion step still runs.
///
/// A limited queue (SPEC §24) is the limited claim's (`limits.rs`): the same
/// probe of `limits` skips both scans, and the statement then returns one
/// row of NULLs, which tells the caller to take the limited claim without
/// another round trip.
///
/// A reclaimed lease records that it lapsed ([`RECLAIM_ERROR`]); a ready
/// row's `last_error` is written back as it was, which costs the claim
/// nothing it did not pay already (the UPDATE writes a whole new row
/// version either way).
fn claim_sql(s: &str, limit: &str) -> String {
    let bury = super::bury_step(s);
    let not_paused = format!(
        "AND NOT EXISTS (SELECT 1 FROM {s}.paused WHERE queue = $2::text) \
         AND NOT EXISTS (SELECT 1 FROM {s}.limits WHERE queue = $2::text)"
    );
    let nulls = null_row();
    format!(
        "{NOW}, \
                 {bury}, \
                 ready AS ( \
                   SELECT id, priority, run_at FROM {s}.jobs \
                   WHERE queue = $2::text AND state = 'pending' AND run_at <= (SELECT t FROM n) \
                     AND (expires_at IS NULL OR expires_at > (SELECT t FROM n)) {not_paused} \
                   ORDER BY priority DESC, run_at, id LIMIT {limit} \
                   FOR UPDATE SKIP LOCKED), \
                 lapsed AS ( \
                   SELECT id, priority, run_at FROM {s}.jobs \
                   WHERE queue = $2::text AND state = 'processing' AND deadline < (SELECT t FROM n) \
                     AND attempts < max_attempts \
                     AND (expires_at IS NULL OR expires_at > (SELECT t FROM n)) {not_paused} \
                   ORDER BY priority DESC, run_at, id LIMIT {limit} \
                   FOR UPDATE SKIP LOCKED), \
                 picked AS ( \
                   SELECT id FROM (SELECT * FROM ready UNION ALL SELECT * FROM lapsed) c \
                   ORDER BY priority DESC, run_at, id LIMIT {limit}), \
                 claimed AS ( \
                   UPDATE {s}.jobs j SET state = 'processing', attempts = j.attempts + 1, \
                     claim_token = j.claim_token + 1, worker_id = $3::text, claimed_at = (SELECT t FROM n), \
                     deadline = (SELECT t FROM n) + j.visibility_timeout_s, {RECLAIM_ERROR} \
                   FROM picked WHERE j.id = picked.id AND {BURIED} \
                   RETURNING {CLAIMED_COLS}) \
                 SELECT * FROM claimed \
                 UNION ALL SELECT {nulls} WHERE EXISTS (SELECT 1 FROM {s}.limits WHERE queue = $2::text)"
    )
}

/// The claim of one job as most claims find their queue: no lease lapsed,
/// no limits. `$1` offset, `$2` queue, `$3` worker. The floor's shape (one
/// `UPDATE … WHERE id = (the first ready row, SKIP LOCKED)`) plus three
/// primary-key or index probes: the full statement's exhaustion, lapsed
/// and union steps cost more to start and run than the claim itself (its
/// execution 0.22 ms against 0.14 ms for this one, on a 3,000-job drain).
/// When the queue has a lapsed lease (to reclaim or bury, which may outrank
/// every ready row) or limits, it claims nothing and returns one row whose
/// id is NULL: the caller runs the full claim. Both look at one snapshot, so
/// what this one claims is what the full statement would have claimed.
/// A paused queue claims nothing here and, with no lapsed lease, has
/// nothing for the full statement to do either.
fn fast_sql(s: &str) -> String {
    let nulls = null_row();
    let lapsed = lapsed_lease(s);
    format!(
        "{NOW}, \
         g AS MATERIALIZED (SELECT {lapsed} \
           OR EXISTS (SELECT 1 FROM {s}.limits WHERE queue = $2::text) AS other), \
         claimed AS ( \
           UPDATE {s}.jobs j SET state = 'processing', attempts = j.attempts + 1, \
             claim_token = j.claim_token + 1, worker_id = $3::text, claimed_at = (SELECT t FROM n), \
             deadline = (SELECT t FROM n) + j.visibility_timeout_s \
           WHERE j.id = (SELECT id FROM {s}.jobs \
             WHERE queue = $2::text AND state = 'pending' AND run_at <= (SELECT t FROM n) \
               AND (expires_at IS NULL OR expires_at > (SELECT t FROM n)) \
               AND NOT (SELECT other FROM g) \
               AND NOT EXISTS (SELECT 1 FROM {s}.paused WHERE queue = $2::text) \
             ORDER BY priority DESC, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) \
           RETURNING {CLAIMED_COLS}) \
         SELECT * FROM claimed UNION ALL SELECT {nulls} FROM g WHERE g.other"
    )
}

/// What the one-statement claim found: jobs, or a limited queue.
pub(crate) enum Found {
    /// The jobs it claimed (none: nothing claimable).
    Jobs(Vec<Claimed>),
    /// The queue has limits: the limited claim is the one to run.
    Limited,
}

/// Claims up to `n` jobs of `queue` for `worker_id`, in RETURNING order:
/// the Store sorts them into claim order. One job is tried by the fast
/// statement first; when it declines, the full one runs on the same
/// connection (inside the caller's transaction, if any).
pub(crate) async fn claim(cx: &Ctx<'_>, queue: &str, worker_id: &str, n: usize) -> Result<Found> {
    if n == 1 {
        if let Some(found) = claim_fast(cx, queue, worker_id).await? {
            return Ok(found);
        }
    }
    claim_full(cx, queue, worker_id, n).await
}

/// The fast claim of one job: `None` when it declined (a lapsed lease or
/// limits), and the full claim must run.
async fn claim_fast(cx: &Ctx<'_>, queue: &str, worker_id: &str) -> Result<Option<Found>> {
    let rows = cx.query(&cx.sql.claim.fast, &[&cx.offset, &queue, &worker_id]).await?;
    if is_marker(&rows) {
        return Ok(None);
    }
    rows.iter().map(claimed).collect::<Result<Vec<_>>>().map(|jobs| Some(Found::Jobs(jobs)))
}

/// The full claim statement (exhaustion, lapsed leases, the limits probe).
async fn claim_full(cx: &Ctx<'_>, queue: &str, worker_id: &str, n: usize) -> Result<Found> {
    let rows = if n == 1 {
        cx.query(&cx.sql.claim.one, &[&cx.offset, &queue, &worker_id]).await?
    } else {
        let limit = i64::try_from(n).unwrap_or(i64::MAX);
        cx.query(&cx.sql.claim.many, &[&cx.offset, &queue, &worker_id, &limit]).await?
    };
    if is_marker(&rows) {
        return Ok(Found::Limited);
    }
    rows.iter().map(claimed).collect::<Result<Vec<_>>>().map(Found::Jobs)
}

/// How long a queue found limited goes straight to the limited claim. A
/// queue whose limits were cleared meanwhile is still claimed correctly
/// there (no limits row: no limit), only behind its advisory lock, until
/// this has passed and the one-statement claim is tried again.
const LIMITED_HINT: Duration = Duration::from_secs(1);

impl PgEngine {
    /// Whether `queue` was found limited lately, and if so whether it was
    /// found not for slots (its claims then go straight to the exclusive claim).
    fn recently_limited(&self, queue: &str) -> Option<bool> {
        let seen = self.limited_seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.get(queue).filter(|(at, _)| at.elapsed() < LIMITED_HINT).map(|&(_, exclusive)| exclusive)
    }

    /// Notes `queue` as limited; `exclusive`: not for slots either.
    fn mark_limited(&self, queue: &str, exclusive: bool) {
        let mut seen = self.limited_seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.insert(queue.to_owned(), (Instant::now(), exclusive));
    }

    /// What a one-statement claim found, as jobs: a queue found limited is
    /// noted and claimed by its limited claim.
    fn claimed_or_limited(&self, found: Found, queue: &str, worker_id: &str, n: usize) -> Result<Vec<Claimed>> {
        match found {
            Found::Jobs(jobs) => Ok(jobs),
            Found::Limited => {
                self.mark_limited(queue, false);
                self.limited_claim(queue, worker_id, n, false)
            }
        }
    }

    /// The claim of a queue known to be limited: the slot claim
    /// (`slots.rs`) unless the queue was lately found not for slots; then
    /// the exclusive claim in one round trip unless it has a group limit;
    /// then the multi-statement claim.
    fn limited_claim(&self, queue: &str, worker_id: &str, n: usize, exclusive: bool) -> Result<Vec<Claimed>> {
        if !exclusive {
            match super::slots::claim(self, None, queue, worker_id, n)?.1 {
                SlotClaim::Jobs(jobs) => return Ok(jobs),
                SlotClaim::Exclusive => self.mark_limited(queue, true),
            }
        }
        if let (_, Some(jobs)) = super::limits::claim_flight(self, None, queue, worker_id, n)? {
            return Ok(jobs);
        }
        match super::limits::claim(self, queue, worker_id, n)? {
            Some(jobs) => Ok(jobs),
            // Its limits were cleared meanwhile: the plain claim again.
            None => match self.run(None, async |cx| claim(cx, queue, worker_id, n).await)? {
                Found::Jobs(jobs) => Ok(jobs),
                Found::Limited => Ok(Vec::new()),
            },
        }
    }
}

impl ClaimOps for PgEngine {
    fn claim(&self, queue: &str, worker_id: &str, n: usize) -> Result<Vec<Claimed>> {
        self.maintain();
        if let Some(exclusive) = self.recently_limited(queue) {
            return self.limited_claim(queue, worker_id, n, exclusive);
        }
        let found = self.run(None, async |cx| claim(cx, queue, worker_id, n).await)?;
        self.claimed_or_limited(found, queue, worker_id, n)
    }

    /// The ack and the full claim in one transaction on one pooled
    /// connection, pipelined: BEGIN, the ack, the claim and COMMIT go out
    /// together, so the pair costs one round trip and one commit (one WAL
    /// flush) where two autocommit statements cost two of each. If the ack
    /// or the claim fails, the transaction is aborted and the COMMIT that
    /// follows rolls it back: nothing lands, and the error is returned.
    fn ack_then_claim(&self, done: &Claimed, queue: &str, worker_id: &str, n: usize) -> Result<(usize, Vec<Claimed>)> {
        self.maintain();
        match self.recently_limited(queue) {
            // One job of the acked job's queue: the ack hands its slot
            // straight to the next (`slots::ack_handover`).
            Some(false) if n == 1 && done.queue == queue => {
                return super::slots::ack_handover(self, done, queue, worker_id);
            }
            // The ack and the slot claim in one round trip; a queue not for
            // slots is left to `claim` (the exclusive claims).
            Some(false) => {
                let (landed, found) = super::slots::claim(self, Some(done), queue, worker_id, n)?;
                return Ok(match found {
                    SlotClaim::Jobs(jobs) => (landed, jobs),
                    SlotClaim::Exclusive => {
                        self.mark_limited(queue, true);
                        (landed, Vec::new())
                    }
                });
            }
            // The ack and the exclusive claim in one round trip; a queue with
            // a group limit is left to `claim` (its multi-statement claim).
            Some(true) => {
                let (landed, jobs) = super::limits::claim_flight(self, Some(done), queue, worker_id, n)?;
                return Ok((landed, jobs.unwrap_or_default()));
            }
            None => {}
        }
        self.pipelined(Done::Plain(done), queue, worker_id, n)
    }
}

/// The finished job of a Worker's ack-and-claim, and how it is acked.
#[derive(Clone, Copy)]
pub(crate) enum Done<'a> {
    /// The plain ack (a job keeping its result goes on to the workflow ack).
    Plain(&'a Claimed),
    /// The workflow ack with the handler's result (JSON text), one statement.
    Result(&'a Claimed, &'a str),
}

impl PgEngine {
    /// The ack of `done` and the plain claim in one transaction on one
    /// pooled connection, pipelined: BEGIN, the ack, the claim and COMMIT go
    /// out together, so the pair costs one round trip and one commit (one
    /// WAL flush) where two autocommit statements cost two of each. If the
    /// ack or the claim fails, the transaction is aborted and the COMMIT that
    /// follows rolls it back: nothing lands, and the error is returned.
    pub(crate) fn pipelined(
        &self,
        done: Done<'_>,
        queue: &str,
        worker_id: &str,
        n: usize,
    ) -> Result<(usize, Vec<Claimed>)> {
        let found = self.run(None, async |cx| {
            // Both statements prepared (or found in the connection's cache)
            // first: a prepare waits for its reply, and COMMIT must not
            // overtake the ack or the claim on the wire.
            let claim_sql = if n == 1 { &cx.sql.claim.fast } else { &cx.sql.claim.many };
            let ack_sql = match done {
                Done::Plain(_) => &cx.sql.handle.ack_one,
                Done::Result(..) => &cx.sql.workflows.ack_flow,
            };
            cx.ready(ack_sql).await?;
            cx.ready(claim_sql).await?;
            let ack = async {
                match done {
                    Done::Plain(job) => super::handle::ack(cx, &[job]).await,
                    Done::Result(job, result) => {
                        super::workflows::ack_flow(cx, job, Some(result)).await.map(usize::from)
                    }
                }
            };
            // One job by the fast claim alone: were it to decline, the full
            // claim would go out after the COMMIT (see below).
            let claim = async {
                if n == 1 {
                    claim_fast(cx, queue, worker_id).await
                } else {
                    claim_full(cx, queue, worker_id, n).await.map(Some)
                }
            };
            let (begin, landed, claimed, commit) =
                tokio::join!(cx.client.batch_execute("BEGIN"), ack, claim, cx.client.batch_execute("COMMIT"),);
            begin.map_err(|e| pg_error(&e))?;
            let (landed, claimed) = (landed?, claimed?);
            commit.map_err(|e| pg_error(&e))?;
            Ok((landed, claimed))
        })?;
        // A limited queue's next job is the Worker's to claim by the limited claim.
        match found {
            (landed, Some(Found::Jobs(jobs))) => Ok((landed, jobs)),
            (landed, Some(Found::Limited)) => {
                self.mark_limited(queue, false);
                Ok((landed, Vec::new()))
            }
            // The fast claim declined (a lapsed lease, or limits): the full
            // claim on its own, after the ack's commit. The ack has landed, so
            // an error here must not read as the ack's: it reads as nothing
            // claimed, and the Worker's next claim meets it.
            (landed, None) => {
                let full = self
                    .run(None, async |cx| claim_full(cx, queue, worker_id, n).await)
                    .and_then(|found| self.claimed_or_limited(found, queue, worker_id, n));
                Ok((landed, full.unwrap_or_default()))
            }
        }
    }

    /// The Worker's ack of `done` keeping `result`, and its claim of the
    /// next: [`Self::pipelined`] with the workflow ack (`ack_flow`, one
    /// statement whatever the job keeps). A queue lately found limited
    /// claims by its limited claim, after the ack.
    pub(crate) fn ack_result_then_claim(
        &self,
        done: &Claimed,
        result: &str,
        queue: &str,
        worker_id: &str,
        n: usize,
    ) -> Result<(bool, Vec<Claimed>)> {
        self.maintain();
        if self.recently_limited(queue).is_some() {
            let landed = alkstore_core::WorkflowOps::ack_result(self, None, done, result)?;
            return Ok((landed, ClaimOps::claim(self, queue, worker_id, n)?));
        }
        let (landed, claimed) = self.pipelined(Done::Result(done, result), queue, worker_id, n)?;
        Ok((landed == 1, claimed))
    }
}

#[cfg(test)]
mod tests {
    use crate::ops::Statements;
    use crate::testing::{Fixture, TestResult};

    /// The claim's candidate scans must be the partial indexes, with the
    /// custom plans of the first executions and with the generic plan a
    /// cached statement settles on; never a sequential scan of the jobs.
    #[test]
    fn explain_claim_uses_the_partial_indexes() -> TestResult {
        let Some(fx) = Fixture::new()? else { return Ok(()) };
        fx.fill()?;
        let sql = Statements::new(&fx.schema);
        let fast = fx.plans("bigint, text, text", &sql.claim.fast, "0, 'q3', 'w'")?;
        let one = fx.plans("bigint, text, text", &sql.claim.one, "0, 'q3', 'w'")?;
        let many = fx.plans("bigint, text, text, bigint", &sql.claim.many, "0, 'q3', 'w', 10")?;
        for plan in fast.iter().chain(&one).chain(&many) {
            assert!(plan.contains("Index Scan using jobs_ready"), "{plan}");
            // The lapsed scan is a range of jobs_leased (plain or bitmap), sorted
            // after; the fast claim's probe of it may read the index alone.
            assert!(
                plan.contains("Index Scan using jobs_leased")
                    || plan.contains("Index Scan on jobs_leased")
                    || plan.contains("Index Only Scan using jobs_leased"),
                "{plan}"
            );
            assert!(!plan.contains("Seq Scan on jobs"), "{plan}");
        }
        Ok(())
    }

    /// On a table the planner has no statistics for (autovacuum off, never
    /// analysed), a claim that finds nothing exhausted must not scan
    /// `jobs`: the exhaustion step's probe of its id array was planned as a
    /// sequential scan (at a couple of thousand rows; larger tables get the index), which every claim ran.
    #[test]
    fn a_claim_on_an_unanalysed_table_runs_no_scan_of_jobs() -> TestResult {
        let Some(fx) = Fixture::new()? else { return Ok(()) };
        let s = crate::ops::quote_ident(&fx.schema);
        fx.batch(&format!(
            "INSERT INTO {s}.jobs (queue, state, payload, priority, attempts, max_attempts, claim_token, \
               visibility_timeout_s, backoff_base_s, enqueued_at, run_at) \
             SELECT 'q', 'pending', '{{}}', 0, 0, 3, 0, 30, 5, 0, 0 FROM generate_series(1, 2000)"
        ))?;
        let sql = Statements::new(&fx.schema);
        for (types, statement, args) in [
            ("bigint, text, text", &sql.claim.fast, "0, 'q', 'w'"),
            ("bigint, text, text", &sql.claim.one, "0, 'q', 'w'"),
            ("bigint, text, text, bigint", &sql.claim.many, "0, 'q', 'w', 10"),
        ] {
            fx.batch(&format!("DEALLOCATE ALL; PREPARE p({types}) AS {statement}"))?;
            for mode in ["force_custom_plan", "force_generic_plan"] {
                fx.batch(&format!("SET plan_cache_mode = {mode}"))?;
                let plan =
                    fx.lines(&format!("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE p({args})"))?;
                let ran: Vec<&String> =
                    plan.iter().filter(|l| l.contains("Seq Scan on jobs") && !l.contains("never executed")).collect();
                assert!(ran.is_empty(), "{mode}: a scan of jobs ran:\n{}", plan.join("\n"));
            }
        }
        Ok(())
    }
}
