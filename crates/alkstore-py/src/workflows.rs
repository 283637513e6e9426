//! Workflows (SPEC §25): `Result`, what `store.result(id)` returns. The
//! methods that read results and edges sit on `Store` and `JobHandle`; the
//! rules behind them are core's.

use alkstore_core as core;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::to_datetime;
use crate::json;
use crate::repr;

/// A finished job's outcome: `state` is "done" (acked; `value` is the
/// ack's result, decoded) or "dead" (`error` is its last error).
#[pyclass(name = "Result", module = "alkstore", frozen, get_all)]
pub struct JobResult {
    /// "done" or "dead".
    state: String,
    /// The ack's result (None when none was given, or for a dead job).
    value: Py<PyAny>,
    /// A dead job's last error.
    error: Option<String>,
    /// When it was acked or died (aware UTC datetime).
    finished_at: Py<PyAny>,
}

impl JobResult {
    /// `r` converted: the value decoded from its JSON text.
    pub(crate) fn from_core(py: Python<'_>, r: core::JobResult) -> PyResult<Self> {
        Ok(JobResult {
            state: r.state,
            value: value(py, r.value.as_deref())?,
            error: r.error,
            finished_at: to_datetime(py, r.finished_at)?,
        })
    }
}

#[pymethods]
impl JobResult {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Result(state={}, value={}, error={}, finished_at={})",
            repr::text(py, &self.state)?,
            self.value.bind(py).repr()?,
            repr::opt_text(py, self.error.as_deref())?,
            self.finished_at.bind(py).repr()?
        ))
    }
}

/// A stored JSON value decoded, or None.
fn value(py: Python<'_>, text: Option<&str>) -> PyResult<Py<PyAny>> {
    match text {
        Some(t) => json::decode(py, t, "result"),
        None => Ok(py.None()),
    }
}

/// `job.parent_results()`: parent id → its result value (None for a parent
/// acked without one, dead, or whose result is not kept).
pub(crate) fn parent_values(py: Python<'_>, rows: Vec<(i64, Option<core::JobResult>)>) -> PyResult<Py<PyDict>> {
    let d = PyDict::new(py);
    for (id, r) in rows {
        d.set_item(id, value(py, r.and_then(|r| r.value).as_deref())?)?;
    }
    Ok(d.unbind())
}
