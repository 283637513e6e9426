//! What a claim's holder does with it (SPEC §4.3): ack, retry, fail,
//! heartbeat, release.
//!
//! Every op is one statement guarded by the validity predicate (processing,
//! same worker, same claim token, lease not lapsed), so a stale or lapsed
//! handle changes nothing and the op reports `false`. Moves to dead are a
//! single `DELETE … RETURNING` feeding an `INSERT`: atomic on their own and
//! inside a caller's transaction alike, so no savepoint is needed.

use alkstore_core::{Claimed, HandleOps, Result, Tx};

use super::{into_dead, DEAD_SELECT, DEAD_VALUES};
use crate::conn::{Ctx, NOW};
use crate::engine::PgEngine;
use crate::rows::col;

/// The validity predicate of every handle op (SPEC §4.3): `$2` id, `$3`
/// worker, `$4` claim token.
const VALID: &str = "id = $2::bigint AND state = 'processing' AND worker_id = $3::text \
                     AND claim_token = $4::bigint AND deadline >= (SELECT t FROM n)";

/// A job that does not keep its result: the plain ack deletes only such
/// rows. A parent's children are settled by migration 0012's trigger, whose
/// `WHEN has_children` a plain job fails, so a plain ack never reads the
/// edges, except a parent's one child, which the ack itself counts down
/// (migrations 0016 and 0017); a job keeping its result goes on to the
/// workflow ack ([`super::workflows`]).
const PLAIN: &str = "keep_result_s IS NULL";

/// The handle statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// One handle deleted.
    pub(crate) ack_one: String,
    /// One handle given a result deleted, a plain job's only (no children
    /// to need the result, no `keep_result`): the result is dropped.
    pub(crate) ack_drop_result: String,
    /// Many handles deleted from parallel arrays.
    pub(crate) ack_many: String,
    /// Back to pending at `now + $5`, `last_error = $6`.
    pub(crate) retry: String,
    /// Move a valid handle's row to dead with `last_error = $5`.
    pub(crate) fail: String,
    /// `deadline := now + $5`, returning it.
    pub(crate) heartbeat: String,
    /// Back to pending now, attempt refunded.
    pub(crate) release: String,
}

impl Sql {
    /// For the quoted schema `s`, and the store's notification `channel`.
    pub(crate) fn new(s: &str, channel: &str) -> Self {
        let notify = format!("pg_notify('{channel}', queue)");
        let freed = super::slot_freed(s, channel, "queue");
        let into_dead = into_dead(s);
        // A deleted row's sole child (migration 0016) counted down, and
        // released and woken at zero, by migration 0017's function: the
        // trigger leaves these parents to the ack, so every statement that
        // acks must carry this. Evaluated for each deleted row; a plain job
        // (no sole child) calls nothing.
        let sole = format!("CASE WHEN sole_child IS NOT NULL THEN {s}.sole_acked(sole_child) END");
        Sql {
            ack_one: format!("{NOW} DELETE FROM {s}.jobs WHERE {VALID} AND {PLAIN} RETURNING {freed}, {sole}"),
            ack_drop_result: format!(
                "{NOW} DELETE FROM {s}.jobs WHERE {VALID} AND {PLAIN} AND NOT has_children RETURNING {freed}"
            ),
            // Duplicate handles in one batch join the same row; DELETE counts it once.
            ack_many: format!(
                "{NOW} DELETE FROM {s}.jobs j \
                 USING unnest($2::bigint[], $3::text[], $4::bigint[]) AS h(id, worker_id, claim_token) \
                 WHERE j.id = h.id AND j.state = 'processing' AND j.worker_id = h.worker_id \
                   AND j.claim_token = h.claim_token AND j.deadline >= (SELECT t FROM n) \
                   AND j.keep_result_s IS NULL \
                 RETURNING j.id, {freed}, {sole}"
            ),
            // A pending job holds no lease (SPEC §4.4): worker_id and deadline
            // are cleared, claimed_at stays as the last claim's time, and the
            // claim token alone fences off the old handle. `$6` is its last
            // error (SPEC §30). Only a retry that
            // is ready at once wakes waiters; a delayed one is found through
            // next_wake.
            retry: format!(
                "{NOW} UPDATE {s}.jobs SET state = 'pending', run_at = (SELECT t FROM n) + $5::bigint, \
                 worker_id = NULL, deadline = NULL, last_error = $6::text WHERE {VALID} \
                 RETURNING CASE WHEN $5::bigint <= 0 THEN {notify}::text ELSE {freed} END"
            ),
            // One statement: the DELETE and the INSERT commit together, also
            // inside a caller's transaction, so no savepoint is needed.
            fail: format!(
                "{NOW}, moved AS (DELETE FROM {s}.jobs WHERE {VALID} RETURNING *), \
                 buried AS ({into_dead} SELECT {DEAD_SELECT}, $5::text, {DEAD_VALUES} FROM moved) \
                 SELECT {freed} FROM moved"
            ),
            heartbeat: format!(
                "{NOW} UPDATE {s}.jobs SET deadline = (SELECT t FROM n) + $5::bigint WHERE {VALID} RETURNING deadline"
            ),
            // Cleared like a retry's; the claim token is not refunded. `$5` the
            // delay (0 for `release`, the seconds of a `snooze`).
            release: format!(
                "{NOW} UPDATE {s}.jobs SET state = 'pending', run_at = (SELECT t FROM n) + $5::bigint, attempts = attempts - 1, \
                 worker_id = NULL, deadline = NULL WHERE {VALID} RETURNING {notify}"
            ),
        }
    }
}

