//! The `Queue` class: a name plus the options stamped on what it enqueues.

use std::sync::Arc;

use std::time::Duration;

use alkstore_core::store::batch_size;
use alkstore_core::{Claimed, NewJob, OnFailure, QueueOpts, ReadyAt, StopToken as CoreStop, Store as CoreStore};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::convert::{instant, int_in, integer, items, opt_duration, type_name, Int};
use crate::errors::IntoPyResult;
use crate::exit;
use crate::foreign::{self, Call, Shape};
use crate::handle::JobHandle;
use crate::iter::JobIterator;
use crate::json;
use crate::limits::QueueLimits;
use crate::repr;
use crate::stop::StopToken;
use crate::telemetry;
use crate::tx::{run, Transaction};
use crate::views::{Job, QueueStats, Swept};
use crate::wait::{self, blocking, ClaimTimeout};

/// A queue handle (`store.queue(name, ...)`); a name, not a created object.
#[pyclass(name = "Queue", module = "alkstore", frozen)]
pub struct Queue {
    store: Arc<CoreStore>,
    name: String,
    opts: QueueOpts,
}

/// The per-job options shared by `enqueue` and `enqueue_many`.
struct JobOpts {
    ready: ReadyAt,
    priority: i32,
    max_attempts: Option<i64>,
    expires_s: Option<i64>,
    /// Workflows (SPEC §25): the parents, what their failure does, how long the result is kept.
    after: Vec<i64>,
    on_failure: OnFailure,
    keep_result_s: Option<i64>,
}

impl JobOpts {
    fn parse(
        delay: Option<&Bound<'_, PyAny>>,
        run_at: Option<&Bound<'_, PyAny>>,
        priority: Option<&Bound<'_, PyAny>>,
        max_attempts: Option<&Bound<'_, PyAny>>,
        expires: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let delay = opt_duration(delay, "delay")?;
        let at = match run_at {
            Some(r) if !r.is_none() => Some(instant(r, "run_at")?),
            _ => None,
        };
        // SPEC §4.1: when both are given, delay wins.
        let ready = match (delay, at) {
            (Some(d), _) => ReadyAt::Delay(d),
            (None, Some(t)) => ReadyAt::At(t),
            (None, None) => ReadyAt::Now,
        };
        let priority = match priority {
            Some(p) if !p.is_none() => int_in(p, "priority", i32::MIN.into()..=i32::MAX.into())? as i32,
            _ => 0,
        };
        let max_attempts = match max_attempts {
            Some(m) if !m.is_none() => Some(integer(m, "max_attempts")?),
            _ => None,
        };
        Ok(JobOpts {
            ready,
            priority,
            max_attempts,
            expires_s: opt_duration(expires, "expires")?,
            after: Vec::new(),
            on_failure: OnFailure::Cancel,
            keep_result_s: None,
        })
    }

    /// The workflow arguments (SPEC §25): `after` an iterable of job ids (or
    /// None), `on_failure` "cancel" or "run", `keep_result` seconds or a
    /// timedelta (or None). Their rules are core's.
    fn with_flow(
        mut self,
        after: Option<&Bound<'_, PyAny>>,
        on_failure: &str,
        keep_result: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        self.after = job_ids_arg(after, "after")?.unwrap_or_default();
        self.on_failure = OnFailure::parse(on_failure).py()?;
        self.keep_result_s = opt_duration(keep_result, "keep_result")?;
        Ok(self)
    }

