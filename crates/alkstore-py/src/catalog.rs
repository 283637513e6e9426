//! What an operator sees across a store (`store.streams()`, `store.locks()`,
//! `store.completions()`): read-only values for the CLI, the dashboard and
//! the metrics.

use alkstore_core::store::stream::{ConsumerState, StreamState};
use alkstore_core::{LockRow, MinuteCount};
use pyo3::prelude::*;

use crate::convert::to_datetime;
use crate::repr;

/// One stream: its head (the last offset handed out) and its consumers.
#[pyclass(name = "StreamInfo", module = "alkstore", frozen, get_all)]
pub struct StreamInfo {
    /// The stream's name.
    name: String,
    /// The last offset handed out; 0 when nothing was ever published.
    head: i64,
    /// Each consumer with a saved offset, by name.
    consumers: Vec<Py<ConsumerInfo>>,
}

/// One consumer's saved offset in a stream, and how far behind the head it is.
#[pyclass(name = "ConsumerInfo", module = "alkstore", frozen, get_all)]
pub struct ConsumerInfo {
    /// The consumer's name.
    name: String,
    /// Its saved offset.
    offset: i64,
    /// Events published after its offset.
    lag: i64,
}

#[pymethods]
impl StreamInfo {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "StreamInfo(name={}, head={}, consumers={})",
            repr::text(py, &self.name)?,
            self.head,
            self.consumers.len()
        ))
    }
}

#[pymethods]
impl ConsumerInfo {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("ConsumerInfo(name={}, offset={}, lag={})", repr::text(py, &self.name)?, self.offset, self.lag))
    }
}

impl StreamInfo {
    pub(crate) fn new(py: Python<'_>, s: StreamState) -> PyResult<Self> {
        let consumers = s
            .consumers
            .into_iter()
            .map(|ConsumerState { consumer, offset, lag }| Py::new(py, ConsumerInfo { name: consumer, offset, lag }))
            .collect::<PyResult<_>>()?;
        Ok(StreamInfo { name: s.stream, head: s.head, consumers })
    }
}

/// One lease row: its holder and until when it covers them (lapsed ones included).
#[pyclass(name = "LockInfo", module = "alkstore", frozen, get_all)]
pub struct LockInfo {
    /// The lock's name.
    name: String,
    /// Who holds, or last held, it.
    owner: String,
    /// The lease covers its owner until this instant (UTC).
    expires_at: Py<PyAny>,
}

#[pymethods]
impl LockInfo {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("LockInfo(name={}, owner={})", repr::text(py, &self.name)?, repr::text(py, &self.owner)?))
    }
}

impl LockInfo {
    pub(crate) fn new(py: Python<'_>, l: LockRow) -> PyResult<Self> {
        Ok(LockInfo { name: l.name, owner: l.owner, expires_at: to_datetime(py, l.expires_at)? })
    }
}

/// Jobs of one queue acked during one minute (`store.completions()`).
#[pyclass(name = "CompletionCount", module = "alkstore", frozen, get_all)]
pub struct CompletionCount {
    /// The queue.
    queue: String,
    /// The start of the minute (UTC, the database's clock).
    minute: Py<PyAny>,
    /// How many of its jobs were acked in that minute.
    count: i64,
}

#[pymethods]
impl CompletionCount {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("CompletionCount(queue={}, count={})", repr::text(py, &self.queue)?, self.count))
    }
}

impl CompletionCount {
    pub(crate) fn new(py: Python<'_>, c: MinuteCount) -> PyResult<Self> {
        Ok(CompletionCount { queue: c.queue, minute: to_datetime(py, c.minute.saturating_mul(60))?, count: c.count })
    }
}
