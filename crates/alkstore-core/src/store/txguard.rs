//! The "one transaction per thread" rule of the transaction seam (SPEC §6).
//!
//! A thread that holds an open transaction must not start another, nor call
//! the store without `tx=`: on SQLite that call would wait forever for the
//! writer lock its own thread holds. We refuse instead of deadlocking.

use std::collections::HashSet;
use std::thread::ThreadId;

use parking_lot::Mutex;

use crate::error::{Error, Result};

/// The set of threads with an open transaction on one store.
#[derive(Debug, Default)]
pub struct TxThreads {
    open: Mutex<HashSet<ThreadId>>,
}

impl TxThreads {
    /// Registers the current thread as holding a transaction.
    pub fn enter(&self) -> Result<ThreadId> {
        let me = std::thread::current().id();
        if !self.open.lock().insert(me) {
            return Err(Error::Transaction(
                "a transaction is already open in this thread; nested transactions are not supported".into(),
            ));
        }
        Ok(me)
    }

    /// Forgets `thread`'s transaction.
    pub fn leave(&self, thread: ThreadId) {
        self.open.lock().remove(&thread);
    }

    /// Refuses a call made without `tx=` from a thread that holds a transaction.
    pub fn check_free(&self) -> Result<()> {
        if self.open.lock().contains(&std::thread::current().id()) {
            return Err(Error::Transaction(
                "this thread holds an open transaction: pass tx= to run inside it, or call outside the block".into(),
            ));
        }
        Ok(())
    }
}
