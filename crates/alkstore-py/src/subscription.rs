//! `stream.subscribe(consumer, stop=…)`: one object usable with `for` and
//! `async for`, delivering at-least-once (SPEC §9).
//!
//! The position rule: the offset of the event handed out last is saved when
//! the consumer asks for the next one, so "asked for the next" means "done
//! with this one". Leaving the loop early (`break`, an exception) never asks
//! again, so that event is delivered again to the next subscriber; a crash
//! replays at most the events handed out since the last save — one.

use std::collections::VecDeque;
use std::sync::Arc;

use alkstore_core::{Event as CoreEvent, StopToken as CoreStop, Store as CoreStore, WaitSpec};
use parking_lot::Mutex;
use pyo3::prelude::*;

use crate::event::Event;
use crate::repr;
use crate::stop::StopToken;
use crate::wait::{self, blocking};

/// Where one subscription stands.
#[derive(Default)]
struct Position {
    /// The offset reads continue after: the consumer's saved offset (read on
    /// the first step), then the last event fetched.
    after: Option<i64>,
    /// The event handed out last, saved when the next one is asked for.
    unsaved: Option<i64>,
    /// Fetched by a batch read, not handed out yet.
    buffered: VecDeque<CoreEvent>,
    /// `stop` ended the iteration.
    done: bool,
}

/// Yields a stream's events after a consumer's saved offset until `stop`.
#[pyclass(name = "Subscription", module = "alkstore", frozen)]
pub struct Subscription {
    store: Arc<CoreStore>,
    stream: String,
    consumer: String,
    batch: usize,
    stop: Option<CoreStop>,
    /// Locked for a whole step (with the GIL released), so two threads
    /// sharing one subscription take turns instead of racing the offset.
    position: Mutex<Position>,
}

impl Subscription {
    pub(crate) fn new(
        store: Arc<CoreStore>,
        stream: String,
        consumer: String,
        batch: usize,
        stop: Option<&Bound<'_, StopToken>>,
    ) -> Self {
        Subscription {
            store,
            stream,
            consumer,
            batch,
            stop: stop.map(|s| s.get().inner.clone()),
            position: Mutex::new(Position::default()),
        }
    }

    fn stopped(&self) -> bool {
        self.stop.as_ref().is_some_and(CoreStop::stopped)
    }

    /// Saves the previous event, then hands out the next one, waiting for a
    /// commit when there is none. None when `stop` (or `cancel`) ends it.
    fn step(&self, spec: &WaitSpec<'_>, cancel: Option<&CoreStop>) -> alkstore_core::Result<Option<CoreEvent>> {
        let mut pos = self.position.lock();
        if pos.done {
            return Ok(None);
        }
        if let Some(offset) = pos.unsaved {
            self.store.save_offset(None, &self.stream, &self.consumer, offset)?;
            pos.unsaved = None;
        }
        if self.stopped() {
            pos.done = true;
            return Ok(None);
        }
        if pos.buffered.is_empty() {
            let after = match pos.after {
                Some(a) => a,
                None => self.store.get_offset(None, &self.stream, &self.consumer)?,
            };
            pos.after = Some(after);
            let events = self.store.next_events(&self.stream, after, self.batch, spec)?;
            let Some(last) = events.last() else {
                pos.done = self.stopped();
                return Ok(None);
            };
            pos.after = Some(last.offset);
            pos.buffered.extend(events);
        }
        if cancel.is_some_and(CoreStop::stopped) {
            // The awaiting task is gone: nobody would receive the event, so
            // it stays buffered rather than count as handed out.
            return Ok(None);
        }
        let event = pos.buffered.pop_front();
        pos.unsaved = event.as_ref().map(|e| e.offset);
        Ok(event)
    }

    fn next_event(&self, py: Python<'_>, cancel: Option<&CoreStop>) -> PyResult<Option<Event>> {
        let mut stops: Vec<&CoreStop> = self.stop.iter().collect();
        stops.extend(cancel);
        Ok(blocking(py, None, &stops, |spec| self.step(spec, cancel))?.map(Event::from))
    }
}

#[pymethods]
impl Subscription {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Event>> {
        self.next_event(py, None)
    }

    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        wait::anext(slf.as_any(), &slf.get().store, false)
    }

    /// One blocking step for the asyncio bridge; raises StopAsyncIteration at the end.
    fn _next_blocking(&self, py: Python<'_>, cancel: &Bound<'_, StopToken>) -> PyResult<Event> {
        wait::or_stop_async(self.next_event(py, Some(&cancel.get().inner))?)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "<alkstore.Subscription stream={} consumer={}>",
            repr::text(py, &self.stream)?,
            repr::text(py, &self.consumer)?
        ))
    }
}
