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

/// Adds the rules to the module. `setattr`, not `add`: `add` would list
/// them in `__all__`, which names the public API.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.setattr("_validate_name", wrap_pyfunction!(_validate_name, m)?)?;
    m.setattr("_batch_size", wrap_pyfunction!(_batch_size, m)?)?;
    m.setattr("_parse_target", wrap_pyfunction!(_parse_target, m)?)?;
    m.setattr("_outbox_of", wrap_pyfunction!(_outbox_of, m)?)?;
    m.setattr("_MAX_NAME_CHARS", MAX_NAME_CHARS)?;
    m.setattr("_MAX_BATCH", MAX_BATCH)?;
    m.setattr("_MAX_READ", MAX_READ)?;
    Ok(())
}
