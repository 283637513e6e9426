//! Workflows (SPEC §25, ADR 0029): the check of a child's parents at
//! enqueue (migration 0013's trigger links it), the ack of a job with
//! children or a kept result, the relink of a redriven child, and the reads
//! of results and edges.
//!
//! What happens to the children when a parent leaves the live table — the
//! release at an ack, the failure at a death or a cancel — is migration
//! 0012's triggers: they fire on every path that removes a row, so no death
//! path (the claim's exhaustion step among them) needs a statement of its
//! own. A delete that is not a move to dead and not a cancel (which marks
//! its row 'cancelled' first) is an ack. A processing parent with one child
//! (`sole_child`, migration 0016) has a trigger of its own, which counts
//! that child down by key, or, when the child's parents are a run of ids
//! (migration 0019), probes the run and writes the child only once none is
//! left; a move to dead clears `sole_child` first.

use alkstore_core::rules::workflows::{highest_parent, never_issued};
use alkstore_core::{Claimed, JobEdges, JobResult, NewJob, Result, Tx, WorkflowOps};
use rusqlite::{params, Connection, OptionalExtension};

use crate::conn::{atomic, now, Scope};
use crate::engine::SqliteEngine;
use crate::error::DbResult;

/// The highest id this store has issued: the live table's highest or the
/// high-water mark of ids that left it (migration 0001), whichever is higher.
pub(crate) const ISSUED: &str =
    "SELECT max(coalesce((SELECT max(id) FROM __alkstore_jobs), 0), (SELECT hwm FROM __alkstore_ids))";

/// The result `?5` of a valid handle's job (`?1`–`?4` as the handle ops'
/// predicate), kept for its `keep_result_s`, or while any child names the
/// job: a waiting one, or a dead one that a redrive may run later (a parent
/// redriven and acked before its dead child, the order docs/workflows.md
/// gives, must leave its result for the child). The edges go when the child
/// leaves for good, and the result with them. A parent acked without a
/// result keeps no row for its children (they read None either way), so a
/// fan-in of N parents writes none.
pub(crate) const KEEP_RESULT: &str = "INSERT INTO __alkstore_results (id, queue, value, finished_at, expires_at) \
     SELECT id, queue, ?5, unixepoch() + ?4, unixepoch() + ?4 + keep_result_s FROM __alkstore_jobs \
     WHERE id = ?1 AND state = 'processing' AND worker_id = ?2 AND claim_token = ?3 \
       AND deadline >= unixepoch() + ?4 \
       AND (keep_result_s IS NOT NULL OR (?5 IS NOT NULL AND EXISTS \
         (SELECT 1 FROM __alkstore_edges WHERE parent_id = ?1))) \
     ON CONFLICT (id) DO UPDATE SET queue = excluded.queue, value = excluded.value, \
     finished_at = excluded.finished_at, expires_at = excluded.expires_at";

/// A redriven child's edges, `?1` the moved ids (JSON): a parent still live
/// or dead is unsettled again (the child waits for its ack), an acked one
/// stays settled.
pub(crate) const RELINK_EDGES: &str = "UPDATE __alkstore_edges SET settled = \
     NOT (EXISTS (SELECT 1 FROM __alkstore_jobs j WHERE j.id = parent_id) \
       OR EXISTS (SELECT 1 FROM __alkstore_dead d WHERE d.id = parent_id)) \
     WHERE child_id IN (SELECT value FROM json_each(?1))";

/// Their live parents count them again, through the general path: a parent
/// with a sole child (migration 0016) has another now.
pub(crate) const RELINK_PARENTS: &str = "UPDATE __alkstore_jobs SET has_children = 1, sole_child = NULL \
     WHERE id IN (SELECT parent_id FROM __alkstore_edges WHERE settled = 0 \
       AND child_id IN (SELECT value FROM json_each(?1))) AND (has_children = 0 OR sole_child IS NOT NULL)";

