//! `q.jobs(worker_id, stop=…, batch=…)`: one object usable with `for` and
//! `async for`.
//!
//! A batch claim hands its jobs out one at a time; the rest wait in a buffer,
//! leased to this worker. Those are the iterator's to give back: `close()`,
//! leaving a `with` block, `stop` and dropping the iterator all release them
//! (back to pending, attempt refunded), and a buffered job whose lease has
//! run out is released rather than handed out — the caller could not settle
//! it — and the iterator claims again.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::{Claimed, StopToken as CoreStop, Store as CoreStore};
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyType};

use crate::errors::IntoPyResult;
use crate::exit;
use crate::handle::JobHandle;
use crate::repr;
use crate::stop::StopToken;
use crate::wait::{self, blocking};

/// A claimed job not handed out yet, with when its claim returned.
struct Buffered {
    claimed: Claimed,
    at: Instant,
}

impl Buffered {
    /// Whether the lease certainly still holds. The database lapses it after
    /// `deadline`, a whole second at least `deadline - claimed_at` seconds
    /// after the claim ran, and the claim ran before it returned: so while
    /// less than that has passed here, it holds.
    fn fresh(&self) -> bool {
        let lease = u64::try_from(self.claimed.deadline - self.claimed.claimed_at).unwrap_or(0);
        self.at.elapsed() < Duration::from_secs(lease)
    }
}

#[derive(Default)]
struct State {
    buffered: VecDeque<Buffered>,
    /// `close()` ran: the iteration is over.
    closed: bool,
}

/// Yields claimed jobs until `stop` is set, `close()` or the store closes.
#[pyclass(name = "JobIterator", module = "alkstore", frozen)]
pub struct JobIterator {
    store: Arc<CoreStore>,
    queue: String,
    worker_id: String,
    batch: usize,
    stop: Option<CoreStop>,
    state: Mutex<State>,
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
            state: Mutex::new(State::default()),
        }
    }

    fn stopped(&self) -> bool {
        self.stop.as_ref().is_some_and(CoreStop::stopped)
    }

    /// Gives `claims` back (pending now, attempt refunded). One whose lease
    /// already lapsed is refused by the engine and left to its reclaim.
    fn release(&self, claims: impl IntoIterator<Item = Claimed>) {
        release_all(&self.store, claims);
    }

    /// Ends the iteration and releases what is buffered. Runs detached.
    /// Refused, keeping the buffer, in a thread that holds a transaction of
    /// the store: a release cannot run there (SPEC §6).
    fn shut(&self) -> alkstore_core::Result<()> {
        self.check_thread()?;
        let left = self.take_buffered();
        self.release(left);
        Ok(())
    }

    /// Ends the iteration, handing back what was buffered.
    fn take_buffered(&self) -> Vec<Claimed> {
        let mut st = self.state.lock();
        st.closed = true;
        st.buffered.drain(..).map(|b| b.claimed).collect()
    }

    /// The calling thread may use the store without `tx=` (a closed store is
    /// fine here: there is nothing left to release).
    fn check_thread(&self) -> alkstore_core::Result<()> {
        match self.store.check_caller() {
            Err(e @ alkstore_core::Error::Transaction(_)) => Err(e),
            _ => Ok(()),
        }
    }

    /// The next buffered job that can still be settled, releasing the lapsing ones.
    fn next_buffered(&self) -> Option<Claimed> {
        loop {
            let b = self.state.lock().buffered.pop_front()?;
            if b.fresh() {
                return Some(b.claimed);
            }
            self.release([b.claimed]);
        }
    }

    /// One step, detached: a buffered job, or a (waiting) claim. None at the
    /// end of the iteration, or when `cancel` says nobody awaits this step.
    fn step(
        &self,
        spec: &alkstore_core::WaitSpec<'_>,
        cancel: Option<&CoreStop>,
    ) -> alkstore_core::Result<Option<Claimed>> {
        if self.state.lock().closed {
            return Ok(None);
        }
        if self.stopped() {
            self.shut()?;
            return Ok(None);
        }
        if cancel.is_some_and(CoreStop::stopped) {
            return Ok(None);
        }
        if let Some(c) = self.next_buffered() {
            return Ok(Some(c));
        }
        let got = self.store.claim_wait(&self.queue, &self.worker_id, self.batch, spec)?;
        let mut it = wait::unless_abandoned(&self.store, got, cancel).into_iter();
        let Some(first) = it.next() else { return Ok(None) };
        let at = Instant::now();
        let mut st = self.state.lock();
        if st.closed {
            // Closed by another thread while this claim waited.
            drop(st);
            self.release(std::iter::once(first).chain(it));
            return Ok(None);
        }
        st.buffered.extend(it.map(|claimed| Buffered { claimed, at }));
        Ok(Some(first))
    }

    fn next_job(&self, py: Python<'_>, cancel: Option<&CoreStop>) -> PyResult<Option<JobHandle>> {
        let mut stops: Vec<&CoreStop> = self.stop.iter().collect();
        stops.extend(cancel);
        let got = blocking(py, None, &stops, |spec| self.step(spec, cancel))?;
        Ok(got.map(|c| JobHandle::new(self.store.clone(), c)))
    }
}

impl Drop for JobIterator {
    /// Dropping the iterator (a `break` out of `for job in q.jobs(...)`)
    /// gives back the jobs it still holds.
    fn drop(&mut self) {
        if self.state.get_mut().buffered.is_empty() {
            return;
        }
        if self.check_thread().is_err() {
            // Dropped inside a transaction: release once it ends, from a thread of its own.
            let (store, left) = (self.store.clone(), self.take_buffered());
            std::thread::spawn(move || release_all(&store, left));
            return;
        }
        // Detached when we can: a release waits for the database.
        if Python::try_attach(|py| exit::detach(py, || self.shut())).is_none() {
            let _ = self.shut();
        }
    }
}

/// Releases each claim, best effort: a store closed meanwhile leaves the jobs to their leases.
fn release_all(store: &CoreStore, claims: impl IntoIterator<Item = Claimed>) {
    for c in claims {
        let _ = store.release(&c);
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
        wait::anext(slf.as_any(), &slf.get().store, true)
    }

    /// One blocking step for the asyncio bridge; raises StopAsyncIteration at the end.
    fn _next_blocking(&self, py: Python<'_>, cancel: &Bound<'_, StopToken>) -> PyResult<JobHandle> {
        wait::or_stop_async(self.next_job(py, Some(&cancel.get().inner))?)
    }

    /// Ends the iteration; jobs claimed but not handed out go back to
    /// pending with their attempt refunded. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        exit::detach(py, || self.shut()).py()
    }

    /// The asyncio twin of `close` (for `contextlib.aclosing`).
    fn aclose(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        slf.get().check_thread().py()?;
        wait::bridge(&slf.getattr("_close_blocking")?, &PyTuple::empty(slf.py()), false)
    }

    fn _close_blocking(&self, py: Python<'_>, _cancel: &Bound<'_, StopToken>) -> PyResult<()> {
        self.close(py)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the iterator; exceptions propagate.
    #[pyo3(signature = (_exc_type, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyType>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "<alkstore.JobIterator queue={} worker_id={}>",
            repr::text(py, &self.queue)?,
            repr::text(py, &self.worker_id)?
        ))
    }
}
