//! `q.set_limits(...)` / `q.limits()` (SPEC §24): converts the arguments
//! into core's change of limits and the stored limits into `QueueLimits`.

use alkstore_core::{LimitChange, QueueLimits as CoreLimits};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::convert::{integer, number, type_name};
use crate::errors::IntoPyResult;
use crate::repr;

/// A queue's limits; None for a kind that is not limited.
#[pyclass(name = "QueueLimits", module = "alkstore", frozen, eq, get_all)]
#[derive(PartialEq, Clone, Default)]
pub struct QueueLimits {
    /// At most this many of the queue's jobs processing at once.
    concurrency: Option<i64>,
    /// With `rate_period_s`: at most this many claims in any window of that length.
    rate_count: Option<i64>,
    /// The rate's window, seconds.
    rate_period_s: Option<f64>,
    /// At most this many processing jobs per group key.
    group_concurrency: Option<i64>,
}

impl From<CoreLimits> for QueueLimits {
    fn from(l: CoreLimits) -> Self {
        QueueLimits {
            concurrency: l.concurrency,
            rate_count: l.rate.map(|r| r.0),
            rate_period_s: l.rate.map(|r| r.1),
            group_concurrency: l.group_concurrency,
        }
    }
}

#[pymethods]
impl QueueLimits {
    #[new]
    #[pyo3(signature = (*, concurrency=None, rate_count=None, rate_period_s=None, group_concurrency=None))]
    fn new(
        concurrency: Option<i64>,
        rate_count: Option<i64>,
        rate_period_s: Option<f64>,
        group_concurrency: Option<i64>,
    ) -> PyResult<Self> {
        let rate = match (rate_count, rate_period_s) {
            (Some(c), Some(p)) => Some((c, p)),
            (None, None) => None,
            _ => return Err(PyValueError::new_err("rate_count and rate_period_s go together: give both or neither")),
        };
        let limits = CoreLimits { concurrency, rate, group_concurrency };
        limits.check().py()?;
        Ok(limits.into())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.repr(py)
    }
}

impl QueueLimits {
    /// `QueueLimits(concurrency=…, …)`.
    pub fn repr(&self, py: Python<'_>) -> PyResult<String> {
        let period = match self.rate_period_s {
            Some(p) => repr::float(py, p)?,
            None => "None".to_owned(),
        };
        Ok(format!(
            "QueueLimits(concurrency={}, rate_count={}, rate_period_s={period}, group_concurrency={})",
            repr::opt_int(self.concurrency),
            repr::opt_int(self.rate_count),
            repr::opt_int(self.group_concurrency)
        ))
    }
}

/// The change `set_limits(**kwargs)` asks for: the kinds named change (None
/// clears one), the others stay.
pub fn change(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<LimitChange> {
    let mut c = LimitChange::default();
    let Some(kwargs) = kwargs else { return Ok(c) };
    for (k, v) in kwargs.iter() {
        let key: String = k.extract()?;
        match key.as_str() {
            "concurrency" => c.concurrency = Some(opt_int(&v, "concurrency")?),
            "group_concurrency" => c.group_concurrency = Some(opt_int(&v, "group_concurrency")?),
            "rate" => c.rate = Some(rate(&v)?),
            other => {
                return Err(PyTypeError::new_err(format!(
                    "set_limits() got an unexpected keyword argument '{other}'; accepted: concurrency, rate, group_concurrency"
                )))
            }
        }
    }
    Ok(c)
}

fn opt_int(v: &Bound<'_, PyAny>, what: &str) -> PyResult<Option<i64>> {
    if v.is_none() {
        return Ok(None);
    }
    integer(v, what).map(Some)
}

/// `rate=(count, period_s)`, or None.
fn rate(v: &Bound<'_, PyAny>) -> PyResult<Option<(i64, f64)>> {
    if v.is_none() {
        return Ok(None);
    }
    // A tuple or a list of two; anything else is named in the error.
    let items: Option<Vec<Bound<'_, PyAny>>> = if let Ok(t) = v.cast::<PyTuple>() {
        Some(t.iter().collect())
    } else {
        v.cast::<PyList>().ok().map(|l| l.iter().collect())
    };
    let pair = match items {
        Some(pair) if pair.len() == 2 => pair,
        other => {
            let what = other.map_or_else(|| type_name(v), |p| format!("a sequence of {}", p.len()));
            return Err(PyTypeError::new_err(format!("rate must be a (count, period_s) pair or None, got {what}")));
        }
    };
    let count = integer(&pair[0], "rate's count")?;
    let period = number(&pair[1], "rate's period_s")?;
    if !period.is_finite() {
        return Err(PyValueError::new_err(format!("rate's period_s must be a finite number of seconds, got {period}")));
    }
    Ok(Some((count, period)))
}
