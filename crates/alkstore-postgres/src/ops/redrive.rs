//! Dead letters back to work or gone (SPEC §18): `requeue_dead` and
//! `purge_dead`, one statement each. Both pick the queue's dead rows in id
//! order (oldest job first, a walk of `dead_queue`), among `$3` ids when
//! given, dead for at least `$4` seconds when given, at most `$5`.

use alkstore_core::{DeadPick, RedriveOps, Result, Tx};

use crate::conn::{Ctx, NOW};
use crate::engine::PgEngine;
use crate::rows::col;

/// The redrive statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// The picked rows back to pending, ready now: same id, payload and
    /// stamps (the claim token too, so a handle from before the death stays
    /// fenced), attempts 0. A key that is live again conflicts and the row
    /// stays dead. Returns the ids moved and wakes the queue's claimers.
    pub(crate) requeue: String,
    /// Deletes the picked rows.
    pub(crate) purge: String,
}

impl Sql {
    /// For the quoted schema `s`, and the store's notification `channel`.
    pub(crate) fn new(s: &str, channel: &str) -> Self {
        let picked = format!(
            "SELECT id FROM {s}.dead WHERE queue = $2::text AND ($3::bigint[] IS NULL OR id = ANY($3::bigint[])) \
             AND ($4::bigint IS NULL OR died_at <= (SELECT t FROM n) - $4::bigint) ORDER BY id LIMIT $5::bigint"
        );
        Sql {
            requeue: format!(
                "{NOW}, picked AS ( \
                   SELECT * FROM {s}.dead WHERE id = ANY(ARRAY({picked})) FOR UPDATE), \
                 moved AS ( \
                   INSERT INTO {s}.jobs (id, queue, state, payload, priority, attempts, max_attempts, claim_token, \
                     visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at, unique_key, group_key, \
                     parents_left, on_failure, keep_result_s, has_children) \
                   OVERRIDING SYSTEM VALUE \
                   SELECT id, queue, 'pending', payload, priority, 0, max_attempts, claim_token, visibility_timeout_s, \
                     backoff_base_s, dead_retention_s, enqueued_at, (SELECT t FROM n), expires_at, unique_key, group_key, \
                     parents_left, on_failure, keep_result_s, has_children \
                   FROM picked ORDER BY id \
                   ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING \
                   RETURNING id, queue), \
                 gone AS (DELETE FROM {s}.dead WHERE id IN (SELECT id FROM moved)) \
                 SELECT id, pg_notify('{channel}', queue)::text FROM moved"
            ),
            purge: format!("{NOW} DELETE FROM {s}.dead WHERE id = ANY(ARRAY({picked}))"),
        }
    }
}

/// The pick's values after the clock offset: `$2` queue, `$3` ids, `$4` age, `$5` limit.
async fn requeue(cx: &Ctx<'_>, queue: &str, pick: &DeadPick<'_>) -> Result<Vec<i64>> {
    let ids: Option<Vec<i64>> = pick.ids.map(<[i64]>::to_vec);
    let limit = pick.limit as i64;
    let rows = cx.query(&cx.sql.redrive.requeue, &[&cx.offset, &queue, &ids, &pick.older_than_s, &limit]).await?;
    let mut moved = rows.iter().map(|r| col::<i64>(r, 0)).collect::<Result<Vec<_>>>()?;
    moved.sort_unstable();
    if !moved.is_empty() {
        // A redriven child waits again for its parents that are not acked (SPEC §25).
        super::workflows::relink(cx, &moved).await?;
    }
    Ok(moved)
}

async fn purge(cx: &Ctx<'_>, queue: &str, pick: &DeadPick<'_>) -> Result<i64> {
    let ids: Option<Vec<i64>> = pick.ids.map(<[i64]>::to_vec);
    let limit = pick.limit as i64;
    let n = cx.execute(&cx.sql.redrive.purge, &[&cx.offset, &queue, &ids, &pick.older_than_s, &limit]).await?;
    Ok(i64::try_from(n).unwrap_or(i64::MAX))
}

impl RedriveOps for PgEngine {
    fn requeue_dead(&self, tx: Option<&mut dyn Tx>, queue: &str, pick: &DeadPick<'_>) -> Result<Vec<i64>> {
        self.run_atomic(tx, async |cx| requeue(cx, queue, pick).await)
    }

    fn purge_dead(&self, tx: Option<&mut dyn Tx>, queue: &str, pick: &DeadPick<'_>) -> Result<i64> {
        self.run(tx, async |cx| purge(cx, queue, pick).await)
    }
}
