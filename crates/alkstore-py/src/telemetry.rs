//! The PRODUCER span around an enqueue (SPEC §19, ADR 0019): only once the
//! application has imported `opentelemetry.trace` itself, so without it an
//! enqueue pays one dictionary look-up and alkstore imports nothing. The
//! span's names and attributes live in Python (`alkstore._otel`), next to
//! the worker's.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

static MODULES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
static OTEL: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// `alkstore._otel` when the application has imported `opentelemetry.trace`.
fn otel(py: Python<'_>) -> PyResult<Option<Bound<'_, PyModule>>> {
    let modules = MODULES.get_or_try_init(py, || -> PyResult<Py<PyDict>> {
        Ok(py.import("sys")?.getattr("modules")?.cast_into::<PyDict>()?.unbind())
    })?;
    if !modules.bind(py).contains(intern!(py, "opentelemetry.trace"))? {
        return Ok(None);
    }
    let m = OTEL.get_or_try_init(py, || py.import("alkstore._otel").map(Bound::unbind))?;
    Ok(Some(m.bind(py).clone()))
}

/// Runs `call` (a synchronous enqueue returning its id or ids) inside a span
/// `send <queue>` when a tracer provider is set.
pub(crate) fn send(py: Python<'_>, queue: &str, call: impl FnOnce() -> PyResult<Py<PyAny>>) -> PyResult<Py<PyAny>> {
    let Some(m) = otel(py)? else { return call() };
    let span = m.call_method1(intern!(py, "send_span"), (queue,))?;
    if span.is_none() {
        return call();
    }
    let sent = intern!(py, "sent");
    match call() {
        Ok(ids) => {
            m.call_method1(sent, (span, ids.bind(py), py.None()))?;
            Ok(ids)
        }
        Err(e) => {
            m.call_method1(sent, (span, py.None(), e.value(py)))?;
            Err(e)
        }
    }
}

/// `send` for the async enqueues: `start` returns an awaitable, and the span
/// ends when that is awaited (`alkstore._otel.sent_after`).
pub(crate) fn asend(py: Python<'_>, queue: &str, start: impl FnOnce() -> PyResult<Py<PyAny>>) -> PyResult<Py<PyAny>> {
    let Some(m) = otel(py)? else { return start() };
    let span = m.call_method1(intern!(py, "send_span"), (queue,))?;
    if span.is_none() {
        return start();
    }
    match start() {
        Ok(pending) => Ok(m.call_method1(intern!(py, "sent_after"), (span, pending))?.unbind()),
        Err(e) => {
            m.call_method1(intern!(py, "sent"), (span, py.None(), e.value(py)))?;
            Err(e)
        }
    }
}
