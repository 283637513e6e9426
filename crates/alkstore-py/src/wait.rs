//! Blocking waits from Python: the GIL is released for the whole wait, and
//! about every 100 ms the waiter briefly takes it to let Ctrl-C through.

use std::time::Duration;

use alkstore_core::{Error, StopToken as CoreStop, WaitSpec};
use parking_lot::Mutex;
use pyo3::prelude::*;

use crate::convert;
use crate::errors::to_pyerr;

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
pub fn blocking<T: Send>(
    py: Python<'_>,
    timeout: Option<Duration>,
    stops: &[&CoreStop],
    f: impl FnOnce(&WaitSpec<'_>) -> alkstore_core::Result<T> + Send,
) -> PyResult<T> {
    let signal: Mutex<Option<PyErr>> = Mutex::new(None);
    let interrupted = || {
        Python::attach(|py| match py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                *signal.lock() = Some(e);
                true
            }
        })
    };
    let r = py.detach(|| f(&WaitSpec { timeout, stops, interrupted: &interrupted }));
    match r {
        Ok(v) => Ok(v),
        Err(Error::Interrupted) => {
            Err(signal.lock().take().unwrap_or_else(|| pyo3::exceptions::PyKeyboardInterrupt::new_err("interrupted")))
        }
        Err(e) => Err(to_pyerr(e)),
    }
}

/// `__anext__` of an iterator that also iterates with `for`: its blocking
/// `_next_blocking(cancel)` step runs on a thread of its own through
/// `alkstore._aio.run_blocking`, so the event loop keeps running.
pub fn anext(slf: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let bridge = slf.py().import("alkstore._aio")?.getattr("run_blocking")?;
    Ok(bridge.call1((slf.getattr("_next_blocking")?,))?.unbind())
}

/// The end of an async iteration: `None` from a step becomes StopAsyncIteration.
pub fn or_stop_async<T>(item: Option<T>) -> PyResult<T> {
    item.ok_or_else(|| pyo3::exceptions::PyStopAsyncIteration::new_err(()))
}
