//! Dead letters back to work or gone (SPEC §18): `requeue_dead` and
//! `purge_dead`. Both pick the queue's dead rows by id order (oldest job
//! first, a walk of `__alkstore_dead_queue`), among `ids` when given (`?2`,
//! a JSON array, or NULL), dead for at least `?4` seconds when given.

use alkstore_core::{DeadPick, RedriveOps, Result, Tx};
use rusqlite::{params, Connection};

use crate::conn::{atomic, now};
use crate::engine::SqliteEngine;
use crate::error::DbResult;

/// The pick: `?1` queue, `?2` ids (JSON) or NULL, `?3` now, `?4` age or NULL, `?5` limit.
macro_rules! picked {
    () => {
        "FROM __alkstore_dead WHERE queue = ?1 AND (?2 IS NULL OR id IN (SELECT value FROM json_each(?2))) \
         AND (?4 IS NULL OR died_at <= ?3 - ?4) ORDER BY id LIMIT ?5"
    };
}

/// The picked rows back into the live table: same id, payload and stamps
/// (the claim token too, so a handle from before its death stays fenced),
/// attempts 0, ready at `?3`. A key that is live again conflicts and the
/// row stays dead; RETURNING lists the rows that moved.
pub(crate) const REQUEUE: &str = concat!(
    "INSERT INTO __alkstore_jobs (id, queue, state, payload, priority, attempts, max_attempts, claim_token, \
     visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at, unique_key, group_key, \
     parents_left, on_failure, keep_result_s, has_children) \
     SELECT id, queue, 'pending', payload, priority, 0, max_attempts, claim_token, visibility_timeout_s, \
     backoff_base_s, dead_retention_s, enqueued_at, ?3, expires_at, unique_key, group_key, \
     parents_left, on_failure, keep_result_s, has_children ",
    picked!(),
    " ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING RETURNING id"
);

/// The moved rows leave dead storage: `?1` their ids as a JSON array.
pub(crate) const REQUEUE_DELETE: &str = "DELETE FROM __alkstore_dead WHERE id IN (SELECT value FROM json_each(?1))";

/// Deletes the picked rows.
pub(crate) const PURGE: &str = concat!("DELETE FROM __alkstore_dead WHERE id IN (SELECT id ", picked!(), ")");

/// The ids of a pick as the JSON array `?2` takes.
fn ids_json(ids: Option<&[i64]>) -> Option<String> {
    ids.map(|ids| serde_json::to_string(ids).unwrap_or_else(|_| "[]".into()))
}

fn requeue(c: &Connection, offset: i64, queue: &str, pick: &DeadPick<'_>) -> Result<Vec<i64>> {
    let now = now(c, offset)?;
    let limit = pick.limit as i64;
    let mut moved: Vec<i64> = {
        let mut stmt = c.prepare_cached(REQUEUE).db()?;
        let rows =
            stmt.query_map(params![queue, ids_json(pick.ids), now, pick.older_than_s, limit], |r| r.get(0)).db()?;
        rows.collect::<rusqlite::Result<_>>().db()?
    };
    if !moved.is_empty() {
        let ids = serde_json::to_string(&moved).unwrap_or_else(|_| "[]".into());
        c.prepare_cached(REQUEUE_DELETE).and_then(|mut s| s.execute([&ids])).db()?;
        // A redriven child waits again for its parents that are not acked (SPEC §25).
        super::workflows::relink(c, &moved)?;
    }
    moved.sort_unstable();
    Ok(moved)
}

impl RedriveOps for SqliteEngine {
    fn requeue_dead(&self, tx: Option<&mut dyn Tx>, queue: &str, pick: &DeadPick<'_>) -> Result<Vec<i64>> {
        let offset = self.offset();
        self.write(tx, |c, scope| atomic(c, scope, |c| requeue(c, offset, queue, pick)))
    }

    fn purge_dead(&self, tx: Option<&mut dyn Tx>, queue: &str, pick: &DeadPick<'_>) -> Result<i64> {
        let offset = self.offset();
        let limit = pick.limit as i64;
        let n = self.write(tx, |c, _| {
            let now = now(c, offset)?;
            c.prepare_cached(PURGE)
                .and_then(|mut s| s.execute(params![queue, ids_json(pick.ids), now, pick.older_than_s, limit]))
                .db()
        })?;
        Ok(n as i64)
    }
}
