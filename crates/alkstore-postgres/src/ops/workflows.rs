//! Workflows (SPEC §25, ADR 0029): linking a child to its parents at
//! enqueue, the ack of a job with children or a kept result, the relink of
//! a redriven child, and the reads of results and edges.
//!
//! What happens to the children when a parent leaves the live table — the
//! release at an ack, the failure at a death or a cancel — is migration
//! 0012's `parent_left` trigger: it fires on every path that removes a row,
//! so no death path (the claim's exhaustion among them) needs a statement
//! of its own. One exception (migration 0016): a parent with one child is
//! acked without it, the ack statement counting the child down itself, and
//! its death is seen by the trigger on the dead row's insert. The link and the workflow ack are 0012's functions
//! `link(...)` and `ack_flow(...)`, so the SQL enqueue function shares the
//! link, and an ack is one statement.

use alkstore_core::rules::workflows::{highest_parent, never_issued};
use alkstore_core::{Claimed, JobEdges, JobResult, NewJob, Result, Tx, WorkflowOps};
use tokio_postgres::Row;

use crate::conn::{Ctx, NOW};
use crate::engine::PgEngine;
use crate::rows::col;

/// The workflow statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// The highest id the identity has handed out (0 before the first).
    pub(crate) issued: String,
    /// `link_all(children, after, on_failure, keep_result_s, now)`.
    pub(crate) link: String,
    /// `ack_flow(id, worker, token, now, result)`: true when it landed.
    pub(crate) ack_flow: String,
    /// A redriven child's edges: unsettled again for parents live or dead.
    pub(crate) relink_edges: String,
    /// Their live parents count them again, through the general path (a
    /// parent with a sole child has another now).
    pub(crate) relink_parents: String,
    /// And their dead parents will, once redriven or purged (a parent dead
    /// before the child was linked never had the flag set).
    pub(crate) relink_dead_parents: String,
    /// The redriven children count their unsettled parents: pending at zero.
    pub(crate) relink_children: String,
    /// A kept result, else a dead row's error.
    pub(crate) result: String,
    /// The results of a child's parents, in id order.
    pub(crate) parent_results: String,
    /// A job's parents.
    pub(crate) parents: String,
    /// A job's children.
    pub(crate) children: String,
    /// Results past their keep, unless a child still names the job.
    pub(crate) purge_results: String,
}

impl Sql {
    /// For the quoted schema `s`.
    pub(crate) fn new(s: &str) -> Self {
        Sql {
            issued: format!("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {s}.jobs_id_seq"),
            link: format!("SELECT {s}.link_all($1::bigint[], $2::bigint[], $3::text, $4::bigint, $5::bigint)"),
            ack_flow: format!(
                "{NOW} SELECT {s}.ack_flow($2::bigint, $3::text, $4::bigint, (SELECT t FROM n), $5::text)"
            ),
            relink_edges: format!(
                "UPDATE {s}.edges SET settled = NOT (EXISTS (SELECT 1 FROM {s}.jobs j WHERE j.id = parent_id) \
                 OR EXISTS (SELECT 1 FROM {s}.dead d WHERE d.id = parent_id)) WHERE child_id = ANY($1::bigint[])"
            ),
            relink_parents: format!(
                "UPDATE {s}.jobs SET has_children = true, sole_child = NULL WHERE id IN (SELECT parent_id \
                 FROM {s}.edges WHERE NOT settled AND child_id = ANY($1::bigint[])) \
                 AND (NOT has_children OR sole_child IS NOT NULL)"
            ),
            relink_dead_parents: format!(
                "UPDATE {s}.dead SET has_children = true WHERE id IN (SELECT parent_id FROM {s}.edges \
                 WHERE NOT settled AND child_id = ANY($1::bigint[])) AND NOT has_children"
            ),
            relink_children: format!(
                "UPDATE {s}.jobs j SET parents_left = c.n, state = CASE WHEN c.n > 0 THEN 'waiting' ELSE 'pending' END \
                 FROM (SELECT u.id, (SELECT count(*) FROM {s}.edges e WHERE e.child_id = u.id AND NOT e.settled) AS n \
                       FROM unnest($1::bigint[]) AS u(id)) c \
                 WHERE j.id = c.id AND j.parents_left IS NOT NULL"
            ),
            result: format!(
                "{NOW} (SELECT 'done', value, NULL::text, finished_at FROM {s}.results \
                 WHERE id = $2::bigint AND (expires_at IS NULL OR expires_at > (SELECT t FROM n)) \
                 UNION ALL SELECT 'dead', NULL, last_error, died_at FROM {s}.dead WHERE id = $2::bigint) LIMIT 1"
            ),
            parent_results: format!(
                "SELECT e.parent_id, r.value, r.finished_at, d.last_error, d.died_at \
                 FROM {s}.edges e LEFT JOIN {s}.results r ON r.id = e.parent_id \
                 LEFT JOIN {s}.dead d ON d.id = e.parent_id WHERE e.child_id = $1::bigint ORDER BY e.parent_id"
            ),
            parents: format!("SELECT parent_id FROM {s}.edges WHERE child_id = $1::bigint ORDER BY parent_id"),
            children: format!("SELECT child_id FROM {s}.edges WHERE parent_id = $1::bigint ORDER BY child_id"),
            purge_results: format!(
                "{NOW} DELETE FROM {s}.results r WHERE queue = $2::text AND expires_at <= (SELECT t FROM n) \
                 AND NOT EXISTS (SELECT 1 FROM {s}.edges e WHERE e.parent_id = r.id)"
            ),
        }
    }
}

