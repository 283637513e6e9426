//! The queue ops of the Store (SPEC §4): each checks its arguments, resolves
//! what the contract decides (a retry's destination and delay, claim order,
//! an empty batch, the heartbeat's span) and hands the engine the rest.

use crate::engine::model::{Claimed, Job, NewJob, QueueOpts, QueueStats, ReadyAt, Swept};
use crate::error::{Error, Result};
use crate::rules::batch::batch_size;
use crate::rules::claim_order::sort_claimed;
use crate::rules::duration::{check_instant, check_seconds, check_wait, span};
use crate::rules::error_text::{cap_error, check_error_text};
use crate::rules::names::validate_name;
use crate::rules::retry::{retry_to, RetryTo};
use crate::rules::unique::{check_unique_key, Distinct};
use crate::store::completions::acked_per_queue;
use crate::store::waiting::WaitSpec;
use crate::store::{Store, TxSession};

impl Store {
    /// `enqueue` / `enqueue_many`: validated in full before any write.
    pub fn enqueue(
        &self,
        tx: Option<&mut TxSession>,
        queue: &str,
        opts: &QueueOpts,
        jobs: &[NewJob],
    ) -> Result<Vec<i64>> {
        self.check_new_jobs(opts, jobs)?;
        if jobs.is_empty() {
            self.enter(tx)?;
            return Ok(Vec::new());
        }
        let jobs = &*crate::rules::workflows::normalized(jobs);
        match Distinct::of(jobs) {
            None => self.in_tx(tx, |t| self.engine.enqueue(t, queue, opts, jobs)),
            Some(d) => Ok(d.expand(&self.in_tx(tx, |t| self.engine.enqueue(t, queue, opts, &d.jobs))?)),
        }
    }

    /// Every rule a new job meets, whichever connection writes it.
    pub(crate) fn check_new_jobs(&self, opts: &QueueOpts, jobs: &[NewJob]) -> Result<()> {
        opts.check()?;
        for job in jobs {
            self.check_payload(&job.payload)?;
            if let Some(m) = job.max_attempts {
                if m < 1 {
                    return Err(Error::Value(format!("max_attempts must be >= 1, got {m}")));
                }
            }
            match job.ready {
                ReadyAt::Now => {}
                ReadyAt::Delay(d) => {
                    check_seconds("delay", d)?;
                }
                ReadyAt::At(t) => {
                    check_instant("run_at", t)?;
                }
            }
            if let Some(e) = job.expires_s {
                check_seconds("expires", e)?;
            }
            if let Some(k) = &job.unique_key {
                check_unique_key(k)?;
            }
            if let Some(g) = &job.group {
                crate::rules::limits::check_group(g)?;
            }
            crate::rules::workflows::check_job(job)?;
        }
        Ok(())
    }

    /// `claim` / `claim_batch` without waiting.
    pub fn claim(&self, queue: &str, worker_id: &str, n: usize) -> Result<Vec<Claimed>> {
        validate_name("worker", worker_id)?;
        batch_size("n", n)?;
        self.enter(None)?;
        self.claim_now(queue, worker_id, n)
    }

    /// The Worker's ack of a finished job and claim of its next, one
    /// transaction where the engine can (ADR 0022): whether the ack landed,
    /// and up to `n` jobs of `queue` in claim order. An empty claim does not
    /// mean `queue` is empty (see [`crate::ClaimOps::ack_then_claim`]).
    pub fn ack_then_claim(
        &self,
        done: &Claimed,
        queue: &str,
        worker_id: &str,
        n: usize,
    ) -> Result<(bool, Vec<Claimed>)> {
        validate_name("worker", worker_id)?;
        batch_size("n", n)?;
        self.enter(None)?;
        let (landed, mut claimed) = self.engine.ack_then_claim(done, queue, worker_id, n)?;
        acked_per_queue(&[done], landed, |q, k| self.done.add(q, k));
        sort_claimed(&mut claimed);
        Ok((landed == 1, claimed))
    }

    /// One look: the engine's claim (`n` already in range), in claim order.
    fn claim_now(&self, queue: &str, worker_id: &str, n: usize) -> Result<Vec<Claimed>> {
        let mut claimed = self.engine.claim(queue, worker_id, n)?;
        sort_claimed(&mut claimed);
        Ok(claimed)
    }

    /// `claim` / `claim_batch` with a timeout: waits for commits and
    /// deadlines (SPEC §5). Empty when the timeout passes or `stop` is set.
    pub fn claim_wait(&self, queue: &str, worker_id: &str, n: usize, spec: &WaitSpec<'_>) -> Result<Vec<Claimed>> {
        if let Some(t) = spec.timeout {
            check_wait("timeout", t)?;
        }
        validate_name("worker", worker_id)?;
        batch_size("n", n)?;
        self.enter(None)?;
        // A stopped caller gets nothing, even from a one-look claim (see `wait_for`).
        if spec.stopped() {
            return Ok(Vec::new());
        }
        if spec.timeout == Some(std::time::Duration::ZERO) {
            return self.claim_now(queue, worker_id, n);
        }
        let got = self.wait_for(Some(queue), spec, || {
            let c = self.claim_now(queue, worker_id, n)?;
            Ok((!c.is_empty()).then_some(c))
        })?;
        Ok(got.unwrap_or_default())
    }

