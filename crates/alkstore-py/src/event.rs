//! `Event`: one stream event as `read` and `subscribe` hand it out.

use std::sync::OnceLock;

use alkstore_core as core;
use pyo3::prelude::*;

use crate::convert::to_datetime;
use crate::json;
use crate::repr;

/// A stream event (SPEC §9); frozen, compared by value.
#[pyclass(name = "Event", module = "alkstore", frozen)]
pub struct Event {
    row: core::Event,
    payload: OnceLock<Py<PyAny>>,
}

impl From<core::Event> for Event {
    fn from(row: core::Event) -> Self {
        Event { row, payload: OnceLock::new() }
    }
}

#[pymethods]
impl Event {
    /// Position in the stream; increases in commit order.
    #[getter]
    fn offset(&self) -> i64 {
        self.row.offset
    }
    #[getter]
    fn key(&self) -> Option<&str> {
        self.row.key.as_deref()
    }
    /// The payload, decoded once.
    #[getter]
    fn payload(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(p) = self.payload.get() {
            return Ok(p.clone_ref(py));
        }
        let decoded = json::decode(py, &self.row.payload, "payload")?;
        Ok(self.payload.get_or_init(|| decoded).clone_ref(py))
    }
    /// Publish time (database clock), an aware UTC datetime.
    #[getter]
    fn published_at(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_datetime(py, self.row.published_at)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Event>().is_ok_and(|o| o.get().row == self.row)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Event(offset={}, key={}, payload={})",
            self.row.offset,
            repr::opt_text(py, self.row.key.as_deref())?,
            self.payload(py)?.bind(py).repr()?
        ))
    }
}
