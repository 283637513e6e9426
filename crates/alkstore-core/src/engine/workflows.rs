//! Workflows (SPEC §25): results and the graph's reads; `ops/workflows.rs`
//! in each engine, next to the statements that link a child to its parents
//! at enqueue and settle a parent's children at its ack.
//!
//! The storage contract every engine keeps (ADR 0029):
//! - a child with unsettled parents is `waiting` and never claimed; its row
//!   counts them (`parents_left`), and an edge row per parent says whether
//!   that parent has settled for it;
//! - a parent's ack settles its edges and decrements each waiting child
//!   once, releasing (to `pending`, with the enqueue's wake) the child it
//!   brings to zero, in the ack's transaction; a plain job's ack never reads
//!   the edges (the row says whether it has children);
//! - a parent that leaves the live table any other way (dead by any path,
//!   cancelled) kills its waiting `cancel` children, transitively, and counts
//!   as settled for its `run` children, in the same transaction;
//! - an ack's result is kept when the job keeps results or has children,
//!   until `keep_result` passes and no child that needs it is left.

use crate::engine::model::{Claimed, JobEdges, JobResult};
use crate::engine::Tx;
use crate::error::Result;

/// Results and edges; `ops/workflows.rs` in each engine.
pub trait WorkflowOps {
    /// Acks a valid handle keeping `result` (JSON text) where the job keeps
    /// results or has children; otherwise exactly [`crate::HandleOps::ack`].
    fn ack_result(&self, tx: Option<&mut dyn Tx>, job: &Claimed, result: &str) -> Result<bool>;

    /// The Worker's ack of `done` keeping `result` as [`Self::ack_result`]
    /// does, and its claim of up to `n` jobs of `queue`, in one transaction
    /// as [`crate::ClaimOps::ack_then_claim`] (with the same caveat: the
    /// claim may be the fast path only, so empty never means the queue has
    /// nothing). Whether the ack landed, and what was claimed, in any order.
    fn ack_result_then_claim(
        &self,
        done: &Claimed,
        result: &str,
        queue: &str,
        worker_id: &str,
        n: usize,
    ) -> Result<(bool, Vec<Claimed>)>;

    /// The outcome of job `id`: its kept result once acked, or its dead
    /// row's error; None for a live job, or one whose result is not kept.
    fn result(&self, id: i64) -> Result<Option<JobResult>>;

    /// The results of `id`'s parents, in id order; None for a parent
    /// whose result is not kept.
    fn parent_results(&self, tx: Option<&mut dyn Tx>, id: i64) -> Result<Vec<(i64, Option<JobResult>)>>;

    /// `id`'s parents and children (for operators).
    fn job_edges(&self, id: i64) -> Result<JobEdges>;
}