/// And their dead parents will, when they are redriven (its row comes back
/// with this flag) or purged (the purge fails them, migration 0012): a parent
/// dead before the child was linked never had the flag set.
pub(crate) const RELINK_DEAD_PARENTS: &str = "UPDATE __alkstore_dead SET has_children = 1 \
     WHERE id IN (SELECT parent_id FROM __alkstore_edges WHERE settled = 0 \
       AND child_id IN (SELECT value FROM json_each(?1))) AND has_children = 0";

/// And the redriven children count their unsettled parents: pending at zero.
pub(crate) const RELINK_CHILDREN: &str = "UPDATE __alkstore_jobs SET \
     parents_left = (SELECT count(*) FROM __alkstore_edges e WHERE e.child_id = __alkstore_jobs.id AND e.settled = 0), \
     state = CASE WHEN EXISTS (SELECT 1 FROM __alkstore_edges e WHERE e.child_id = __alkstore_jobs.id AND e.settled = 0) \
       THEN 'waiting' ELSE 'pending' END \
     WHERE id IN (SELECT value FROM json_each(?1)) AND parents_left IS NOT NULL";

/// `store.result(id)`: `?1` id, `?2` now. A kept result, else a dead row's error.
pub(crate) const RESULT: &str = "SELECT 'done', value, NULL, finished_at FROM __alkstore_results \
     WHERE id = ?1 AND (expires_at IS NULL OR expires_at > ?2) \
     UNION ALL SELECT 'dead', NULL, last_error, died_at FROM __alkstore_dead WHERE id = ?1 LIMIT 1";

/// The results of child `?1`'s parents, in id order.
pub(crate) const PARENT_RESULTS: &str = "SELECT e.parent_id, r.value, r.finished_at, d.last_error, d.died_at \
     FROM __alkstore_edges e LEFT JOIN __alkstore_results r ON r.id = e.parent_id \
     LEFT JOIN __alkstore_dead d ON d.id = e.parent_id WHERE e.child_id = ?1 ORDER BY e.parent_id";

/// Job `?1`'s parents.
pub(crate) const PARENTS: &str = "SELECT parent_id FROM __alkstore_edges WHERE child_id = ?1 ORDER BY parent_id";
/// Job `?1`'s children.
pub(crate) const CHILDREN: &str = "SELECT child_id FROM __alkstore_edges WHERE parent_id = ?1 ORDER BY child_id";

/// Results of `?1` past their keep at `?2`, unless a child still names the job.
pub(crate) const PURGE_RESULTS: &str = "DELETE FROM __alkstore_results WHERE queue = ?1 AND expires_at <= ?2 \
     AND NOT EXISTS (SELECT 1 FROM __alkstore_edges e WHERE e.parent_id = __alkstore_results.id)";

/// Refuses parent ids above the highest ever issued, before any write.
pub(crate) fn check_issued(conn: &Connection, jobs: &[NewJob]) -> Result<()> {
    let Some(highest) = highest_parent(jobs) else { return Ok(()) };
    let issued: i64 = conn.prepare_cached(ISSUED).and_then(|mut s| s.query_row([], |r| r.get(0))).db()?;
    if highest > issued {
        let first = jobs.iter().flat_map(|j| j.after.iter()).copied().filter(|id| *id > issued).min();
        return Err(never_issued(first.unwrap_or(highest)));
    }
    Ok(())
}

/// The ack of a valid handle keeping its result where it is needed
/// ([`KEEP_RESULT`]), then the row's delete (the triggers settle its
/// children); false when the handle is not valid. Inside the caller's
/// transaction or the ack's own.
pub(crate) fn ack_flow(
    conn: &Connection,
    scope: Scope,
    offset: i64,
    job: &Claimed,
    result: Option<&str>,
) -> Result<bool> {
    atomic(conn, scope, |c| {
        let p = params![job.id, job.worker_id, job.claim_token, offset];
        c.prepare_cached(KEEP_RESULT)
            .and_then(|mut s| s.execute(params![job.id, job.worker_id, job.claim_token, offset, result]))
            .db()?;
        let n = c.prepare_cached(super::handle::ACK_ANY).and_then(|mut s| s.execute(p)).db()?;
        Ok(n == 1)
    })
}

