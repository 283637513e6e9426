//! The one path from `alkstore_core::Error` to a Python exception.
//!
//! The exception classes are defined in Python (`alkstore._errors`) because
//! several need two bases (`InvalidName(AlkstoreError, ValueError)`), which is
//! plain in Python and awkward from Rust; this module only looks them up.

use alkstore_core::Error;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let module = ERRORS.get_or_try_init(py, || py.import("alkstore._errors").map(Bound::unbind))?;
    module.bind(py).getattr(name)
}

/// Imports `alkstore._errors` once, when the module loads: a daemon thread's
/// first error may come while the interpreter exits, when an import (Python
/// code) would hand the GIL over and the thread would be ended mid-call.
pub fn init(py: Python<'_>) -> PyResult<()> {
    class(py, "AlkstoreError").map(drop)
}

/// Builds the Python exception for `e`.
pub fn to_pyerr(e: Error) -> PyErr {
    Python::attach(|py| match build(py, &e) {
        Ok(err) => err,
        Err(lookup) => lookup,
    })
}

fn build(py: Python<'_>, e: &Error) -> PyResult<PyErr> {
    let msg = e.to_string();
    let instance = match e {
        Error::Value(_) => return Ok(PyValueError::new_err(msg)),
        Error::Type(_) => return Ok(PyTypeError::new_err(msg)),
        Error::Interrupted => return Ok(pyo3::exceptions::PyKeyboardInterrupt::new_err(msg)),
        Error::Payload(_) => class(py, "PayloadError")?.call1((msg,))?,
        Error::InvalidName { .. } => class(py, "InvalidName")?.call1((msg,))?,
        Error::InvalidSpec { spec, .. } => class(py, "InvalidSpec")?.call1((msg, spec))?,
        Error::LeadershipLost => class(py, "LeadershipLost")?.call1((msg,))?,
        Error::LockHeld { .. } => class(py, "LockHeld")?.call1((msg,))?,
        Error::StoreClosed => class(py, "StoreClosed")?.call1((msg,))?,
        Error::Transaction(_) => class(py, "TransactionError")?.call1((msg,))?,
        Error::TransactionClosed => class(py, "TransactionClosed")?.call1((msg,))?,
        Error::Database { code, .. } => class(py, "DatabaseError")?.call1((msg, code.clone(), e.is_transient()))?,
        Error::ConnectionLost { .. } => class(py, "ConnectionLost")?.call1((msg, None::<String>, true))?,
    };
    Ok(PyErr::from_value(instance))
}

/// Issues a warning of the `alkstore._errors` category `name`, attributed
/// to the caller's line.
pub fn warn(py: Python<'_>, name: &str, message: &str) -> PyResult<()> {
    let category = class(py, name)?;
    let text = std::ffi::CString::new(message.replace('\0', " "))?;
    PyErr::warn(py, &category, &text, 1)
}

/// `?`-friendly conversion of core results.
pub trait IntoPyResult<T> {
    /// Maps the error through [`to_pyerr`].
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_pyerr)
    }
}
