//! `Store`: the engine-independent front every binding call goes through.
//!
//! It enforces the rules that must hold identically on every engine before a
//! byte reaches storage: the store is open, the calling thread is not inside
//! a transaction it did not pass, names and arguments are valid, payloads fit.

pub mod lock;
pub mod session;
pub mod stop;
pub mod stream;
pub mod txguard;
pub mod waiting;
pub mod wake;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::engine::model::{Claimed, Job, NewJob, QueueOpts, QueueStats, ReadyAt, Swept};
use crate::engine::{Engine, Tx};
use crate::error::{Error, Result};
use crate::open::options::OpenOptions;
pub use crate::rules::batch::{batch_size, MAX_BATCH};
use crate::rules::claim_order::sort_claimed;
use crate::rules::duration::{check_instant, check_seconds, check_wait, span, MAX_DURATION_S};
use crate::rules::names::validate_name;
use crate::rules::retry::{retry_to, RetryTo};
pub use crate::store::session::TxSession;
use crate::store::txguard::TxThreads;
use crate::store::waiting::WaitSpec;
use crate::store::wake::WakeHub;

/// An open store over one engine.
pub struct Store {
    engine: Arc<dyn Engine>,
    options: OpenOptions,
    threads: Arc<TxThreads>,
    closed: AtomicBool,
    /// Started on the first wait, so stores that never wait run no watcher.
    hub: OnceLock<Arc<WakeHub>>,
}

impl Store {
    /// Wraps an opened engine.
    pub fn new(engine: Arc<dyn Engine>, options: OpenOptions) -> Self {
        Store { engine, options, threads: Arc::default(), closed: AtomicBool::new(false), hub: OnceLock::new() }
    }

