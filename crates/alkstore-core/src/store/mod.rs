//! `Store`: the engine-independent front every binding call goes through.
//!
//! It enforces the rules that must hold identically on every engine before a
//! byte reaches storage: the store is open, the calling thread is not inside
//! a transaction it did not pass, names and arguments are valid, payloads fit.

pub mod completions;
pub mod foreign;
pub mod lock;
pub mod operate;
pub mod queue;
pub mod session;
pub mod stop;
pub mod stream;
pub mod txguard;
pub mod waiting;
pub mod wake;
pub mod workflows;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::engine::{Engine, Tx};
use crate::error::{Error, Result};
use crate::open::options::OpenOptions;
pub use crate::rules::batch::{batch_size, MAX_BATCH};
use crate::rules::duration::MAX_DURATION_S;
use crate::store::completions::Tally;
pub use crate::store::session::TxSession;
use crate::store::txguard::TxThreads;
use crate::store::wake::WakeHub;

/// An open store over one engine.
pub struct Store {
    engine: Arc<dyn Engine>,
    options: OpenOptions,
    threads: Arc<TxThreads>,
    /// Shared with every [`TxSession`] it hands out: a transaction begun
    /// before `close` must not run or land anything after it.
    closed: Arc<AtomicBool>,
    /// Started on the first wait, so stores that never wait run no watcher.
    hub: OnceLock<Arc<WakeHub>>,
    /// Acks counted for the completion chart, not yet written.
    done: Arc<Tally>,
}

impl Store {
    /// Wraps an opened engine.
    pub fn new(engine: Arc<dyn Engine>, options: OpenOptions) -> Self {
        let done = Arc::new(Tally::new(&engine));
        Store { engine, options, threads: Arc::default(), closed: Arc::default(), hub: OnceLock::new(), done }
    }

    /// The engine's name.
    pub fn engine_kind(&self) -> &'static str {
        self.engine.kind()
    }

    /// The validated open options.
    pub fn options(&self) -> &OpenOptions {
        &self.options
    }

    /// The engine itself, for surfaces layered on the queue ops.
    pub fn engine(&self) -> &Arc<dyn Engine> {
        &self.engine
    }

    /// Closes the store. Idempotent.
    pub fn close(&self) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            self.done.finish();
            self.engine.close();
            if let Some(hub) = self.hub.get() {
                // Waiters see `closed` on their next look and raise StoreClosed.
                hub.bump();
            }
        }
    }

    /// The store's wake hub, starting the engine's feed on first use.
    pub fn wakes(&self) -> Result<Arc<WakeHub>> {
        self.open_check()?;
        if let Some(hub) = self.hub.get() {
            return Ok(hub.clone());
        }
        let hub = Arc::new(WakeHub::new());
        if self.hub.set(hub.clone()).is_ok() {
            self.engine.start_wakes(hub.clone())?;
            return Ok(hub);
        }
        Ok(self.hub.get().expect("set by the racing thread").clone())
    }

    /// The checks a call makes on its caller's thread when the call itself
    /// will run on another one (the asyncio bridge's wait thread): the store
    /// is open and this thread holds no transaction of it (SPEC §6). The
    /// helper thread holds none, so only the caller's thread can tell.
    pub fn check_caller(&self) -> Result<()> {
        self.enter(None).map(|_| ())
    }

    /// Whether `close` was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    pub(crate) fn open_check(&self) -> Result<()> {
        if self.is_closed() {
            return Err(Error::StoreClosed);
        }
        Ok(())
    }

    /// The checks every call makes: open store; with no `tx`, a free thread.
    pub(crate) fn enter<'a>(&self, tx: Option<&'a mut TxSession>) -> Result<Option<&'a mut dyn Tx>> {
        self.open_check()?;
        match tx {
            Some(s) => s.live().map(Some),
            None => {
                self.threads.check_free()?;
                Ok(None)
            }
        }
    }

    /// Runs `f` in the caller's transaction when given (under the session's
    /// doom rule), else on a free thread in the engine's own transaction.
    pub(crate) fn in_tx<T>(
        &self,
        tx: Option<&mut TxSession>,
        f: impl FnOnce(Option<&mut dyn Tx>) -> Result<T>,
    ) -> Result<T> {
        match tx {
            Some(s) => s.op(|t| f(Some(t))),
            None => {
                self.enter(None)?;
                f(None)
            }
        }
    }

    /// Opens a caller transaction.
    pub fn begin(&self) -> Result<TxSession> {
        self.open_check()?;
        let thread = self.threads.enter()?;
        match self.engine.begin() {
            Ok(inner) => Ok(TxSession {
                inner: Some(inner),
                doomed: false,
                thread,
                threads: self.threads.clone(),
                closed: self.closed.clone(),
                acked: Vec::new(),
                done: self.done.clone(),
            }),
            Err(e) => {
                self.threads.leave(thread);
                Err(e)
            }
        }
    }

    /// Refuses a payload's JSON text outside the limits (SPEC §4.1), before any write.
    pub(crate) fn check_payload(&self, payload: &str) -> Result<()> {
        self.check_json("payload", payload)
    }

    /// Refuses `what`'s JSON text (a payload, an ack's result, an event's
    /// payload) over `max_payload_bytes`, or past what a reader decodes
    /// ([`crate::rules::payload`]), naming it and the limit.
    pub(crate) fn check_json(&self, what: &str, text: &str) -> Result<()> {
        if text.len() > self.options.max_payload_bytes {
            return Err(Error::Payload(format!(
                "{what} is {} bytes of JSON, over max_payload_bytes={}",
                text.len(),
                self.options.max_payload_bytes
            )));
        }
        crate::rules::payload::check(text).map_err(|r| Error::Payload(format!("{what} {r}")))
    }

    /// `store._advance_clock` (tests only). One shift is bounded like any
    /// duration, so a test clock stays far from overflowing.
    pub fn advance_clock(&self, seconds: i64) -> Result<()> {
        if seconds.unsigned_abs() > MAX_DURATION_S as u64 {
            return Err(Error::Value(format!(
                "seconds must be between -{MAX_DURATION_S} and {MAX_DURATION_S}, got {seconds}"
            )));
        }
        self.open_check()?;
        self.engine.advance_clock(seconds);
        Ok(())
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.close();
    }
}