/// Deletes every valid plain handle in one statement; each handle it left
/// (invalid, or in a workflow) goes on to the workflow ack, one statement
/// each. Returns how many landed.
pub(crate) async fn ack(cx: &Ctx<'_>, jobs: &[&Claimed]) -> Result<usize> {
    if let [job] = jobs {
        if ack_plain(cx, &cx.sql.handle.ack_one, job).await? {
            return Ok(1);
        }
        return Ok(usize::from(super::workflows::ack_flow(cx, job, None).await?));
    }
    let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
    let workers: Vec<&str> = jobs.iter().map(|j| j.worker_id.as_str()).collect();
    let tokens: Vec<i64> = jobs.iter().map(|j| j.claim_token).collect();
    let rows = cx.query(&cx.sql.handle.ack_many, &[&cx.offset, &ids, &workers, &tokens]).await?;
    let deleted = rows.iter().map(|r| col::<i64>(r, 0)).collect::<Result<std::collections::HashSet<_>>>()?;
    let mut landed = deleted.len();
    let mut tried = std::collections::HashSet::new();
    for job in jobs.iter().filter(|j| !deleted.contains(&j.id)) {
        if tried.insert(job.id) && super::workflows::ack_flow(cx, job, None).await? {
            landed += 1;
        }
    }
    Ok(landed)
}

/// The plain ack of one handle (`sql`: `ack_one`, or `ack_drop_result`):
/// true when it deleted the row.
pub(crate) async fn ack_plain(cx: &Ctx<'_>, sql: &str, job: &Claimed) -> Result<bool> {
    let n = cx.execute(sql, &[&cx.offset, &job.id, &job.worker_id, &job.claim_token]).await?;
    Ok(n > 0)
}

/// Back to pending after `delay` seconds with `error` as its last error
/// (resolved by the Store, which sends a spent budget to [`fail`] instead).
pub(crate) async fn retry(cx: &Ctx<'_>, job: &Claimed, delay: i64, error: &str) -> Result<bool> {
    let n = cx
        .execute(&cx.sql.handle.retry, &[&cx.offset, &job.id, &job.worker_id, &job.claim_token, &delay, &error])
        .await?;
    Ok(n > 0)
}

/// Straight to dead with `error`.
pub(crate) async fn fail(cx: &Ctx<'_>, job: &Claimed, error: &str) -> Result<bool> {
    let n = cx.execute(&cx.sql.handle.fail, &[&cx.offset, &job.id, &job.worker_id, &job.claim_token, &error]).await?;
    Ok(n > 0)
}

/// `deadline := now + extend_s`; the new deadline, or None when refused.
pub(crate) async fn heartbeat(cx: &Ctx<'_>, job: &Claimed, extend_s: i64) -> Result<Option<i64>> {
    let rows =
        cx.query(&cx.sql.handle.heartbeat, &[&cx.offset, &job.id, &job.worker_id, &job.claim_token, &extend_s]).await?;
    rows.first().map(|r| col(r, 0)).transpose()
}

/// Back to pending now with the attempt refunded (the claim token is not).
pub(crate) async fn release(cx: &Ctx<'_>, job: &Claimed, delay_s: i64) -> Result<bool> {
    let n =
        cx.execute(&cx.sql.handle.release, &[&cx.offset, &job.id, &job.worker_id, &job.claim_token, &delay_s]).await?;
    Ok(n > 0)
}

impl HandleOps for PgEngine {
    fn ack(&self, tx: Option<&mut dyn Tx>, jobs: &[&Claimed]) -> Result<usize> {
        self.run(tx, async |cx| ack(cx, jobs).await)
    }

    fn retry(&self, tx: Option<&mut dyn Tx>, job: &Claimed, delay_s: i64, error: &str) -> Result<bool> {
        self.run(tx, async |cx| retry(cx, job, delay_s, error).await)
    }

    fn fail(&self, tx: Option<&mut dyn Tx>, job: &Claimed, error: &str) -> Result<bool> {
        self.run(tx, async |cx| fail(cx, job, error).await)
    }

    fn heartbeat(&self, job: &Claimed, extend_s: i64) -> Result<Option<i64>> {
        self.run(None, async |cx| heartbeat(cx, job, extend_s).await)
    }

    fn release(&self, job: &Claimed, delay_s: i64) -> Result<bool> {
        self.run(None, async |cx| release(cx, job, delay_s).await)
    }
}
