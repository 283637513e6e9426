//! Read-only values: `Job`, `QueueStats`, `Swept`.

use std::sync::OnceLock;

use alkstore_core as core;
use pyo3::prelude::*;

use crate::limits::QueueLimits;

use crate::convert::{to_datetime, to_opt_datetime, Int};
use crate::json;
use crate::repr;

/// A job row as `get_job` / `dead_jobs` see it (live or dead).
#[pyclass(name = "Job", module = "alkstore", frozen)]
pub struct Job {
    row: core::Job,
    payload: OnceLock<Py<PyAny>>,
}

impl From<core::Job> for Job {
    fn from(row: core::Job) -> Self {
        Job { row, payload: OnceLock::new() }
    }
}

#[pymethods]
impl Job {
    #[getter]
    fn id(&self) -> i64 {
        self.row.id
    }
    #[getter]
    fn queue(&self) -> &str {
        &self.row.queue
    }
    /// `'waiting'` (for its parents), `'pending'`, `'processing'` or `'dead'`.
    #[getter]
    fn state(&self) -> &'static str {
        self.row.state.as_str()
    }
    /// The key it was enqueued with (`unique_key=`), or None.
    #[getter]
    fn unique_key(&self) -> Option<&str> {
        self.row.unique_key.as_deref()
    }
    /// The group it was enqueued with (`group=`), or None.
    #[getter]
    fn group(&self) -> Option<&str> {
        self.row.group.as_deref()
    }
    #[getter]
    fn payload(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(p) = self.payload.get() {
            return Ok(p.clone_ref(py));
        }
        let decoded = json::decode(py, &self.row.payload, "payload")?;
        Ok(self.payload.get_or_init(|| decoded).clone_ref(py))
    }
    /// The payload's JSON text as stored, for pages that must show a
    /// payload that does not decode (not public).
    #[getter]
    fn _payload_text(&self) -> &str {
        &self.row.payload
    }
    #[getter]
    fn priority(&self) -> i32 {
        self.row.priority
    }
    #[getter]
    fn attempts(&self) -> i64 {
        self.row.attempts
    }
    #[getter]
    fn max_attempts(&self) -> i64 {
        self.row.max_attempts
    }
    #[getter]
    fn enqueued_at(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_datetime(py, self.row.enqueued_at)
    }
    #[getter]
    fn run_at(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_datetime(py, self.row.run_at)
    }
    #[getter]
    fn claimed_at(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        to_opt_datetime(py, self.row.claimed_at)
    }
    #[getter]
    fn deadline(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        to_opt_datetime(py, self.row.deadline)
    }
    #[getter]
    fn worker_id(&self) -> Option<&str> {
        self.row.worker_id.as_deref()
    }
    #[getter]
    fn expires_at(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        to_opt_datetime(py, self.row.expires_at)
    }
    #[getter]
    fn last_error(&self) -> Option<&str> {
        self.row.last_error.as_deref()
    }
    #[getter]
    fn died_at(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        to_opt_datetime(py, self.row.died_at)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Job>().is_ok_and(|o| o.get().row == self.row)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Job(id={}, queue={}, state={})",
            self.row.id,
            repr::text(py, &self.row.queue)?,
            repr::text(py, self.row.state.as_str())?
        ))
    }
}

/// Counts of one queue's jobs (SPEC §4.4), its pause and its limits (§24).
#[pyclass(name = "QueueStats", module = "alkstore", frozen, eq)]
#[derive(PartialEq)]
pub struct QueueStats {
    /// Pending and ready now.
    #[pyo3(get)]
    pending: i64,
    /// Pending with a future `run_at`.
    #[pyo3(get)]
    scheduled: i64,
    /// Leased, lapsed leases included.
    #[pyo3(get)]
    processing: i64,
    /// In dead storage.
    #[pyo3(get)]
    dead: i64,
    /// Seconds since the oldest ready pending job became ready.
    #[pyo3(get)]
    oldest_ready_age_s: Option<i64>,
    /// Paused: claims hand out nothing until resumed.
    #[pyo3(get)]
    paused: bool,
    /// Waiting for their parents (SPEC §25).
    #[pyo3(get)]
    waiting: i64,
    limits: QueueLimits,
}

#[pymethods]
impl QueueStats {
    #[new]
    #[pyo3(signature = (*, pending, scheduled, processing, dead, oldest_ready_age_s=None, paused=false, limits=None, waiting=Int::new(0)))]
    #[pyo3(
        text_signature = "(*, pending, scheduled, processing, dead, oldest_ready_age_s=None, paused=False, limits=None, waiting=0)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        pending: Int,
        scheduled: Int,
        processing: Int,
        dead: Int,
        oldest_ready_age_s: Option<Int>,
        paused: bool,
        limits: Option<QueueLimits>,
        waiting: Int,
    ) -> PyResult<Self> {
        Ok(QueueStats {
            pending: pending.get("pending")?,
            scheduled: scheduled.get("scheduled")?,
            processing: processing.get("processing")?,
            dead: dead.get("dead")?,
            oldest_ready_age_s: oldest_ready_age_s.map(|a| a.get("oldest_ready_age_s")).transpose()?,
            paused,
            waiting: waiting.get("waiting")?,
            limits: limits.unwrap_or_default(),
        })
    }

    /// The queue's limits (SPEC §24).
    #[getter]
    fn limits(&self) -> QueueLimits {
        self.limits.clone()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "QueueStats(pending={}, scheduled={}, processing={}, dead={}, oldest_ready_age_s={}, paused={}, limits={}, waiting={})",
            self.pending,
            self.scheduled,
            self.processing,
            self.dead,
            repr::opt_int(self.oldest_ready_age_s),
            repr::boolean(self.paused),
            self.limits.repr(py)?,
            self.waiting
        ))
    }
}

impl QueueStats {
    /// The counts of `s` with the limits `l`.
    pub fn with_limits(s: core::QueueStats, l: core::QueueLimits) -> Self {
        QueueStats {
            pending: s.pending,
            scheduled: s.scheduled,
            processing: s.processing,
            dead: s.dead,
            oldest_ready_age_s: s.oldest_ready_age_s,
            paused: s.paused,
            waiting: s.waiting,
            limits: l.into(),
        }
    }
}

/// What `sweep_expired` did.
#[pyclass(name = "Swept", module = "alkstore", frozen, eq, get_all)]
#[derive(PartialEq)]
pub struct Swept {
    /// Rows moved to dead as 'expired'.
    expired: i64,
    /// Dead rows purged by retention.
    purged: i64,
}

#[pymethods]
impl Swept {
    #[new]
    #[pyo3(signature = (expired=Int::new(0), purged=Int::new(0)), text_signature = "(expired=0, purged=0)")]
    fn new(expired: Int, purged: Int) -> PyResult<Self> {
        Ok(Swept { expired: expired.get("expired")?, purged: purged.get("purged")? })
    }

    fn __repr__(&self) -> String {
        format!("Swept(expired={}, purged={})", self.expired, self.purged)
    }
}

impl From<core::Swept> for Swept {
    fn from(s: core::Swept) -> Self {
        Swept { expired: s.expired, purged: s.purged }
    }
}