/// Redriven children wait again for their parents that are not acked.
pub(crate) fn relink(conn: &Connection, moved: &[i64]) -> Result<()> {
    let ids = serde_json::to_string(moved).unwrap_or_else(|_| "[]".into());
    for sql in [RELINK_EDGES, RELINK_PARENTS, RELINK_DEAD_PARENTS, RELINK_CHILDREN] {
        conn.prepare_cached(sql).and_then(|mut s| s.execute([&ids])).db()?;
    }
    Ok(())
}

/// A result row as the reads return it: `done` with a value, or `dead` with an error.
fn outcome(
    value: Option<String>,
    finished: Option<i64>,
    error: Option<String>,
    died: Option<i64>,
) -> Option<JobResult> {
    match (finished, died) {
        (Some(at), _) => Some(JobResult { state: "done".into(), value, error: None, finished_at: at }),
        (None, Some(at)) => Some(JobResult { state: "dead".into(), value: None, error, finished_at: at }),
        _ => None,
    }
}

fn result(conn: &Connection, offset: i64, id: i64) -> Result<Option<JobResult>> {
    let now = now(conn, offset)?;
    conn.prepare_cached(RESULT)
        .and_then(|mut s| {
            s.query_row(params![id, now], |r| {
                Ok(JobResult { state: r.get(0)?, value: r.get(1)?, error: r.get(2)?, finished_at: r.get(3)? })
            })
            .optional()
        })
        .db()
}

fn parent_results(conn: &Connection, id: i64) -> Result<Vec<(i64, Option<JobResult>)>> {
    let mut stmt = conn.prepare_cached(PARENT_RESULTS).db()?;
    let rows = stmt.query_map([id], |r| Ok((r.get(0)?, outcome(r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))).db()?;
    rows.collect::<rusqlite::Result<Vec<_>>>().db()
}

fn ids(conn: &Connection, sql: &str, id: i64) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached(sql).db()?;
    let rows = stmt.query_map([id], |r| r.get(0)).db()?;
    rows.collect::<rusqlite::Result<Vec<i64>>>().db()
}

impl WorkflowOps for SqliteEngine {
    fn ack_result(&self, tx: Option<&mut dyn Tx>, job: &Claimed, result: &str) -> Result<bool> {
        let offset = self.offset();
        self.write(tx, |c, scope| {
            if super::handle::ack_plain(c, super::handle::ACK_DROP_RESULT, offset, job)? {
                return Ok(true);
            }
            ack_flow(c, scope, offset, job, Some(result))
        })
    }

    /// The ack with its result and the claim's fast path in one write
    /// transaction, as `ack_then_claim`: one write lock and one WAL commit.
    fn ack_result_then_claim(
        &self,
        done: &Claimed,
        result: &str,
        queue: &str,
        worker_id: &str,
        n: usize,
    ) -> Result<(bool, Vec<Claimed>)> {
        let offset = self.offset();
        self.conns.with_writer(|c| {
            atomic(c, Scope::Own, |c| {
                let landed = super::handle::ack_plain(c, super::handle::ACK_DROP_RESULT, offset, done)?
                    || ack_flow(c, Scope::Caller, offset, done, Some(result))?;
                Ok((landed, super::claim::claim_ready(c, offset, queue, worker_id, n)?))
            })
        })
    }

    fn result(&self, id: i64) -> Result<Option<JobResult>> {
        let offset = self.offset();
        self.conns.with_reader(|c| result(c, offset, id))
    }

    fn parent_results(&self, tx: Option<&mut dyn Tx>, id: i64) -> Result<Vec<(i64, Option<JobResult>)>> {
        self.read(tx, |c| parent_results(c, id))
    }

    fn job_edges(&self, id: i64) -> Result<JobEdges> {
        self.conns.with_reader(|c| Ok(JobEdges { parents: ids(c, PARENTS, id)?, children: ids(c, CHILDREN, id)? }))
    }
}
