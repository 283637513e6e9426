//! The `Stream` class (`store.stream(name)`): publish, read, consumer offsets.

use std::sync::Arc;

use alkstore_core::store::stream::{read_limit, MAX_READ};
use alkstore_core::Store as CoreStore;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::convert::Int;
use crate::errors::IntoPyResult;
use crate::event::Event;
use crate::exit;
use crate::foreign::{self, Call, Shape};
use crate::json;
use crate::repr;
use crate::stop::StopToken;
use crate::subscription::Subscription;
use crate::tx::{run, Transaction};

/// A durable, ordered, replayable stream (SPEC §9); a name, not a created object.
#[pyclass(name = "Stream", module = "alkstore", frozen)]
pub struct Stream {
    store: Arc<CoreStore>,
    name: String,
}

impl Stream {
    pub(crate) fn new(store: Arc<CoreStore>, name: String) -> Self {
        Stream { store, name }
    }

    /// The publish rendered for `conn`'s driver and run there (ADR 0015).
    fn on_conn(
        &self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        key: Option<&str>,
        conn: &Bound<'_, PyAny>,
        call: Call,
    ) -> PyResult<Py<PyAny>> {
        let c = foreign::conn(&self.store, conn, call)?;
        let payload = json::encode(payload)?;
        let rendered = self.store.foreign_publish(&self.name, key, &payload, c.style).py()?;
        foreign::run(py, &self.store, &c, Some(rendered), Shape::One)
    }
}

#[pymethods]
impl Stream {
    /// The stream name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Appends one event; returns its offset. In `tx` (alkstore's
    /// transaction) or on `conn` (your own connection) it lands only if that
    /// transaction commits.
    #[pyo3(signature = (payload, *, key=None, tx=None, conn=None))]
    fn publish(
        &self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        key: Option<&str>,
        tx: Option<&Bound<'_, Transaction>>,
        conn: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        match (tx, conn) {
            (Some(_), Some(_)) => Err(foreign::tx_and_conn()),
            (None, Some(c)) => self.on_conn(py, payload, key, c, Call::Sync),
            (tx, None) => {
                let payload = json::encode(payload)?;
                let offset = run(py, &self.store, tx, |t| self.store.publish(t, &self.name, key, &payload))?;
                Ok(offset.into_pyobject(py)?.into_any().unbind())
            }
        }
    }

    /// `publish` for async code: on an async driver's `conn`, or on a thread.
    #[pyo3(signature = (payload, *, key=None, conn=None))]
    fn apublish(
        &self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        key: Option<String>,
        conn: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if let Some(c) = conn {
            return self.on_conn(py, payload, key.as_deref(), c, Call::Async);
        }
        let (store, name, payload) = (self.store.clone(), self.name.clone(), json::encode(payload)?);
        foreign::to_thread(py, move |py| {
            let offset = run(py, &store, None, |t| store.publish(t, &name, key.as_deref(), &payload))?;
            Ok(offset.into_pyobject(py)?.into_any().unbind())
        })
    }

    /// Events with an offset above `after`, ascending, at most `limit` (1..=`MAX_READ`, 1000).
    // The text signature spells the defaults out (pyo3 shows a newtype's as
    // `...`); it must be a literal, so tests/test_rules.py pins its 1000 to MAX_READ.
    #[pyo3(signature = (after=Int::new(0), limit=Int::new(MAX_READ as i64), tx=None), text_signature = "($self, after=0, limit=1000, tx=None)")]
    fn read<'py>(
        &self,
        py: Python<'py>,
        after: Int,
        limit: Int,
        tx: Option<&Bound<'py, Transaction>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let limit = read_limit("limit", &limit).py()?;
        let after = after.get("after")?;
        let events = run(py, &self.store, tx, |t| self.store.read(t, &self.name, after, limit))?;
        PyList::new(py, events.into_iter().map(Event::from))
    }

    /// Saves `consumer`'s position; an older offset never replaces a newer one.
    #[pyo3(signature = (consumer, offset, tx=None))]
    fn save_offset(
        &self,
        py: Python<'_>,
        consumer: &str,
        offset: Int,
        tx: Option<&Bound<'_, Transaction>>,
    ) -> PyResult<()> {
        let offset = offset.get("offset")?;
        run(py, &self.store, tx, |t| self.store.save_offset(t, &self.name, consumer, offset))
    }

    /// `consumer`'s saved offset, 0 when it never saved one.
    #[pyo3(signature = (consumer, tx=None))]
    fn get_offset(&self, py: Python<'_>, consumer: &str, tx: Option<&Bound<'_, Transaction>>) -> PyResult<i64> {
        run(py, &self.store, tx, |t| self.store.get_offset(t, &self.name, consumer))
    }

    /// Events after `consumer`'s saved offset as they come, for `for` and
    /// `async for`; ends when `stop` is set. At-least-once: an event's offset
    /// is saved when the next one is asked for, or when `stop` ends the loop.
    #[pyo3(signature = (consumer, *, stop=None, batch=Int::new(100)), text_signature = "($self, consumer, *, stop=None, batch=100)")]
    fn subscribe(&self, consumer: &str, stop: Option<&Bound<'_, StopToken>>, batch: Int) -> PyResult<Subscription> {
        let batch = read_limit("batch", &batch).py()?;
        alkstore_core::validate_name("consumer", consumer).py()?;
        Ok(Subscription::new(self.store.clone(), self.name.clone(), consumer.to_owned(), batch, stop))
    }

    /// Deletes the events with an offset below `offset`; returns how many.
    fn trim_to(&self, py: Python<'_>, offset: Int) -> PyResult<i64> {
        let offset = offset.get("offset")?;
        exit::detach(py, || self.store.trim_to(&self.name, offset)).py()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("<alkstore.Stream {}>", repr::text(py, &self.name)?))
    }
}
