//! The workflow surface of the Store (SPEC §25): an ack that keeps its
//! result, and the reads of results and edges. `after`, `on_failure` and
//! `keep_result` ride on [`crate::NewJob`] through the ordinary enqueue,
//! checked by [`crate::rules::workflows`].

use crate::engine::model::{Claimed, JobEdges, JobResult};
use crate::error::Result;
use crate::rules::batch::batch_size;
use crate::rules::claim_order::sort_claimed;
use crate::rules::names::validate_name;
use crate::store::completions::acked_per_queue;
use crate::store::{Store, TxSession};

impl Store {
    /// `job.ack(result=...)`: `result` is JSON text, held to a payload's limits.
    pub fn ack_result(&self, tx: Option<&mut TxSession>, job: &Claimed, result: &str) -> Result<bool> {
        self.check_json("result", result)?;
        match tx {
            Some(s) => {
                let landed = s.op(|t| self.engine.ack_result(Some(t), job, result))?;
                acked_per_queue(&[job], usize::from(landed), |queue, n| s.acked.push((queue.to_owned(), n)));
                Ok(landed)
            }
            None => {
                self.enter(None)?;
                let landed = self.engine.ack_result(None, job, result)?;
                acked_per_queue(&[job], usize::from(landed), |queue, n| self.done.add(queue, n));
                Ok(landed)
            }
        }
    }

    /// The Worker's ack of a finished job that returned `result`, and its
    /// claim of the next, in one transaction as [`Self::ack_then_claim`]:
    /// the ack keeps the result as [`Self::ack_result`] does. Whether the
    /// ack landed, and what was claimed, in claim order; an empty claim does
    /// not mean `queue` is empty.
    pub fn ack_result_then_claim(
        &self,
        done: &Claimed,
        result: &str,
        queue: &str,
        worker_id: &str,
        n: usize,
    ) -> Result<(bool, Vec<Claimed>)> {
        validate_name("worker", worker_id)?;
        batch_size("n", n)?;
        self.check_json("result", result)?;
        self.enter(None)?;
        let (landed, mut claimed) = self.engine.ack_result_then_claim(done, result, queue, worker_id, n)?;
        acked_per_queue(&[done], usize::from(landed), |q, k| self.done.add(q, k));
        sort_claimed(&mut claimed);
        Ok((landed, claimed))
    }

    /// `store.result(id)`.
    pub fn result(&self, id: i64) -> Result<Option<JobResult>> {
        self.enter(None)?;
        self.engine.result(id)
    }

    /// `job.parent_results()`.
    pub fn parent_results(&self, tx: Option<&mut TxSession>, id: i64) -> Result<Vec<(i64, Option<JobResult>)>> {
        self.in_tx(tx, |t| self.engine.parent_results(t, id))
    }

    /// `store.job_edges(id)`.
    pub fn job_edges(&self, id: i64) -> Result<JobEdges> {
        self.enter(None)?;
        self.engine.job_edges(id)
    }
}
