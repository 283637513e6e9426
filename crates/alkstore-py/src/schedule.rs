//! `store.schedule(...)`, `unschedule`, `schedules`, the runner entry
//! points, and the read-only `Schedule` value (SPEC §8).

use std::sync::{Arc, OnceLock};

use alkstore_core::{NewSchedule, ScheduleRow, StopToken as CoreStop, Store as CoreStore};
use pyo3::prelude::*;

use crate::convert::{int_in, integer, opt_duration, to_datetime};
use crate::json;
use crate::stop::StopToken;
use crate::tx::{run, Transaction};
use crate::wait::blocking;

/// `priority=` of a schedule: an int (never a bool) in the signed 32-bit range.
pub struct Priority(pub i32);

impl<'a, 'py> FromPyObject<'a, 'py> for Priority {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Priority(int_in(&obj.to_owned(), "priority", i32::MIN.into()..=i32::MAX.into())? as i32))
    }
}

/// Arguments of `store.schedule`, converted with the GIL held.
pub struct ScheduleArgs<'a, 'py> {
    /// Schedule name.
    pub name: &'a str,
    /// `@every <n><unit>`.
    pub spec: &'a str,
    /// Target queue.
    pub queue: &'a str,
    /// Any JSON value; absent means `null`.
    pub payload: Option<&'a Bound<'py, PyAny>>,
    /// Priority of fired jobs.
    pub priority: Priority,
    /// `max_attempts` of fired jobs, or None.
    pub max_attempts: Option<&'a Bound<'py, PyAny>>,
    /// Relative expiry of fired jobs (seconds or timedelta), or None.
    pub expires: Option<&'a Bound<'py, PyAny>>,
}

/// `store.schedule(...)`: converts, then upserts with the GIL released.
pub fn schedule(
    py: Python<'_>,
    store: &Arc<CoreStore>,
    a: ScheduleArgs<'_, '_>,
    tx: Option<&Bound<'_, Transaction>>,
) -> PyResult<()> {
    let payload = match a.payload {
        Some(p) => json::encode(p)?,
        None => "null".to_owned(),
    };
    let max_attempts = match a.max_attempts {
        Some(m) if !m.is_none() => Some(integer(m, "max_attempts")?),
        _ => None,
    };
    let s = NewSchedule {
        name: a.name.to_owned(),
        spec: a.spec.to_owned(),
        queue: a.queue.to_owned(),
        payload,
        priority: a.priority.0,
        max_attempts,
        expires_s: opt_duration(a.expires, "expires")?,
    };
    run(py, store, tx, |t| store.schedule(t, &s))
}

/// `store.unschedule(name)`.
pub fn unschedule(
    py: Python<'_>,
    store: &Arc<CoreStore>,
    name: &str,
    tx: Option<&Bound<'_, Transaction>>,
) -> PyResult<bool> {
    run(py, store, tx, |t| store.unschedule(t, name))
}

/// `store.schedules()`.
pub fn schedules(py: Python<'_>, store: &Arc<CoreStore>) -> PyResult<Vec<Schedule>> {
    Ok(run(py, store, None, |_| store.schedules())?.into_iter().map(Schedule::from).collect())
}

/// `store.run_schedules(stop)` and the asyncio bridge's step (with its
/// cancel token): blocks with the GIL released; Ctrl-C raises.
pub fn run_schedules(
    py: Python<'_>,
    store: &Arc<CoreStore>,
    stop: Option<&Bound<'_, StopToken>>,
    cancel: Option<&Bound<'_, StopToken>>,
) -> PyResult<()> {
    let stops: Vec<&CoreStop> = stop.iter().chain(cancel.iter()).map(|s| &s.get().inner).collect();
    blocking(py, None, &stops, |spec| store.run_schedules(spec.stops, spec.interrupted))
}

/// A stored schedule as `store.schedules()` returns it.
#[pyclass(name = "Schedule", module = "alkstore", frozen)]
pub struct Schedule {
    row: ScheduleRow,
    payload: OnceLock<Py<PyAny>>,
}

impl From<ScheduleRow> for Schedule {
    fn from(row: ScheduleRow) -> Self {
        Schedule { row, payload: OnceLock::new() }
    }
}

#[pymethods]
impl Schedule {
    #[getter]
    fn name(&self) -> &str {
        &self.row.name
    }
    /// The spec text as last registered (`@every 1m` after re-registering `@every 60s` as it).
    #[getter]
    fn spec(&self) -> &str {
        &self.row.spec
    }
    #[getter]
    fn queue(&self) -> &str {
        &self.row.queue
    }
    #[getter]
    fn payload(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(p) = self.payload.get() {
            return Ok(p.clone_ref(py));
        }
        let decoded = json::decode(py, &self.row.payload)?;
        Ok(self.payload.get_or_init(|| decoded).clone_ref(py))
    }
    #[getter]
    fn priority(&self) -> i32 {
        self.row.priority
    }
    #[getter]
    fn max_attempts(&self) -> Option<i64> {
        self.row.max_attempts
    }
    /// Relative expiry of fired jobs, whole seconds.
    #[getter]
    fn expires(&self) -> Option<i64> {
        self.row.expires_s
    }
    #[getter]
    fn next_fire_at(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_datetime(py, self.row.next_fire_at)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Schedule>().is_ok_and(|o| o.get().row == self.row)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let at: String = to_datetime(py, self.row.next_fire_at)?.call_method0(py, "isoformat")?.extract(py)?;
        Ok(format!(
            "Schedule(name={:?}, spec={:?}, queue={:?}, next_fire_at={at})",
            self.row.name, self.row.spec, self.row.queue
        ))
    }
}
