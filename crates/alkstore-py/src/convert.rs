//! Argument conversion: Python numbers, `timedelta`s and `datetime`s to the
//! whole seconds the core speaks, and Unix seconds back to aware datetimes.
//! Range rules live in the core (`alkstore_core::duration`, ADR 0011, and the
//! count rules of `store` and `stream`); this only checks types, and names the
//! argument in every error.

use std::ops::RangeInclusive;

use alkstore_core::rules::duration;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDateTime, PyDelta, PyFloat, PyInt, PyIterator, PyMapping, PyMemoryView, PyString,
    PyTzInfo,
};

use crate::errors::IntoPyResult;

pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
}

/// A finite real number (int or float, not bool) named `what` in errors.
pub fn number(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    if obj.is_instance_of::<PyBool>() || !(obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>()) {
        return Err(PyTypeError::new_err(format!("{what} must be an int or float, got {}", type_name(obj))));
    }
    // An int too large for a float becomes inf, refused just below.
    let v: f64 = obj.extract().unwrap_or(f64::INFINITY);
    if !v.is_finite() {
        return Err(PyValueError::new_err(format!("{what} must be a finite number, got {}", obj.repr()?)));
    }
    Ok(v)
}

/// An int argument as Python passed it: extracting refuses `bool` and
/// anything that is not an `int` with a TypeError (which pyo3 prefixes with
/// the argument's name). The range check needs that name too, so the value is
/// only reachable through [`Int::within`] / [`Int::get`], which raise a
/// ValueError naming it — for ints beyond 64 bits as well, never a bare
/// OverflowError.
pub struct Int(Result<i64, String>);

impl Int {
    /// A default value.
    pub const fn new(v: i64) -> Self {
        Int(Ok(v))
    }

    /// The value when it lies in `range`, else a ValueError naming `what`.
    pub fn within(&self, what: &str, range: RangeInclusive<i64>) -> PyResult<i64> {
        match &self.0 {
            Ok(v) if range.contains(v) => Ok(*v),
            Ok(v) => Err(out_of_range(what, &range, v)),
            Err(repr) => Err(out_of_range(what, &range, repr)),
        }
    }

    /// The value, anywhere in the signed 64-bit range.
    pub fn get(&self, what: &str) -> PyResult<i64> {
        self.within(what, i64::MIN..=i64::MAX)
    }

    fn of(obj: &Bound<'_, PyAny>) -> Option<Self> {
        if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
            return None;
        }
        Some(Int(obj.extract::<i64>().map_err(|_| obj.repr().map(|r| r.to_string()).unwrap_or_default())))
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Int {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Int::of(&obj).ok_or_else(|| PyTypeError::new_err(format!("must be an int, got {}", type_name(&obj))))
    }
}

fn out_of_range(what: &str, range: &RangeInclusive<i64>, got: impl std::fmt::Display) -> PyErr {
    let (lo, hi) = (*range.start(), *range.end());
    let rule = match (lo, hi) {
        (i64::MIN, i64::MAX) => "must fit in a signed 64-bit int".to_owned(),
        (lo, i64::MAX) => format!("must be >= {lo}"),
        (lo, hi) => format!("must be between {lo} and {hi}"),
    };
    PyValueError::new_err(format!("{what} {rule}, got {got}"))
}

/// Shows the int as the caller wrote it, also when it is wider than 64 bits.
impl std::fmt::Display for Int {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Ok(v) => v.fmt(f),
            Err(repr) => f.write_str(repr),
        }
    }
}

/// Lets the core's count rules (`alkstore_core::store::batch_size`,
/// `alkstore_core::store::stream::read_limit`) take an `Int` as it is: the rule and
/// its message are the core's, for ints of any width.
impl TryFrom<&Int> for usize {
    type Error = ();

    fn try_from(n: &Int) -> Result<usize, ()> {
        n.0.as_ref().ok().and_then(|v| usize::try_from(*v).ok()).ok_or(())
    }
}

/// An int (not bool) named `what` in errors, in the signed 64-bit range.
pub fn integer(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    int_in(obj, what, i64::MIN..=i64::MAX)
}

/// An int (not bool) in `range`, named `what` in errors.
pub fn int_in(obj: &Bound<'_, PyAny>, what: &str, range: RangeInclusive<i64>) -> PyResult<i64> {
    match Int::of(obj) {
        Some(i) => i.within(what, range),
        None => Err(PyTypeError::new_err(format!("{what} must be an int, got {}", type_name(obj)))),
    }
}

/// Seconds as a float from a number or a `timedelta`, for the core's rules.
fn seconds_of(obj: &Bound<'_, PyAny>, what: &str, accepted: &str) -> PyResult<f64> {
    if let Ok(td) = obj.cast::<PyDelta>() {
        return td.call_method0("total_seconds")?.extract::<f64>();
    }
    number(obj, what).map_err(|e| {
        if e.is_instance_of::<PyTypeError>(obj.py()) {
            PyTypeError::new_err(format!("{what} must be {accepted}, got {}", type_name(obj)))
        } else {
            e
        }
    })
}

/// A duration in seconds or a `timedelta`: the core's rule (>= 0, at most
/// 100 years once rounded up to whole seconds).
pub fn duration(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    let secs = seconds_of(obj, what, "seconds (int or float) or a datetime.timedelta")?;
    duration::seconds(what, secs).py()
}

/// An optional duration (None passes through).
pub fn opt_duration(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<i64>> {
    match obj {
        Some(o) if !o.is_none() => duration(o, what).map(Some),
        _ => Ok(None),
    }
}

/// A wait in seconds or a `timedelta`, kept fractional: the core's rule for waits.
pub fn wait(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<std::time::Duration> {
    let secs = seconds_of(obj, what, "seconds (int or float), a datetime.timedelta or None")?;
    duration::wait(what, secs).py()
}

/// An instant: an aware `datetime` or Unix seconds; rounded up to whole
/// seconds, up to the end of year 9999 (the core's rule).
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
        seconds_of(obj, what, "an aware datetime or Unix seconds")?
    };
    duration::instant(what, secs).py()
}

/// An iterable of items (payloads, handles): refuses the iterables whose
/// items are surely not what the caller meant — a `str` or bytes-like object
/// (its characters or byte values) and a mapping (its keys) — with a
/// TypeError naming `what`.
pub fn items<'py>(obj: &Bound<'py, PyAny>, what: &str, one: &str) -> PyResult<Bound<'py, PyIterator>> {
    let refused = if obj.is_instance_of::<PyString>() {
        Some("a str")
    } else if obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyByteArray>()
        || obj.is_instance_of::<PyMemoryView>()
    {
        Some("a bytes-like object")
    } else if obj.cast::<PyMapping>().is_ok() {
        Some("a mapping")
    } else {
        None
    };
    if let Some(kind) = refused {
        return Err(PyTypeError::new_err(format!(
            "{what} must be an iterable of {one} (a list, tuple or generator), not {kind} ({})",
            type_name(obj)
        )));
    }
    obj.try_iter()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be an iterable of {one}, got {}", type_name(obj))))
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