    /// The engine's name.
    pub fn engine_kind(&self) -> &'static str {
        self.engine.kind()
    }

    /// The validated open options.
    pub fn options(&self) -> &OpenOptions {
        &self.options
    }

    /// The engine itself, for surfaces layered on the queue ops.
    pub fn engine(&self) -> &Arc<dyn Engine> {
        &self.engine
    }

    /// Closes the store. Idempotent.
    pub fn close(&self) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            self.engine.close();
            if let Some(hub) = self.hub.get() {
                // Waiters see `closed` on their next look and raise StoreClosed.
                hub.bump();
            }
        }
    }

    /// The store's wake hub, starting the engine's feed on first use.
    pub fn wakes(&self) -> Result<Arc<WakeHub>> {
        self.open_check()?;
        if let Some(hub) = self.hub.get() {
            return Ok(hub.clone());
        }
        let hub = Arc::new(WakeHub::new());
        if self.hub.set(hub.clone()).is_ok() {
            self.engine.start_wakes(hub.clone())?;
            return Ok(hub);
        }
        Ok(self.hub.get().expect("set by the racing thread").clone())
    }

    /// The checks a call makes on its caller's thread when the call itself
    /// will run on another one (the asyncio bridge's wait thread): the store
    /// is open and this thread holds no transaction of it (SPEC §6). The
    /// helper thread holds none, so only the caller's thread can tell.
    pub fn check_caller(&self) -> Result<()> {
        self.enter(None).map(|_| ())
    }

    /// Whether `close` was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    fn open_check(&self) -> Result<()> {
        if self.is_closed() {
            return Err(Error::StoreClosed);
        }
        Ok(())
    }

    /// The checks every call makes: open store; with no `tx`, a free thread.
    pub(crate) fn enter<'a>(&self, tx: Option<&'a mut TxSession>) -> Result<Option<&'a mut dyn Tx>> {
        self.open_check()?;
        match tx {
            Some(s) => s.live().map(Some),
            None => {
                self.threads.check_free()?;
                Ok(None)
            }
        }
    }

    /// Runs `f` in the caller's transaction when given (under the session's
    /// doom rule), else on a free thread in the engine's own transaction.
    pub(crate) fn in_tx<T>(
        &self,
        tx: Option<&mut TxSession>,
        f: impl FnOnce(Option<&mut dyn Tx>) -> Result<T>,
    ) -> Result<T> {
        match tx {
            Some(s) => s.op(|t| f(Some(t))),
            None => {
                self.enter(None)?;
                f(None)
            }
        }
    }

    /// Opens a caller transaction.
    pub fn begin(&self) -> Result<TxSession> {
        self.open_check()?;
        let thread = self.threads.enter()?;
        match self.engine.begin() {
            Ok(inner) => Ok(TxSession { inner: Some(inner), doomed: false, thread, threads: self.threads.clone() }),
            Err(e) => {
                self.threads.leave(thread);
                Err(e)
            }
        }
    }

    /// `enqueue` / `enqueue_many`.
    pub fn enqueue(
        &self,
        tx: Option<&mut TxSession>,
        queue: &str,
        opts: &QueueOpts,
        jobs: &[NewJob],
    ) -> Result<Vec<i64>> {
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
        }
        if jobs.is_empty() {
            self.enter(tx)?;
            return Ok(Vec::new());
        }
        self.in_tx(tx, |t| self.engine.enqueue(t, queue, opts, jobs))
    }

    /// Refuses JSON text over `max_payload_bytes` (SPEC §4.1), before any write.
    pub(crate) fn check_payload(&self, payload: &str) -> Result<()> {
        if payload.len() > self.options.max_payload_bytes {
            return Err(Error::Value(format!(
                "payload is {} bytes of JSON, over max_payload_bytes={}",
                payload.len(),
                self.options.max_payload_bytes
            )));
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

    /// `job.ack` / `q.ack_batch`.
    pub fn ack(&self, tx: Option<&mut TxSession>, jobs: &[&Claimed]) -> Result<usize> {
        self.in_tx(tx, |t| if jobs.is_empty() { Ok(0) } else { self.engine.ack(t, jobs) })
    }

    /// `job.retry`.
    pub fn retry(&self, tx: Option<&mut TxSession>, job: &Claimed, error: &str, delay_s: Option<i64>) -> Result<bool> {
        check_error_text(error)?;
        if let Some(d) = delay_s {
            check_seconds("delay", d)?;
        }
        match retry_to(job, delay_s) {
            RetryTo::Dead => self.in_tx(tx, |t| self.engine.fail(t, job, error)),
            RetryTo::Pending { delay_s } => self.in_tx(tx, |t| self.engine.retry(t, job, delay_s)),
        }
    }

    /// `job.fail`.
    pub fn fail(&self, tx: Option<&mut TxSession>, job: &Claimed, error: &str) -> Result<bool> {
        check_error_text(error)?;
        self.in_tx(tx, |t| self.engine.fail(t, job, error))
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
        self.engine.release(job)
    }

    /// `q.cancel`.
    pub fn cancel(&self, tx: Option<&mut TxSession>, queue: &str, id: i64) -> Result<bool> {
        self.in_tx(tx, |t| self.engine.cancel(t, queue, id))
    }

    /// `q.get_job`.
    pub fn get_job(&self, tx: Option<&mut TxSession>, queue: &str, id: i64) -> Result<Option<Job>> {
        self.in_tx(tx, |t| self.engine.get_job(t, queue, id))
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

    /// `store.queues()`: every queue name with a live or dead row, sorted.
    pub fn queue_names(&self) -> Result<Vec<String>> {
        self.enter(None)?;
        self.engine.queue_names()
    }

    /// `q.sweep_expired`.
    pub fn sweep_expired(&self, queue: &str) -> Result<Swept> {
        self.enter(None)?;
        self.engine.sweep_expired(queue)
    }

    /// `store._advance_clock` (tests only). One shift is bounded like any
    /// duration, so a test clock stays far from overflowing.
    pub fn advance_clock(&self, seconds: i64) -> Result<()> {
        if seconds.unsigned_abs() > MAX_DURATION_S as u64 {
            return Err(Error::Value(format!(
                "seconds must be between -{MAX_DURATION_S} and {MAX_DURATION_S}, got {seconds}"
            )));
        }
        self.open_check()?;
        self.engine.advance_clock(seconds);
        Ok(())
    }
}

/// An error text is stored as text, and Postgres text cannot hold NUL: refuse
/// it on every engine alike, before anything changes.
fn check_error_text(error: &str) -> Result<()> {
    if error.contains('\0') {
        return Err(Error::Value("error must not contain NUL characters".into()));
    }
    Ok(())
}

impl Drop for Store {
    fn drop(&mut self) {
        self.close();
    }
}
