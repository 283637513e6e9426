//! The core's rules, for the Python side of the package (`alkstore._worker`,
//! `alkstore._cli`): each name here hands Python a rule `alkstore-core`
//! already decides, so no Python module restates a bound, a name rule, a
//! reserved prefix or the target grammar. Private to the package (leading
//! underscore); nothing here is part of the public API.

use alkstore_core::rules::names::{outbox_of, MAX_NAME_CHARS};
use alkstore_core::store::stream::MAX_READ;
use alkstore_core::store::{batch_size, MAX_BATCH};
use alkstore_core::{parse_target, validate_name, Target};
use pyo3::prelude::*;

use crate::convert::Int;
use crate::errors::IntoPyResult;

/// Raises `InvalidName` when `name` breaks the naming rule (SPEC §3);
/// `kind` names the kind of name in the message ("worker", "queue", ...).
#[pyfunction]
fn _validate_name(kind: &str, name: &str) -> PyResult<()> {
    validate_name(kind, name).py()
}

/// `n` when it is a valid batch or page size, else the ValueError naming
/// `what` that `claim_batch`, `live_jobs` and `dead_jobs` raise.
#[pyfunction]
fn _batch_size(what: &str, n: Int) -> PyResult<usize> {
    batch_size(what, &n).py()
}

/// The engine `target` selects and what it opens: `("sqlite", path)` or
/// `("postgres", url)`; a refused target raises the ValueError `open` raises.
#[pyfunction]
fn _parse_target(target: &str) -> PyResult<(&'static str, String)> {
    Ok(match parse_target(target).py()? {
        Target::Sqlite(path) => ("sqlite", path),
        Target::Postgres(url) => ("postgres", url),
    })
}

/// The outbox whose backing queue is `queue`, or None for any other queue.
#[pyfunction]
fn _outbox_of(queue: &str) -> Option<&str> {
    outbox_of(queue)
}

/// `obj` (seconds or a `timedelta`) as whole seconds, rounded up, under the
/// one duration bound; the ValueError / TypeError names `what`
/// (`alkstore.Retry(after=…)`, `alkstore.Snooze(…)`).
#[pyfunction]
fn _duration(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    crate::convert::duration(obj, what)
}

/// A handler's or task's `timeout`: seconds (int or float) or a `timedelta`,
/// more than zero, under the one bound for waits; kept fractional.
#[pyfunction]
fn _timeout(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<f64> {
    let d = crate::convert::wait(obj, what)?;
    if d.is_zero() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("{what} must be more than 0 seconds")));
    }
    Ok(d.as_secs_f64())
}

/// Raises what `store.queue(...)` raises for these queue options (a task
/// checks its options when it is registered, before any store is at hand).
#[pyfunction]
#[pyo3(signature = (visibility_timeout_s=None, max_attempts=None, backoff_base_s=None, dead_letter_retention_s=None))]
fn _check_queue_options(
    visibility_timeout_s: Option<&Bound<'_, PyAny>>,
    max_attempts: Option<&Bound<'_, PyAny>>,
    backoff_base_s: Option<&Bound<'_, PyAny>>,
    dead_letter_retention_s: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    crate::store::queue_opts(visibility_timeout_s, max_attempts, backoff_base_s, dead_letter_retention_s).map(drop)
}

/// Raises what `enqueue` would raise for `value` in a payload, naming its
/// place from `root` (`kwargs.when`): tasks check their arguments with it
/// before anything is written.
#[pyfunction]
fn _check_json(value: &Bound<'_, PyAny>, root: &str) -> PyResult<()> {
    crate::json::encode_at(value, root).map(drop)
}

/// Adds the rules to the module. `setattr`, not `add`: `add` would list
/// them in `__all__`, which names the public API.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.setattr("_validate_name", wrap_pyfunction!(_validate_name, m)?)?;
    m.setattr("_batch_size", wrap_pyfunction!(_batch_size, m)?)?;
    m.setattr("_parse_target", wrap_pyfunction!(_parse_target, m)?)?;
    m.setattr("_outbox_of", wrap_pyfunction!(_outbox_of, m)?)?;
    m.setattr("_duration", wrap_pyfunction!(_duration, m)?)?;
    m.setattr("_check_json", wrap_pyfunction!(_check_json, m)?)?;
    m.setattr("_timeout", wrap_pyfunction!(_timeout, m)?)?;
    m.setattr("_check_queue_options", wrap_pyfunction!(_check_queue_options, m)?)?;
    m.setattr("_MAX_NAME_CHARS", MAX_NAME_CHARS)?;
    m.setattr("_MAX_BATCH", MAX_BATCH)?;
    m.setattr("_MAX_READ", MAX_READ)?;
    m.setattr("_MAX_PAYLOAD_DEPTH", alkstore_core::rules::payload::MAX_DEPTH)?;
    m.setattr("_MAX_INT_DIGITS", alkstore_core::rules::payload::MAX_INT_DIGITS)?;
    Ok(())
}