    /// One job per payload of the iterable `payloads`, each encoded (and so
    /// checked) first. `unique_key`: None, one key for every job, or one key
    /// (or None) per payload.
    fn jobs(
        &self,
        payloads: &Bound<'_, PyAny>,
        unique_key: Option<&Bound<'_, PyAny>>,
        group: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<NewJob>> {
        let mut jobs = Vec::new();
        for p in items(payloads, "payloads", "JSON payloads")? {
            jobs.push(self.job(json::encode(&p?)?, None, None));
        }
        spread(&mut jobs, unique_key, "unique_key", |j, k| j.unique_key = k)?;
        spread(&mut jobs, group, "group", |j, g| j.group = g)?;
        Ok(jobs)
    }

    fn job(&self, payload: String, unique_key: Option<String>, group: Option<String>) -> NewJob {
        NewJob {
            payload,
            ready: self.ready,
            priority: self.priority,
            max_attempts: self.max_attempts,
            expires_s: self.expires_s,
            unique_key,
            group,
            after: self.after.clone(),
            on_failure: self.on_failure,
            keep_result_s: self.keep_result_s,
        }
    }
}

/// A per-job text argument of `enqueue_many` (`unique_key`, `group`): None,
/// one str for every job, or one str (or None) per payload.
fn spread(
    jobs: &mut [NewJob],
    arg: Option<&Bound<'_, PyAny>>,
    what: &str,
    set: impl Fn(&mut NewJob, Option<String>),
) -> PyResult<()> {
    match arg {
        None => Ok(()),
        Some(k) if k.is_none() => Ok(()),
        Some(k) if k.is_instance_of::<PyString>() => {
            let k: String = k.extract()?;
            jobs.iter_mut().for_each(|j| set(j, Some(k.clone())));
            Ok(())
        }
        Some(values) => {
            let values: Vec<Bound<'_, PyAny>> =
                items(values, what, "str or None, one per payload")?.collect::<PyResult<_>>()?;
            if values.len() != jobs.len() {
                // "unique_key has 1 keys for 2 payloads", "group has 1 groups for …"
                let noun = if what == "group" { "groups" } else { "keys" };
                return Err(PyValueError::new_err(format!(
                    "{what} has {} {noun} for {} payloads",
                    values.len(),
                    jobs.len()
                )));
            }
            for (job, v) in jobs.iter_mut().zip(&values) {
                set(job, text_arg(Some(v), what)?);
            }
            Ok(())
        }
    }
}

/// An `ids` argument: None, or an iterable of job ids.
fn job_ids(ids: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    job_ids_arg(ids, "ids")
}

/// An argument named `what` holding None or an iterable of job ids.
fn job_ids_arg(ids: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<i64>>> {
    match ids {
        Some(ids) if !ids.is_none() => {
            let mut out = Vec::new();
            for id in items(ids, what, "job ids (int)")? {
                out.push(integer(&id?, what)?);
            }
            Ok(Some(out))
        }
        _ => Ok(None),
    }
}

/// A `unique_key` or `group` argument: a str, or None for none.
fn text_arg(k: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<String>> {
    match k {
        Some(k) if !k.is_none() => {
            let s = k
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err(format!("{what} must be a str or None, got {}", type_name(k))))?;
            Ok(Some(s.to_str()?.to_owned()))
        }
        _ => Ok(None),
    }
}

impl Queue {
    fn claim_n(
        &self,
        py: Python<'_>,
        worker_id: &str,
        n: &Int,
        timeout: Option<Duration>,
        stop: Option<&Bound<'_, StopToken>>,
        cancel: Option<&Bound<'_, StopToken>>,
    ) -> PyResult<Vec<JobHandle>> {
        let n = batch_size("n", n).py()?;
        let cancel = cancel.map(|c| &c.get().inner);
        let stops: Vec<&CoreStop> = stop.map(|s| &s.get().inner).into_iter().chain(cancel).collect();
        let claimed = blocking(py, timeout, &stops, |spec| {
            let got = self.store.claim_wait(&self.name, worker_id, n, spec)?;
            Ok(wait::unless_abandoned(&self.store, got, cancel))
        })?;
        Ok(self.handles(claimed))
    }

    fn bridge(
        slf: &Bound<'_, Self>,
        worker_id: &str,
        n: &Int,
        timeout: ClaimTimeout,
        single: bool,
    ) -> PyResult<Py<PyAny>> {
        // Checked here, so a bad `n` raises at the call, not in the awaiting task.
        let n = batch_size("n", n).py()?;
        // Checked here, on the awaiting thread: the claim's own thread holds no transaction.
        slf.get().store.check_caller().py()?;
        // Forwarded as seconds, or None for "forever".
        let timeout = timeout.0.map(|d| d.as_secs_f64());
        let args = (worker_id, n, timeout, single).into_pyobject(slf.py())?;
        wait::bridge(&slf.getattr("_claim_blocking")?, &args, true)
    }

    pub(crate) fn new(store: Arc<CoreStore>, name: String, opts: QueueOpts) -> Self {
        Queue { store, name, opts }
    }

    /// Enqueues on the store (in `tx` when given) or on the caller's own `conn`.
    fn put(
        &self,
        py: Python<'_>,
        jobs: &[NewJob],
        shape: Shape,
        tx: Option<&Bound<'_, Transaction>>,
        conn: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        telemetry::send(py, &self.name, || match (tx, conn) {
            (Some(_), Some(_)) => Err(foreign::tx_and_conn()),
            (None, Some(c)) => self.on_conn(py, jobs, shape, c, Call::Sync),
            (tx, None) => {
                let ids = run(py, &self.store, tx, |t| self.store.enqueue(t, &self.name, &self.opts, jobs))?;
                foreign::shaped(py, ids, shape)
            }
        })
    }

    /// `aenqueue`/`aenqueue_many`: on the caller's async `conn`, or on the
    /// store's own connection from a thread, so the event loop never waits.
    fn aput(
        &self,
        py: Python<'_>,
        jobs: Vec<NewJob>,
        shape: Shape,
        conn: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        telemetry::asend(py, &self.name, || {
            if let Some(c) = conn {
                return self.on_conn(py, &jobs, shape, c, Call::Async);
            }
            let (store, name, opts) = (self.store.clone(), self.name.clone(), self.opts);
            foreign::to_thread(py, move |py| {
                let ids = run(py, &store, None, |t| store.enqueue(t, &name, &opts, &jobs))?;
                foreign::shaped(py, ids, shape)
            })
        })
    }

    /// The enqueue rendered for `conn`'s driver and run there (ADR 0015).
    fn on_conn(
        &self,
        py: Python<'_>,
        jobs: &[NewJob],
        shape: Shape,
        conn: &Bound<'_, PyAny>,
        call: Call,
    ) -> PyResult<Py<PyAny>> {
        let c = foreign::conn(&self.store, conn, call)?;
        let rendered = self.store.foreign_enqueue(&self.name, &self.opts, jobs, c.style).py()?;
        foreign::run(py, &self.store, &c, rendered, shape)
    }

    fn handles(&self, claimed: Vec<Claimed>) -> Vec<JobHandle> {
        claimed.into_iter().map(|c| JobHandle::new(self.store.clone(), c)).collect()
    }
}

#[pymethods]
impl Queue {
    /// The queue name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Adds one job; returns its id.
    #[pyo3(signature = (payload, *, delay=None, run_at=None, priority=None, max_attempts=None, expires=None, unique_key=None, group=None, after=None, on_failure="cancel", keep_result=None, tx=None, conn=None))]
    #[allow(clippy::too_many_arguments)]
    fn enqueue(
        &self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        delay: Option<&Bound<'_, PyAny>>,
        run_at: Option<&Bound<'_, PyAny>>,
        priority: Option<&Bound<'_, PyAny>>,
        max_attempts: Option<&Bound<'_, PyAny>>,
        expires: Option<&Bound<'_, PyAny>>,
        unique_key: Option<&Bound<'_, PyAny>>,
        group: Option<&Bound<'_, PyAny>>,
        after: Option<&Bound<'_, PyAny>>,
        on_failure: &str,
        keep_result: Option<&Bound<'_, PyAny>>,
        tx: Option<&Bound<'_, Transaction>>,
        conn: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let o = JobOpts::parse(delay, run_at, priority, max_attempts, expires)?.with_flow(
            after,
            on_failure,
            keep_result,
        )?;
        self.put(
            py,
            &[o.job(json::encode(payload)?, text_arg(unique_key, "unique_key")?, text_arg(group, "group")?)],
            Shape::One,
            tx,
            conn,
        )
    }

    /// `enqueue` for async code: on an async driver's `conn`, or on a thread.
    #[pyo3(signature = (payload, *, delay=None, run_at=None, priority=None, max_attempts=None, expires=None, unique_key=None, group=None, after=None, on_failure="cancel", keep_result=None, conn=None))]
    #[allow(clippy::too_many_arguments)]
    fn aenqueue(
        &self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        delay: Option<&Bound<'_, PyAny>>,
        run_at: Option<&Bound<'_, PyAny>>,
        priority: Option<&Bound<'_, PyAny>>,
        max_attempts: Option<&Bound<'_, PyAny>>,
        expires: Option<&Bound<'_, PyAny>>,
        unique_key: Option<&Bound<'_, PyAny>>,
        group: Option<&Bound<'_, PyAny>>,
        after: Option<&Bound<'_, PyAny>>,
        on_failure: &str,
        keep_result: Option<&Bound<'_, PyAny>>,
        conn: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let o = JobOpts::parse(delay, run_at, priority, max_attempts, expires)?.with_flow(
            after,
            on_failure,
            keep_result,
        )?;
        self.aput(
            py,
            vec![o.job(json::encode(payload)?, text_arg(unique_key, "unique_key")?, text_arg(group, "group")?)],
            Shape::One,
            conn,
        )
    }

    /// Adds many jobs in one transaction, validating every payload first.
    #[pyo3(signature = (payloads, *, delay=None, run_at=None, priority=None, max_attempts=None, expires=None, unique_key=None, group=None, after=None, on_failure="cancel", keep_result=None, tx=None, conn=None))]
    #[allow(clippy::too_many_arguments)]
    fn enqueue_many(
        &self,
        py: Python<'_>,
        payloads: &Bound<'_, PyAny>,
        delay: Option<&Bound<'_, PyAny>>,
        run_at: Option<&Bound<'_, PyAny>>,
        priority: Option<&Bound<'_, PyAny>>,
        max_attempts: Option<&Bound<'_, PyAny>>,
        expires: Option<&Bound<'_, PyAny>>,
        unique_key: Option<&Bound<'_, PyAny>>,
        group: Option<&Bound<'_, PyAny>>,
        after: Option<&Bound<'_, PyAny>>,
        on_failure: &str,
        keep_result: Option<&Bound<'_, PyAny>>,
        tx: Option<&Bound<'_, Transaction>>,
        conn: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let jobs = JobOpts::parse(delay, run_at, priority, max_attempts, expires)?
            .with_flow(after, on_failure, keep_result)?
            .jobs(payloads, unique_key, group)?;
        self.put(py, &jobs, Shape::Many, tx, conn)
    }

    /// `enqueue_many` for async code: on an async driver's `conn`, or on a thread.
    #[pyo3(signature = (payloads, *, delay=None, run_at=None, priority=None, max_attempts=None, expires=None, unique_key=None, group=None, after=None, on_failure="cancel", keep_result=None, conn=None))]
    #[allow(clippy::too_many_arguments)]
    fn aenqueue_many(
        &self,
        py: Python<'_>,
        payloads: &Bound<'_, PyAny>,
        delay: Option<&Bound<'_, PyAny>>,
        run_at: Option<&Bound<'_, PyAny>>,
        priority: Option<&Bound<'_, PyAny>>,
        max_attempts: Option<&Bound<'_, PyAny>>,
        expires: Option<&Bound<'_, PyAny>>,
        unique_key: Option<&Bound<'_, PyAny>>,
        group: Option<&Bound<'_, PyAny>>,
        after: Option<&Bound<'_, PyAny>>,
        on_failure: &str,
        keep_result: Option<&Bound<'_, PyAny>>,
        conn: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let jobs = JobOpts::parse(delay, run_at, priority, max_attempts, expires)?
            .with_flow(after, on_failure, keep_result)?
            .jobs(payloads, unique_key, group)?;
        self.aput(py, jobs, Shape::Many, conn)
    }

    /// Claims one job: `timeout=0` looks once, seconds wait up to that long
    /// (woken by commits), None waits until a job arrives, `stop` or close.
    #[pyo3(signature = (worker_id, *, timeout=ClaimTimeout::default(), stop=None))]
    #[pyo3(text_signature = "(self, worker_id, *, timeout=0, stop=None)")]
    fn claim(
        &self,
        py: Python<'_>,
        worker_id: &str,
        timeout: ClaimTimeout,
        stop: Option<&Bound<'_, StopToken>>,
    ) -> PyResult<Option<JobHandle>> {
        Ok(self.claim_n(py, worker_id, &Int::new(1), timeout.0, stop, None)?.pop())
    }

    /// Claims up to `n` (1..=`MAX_BATCH`, 1000) jobs, returning as soon as any is claimable.
    #[pyo3(signature = (worker_id, n, *, timeout=ClaimTimeout::default(), stop=None))]
    #[pyo3(text_signature = "(self, worker_id, n, *, timeout=0, stop=None)")]
    fn claim_batch(
        &self,
        py: Python<'_>,
        worker_id: &str,
        n: Int,
        timeout: ClaimTimeout,
        stop: Option<&Bound<'_, StopToken>>,
    ) -> PyResult<Vec<JobHandle>> {
        self.claim_n(py, worker_id, &n, timeout.0, stop, None)
    }

    /// The asyncio twin of `claim`.
    #[pyo3(signature = (worker_id, *, timeout=ClaimTimeout::default()))]
    #[pyo3(text_signature = "(self, worker_id, *, timeout=0)")]
    fn aclaim(slf: &Bound<'_, Self>, worker_id: &str, timeout: ClaimTimeout) -> PyResult<Py<PyAny>> {
        Self::bridge(slf, worker_id, &Int::new(1), timeout, true)
    }

    /// The asyncio twin of `claim_batch`.
    #[pyo3(signature = (worker_id, n, *, timeout=ClaimTimeout::default()))]
    #[pyo3(text_signature = "(self, worker_id, n, *, timeout=0)")]
    fn aclaim_batch(slf: &Bound<'_, Self>, worker_id: &str, n: Int, timeout: ClaimTimeout) -> PyResult<Py<PyAny>> {
        Self::bridge(slf, worker_id, &n, timeout, false)
    }

    /// One blocking claim for the asyncio bridge (`cancel` is set when the task is cancelled).
    fn _claim_blocking(
        &self,
        py: Python<'_>,
        worker_id: &str,
        n: Int,
        timeout: ClaimTimeout,
        single: bool,
        cancel: &Bound<'_, StopToken>,
    ) -> PyResult<Py<PyAny>> {
        let mut got = self.claim_n(py, worker_id, &n, timeout.0, None, Some(cancel))?;
        if single {
            return Ok(got.pop().map(|h| Py::new(py, h)).transpose()?.map_or_else(|| py.None(), Py::into_any));
        }
        Ok(PyList::new(py, got)?.into_any().unbind())
    }

    /// Claimed jobs as they come, for `for` and `async for`; ends when `stop` is set.
    #[pyo3(signature = (worker_id, *, stop=None, batch=Int::new(1)))]
    #[pyo3(text_signature = "(self, worker_id, *, stop=None, batch=1)")]
    fn jobs(&self, worker_id: &str, stop: Option<&Bound<'_, StopToken>>, batch: Int) -> PyResult<JobIterator> {
        let batch = batch_size("batch", &batch).py()?;
        alkstore_core::validate_name("worker", worker_id).py()?;
        Ok(JobIterator::new(self.store.clone(), self.name.clone(), worker_id.to_owned(), batch, stop))
    }

    /// Acks many handles in one commit; returns how many landed.
    #[pyo3(signature = (jobs, tx=None))]
    fn ack_batch(
        &self,
        py: Python<'_>,
        jobs: &Bound<'_, PyAny>,
        tx: Option<&Bound<'_, Transaction>>,
    ) -> PyResult<usize> {
        let mut handles = Vec::new();
        for j in items(jobs, "jobs", "JobHandle")? {
            let j = j?;
            let Ok(h) = j.cast_into::<JobHandle>() else {
                return Err(PyTypeError::new_err("jobs must contain only JobHandle objects"));
            };
            // Another store's handle can match a row of ours by id, worker and
            // claim token (both count from 1): refuse the whole batch.
            if !h.get().claimed_through(&self.store) {
                return Err(PyValueError::new_err(
                    "jobs contains a handle claimed through another store; ack it through its own store",
                ));
            }
            handles.push(h);
        }
        // Handles of another queue cannot be valid for this one: they do not land.
        let refs: Vec<&Claimed> = handles.iter().map(|h| h.get().claimed()).filter(|c| c.queue == self.name).collect();
        run(py, &self.store, tx, |t| self.store.ack(t, &refs))
    }

    /// The Worker's ack of `job` (a handle of this store, any queue) and
    /// claim of up to `n` jobs of this queue, in one transaction where the
    /// engine can (ADR 0022). Returns whether the ack landed and the jobs.
    /// An empty list does not mean the queue is empty (a lapsed lease needs
    /// `claim`). Not public: the Worker's hot path.
    #[pyo3(signature = (job, worker_id, n, *, result=None))]
    fn _ack_then_claim(
        &self,
        py: Python<'_>,
        job: &Bound<'_, JobHandle>,
        worker_id: &str,
        n: Int,
        result: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(bool, Vec<JobHandle>)> {
        let n = batch_size("n", &n).py()?;
        let h = job.get();
        if !h.claimed_through(&self.store) {
            return Err(PyValueError::new_err("job was claimed through another store"));
        }
        let done = h.claimed();
        // A handler's return value (SPEC §25) is kept by the ack where the job keeps results.
        let result = match result {
            Some(r) if !r.is_none() => Some(json::encode_at(r, "result")?),
            _ => None,
        };
        let (landed, claimed) = exit::detach(py, || match &result {
            Some(r) => self.store.ack_result_then_claim(done, r, &self.name, worker_id, n),
            None => self.store.ack_then_claim(done, &self.name, worker_id, n),
        })
        .py()?;
        Ok((h.note_acked(landed), self.handles(claimed)))
    }

    /// A live or dead job of this queue, or None.
    #[pyo3(signature = (job_id, tx=None))]
    fn get_job(&self, py: Python<'_>, job_id: Int, tx: Option<&Bound<'_, Transaction>>) -> PyResult<Option<Job>> {
        let job_id = job_id.get("job_id")?;
        Ok(run(py, &self.store, tx, |t| self.store.get_job(t, &self.name, job_id))?.map(Job::from))
    }

    /// Deletes a pending or processing job of this queue.
    #[pyo3(signature = (job_id, tx=None))]
    fn cancel(&self, py: Python<'_>, job_id: Int, tx: Option<&Bound<'_, Transaction>>) -> PyResult<bool> {
        let job_id = job_id.get("job_id")?;
        run(py, &self.store, tx, |t| self.store.cancel(t, &self.name, job_id))
    }

    /// Moves expired rows to dead and purges dead rows past retention.
    fn sweep_expired(&self, py: Python<'_>) -> PyResult<Swept> {
        Ok(exit::detach(py, || self.store.sweep_expired(&self.name)).py()?.into())
    }

    /// Claims of this queue hand out nothing, in every process, until
    /// `resume()`; everything else goes on. Idempotent.
    fn pause(&self, py: Python<'_>) -> PyResult<()> {
        exit::detach(py, || self.store.pause(&self.name)).py()
    }

    /// Claims hand out jobs again, and waiting claimers wake. Idempotent.
    fn resume(&self, py: Python<'_>) -> PyResult<()> {
        exit::detach(py, || self.store.resume(&self.name)).py()
    }

    /// Whether the queue is paused.
    fn is_paused(&self, py: Python<'_>) -> PyResult<bool> {
        exit::detach(py, || self.store.is_paused(&self.name)).py()
    }

    /// Limits the queue over every worker of every process (SPEC §24):
    /// `concurrency` (processing jobs at once), `rate=(count, period_s)`
    /// (claims in any window of that length), `group_concurrency` (processing
    /// jobs per group key). The kinds given change, None clears one, the
    /// others stay. Returns the limits now in force.
    #[pyo3(signature = (**kwargs), text_signature = "(self, *, concurrency=..., rate=..., group_concurrency=...)")]
    fn set_limits(&self, py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<QueueLimits> {
        let change = crate::limits::change(kwargs)?;
        Ok(exit::detach(py, || self.store.set_limits(&self.name, &change)).py()?.into())
    }

    /// The queue's limits (every kind None when it has none).
    fn limits(&self, py: Python<'_>) -> PyResult<QueueLimits> {
        Ok(exit::detach(py, || self.store.limits(&self.name)).py()?.into())
    }

    /// Dead jobs back to pending, ready now, attempts 0, in one transaction:
    /// those of `ids` that are dead here, or else the oldest `limit`. A job
    /// whose unique key is live again stays dead. Returns the ids moved.
    #[pyo3(signature = (ids=None, *, limit=Int::new(1000), tx=None), text_signature = "(self, ids=None, *, limit=1000, tx=None)")]
    fn requeue_dead(
        &self,
        py: Python<'_>,
        ids: Option<&Bound<'_, PyAny>>,
        limit: Int,
        tx: Option<&Bound<'_, Transaction>>,
    ) -> PyResult<Vec<i64>> {
        let ids = job_ids(ids)?;
        let limit = batch_size("limit", &limit).py()?;
        run(py, &self.store, tx, |t| self.store.requeue_dead(t, &self.name, ids.as_deref(), limit))
    }

    /// Deletes dead jobs: those of `ids`, or those dead for at least
    /// `older_than_s`, or (neither) the oldest `limit`. Returns how many.
    #[pyo3(signature = (ids=None, *, older_than_s=None, limit=Int::new(1000), tx=None), text_signature = "(self, ids=None, *, older_than_s=None, limit=1000, tx=None)")]
    fn purge_dead(
        &self,
        py: Python<'_>,
        ids: Option<&Bound<'_, PyAny>>,
        older_than_s: Option<&Bound<'_, PyAny>>,
        limit: Int,
        tx: Option<&Bound<'_, Transaction>>,
    ) -> PyResult<i64> {
        let ids = job_ids(ids)?;
        let older = opt_duration(older_than_s, "older_than_s")?;
        let limit = batch_size("limit", &limit).py()?;
        run(py, &self.store, tx, |t| self.store.purge_dead(t, &self.name, ids.as_deref(), older, limit))
    }

    /// Counts of this queue's jobs by state.
    fn stats(&self, py: Python<'_>) -> PyResult<QueueStats> {
        let (stats, limits) = exit::detach(py, || {
            Ok::<_, alkstore_core::Error>((self.store.stats(&self.name)?, self.store.limits(&self.name)?))
        })
        .py()?;
        Ok(QueueStats::with_limits(stats, limits))
    }

    /// Dead jobs, newest first; `before_id` pages.
    #[pyo3(signature = (limit=Int::new(100), before_id=None), text_signature = "(self, limit=100, before_id=None)")]
    fn dead_jobs<'py>(&self, py: Python<'py>, limit: Int, before_id: Option<Int>) -> PyResult<Bound<'py, PyList>> {
        let limit = batch_size("limit", &limit).py()?;
        let before_id = before_id.map(|b| b.get("before_id")).transpose()?;
        let rows = exit::detach(py, || self.store.dead_jobs(&self.name, limit, before_id)).py()?;
        PyList::new(py, rows.into_iter().map(Job::from))
    }

    /// Pending and processing jobs, newest first; `before_id` pages (ADR 0007).
    #[pyo3(signature = (limit=Int::new(100), before_id=None), text_signature = "(self, limit=100, before_id=None)")]
    fn live_jobs<'py>(&self, py: Python<'py>, limit: Int, before_id: Option<Int>) -> PyResult<Bound<'py, PyList>> {
        let limit = batch_size("limit", &limit).py()?;
        let before_id = before_id.map(|b| b.get("before_id")).transpose()?;
        let rows = exit::detach(py, || self.store.live_jobs(&self.name, limit, before_id)).py()?;
        PyList::new(py, rows.into_iter().map(Job::from))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("<alkstore.Queue {}>", repr::text(py, &self.name)?))
    }
}
