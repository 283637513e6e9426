//! Argument conversion: Python numbers, `timedelta`s and `datetime`s to the
//! whole seconds the core speaks, and Unix seconds back to aware datetimes.
//! Range rules live in the core; this only checks types and finiteness.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDateTime, PyDelta, PyFloat, PyInt, PyTzInfo};

/// A finite real number (int or float, not bool) named `what` in errors.
pub fn number(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    if obj.is_instance_of::<PyBool>() || !(obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>()) {
        return Err(PyTypeError::new_err(format!("{what} must be an int or float, got {}", obj.get_type().name()?)));
    }
    let v: f64 = obj.extract()?;
    if !v.is_finite() {
        return Err(PyValueError::new_err(format!("{what} must be a finite number, got {v}")));
    }
    Ok(v)
}

/// An int (not bool) named `what` in errors.
pub fn integer(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("{what} must be an int, got {}", obj.get_type().name()?)));
    }
    obj.extract::<i64>().map_err(|_| PyValueError::new_err(format!("{what} is out of range")))
}

/// A duration in seconds or a `timedelta`, >= 0, rounded up to whole seconds.
pub fn duration(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    let secs = if let Ok(td) = obj.cast::<PyDelta>() {
        td.call_method0("total_seconds")?.extract::<f64>()?
    } else {
        number(obj, what).map_err(|e| {
            if e.is_instance_of::<PyTypeError>(obj.py()) {
                PyTypeError::new_err(format!(
                    "{what} must be seconds (int or float) or a datetime.timedelta, got {}",
                    obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                ))
            } else {
                e
            }
        })?
    };
    if secs < 0.0 {
        return Err(PyValueError::new_err(format!("{what} must be >= 0 seconds, got {secs}")));
    }
    if secs > 1e12 {
        return Err(PyValueError::new_err(format!("{what} is too large: {secs} seconds")));
    }
    Ok(secs.ceil() as i64)
}

/// An optional duration (None passes through).
pub fn opt_duration(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<i64>> {
    match obj {
        Some(o) if !o.is_none() => duration(o, what).map(Some),
        _ => Ok(None),
    }
}

/// An instant: an aware `datetime` or Unix seconds; rounded up to whole seconds.
pub fn instant(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    let secs = if let Ok(dt) = obj.cast::<PyDateTime>() {
        if dt.call_method0("utcoffset")?.is_none() {
            return Err(PyValueError::new_err(format!(
                "{what} must be a timezone-aware datetime (a naive datetime is ambiguous); \
                 use datetime.now(timezone.utc) or Unix seconds"
            )));
        }
        dt.call_method0("timestamp")?.extract::<f64>()?
    } else {
        number(obj, what).map_err(|e| {
            if e.is_instance_of::<PyTypeError>(obj.py()) {
                PyTypeError::new_err(format!(
                    "{what} must be an aware datetime or Unix seconds, got {}",
                    obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                ))
            } else {
                e
            }
        })?
    };
    if !(0.0..1e12).contains(&secs) {
        return Err(PyValueError::new_err(format!("{what} is out of range: {secs}")));
    }
    Ok(secs.ceil() as i64)
}

static UTC: PyOnceLock<Py<PyTzInfo>> = PyOnceLock::new();

/// Unix seconds as an aware UTC datetime.
pub fn to_datetime(py: Python<'_>, secs: i64) -> PyResult<Py<PyAny>> {
    let utc = UTC.get_or_try_init(py, || PyTzInfo::utc(py).map(|u| u.to_owned().unbind()))?;
    Ok(PyDateTime::from_timestamp(py, secs as f64, Some(utc.bind(py)))?.into_any().unbind())
}

/// Optional Unix seconds as an optional aware datetime.
pub fn to_opt_datetime(py: Python<'_>, secs: Option<i64>) -> PyResult<Option<Py<PyAny>>> {
    secs.map(|s| to_datetime(py, s)).transpose()
}
