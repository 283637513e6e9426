//! `store.schedule(...)`, `unschedule`, `schedules`, the runner entry
//! points, and the read-only `Schedule` value (SPEC §8).

use std::sync::{Arc, OnceLock};

use alkstore_core::schedule::{next_fires as core_next_fires, MAX_NEXT_FIRES};
use alkstore_core::{NewSchedule, ScheduleRow, StopToken as CoreStop, Store as CoreStore};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDateTime;

use crate::convert::{int_in, integer, opt_duration, to_datetime, Int};
use crate::errors::IntoPyResult;
use crate::json;
use crate::repr;
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
    /// `@every <n><unit>` or a cron spec.
    pub spec: &'a str,
    /// The IANA zone a cron spec is read in.
    pub tz: &'a str,
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
        tz: a.tz.to_owned(),
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

/// `alkstore.next_fires(spec, tz="UTC", after=None, n=5)`: the first `n`
/// fires of `spec` in zone `tz` strictly after `after` (an aware datetime;
/// default now), as aware UTC datetimes (SPEC §23). A pure function: no store.
#[pyfunction]
#[pyo3(signature = (spec, tz="UTC", after=None, n=Int::new(5)), text_signature = "(spec, tz='UTC', after=None, n=5)")]
pub fn next_fires(
    py: Python<'_>,
    spec: &str,
    tz: &str,
    after: Option<&Bound<'_, PyAny>>,
    n: Int,
) -> PyResult<Vec<Py<PyAny>>> {
    let n = n.within("n", 1..=MAX_NEXT_FIRES as i64)? as usize;
    let after = match after {
        Some(a) if !a.is_none() => whole_seconds(a)?,
        _ => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
    };
    let fires = core_next_fires(spec, tz, after, n).py()?;
    fires.into_iter().map(|t| to_datetime(py, t)).collect()
}

/// An aware datetime's Unix second, rounded down (a fire strictly after
/// 10:00:59.5 is one after 10:00:59: a fire is on a whole minute).
fn whole_seconds(after: &Bound<'_, PyAny>) -> PyResult<i64> {
    let dt = after
        .cast::<PyDateTime>()
        .map_err(|_| PyValueError::new_err("after must be a timezone-aware datetime or None"))?;
    if dt.call_method0("utcoffset")?.is_none() {
        return Err(PyValueError::new_err(
            "after must be a timezone-aware datetime (a naive datetime is ambiguous); \
             use datetime.now(timezone.utc)",
        ));
    }
    let secs: f64 = dt.call_method0("timestamp")?.extract()?;
    Ok(secs.floor() as i64)
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

impl Schedule {
    /// `next_fire_at` and the fires after it: `n` of them.
    fn upcoming(&self, n: Int) -> PyResult<Vec<i64>> {
        let n = n.within("n", 1..=MAX_NEXT_FIRES as i64)? as usize;
        let table = self.row.timetable().py()?;
        let mut fires = vec![self.row.next_fire_at];
        while fires.len() < n {
            let next = table.next_after(fires[fires.len() - 1]);
            if next == i64::MAX {
                break;
            }
            fires.push(next);
        }
        Ok(fires)
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
    /// The IANA zone a cron spec is read in, as registered (`@every` ignores it).
    #[getter]
    fn tz(&self) -> &str {
        &self.row.tz
    }
    #[getter]
    fn queue(&self) -> &str {
        &self.row.queue
    }
    /// The next `n` fires from `next_fire_at` on, as aware UTC datetimes.
    #[pyo3(signature = (n=Int::new(3)), text_signature = "(self, n=3)")]
    fn next_fires(&self, py: Python<'_>, n: Int) -> PyResult<Vec<Py<PyAny>>> {
        self.upcoming(n)?.into_iter().map(|t| to_datetime(py, t)).collect()
    }
    /// The same fires as local times in the schedule's zone, with their
    /// offsets (`2026-12-07T09:00:00+01:00`), for the command line and the
    /// dashboard (not public).
    #[pyo3(signature = (n=Int::new(3)), text_signature = "(self, n=3)")]
    fn _local_fires(&self, n: Int) -> PyResult<Vec<String>> {
        let zone = alkstore_core::schedule::zone::Zone::named(&self.row.tz).py()?;
        Ok(self.upcoming(n)?.into_iter().map(|t| zone.show(t)).collect())
    }
    #[getter]
    fn payload(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(p) = self.payload.get() {
            return Ok(p.clone_ref(py));
        }
        let decoded = json::decode(py, &self.row.payload, "payload")?;
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
            "Schedule(name={}, spec={}, tz={}, queue={}, next_fire_at={at})",
            repr::text(py, &self.row.name)?,
            repr::text(py, &self.row.spec)?,
            repr::text(py, &self.row.tz)?,
            repr::text(py, &self.row.queue)?
        ))
    }
}
