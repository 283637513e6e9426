//! `store.transaction()`: the seam with the caller's business write (SPEC §6).

use std::sync::Arc;

use alkstore_core::{Error, SqlValue, Store as CoreStore, TxSession};
use parking_lot::Mutex;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString};

use crate::errors::IntoPyResult;
use crate::exit;

enum Phase {
    /// Created, `with` not entered yet.
    Fresh,
    Open(TxSession),
    Ended,
}

/// A caller transaction; use it as `with store.transaction() as tx:`.
#[pyclass(name = "Transaction", module = "alkstore", frozen)]
pub struct Transaction {
    store: Arc<CoreStore>,
    phase: Mutex<Phase>,
}

impl Transaction {
    pub(crate) fn new(store: Arc<CoreStore>) -> Self {
        Transaction { store, phase: Mutex::new(Phase::Fresh) }
    }

    /// Runs `f` on the open session with the GIL released. The lock is taken
    /// inside `detach` so a thread waiting for it never holds the GIL.
    pub(crate) fn with_session<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut TxSession) -> alkstore_core::Result<T> + Send,
    ) -> PyResult<T> {
        exit::detach(py, || match &mut *self.phase.lock() {
            Phase::Open(s) => f(s),
            Phase::Fresh => Err(Error::Transaction("use the transaction inside its `with` block".into())),
            Phase::Ended => Err(Error::TransactionClosed),
        })
        .py()
    }
}

/// Runs a store op inside `tx` when given, else on its own.
pub(crate) fn run<T: Send>(
    py: Python<'_>,
    store: &Arc<CoreStore>,
    tx: Option<&Bound<'_, Transaction>>,
    f: impl FnOnce(Option<&mut TxSession>) -> alkstore_core::Result<T> + Send,
) -> PyResult<T> {
    match tx {
        Some(t) => {
            let t = t.get();
            if !Arc::ptr_eq(&t.store, store) {
                return Err(Error::Transaction("tx belongs to another store".into())).py();
            }
            t.with_session(py, |s| f(Some(s)))
        }
        None => exit::detach(py, || f(None)).py(),
    }
}

fn params(seq: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<SqlValue>> {
    let Some(seq) = seq.filter(|s| !s.is_none()) else { return Ok(Vec::new()) };
    if seq.is_instance_of::<PyString>() || seq.is_instance_of::<PyBytes>() || seq.is_instance_of::<PyDict>() {
        return Err(PyTypeError::new_err("params must be a sequence (list or tuple) of values"));
    }
    let mut out = Vec::new();
    for (i, v) in seq.try_iter()?.enumerate() {
        let v = v?;
        out.push(if v.is_none() {
            SqlValue::Null
        } else if let Ok(b) = v.cast::<PyBool>() {
            SqlValue::Bool(b.is_true())
        } else if v.is_instance_of::<PyInt>() {
            SqlValue::Int(
                v.extract().map_err(|_| PyValueError::new_err(format!("params[{i}] is out of the 64-bit range")))?,
            )
        } else if let Ok(f) = v.cast::<PyFloat>() {
            SqlValue::Float(f.value())
        } else if let Ok(s) = v.cast::<PyString>() {
            SqlValue::Text(s.to_str()?.to_owned())
        } else if let Ok(b) = v.cast::<PyBytes>() {
            SqlValue::Bytes(b.as_bytes().to_vec())
        } else {
            return Err(PyTypeError::new_err(format!(
                "params[{i}] has unsupported type {}; use None, bool, int, float, str or bytes",
                v.get_type().name()?
            )));
        });
    }
    Ok(out)
}

pub(crate) fn value_to_py(py: Python<'_>, v: SqlValue) -> PyResult<Py<PyAny>> {
    Ok(match v {
        SqlValue::Null => py.None(),
        SqlValue::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
        SqlValue::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        SqlValue::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        SqlValue::Text(s) => s.into_pyobject(py)?.into_any().unbind(),
        SqlValue::Bytes(b) => PyBytes::new(py, &b).into_any().unbind(),
    })
}

#[pymethods]
impl Transaction {
    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let py = slf.py();
        let this = slf.get();
        let store = this.store.clone();
        exit::detach(py, || {
            let mut phase = this.phase.lock();
            match &*phase {
                Phase::Fresh => {
                    *phase = Phase::Open(store.begin()?);
                    Ok(())
                }
                Phase::Open(_) => Err(Error::Transaction("this transaction is already open".into())),
                Phase::Ended => Err(Error::TransactionClosed),
            }
        })
        .py()?;
        Ok(slf)
    }

    /// Commits on a clean exit; rolls back when the block raised.
    #[pyo3(signature = (exc_type, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let failed = exc_type.is_some_and(|t| !t.is_none());
        exit::detach(py, || {
            let mut phase = self.phase.lock();
            let Phase::Open(mut session) = std::mem::replace(&mut *phase, Phase::Ended) else {
                return Ok(());
            };
            if failed {
                session.rollback()
            } else {
                session.commit()
            }
        })
        .py()?;
        Ok(false)
    }

    /// Runs the caller's statement; returns the affected row count.
    #[pyo3(signature = (sql, params=None))]
    fn execute(&self, py: Python<'_>, sql: &str, params: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        let p = self::params(params)?;
        self.with_session(py, |s| s.execute(sql, &p))
    }

    /// Runs the caller's query; returns a list of dicts.
    #[pyo3(signature = (sql, params=None))]
    fn query<'py>(
        &self,
        py: Python<'py>,
        sql: &str,
        params: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let p = self::params(params)?;
        let rows = self.with_session(py, |s| s.query(sql, &p))?;
        let out = PyList::empty(py);
        for row in rows {
            let d = PyDict::new(py);
            for (k, v) in row {
                d.set_item(k, value_to_py(py, v)?)?;
            }
            out.append(d)?;
        }
        Ok(out)
    }

    fn __repr__(&self) -> &'static str {
        match &*self.phase.lock() {
            Phase::Fresh => "<alkstore.Transaction not started>",
            Phase::Open(_) => "<alkstore.Transaction open>",
            Phase::Ended => "<alkstore.Transaction ended>",
        }
    }
}
