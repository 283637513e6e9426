//! `JobHandle`: what a claim returns; every op is fenced by the claim token.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use alkstore_core::{Claimed, Store as CoreStore};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use crate::convert::{duration, opt_duration, to_datetime, to_opt_datetime};
use crate::errors::IntoPyResult;
use crate::exit;
use crate::json;
use crate::repr;
use crate::tx::{run, Transaction};
use crate::workflows;

/// A claimed job. `ack`/`retry`/`fail`/`heartbeat`/`release` return False
/// (changing nothing) once the lease lapsed or another party took the row.
#[pyclass(name = "JobHandle", module = "alkstore", frozen)]
pub struct JobHandle {
    store: Arc<CoreStore>,
    claimed: Claimed,
    /// Moves with successful heartbeats.
    deadline: AtomicI64,
    /// The last op that settled the job through this handle (one of
    /// `SETTLED`'s indexes), so a runner whose own op finds the job already
    /// settled can tell the handler's outcome from a lost lease.
    settled: AtomicU8,
    /// Set by the Worker running the job when it learns the job was
    /// cancelled (SPEC §22): what `cancel_requested` reads.
    cancel_requested: AtomicBool,
    payload: OnceLock<Py<PyAny>>,
}

/// What `_settled` reports for each value of `JobHandle::settled`.
const SETTLED: [Option<&str>; 6] =
    [None, Some("acked"), Some("retried"), Some("failed"), Some("released"), Some("snoozed")];
const ACKED: u8 = 1;
const RETRIED: u8 = 2;
const FAILED: u8 = 3;
const RELEASED: u8 = 4;
const SNOOZED: u8 = 5;

impl JobHandle {
    pub(crate) fn new(store: Arc<CoreStore>, claimed: Claimed) -> Self {
        let deadline = AtomicI64::new(claimed.deadline);
        JobHandle {
            store,
            claimed,
            deadline,
            settled: AtomicU8::new(0),
            cancel_requested: AtomicBool::new(false),
            payload: OnceLock::new(),
        }
    }

    /// Records `op` when it landed (inside a caller's transaction: when its
    /// statement matched; the commit is the caller's).
    fn note(&self, landed: bool, op: u8) -> bool {
        if landed {
            self.settled.store(op, Ordering::Relaxed);
        }
        landed
    }

    /// Records an ack that landed through another call (the Worker's
    /// ack-then-claim, `Queue._ack_then_claim`).
    pub(crate) fn note_acked(&self, landed: bool) -> bool {
        self.note(landed, ACKED)
    }

    pub(crate) fn claimed(&self) -> &Claimed {
        &self.claimed
    }

    /// Whether this handle was claimed through `store` (the same open store,
    /// not merely one with the same queue names).
    pub(crate) fn claimed_through(&self, store: &Arc<CoreStore>) -> bool {
        Arc::ptr_eq(&self.store, store)
    }
}

#[pymethods]
impl JobHandle {
    #[getter]
    fn id(&self) -> i64 {
        self.claimed.id
    }
    #[getter]
    fn queue(&self) -> &str {
        &self.claimed.queue
    }
    /// The payload, decoded once.
    #[getter]
    fn payload(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(p) = self.payload.get() {
            return Ok(p.clone_ref(py));
        }
        let decoded = json::decode(py, &self.claimed.payload, "payload")?;
        Ok(self.payload.get_or_init(|| decoded).clone_ref(py))
    }
    #[getter]
    fn attempts(&self) -> i64 {
        self.claimed.attempts
    }
    #[getter]
    fn max_attempts(&self) -> i64 {
        self.claimed.max_attempts
    }
    #[getter]
    fn priority(&self) -> i32 {
        self.claimed.priority
    }
    #[getter]
    fn worker_id(&self) -> &str {
        &self.claimed.worker_id
    }
    #[getter]
    fn enqueued_at(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_datetime(py, self.claimed.enqueued_at)
    }
    #[getter]
    fn run_at(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_datetime(py, self.claimed.run_at)
    }
    #[getter]
    fn claimed_at(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_datetime(py, self.claimed.claimed_at)
    }
    #[getter]
    fn deadline(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_datetime(py, self.deadline.load(Ordering::Relaxed))
    }
    #[getter]
    fn expires_at(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        to_opt_datetime(py, self.claimed.expires_at)
    }

    /// Done: deletes the row. False when the handle is no longer valid.
    /// `result` (any JSON value) is kept for `store.result(id)` when the job
    /// was enqueued with `keep_result`, and for its children's
    /// `parent_results()` while they wait (SPEC §25); otherwise dropped.
    #[pyo3(signature = (tx=None, *, result=None))]
    fn ack(
        &self,
        py: Python<'_>,
        tx: Option<&Bound<'_, Transaction>>,
        result: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let landed = match result {
            Some(r) if !r.is_none() => {
                let text = json::encode_at(r, "result")?;
                run(py, &self.store, tx, |t| self.store.ack_result(t, &self.claimed, &text))?
            }
            _ => run(py, &self.store, tx, |t| self.store.ack(t, &[&self.claimed]))? == 1,
        };
        Ok(self.note(landed, ACKED))
    }