/// Refuses parent ids above the highest the identity ever handed out,
/// before any write (so a caller's transaction stays usable).
pub(crate) async fn check_issued(cx: &Ctx<'_>, jobs: &[NewJob]) -> Result<()> {
    let Some(highest) = highest_parent(jobs) else { return Ok(()) };
    let issued: i64 = col(&cx.query_one(&cx.sql.workflows.issued, &[]).await?, 0)?;
    if highest > issued {
        let first = jobs.iter().flat_map(|j| j.after.iter()).copied().filter(|id| *id > issued).min();
        return Err(never_issued(first.unwrap_or(highest)));
    }
    Ok(())
}

/// Links the just-inserted `ids` (of `jobs`, in order) to their parents and
/// stamps their workflow columns (inside the enqueue's transaction), at the
/// clock `now`: one call per run of jobs with the same parents and options.
pub(crate) async fn link(cx: &Ctx<'_>, ids: &[i64], jobs: &[NewJob], now: i64) -> Result<()> {
    let key = |j: &NewJob| (j.after.clone(), j.on_failure, j.keep_result_s);
    let mut i = 0;
    while i < jobs.len() {
        if !jobs[i].in_workflow() {
            i += 1;
            continue;
        }
        let k = key(&jobs[i]);
        let run = jobs[i..].iter().take_while(|j| j.in_workflow() && key(j) == k).count();
        let children = ids[i..i + run].to_vec();
        let job = &jobs[i];
        let (after, mode) =
            if job.after.is_empty() { (None, None) } else { (Some(&job.after), Some(job.on_failure.as_str())) };
        cx.query(&cx.sql.workflows.link, &[&children, &after, &mode, &job.keep_result_s, &now]).await?;
        i += run;
    }
    Ok(())
}

/// The workflow ack of one handle (see [`Sql::ack_flow`]).
pub(crate) async fn ack_flow(cx: &Ctx<'_>, job: &Claimed, result: Option<&str>) -> Result<bool> {
    let row = cx
        .query_one(&cx.sql.workflows.ack_flow, &[&cx.offset, &job.id, &job.worker_id, &job.claim_token, &result])
        .await?;
    col(&row, 0)
}

/// Redriven children wait again for their parents that are not acked.
pub(crate) async fn relink(cx: &Ctx<'_>, moved: &[i64]) -> Result<()> {
    let ids = moved.to_vec();
    let w = &cx.sql.workflows;
    for sql in [&w.relink_edges, &w.relink_parents, &w.relink_dead_parents, &w.relink_children] {
        cx.execute(sql, &[&ids]).await?;
    }
    Ok(())
}

/// A parent's outcome from [`Sql::parent_results`]' row.
fn outcome(r: &Row) -> Result<Option<JobResult>> {
    let (finished, died): (Option<i64>, Option<i64>) = (col(r, 2)?, col(r, 4)?);
    Ok(match (finished, died) {
        (Some(at), _) => Some(JobResult { state: "done".into(), value: col(r, 1)?, error: None, finished_at: at }),
        (None, Some(at)) => Some(JobResult { state: "dead".into(), value: None, error: col(r, 3)?, finished_at: at }),
        _ => None,
    })
}

async fn ids(cx: &Ctx<'_>, sql: &str, id: i64) -> Result<Vec<i64>> {
    cx.query(sql, &[&id]).await?.iter().map(|r| col(r, 0)).collect()
}

impl WorkflowOps for PgEngine {
    fn ack_result(&self, tx: Option<&mut dyn Tx>, job: &Claimed, result: &str) -> Result<bool> {
        self.run(tx, async |cx| {
            if super::handle::ack_plain(cx, &cx.sql.handle.ack_drop_result, job).await? {
                return Ok(true);
            }
            ack_flow(cx, job, Some(result)).await
        })
    }

    fn ack_result_then_claim(
        &self,
        done: &Claimed,
        result: &str,
        queue: &str,
        worker_id: &str,
        n: usize,
    ) -> Result<(bool, Vec<Claimed>)> {
        PgEngine::ack_result_then_claim(self, done, result, queue, worker_id, n)
    }

    fn result(&self, id: i64) -> Result<Option<JobResult>> {
        self.run(None, async |cx| {
            let rows = cx.query(&cx.sql.workflows.result, &[&cx.offset, &id]).await?;
            rows.first()
                .map(|r| {
                    Ok(JobResult { state: col(r, 0)?, value: col(r, 1)?, error: col(r, 2)?, finished_at: col(r, 3)? })
                })
                .transpose()
        })
    }

    fn parent_results(&self, tx: Option<&mut dyn Tx>, id: i64) -> Result<Vec<(i64, Option<JobResult>)>> {
        self.run(tx, async |cx| {
            let rows = cx.query(&cx.sql.workflows.parent_results, &[&id]).await?;
            rows.iter().map(|r| Ok((col(r, 0)?, outcome(r)?))).collect()
        })
    }

    fn job_edges(&self, id: i64) -> Result<JobEdges> {
        self.run(None, async |cx| {
            Ok(JobEdges {
                parents: ids(cx, &cx.sql.workflows.parents, id).await?,
                children: ids(cx, &cx.sql.workflows.children, id).await?,
            })
        })
    }
}
