//! The alkstore Python binding, module `alkstore._core`.
//!
//! Thin by design: it converts Python values to the core's types and back,
//! releases the GIL around every call that can wait, and maps errors. No
//! queue logic lives here — that is the engines' (and `alkstore-core`'s) job.

mod catalog;
mod convert;
mod errors;
mod event;
mod exit;
mod foreign;
mod handle;
mod iter;
mod json;
mod limits;
mod lock;
mod queue;
mod repr;
mod rules;
mod schedule;
mod stop;
mod store;
mod stream;
mod subscription;
mod telemetry;
mod tx;
mod views;
mod wait;
mod workflows;

use pyo3::prelude::*;

/// The inclusive range of retry delays for attempt `attempt` with base `base_s`.
#[pyfunction]
fn backoff_range(attempt: convert::Int, base_s: &Bound<'_, PyAny>) -> PyResult<(i64, i64)> {
    let attempt = attempt.get("attempt")?;
    let base_s = convert::number(base_s, "base_s")?;
    errors::IntoPyResult::py(alkstore_core::checked_backoff_range(attempt, base_s))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(store::open, m)?)?;
    m.add_function(wrap_pyfunction!(backoff_range, m)?)?;
    m.add_function(wrap_pyfunction!(schedule::next_fires, m)?)?;
    m.add_class::<store::Store>()?;
    m.add_class::<queue::Queue>()?;
    m.add_class::<handle::JobHandle>()?;
    m.add_class::<views::Job>()?;
    m.add_class::<views::QueueStats>()?;
    m.add_class::<limits::QueueLimits>()?;
    m.add_class::<views::Swept>()?;
    m.add_class::<tx::Transaction>()?;
    m.add_class::<stop::StopToken>()?;
    m.add_class::<iter::JobIterator>()?;
    m.add_class::<schedule::Schedule>()?;
    m.add_class::<lock::Lock>()?;
    m.add_class::<stream::Stream>()?;
    m.add_class::<event::Event>()?;
    m.add_class::<subscription::Subscription>()?;
    m.add_class::<catalog::StreamInfo>()?;
    m.add_class::<catalog::ConsumerInfo>()?;
    m.add_class::<catalog::LockInfo>()?;
    m.add_class::<catalog::CompletionCount>()?;
    m.add_class::<workflows::JobResult>()?;
    rules::add(m)?;
    // What daemon threads look up lazily must be there before they run (see each).
    json::init(m.py())?;
    errors::init(m.py())?;
    // Waiting threads must stop re-attaching before the interpreter finalizes.
    m.py().import("atexit")?.call_method1("register", (wrap_pyfunction!(exit::at_exit, m)?,))?;
    Ok(())
}
