//! `conn=` (ADR 0015): core renders the enqueue for the caller's driver, and
//! `alkstore._conn` picks the adapter that runs it on the caller's own
//! connection. This file only carries values between the two and turns "no
//! row came back" into the mismatch error.

use alkstore_core::{Error, NewJob, ParamStyle, QueueOpts, SqlValue, Store as CoreStore};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::IntoPyResult;
use crate::tx::value_to_py;

/// Enqueues `jobs` on `conn`, in whatever transaction it has open; the ids in input order.
pub(crate) fn enqueue_on(
    py: Python<'_>,
    store: &CoreStore,
    queue: &str,
    opts: &QueueOpts,
    jobs: &[NewJob],
    conn: &Bound<'_, PyAny>,
) -> PyResult<Vec<i64>> {
    let adapter = py.import("alkstore._conn")?.call_method1("adapter", (conn, store.engine_kind()))?;
    let style = ParamStyle::parse(&adapter.getattr("paramstyle")?.extract::<String>()?).py()?;
    let Some(r) = store.foreign_enqueue(queue, opts, jobs, style).py()? else {
        return Ok(Vec::new());
    };
    let params = if style.by_name() {
        let d = PyDict::new(py);
        for (i, v) in r.params.into_iter().enumerate() {
            d.set_item(format!("p{}", i + 1), value_to_py(py, v)?)?;
        }
        d.into_any()
    } else {
        let values: Vec<Py<PyAny>> =
            r.params.into_iter().map(|v: SqlValue| value_to_py(py, v)).collect::<PyResult<_>>()?;
        PyList::new(py, values)?.into_any()
    };
    let mut ids: Vec<i64> = adapter.call_method1("run", (r.sql, params))?.extract()?;
    if ids.len() != jobs.len() {
        let theirs: String = adapter.call_method0("location")?.extract()?;
        return Err(Error::Transaction(format!(
            "conn= reaches {theirs}, not this store ({}): nothing was enqueued",
            store.engine().location()
        )))
        .py();
    }
    // Ids ascend in input order (the engines allocate them so); RETURNING's order is not promised.
    ids.sort_unstable();
    Ok(ids)
}
