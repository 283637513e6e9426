//! `alkstore.StopToken`, shared across threads; waiting releases the GIL.

use std::time::Duration;

use alkstore_core::StopToken as CoreStop;
use pyo3::prelude::*;

use crate::convert::number;
use crate::exit;
use crate::repr;

/// A "please stop" flag that every blocking call of alkstore accepts.
#[pyclass(name = "StopToken", module = "alkstore", frozen)]
#[derive(Default)]
pub struct StopToken {
    pub(crate) inner: CoreStop,
}

#[pymethods]
impl StopToken {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Sets the token; every waiter wakes. Idempotent.
    fn stop(&self) {
        self.inner.stop();
    }

    /// Whether `stop()` was called.
    #[getter]
    fn stopped(&self) -> bool {
        self.inner.stopped()
    }

    /// Waits until stopped or `timeout` seconds pass; returns `stopped`.
    /// Wakes every 100 ms to let Ctrl-C through.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let limit = match timeout {
            Some(t) if !t.is_none() => Some(number(t, "timeout")?.max(0.0)),
            _ => None,
        };
        let start = std::time::Instant::now();
        loop {
            let left = limit.map(|l| l - start.elapsed().as_secs_f64());
            let slice = match left {
                Some(l) if l <= 0.0 => return Ok(self.inner.stopped()),
                Some(l) => l.min(0.1),
                None => 0.1,
            };
            let inner = self.inner.clone();
            // At interpreter exit a waiting daemon thread parks rather than re-attach (crate::exit).
            let (set, entering) =
                py.detach(move || (inner.wait(Some(Duration::from_secs_f64(slice))), exit::entering_or_park()));
            drop(entering);
            if set {
                return Ok(true);
            }
            py.check_signals()?;
        }
    }

    fn __repr__(&self) -> String {
        format!("<alkstore.StopToken stopped={}>", repr::boolean(self.inner.stopped()))
    }
}
