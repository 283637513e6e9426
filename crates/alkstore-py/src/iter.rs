//! `q.jobs(worker_id, stop=…)`: one object usable with `for` and `async for`.

use std::collections::VecDeque;
use std::sync::Arc;

use alkstore_core::{Claimed, StopToken as CoreStop, Store as CoreStore};
use parking_lot::Mutex;
use pyo3::prelude::*;

use crate::handle::JobHandle;
use crate::stop::StopToken;
use crate::wait::{self, blocking};

/// Yields claimed jobs until `stop` is set (or the store closes).
#[pyclass(name = "JobIterator", module = "alkstore", frozen)]
pub struct JobIterator {
    store: Arc<CoreStore>,
    queue: String,
    worker_id: String,
    batch: usize,
    stop: Option<CoreStop>,
    /// Claimed by a batch but not handed out yet.
    buffered: Mutex<VecDeque<Claimed>>,
}

impl JobIterator {
    pub(crate) fn new(
        store: Arc<CoreStore>,
        queue: String,
        worker_id: String,
        batch: usize,
        stop: Option<&Bound<'_, StopToken>>,
    ) -> Self {
        JobIterator {
            store,
            queue,
            worker_id,
            batch,
            stop: stop.map(|s| s.get().inner.clone()),
            buffered: Mutex::new(VecDeque::new()),
        }
    }

    fn stopped(&self) -> bool {
        self.stop.as_ref().is_some_and(CoreStop::stopped)
    }

    /// Hands buffered claims back (refunding their attempts) once we stop.
    fn release_buffered(&self, py: Python<'_>) {
        let left: Vec<Claimed> = self.buffered.lock().drain(..).collect();
        if !left.is_empty() {
            py.detach(|| {
                for c in &left {
                    let _ = self.store.release(c);
                }
            });
        }
    }

    fn next_job(&self, py: Python<'_>, cancel: Option<&CoreStop>) -> PyResult<Option<JobHandle>> {
        if self.stopped() {
            self.release_buffered(py);
            return Ok(None);
        }
        if let Some(c) = self.buffered.lock().pop_front() {
            return Ok(Some(JobHandle::new(self.store.clone(), c)));
        }
        let mut stops: Vec<&CoreStop> = self.stop.iter().collect();
        stops.extend(cancel);
        let claimed =
            blocking(py, None, &stops, |spec| self.store.claim_wait(&self.queue, &self.worker_id, self.batch, spec))?;
        let mut it = claimed.into_iter();
        let Some(first) = it.next() else { return Ok(None) };
        self.buffered.lock().extend(it);
        Ok(Some(JobHandle::new(self.store.clone(), first)))
    }
}

#[pymethods]
impl JobIterator {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<JobHandle>> {
        self.next_job(py, None)
    }

    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        wait::anext(slf.as_any())
    }

    /// One blocking step for the asyncio bridge; raises StopAsyncIteration at the end.
    fn _next_blocking(&self, py: Python<'_>, cancel: &Bound<'_, StopToken>) -> PyResult<JobHandle> {
        wait::or_stop_async(self.next_job(py, Some(&cancel.get().inner))?)
    }

    fn __repr__(&self) -> String {
        format!("<alkstore.JobIterator queue={:?} worker_id={:?}>", self.queue, self.worker_id)
    }
}