    /// The results of the jobs this one was enqueued `after` (SPEC §25):
    /// parent id → the value its ack kept (None for a parent acked without a
    /// result, or dead).
    #[pyo3(signature = (*, tx=None))]
    fn parent_results(&self, py: Python<'_>, tx: Option<&Bound<'_, Transaction>>) -> PyResult<Py<PyDict>> {
        let rows = run(py, &self.store, tx, |t| self.store.parent_results(t, self.claimed.id))?;
        workflows::parent_values(py, rows)
    }

    /// Back to pending after `delay` (None: the retry curve), or dead at budget.
    #[pyo3(signature = (error="", delay=None, tx=None))]
    fn retry(
        &self,
        py: Python<'_>,
        error: &str,
        delay: Option<&Bound<'_, PyAny>>,
        tx: Option<&Bound<'_, Transaction>>,
    ) -> PyResult<bool> {
        let d = opt_duration(delay, "delay")?;
        let landed = run(py, &self.store, tx, |t| self.store.retry(t, &self.claimed, error, d))?;
        Ok(self.note(landed, RETRIED))
    }

    /// Straight to dead with `error`.
    #[pyo3(signature = (error="", tx=None))]
    fn fail(&self, py: Python<'_>, error: &str, tx: Option<&Bound<'_, Transaction>>) -> PyResult<bool> {
        let landed = run(py, &self.store, tx, |t| self.store.fail(t, &self.claimed, error))?;
        Ok(self.note(landed, FAILED))
    }

    /// Resets the lease to `now + extend` (default: the stamped visibility timeout).
    #[pyo3(signature = (extend=None))]
    fn heartbeat(&self, py: Python<'_>, extend: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let e = opt_duration(extend, "extend")?;
        let r = exit::detach(py, || self.store.heartbeat(&self.claimed, e)).py()?;
        if let Some(d) = r {
            self.deadline.store(d, Ordering::Relaxed);
        }
        Ok(r.is_some())
    }

    /// Back to pending now with the attempt refunded (for shutdown).
    fn release(&self, py: Python<'_>) -> PyResult<bool> {
        let landed = exit::detach(py, || self.store.release(&self.claimed)).py()?;
        Ok(self.note(landed, RELEASED))
    }

    /// Back to pending, ready after `delay` (seconds or a timedelta), with
    /// the attempt refunded: the job is put off, not retried (SPEC §22's
    /// `Snooze`). Fenced like every handle op.
    fn snooze(&self, py: Python<'_>, delay: &Bound<'_, PyAny>) -> PyResult<bool> {
        let d = duration(delay, "delay")?;
        let landed = exit::detach(py, || self.store.snooze(&self.claimed, d)).py()?;
        Ok(self.note(landed, SNOOZED))
    }

    /// Whether the job was cancelled while it ran (`q.cancel(id)` of a
    /// processing job): the Worker running it sets this within one
    /// heartbeat, and a sync handler that looks at it can stop early.
    #[getter]
    fn cancel_requested(&self) -> bool {
        self.cancel_requested.load(Ordering::Relaxed)
    }

    /// Marks the job cancelled (the Worker's runner, not public).
    fn _request_cancel(&self) {
        self.cancel_requested.store(true, Ordering::Relaxed);
    }

    /// Whether the job's row is gone, live and dead storage alike: after a
    /// refused heartbeat, what tells a cancel (the row deleted) from a lapsed
    /// lease or a sweep (the row still there). For the runner, not public.
    fn _gone(&self, py: Python<'_>) -> PyResult<bool> {
        let (queue, id) = (&self.claimed.queue, self.claimed.id);
        Ok(exit::detach(py, || self.store.get_job(None, queue, id)).py()?.is_none())
    }

    /// The state of the job's row now ("pending", "processing", "dead", …),
    /// or None when the row is gone: after a settling call whose reply was
    /// lost, what tells whether it landed. For the runner, not public.
    fn _state(&self, py: Python<'_>) -> PyResult<Option<&'static str>> {
        let (queue, id) = (&self.claimed.queue, self.claimed.id);
        let row = exit::detach(py, || self.store.get_job(None, queue, id)).py()?;
        Ok(row.map(|job| job.state.as_str()))
    }

    /// The stamped lease length in seconds, for the runner's heartbeat
    /// interval without building two datetimes per job (not public).
    #[getter]
    fn _lease_s(&self) -> i64 {
        self.claimed.visibility_timeout_s
    }

    /// How the job was last settled through this handle: "acked", "retried",
    /// "failed", "released", or None. For the Worker's and the outbox's
    /// runner (`alkstore._runner`), not a public attribute.
    #[getter]
    fn _settled(&self) -> Option<&'static str> {
        SETTLED[usize::from(self.settled.load(Ordering::Relaxed))]
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Acks on a clean exit; retries with `repr(exc)` when the block raised.
    #[pyo3(signature = (exc_type, exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyType>>,
        exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        match (exc_type, exc) {
            (Some(_), Some(e)) if !e.is_none() => {
                let msg = e.repr()?.to_string();
                self.retry(py, &msg, None, None)?;
            }
            _ => {
                self.ack(py, None, None)?;
            }
        }
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "<alkstore.JobHandle id={} queue={} attempts={}>",
            self.claimed.id,
            repr::text(py, &self.claimed.queue)?,
            self.claimed.attempts
        ))
    }
}
