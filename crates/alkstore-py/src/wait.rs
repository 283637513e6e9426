//! Blocking waits from Python: the GIL is released for the whole wait, and
//! about every 100 ms the waiter briefly takes it to let Ctrl-C through.
//! Also the two ends of the asyncio bridge (`alkstore._aio`) kept in Rust.

use std::time::Duration;

use alkstore_core::{Claimed, Error, StopToken as CoreStop, Store as CoreStore, WaitSpec};
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::convert;
use crate::errors::{to_pyerr, IntoPyResult};
use crate::exit;

/// `timeout=` of a claim: absent means 0 (one look, never waits), `None`
/// means wait forever — so the default cannot be Python's `None`.
pub struct ClaimTimeout(pub Option<Duration>);

impl Default for ClaimTimeout {
    fn default() -> Self {
        ClaimTimeout(Some(Duration::ZERO))
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for ClaimTimeout {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        timeout(Some(&obj.to_owned())).map(ClaimTimeout)
    }
}

/// `timeout=` of a blocking call: 0 → one look, seconds/timedelta → that long, None → forever.
pub fn timeout(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Duration>> {
    let Some(t) = obj.filter(|t| !t.is_none()) else { return Ok(None) };
    // Bounded by the core's rule for waits (ADR 0011): None is "forever".
    convert::wait(t, "timeout").map(Some)
}

/// Runs `f` (which waits per the `WaitSpec` it is given) with the GIL
/// released; a pending signal ends the wait and is raised here.
///
/// At interpreter exit the waiting thread never re-attaches: the signal
/// check ends the wait instead, and the thread parks where it would have
/// returned (see `crate::exit`).
pub fn blocking<T: Send>(
    py: Python<'_>,
    timeout: Option<Duration>,
    stops: &[&CoreStop],
    f: impl FnOnce(&WaitSpec<'_>) -> alkstore_core::Result<T> + Send,
) -> PyResult<T> {
    let signal: Mutex<Option<PyErr>> = Mutex::new(None);
    let interrupted = || {
        let Some(_entering) = exit::entering() else { return true };
        match Python::try_attach(|py| py.check_signals()) {
            Some(Ok(())) => false,
            Some(Err(e)) => {
                *signal.lock() = Some(e);
                true
            }
            // The interpreter is going away: end the wait (and park below).
            None => true,
        }
    };
    let (r, entering) = py.detach(|| {
        let r = f(&WaitSpec { timeout, stops, interrupted: &interrupted });
        (r, exit::entering_or_park())
    });
    drop(entering);
    match r {
        Ok(v) => Ok(v),
        Err(Error::Interrupted) => {
            Err(signal.lock().take().unwrap_or_else(|| pyo3::exceptions::PyKeyboardInterrupt::new_err("interrupted")))
        }
        Err(e) => Err(to_pyerr(e)),
    }
}

/// Claims whose caller is gone — its asyncio task was cancelled (`cancel`),
/// or the interpreter is exiting — go back to pending with the attempt
/// refunded, instead of being held by nobody until their leases lapse.
/// Returns the claims that still have a taker. Runs detached.
pub fn unless_abandoned(store: &CoreStore, claimed: Vec<Claimed>, cancel: Option<&CoreStop>) -> Vec<Claimed> {
    if claimed.is_empty() || !(cancel.is_some_and(CoreStop::stopped) || exit::exiting()) {
        return claimed;
    }
    for c in &claimed {
        // A failed release leaves the job to its lease, as before: nothing better to do here.
        let _ = store.release(c);
    }
    Vec::new()
}

/// `__anext__` of an iterator that also iterates with `for`: its blocking
/// `_next_blocking(cancel)` step runs on a thread of its own through
/// `alkstore._aio.run_blocking`, so the event loop keeps running. The
/// transaction check is made here, on the awaiting thread (SPEC §6): the
/// step's thread holds no transaction, so it could not tell. With
/// `give_back`, a step result the cancelled task never received is handed to
/// `alkstore._aio.release`.
pub fn anext(slf: &Bound<'_, PyAny>, store: &CoreStore, give_back: bool) -> PyResult<Py<PyAny>> {
    store.check_caller().py()?;
    bridge(&slf.getattr("_next_blocking")?, &PyTuple::empty(slf.py()), give_back)
}

/// Awaits `step(*args, cancel)` on a thread through `alkstore._aio.run_blocking`.
pub fn bridge(step: &Bound<'_, PyAny>, args: &Bound<'_, PyTuple>, give_back: bool) -> PyResult<Py<PyAny>> {
    let py = step.py();
    let aio = py.import("alkstore._aio")?;
    let kwargs = PyDict::new(py);
    if give_back {
        kwargs.set_item("give_back", aio.getattr("release")?)?;
    }
    let all: Vec<Bound<'_, PyAny>> = std::iter::once(step.clone()).chain(args.iter()).collect();
    let all = PyTuple::new(py, all)?;
    Ok(aio.getattr("run_blocking")?.call(all, Some(&kwargs))?.unbind())
}

/// The end of an async iteration: `None` from a step becomes StopAsyncIteration.
pub fn or_stop_async<T>(item: Option<T>) -> PyResult<T> {
    item.ok_or_else(|| pyo3::exceptions::PyStopAsyncIteration::new_err(()))
}