    /// `job.ack` / `q.ack_batch`. What lands is counted for the completion
    /// chart: now, or at the caller's commit.
    pub fn ack(&self, tx: Option<&mut TxSession>, jobs: &[&Claimed]) -> Result<usize> {
        if jobs.is_empty() {
            return self.in_tx(tx, |_| Ok(0));
        }
        match tx {
            Some(s) => {
                let landed = s.op(|t| self.engine.ack(Some(t), jobs))?;
                acked_per_queue(jobs, landed, |queue, n| s.acked.push((queue.to_owned(), n)));
                Ok(landed)
            }
            None => {
                self.enter(None)?;
                let landed = self.engine.ack(None, jobs)?;
                acked_per_queue(jobs, landed, |queue, n| self.done.add(queue, n));
                Ok(landed)
            }
        }
    }

    /// `job.retry`. A retry past the budget stores `error` as `job.fail` does.
    pub fn retry(&self, tx: Option<&mut TxSession>, job: &Claimed, error: &str, delay_s: Option<i64>) -> Result<bool> {
        check_error_text(error)?;
        if let Some(d) = delay_s {
            check_seconds("delay", d)?;
        }
        match retry_to(job, delay_s) {
            RetryTo::Dead => self.in_tx(tx, |t| self.engine.fail(t, job, &cap_error(error))),
            RetryTo::Pending { delay_s } => self.in_tx(tx, |t| self.engine.retry(t, job, delay_s, &cap_error(error))),
        }
    }

    /// `job.fail`: `error` is stored cut to its bound ([`crate::rules::error_text`]).
    pub fn fail(&self, tx: Option<&mut TxSession>, job: &Claimed, error: &str) -> Result<bool> {
        check_error_text(error)?;
        self.in_tx(tx, |t| self.engine.fail(t, job, &cap_error(error)))
    }

    /// `job.heartbeat`; `extend_s` None means the stamped visibility timeout.
    pub fn heartbeat(&self, job: &Claimed, extend_s: Option<i64>) -> Result<Option<i64>> {
        if let Some(e) = extend_s {
            check_seconds("extend", e)?;
        }
        // The stamped lease passed the same bound at enqueue; a row written
        // before the bound existed is clamped here, so the engine only ever
        // sees a span `now + d` can hold.
        let extend = span(extend_s.unwrap_or(job.visibility_timeout_s));
        if extend < 1 {
            return Err(Error::Value(format!("extend must be >= 1 second after rounding up, got {extend}")));
        }
        self.enter(None)?;
        self.engine.heartbeat(job, extend)
    }

    /// `job.release`.
    pub fn release(&self, job: &Claimed) -> Result<bool> {
        self.enter(None)?;
        self.engine.release(job, 0)
    }

    /// `job.snooze(seconds)` (SPEC §22, `raise alkstore.Snooze(s)`): back to
    /// pending, ready after `delay_s`, without counting the attempt — a
    /// release that waits ([`crate::rules::retry`]).
    pub fn snooze(&self, job: &Claimed, delay_s: i64) -> Result<bool> {
        self.enter(None)?;
        self.engine.release(job, delay_s)
    }

    /// `q.cancel`.
    pub fn cancel(&self, tx: Option<&mut TxSession>, queue: &str, id: i64) -> Result<bool> {
        self.in_tx(tx, |t| self.engine.cancel(t, queue, id))
    }

    /// `q.get_job`.
    pub fn get_job(&self, tx: Option<&mut TxSession>, queue: &str, id: i64) -> Result<Option<Job>> {
        self.in_tx(tx, |t| self.engine.get_job(t, queue, id))
    }

    /// `store.get_job(id)`: the live or dead job `id`, whatever its queue
    /// (one probe by primary key per table, never a walk of the queues).
    pub fn job_by_id(&self, id: i64) -> Result<Option<Job>> {
        self.enter(None)?;
        self.engine.job_by_id(id)
    }

    /// `q.dead_jobs`.
    pub fn dead_jobs(&self, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
        batch_size("limit", limit)?;
        self.enter(None)?;
        self.engine.dead_jobs(queue, limit, before_id)
    }

    /// `q.stats`.
    pub fn stats(&self, queue: &str) -> Result<QueueStats> {
        self.enter(None)?;
        self.engine.stats(queue)
    }

    /// `q.live_jobs`: pending and processing rows, newest first.
    pub fn live_jobs(&self, queue: &str, limit: usize, before_id: Option<i64>) -> Result<Vec<Job>> {
        batch_size("limit", limit)?;
        self.enter(None)?;
        self.engine.live_jobs(queue, limit, before_id)
    }

    /// `store.queues()`: every queue that ever had a job or is paused, sorted.
    pub fn queue_names(&self) -> Result<Vec<String>> {
        self.enter(None)?;
        self.engine.queue_names()
    }

    /// `q.sweep_expired`.
    pub fn sweep_expired(&self, queue: &str) -> Result<Swept> {
        self.enter(None)?;
        self.engine.sweep_expired(queue)
    }
}
