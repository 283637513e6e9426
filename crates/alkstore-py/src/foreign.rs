//! `conn=` (ADR 0015): core renders the statement for the caller's driver,
//! and `alkstore._conn` picks the adapter that runs it on the caller's own
//! connection. This file only carries values between the two, awaits through
//! `_conn.arun` for async drivers, and turns "fewer rows than asked" into the
//! mismatch error.

use std::sync::{Arc, Mutex};

use alkstore_core::store::foreign::ForeignCall;
use alkstore_core::{Error, ParamStyle, Rendered, SqlValue, Store as CoreStore};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyList, PyTuple};

use crate::errors::IntoPyResult;
use crate::tx::value_to_py;

/// Whether the caller waits on the driver (`enqueue`) or awaits it (`aenqueue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    Sync,
    Async,
}

/// What the caller gets back: one id (`enqueue`, `publish`) or the list (`enqueue_many`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    One,
    Many,
}

/// The caller's connection, wrapped in its adapter.
pub(crate) struct Conn<'py> {
    adapter: Bound<'py, PyAny>,
    /// The driver's placeholder style, for core to render in.
    pub(crate) style: ParamStyle,
    call: Call,
}

/// The adapter for `conn` on this store; a TypeError (from `_conn.adapter`)
/// naming what `call` accepts.
pub(crate) fn conn<'py>(store: &CoreStore, conn: &Bound<'py, PyAny>, call: Call) -> PyResult<Conn<'py>> {
    let py = conn.py();
    let adapter =
        py.import("alkstore._conn")?.call_method1("adapter", (conn, store.engine_kind(), call == Call::Async))?;
    let style = ParamStyle::parse(&adapter.getattr("paramstyle")?.extract::<String>()?).py()?;
    Ok(Conn { adapter, style, call })
}

/// Runs `call` (None: nothing to write) on the caller's connection. Sync:
/// the ids (or id) now. Async: an awaitable of them.
pub(crate) fn run(
    py: Python<'_>,
    store: &Arc<CoreStore>,
    conn: &Conn<'_>,
    call: Option<ForeignCall>,
    shape: Shape,
) -> PyResult<Py<PyAny>> {
    let Conn { adapter, style, call: how } = conn;
    let Some(mut call) = call else {
        let none = shaped(py, Vec::new(), shape)?;
        return match how {
            Call::Sync => Ok(none),
            Call::Async => Ok(py.import("alkstore._conn")?.call_method1("ready", (none,))?.unbind()),
        };
    };
    let n = call.rows();
    let Rendered { sql, params: values } = call.take_rendered();
    let params = params(py, values, style.by_name())?;
    let refusal = match call.refusal() {
        Some(r) => Some((r.sql.clone(), self::params(py, r.params.clone(), style.by_name())?)),
        None => None,
    };
    let landing = Landing { store: store.clone(), call, shape };
    match how {
        Call::Sync => {
            let mut rows: Rows = adapter.call_method1("run", (sql, params))?.extract()?;
            if rows.len() != n {
                // Missing rows: a refused parent, or another database; the refusal says which.
                if let Some((sql, params)) = refusal {
                    let why: Rows = adapter.call_method1("run", (sql, params))?.extract()?;
                    if !why.is_empty() {
                        rows = why;
                    }
                }
            }
            let theirs =
                if rows.len() == n { None } else { Some(adapter.call_method0("location")?.extract::<String>()?) };
            let aborted = adapter.getattr("aborted")?.extract::<bool>()?;
            landing.land(py, rows, theirs, aborted)
        }
        Call::Async => {
            let land = PyCFunction::new_closure(py, None, None, move |args: &Bound<'_, PyTuple>, _| {
                let (rows, theirs, aborted): (Rows, Option<String>, bool) = args.extract()?;
                landing.land(args.py(), rows, theirs, aborted)
            })?;
            let coro = py.import("alkstore._conn")?.call_method1("arun", (adapter, sql, params, n, land, refusal))?;
            Ok(coro.unbind())
        }
    }
}

/// What an adapter hands back: one `(id, unique_key)` per row.
type Rows = Vec<(i64, Option<String>)>;

/// An awaitable that runs `f` on a thread of the event loop's default
/// executor (`asyncio.to_thread`): the async calls without `conn=`, which
/// write through the store's own connection and must not block the loop.
pub(crate) fn to_thread<F>(py: Python<'_>, f: F) -> PyResult<Py<PyAny>>
where
    F: FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send + 'static,
{
    let once = Mutex::new(Some(f));
    let call = PyCFunction::new_closure(py, None, None, move |args: &Bound<'_, PyTuple>, _| {
        let f = once.lock().map_err(|_| PyRuntimeError::new_err("poisoned"))?.take();
        match f {
            Some(f) => f(args.py()),
            None => Err(PyRuntimeError::new_err("this awaitable already ran")),
        }
    })?;
    Ok(py.import("asyncio")?.call_method1("to_thread", (call,))?.unbind())
}

/// The TypeError for `tx=` and `conn=` together.
pub(crate) fn tx_and_conn() -> PyErr {
    PyTypeError::new_err("pass tx= (alkstore's transaction) or conn= (your own connection), not both")
}

/// The values as the driver takes them: a dict of `pN` for the named styles, else a list.
fn params(py: Python<'_>, values: Vec<SqlValue>, by_name: bool) -> PyResult<Bound<'_, PyAny>> {
    if by_name {
        let d = PyDict::new(py);
        for (i, v) in values.into_iter().enumerate() {
            d.set_item(format!("p{}", i + 1), value_to_py(py, v)?)?;
        }
        return Ok(d.into_any());
    }
    let values: Vec<Py<PyAny>> = values.into_iter().map(|v| value_to_py(py, v)).collect::<PyResult<_>>()?;
    Ok(PyList::new(py, values)?.into_any())
}

/// Checks and shapes what the driver returned.
struct Landing {
    store: Arc<CoreStore>,
    call: ForeignCall,
    shape: Shape,
}

impl Landing {
    /// `theirs` names the caller's database; it is asked for only when rows
    /// are missing. `aborted`: the statement failed there (the store's tables
    /// are missing), and on Postgres that aborted the caller's transaction.
    fn land(&self, py: Python<'_>, rows: Rows, theirs: Option<String>, aborted: bool) -> PyResult<Py<PyAny>> {
        match self.call.land(rows).py()? {
            Some(ids) => shaped(py, ids, self.shape),
            None => {
                let theirs = theirs.unwrap_or_else(|| "another database".into());
                let aborted = if aborted {
                    "; the failed statement aborted the transaction on that connection: \
                     roll it back before using the connection again"
                } else {
                    ""
                };
                Err(Error::Transaction(format!(
                    "conn= reaches {theirs}, not this store ({}): nothing was written{aborted}",
                    self.store.engine().location()
                )))
                .py()
            }
        }
    }
}

/// `ids` as the caller gets them: the one id, or the list.
pub(crate) fn shaped(py: Python<'_>, ids: Vec<i64>, shape: Shape) -> PyResult<Py<PyAny>> {
    match shape {
        Shape::One => Ok(ids[0].into_pyobject(py)?.into_any().unbind()),
        Shape::Many => Ok(PyList::new(py, ids)?.into_any().unbind()),
    }
}
