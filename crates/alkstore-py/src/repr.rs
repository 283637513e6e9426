//! The pieces of a `__repr__`, written in Python's own syntax.
//!
//! A repr shows each value as Python would show it (`'emails'`, `None`,
//! `True`, `0.5`), never as Rust's `Debug` does (`"emails"`, `Some("boom")`,
//! `true`): strings, optional strings and floats go through Python's own
//! `repr()`, so quoting and escapes are exactly Python's.

use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyString};

/// `repr(s)` of the Python str `s`: `'emails'`, `"it's"`.
pub fn text(py: Python<'_>, s: &str) -> PyResult<String> {
    Ok(PyString::new(py, s).repr()?.to_string())
}

/// `repr` of an optional str: the str's, or `None`.
pub fn opt_text(py: Python<'_>, s: Option<&str>) -> PyResult<String> {
    s.map_or_else(|| Ok("None".to_owned()), |s| text(py, s))
}

/// `repr` of an optional int: its digits, or `None`.
pub fn opt_int(v: Option<i64>) -> String {
    v.map_or_else(|| "None".to_owned(), |v| v.to_string())
}

/// `repr(v)` of the Python float `v`: `0.5`, `1.0`, `1e+20`.
pub fn float(py: Python<'_>, v: f64) -> PyResult<String> {
    Ok(PyFloat::new(py, v).repr()?.to_string())
}

/// Python's `True` or `False`.
pub fn boolean(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}
