//! The one tokio runtime every Postgres store in the process shares.
//!
//! The engine's trait methods are synchronous (the binding calls them with the
//! GIL released), while tokio-postgres is async: each call `block_on`s this
//! runtime. One runtime per process, not per store, because connection tasks
//! and pool timers live on it and the Python binding's asyncio bridge must run
//! its waits on the same one.
//!
//! A runtime's worker threads do not survive `fork()`: a child that inherited
//! an opened store would hang on its first call. We record the pid when the
//! runtime is built and refuse every later use from another pid.

use std::future::Future;
use std::sync::OnceLock;

use alkstore_core::{Error, Result};
use tokio::runtime::Runtime;

/// Two workers are plenty: they only shuttle bytes between sockets and the
/// blocked caller threads; the work happens in the server.
const WORKER_THREADS: usize = 2;

struct Shared {
    runtime: Runtime,
    pid: u32,
}

static SHARED: OnceLock<std::result::Result<Shared, String>> = OnceLock::new();

/// The message every call gets in a child process forked after the runtime was built.
pub const FORKED_MESSAGE: &str = "alkstore's Postgres engine cannot be used in a process forked after it was opened; \
                                  open a new store in the child";

/// This process's id; a test can pretend to be a forked child.
fn current_pid() -> u32 {
    #[cfg(test)]
    if let Some(pid) = tests::FAKE_PID.get() {
        return pid;
    }
    std::process::id()
}

fn shared() -> Result<&'static Shared> {
    let s = SHARED.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKER_THREADS)
            .thread_name("alkstore-pg")
            .enable_all()
            .build()
            .map(|runtime| Shared { runtime, pid: std::process::id() })
            .map_err(|e| format!("could not start the Postgres engine's runtime: {e}"))
    });
    match s {
        Ok(s) if s.pid == current_pid() => Ok(s),
        Ok(_) => Err(Error::database(None, FORKED_MESSAGE)),
        Err(m) => Err(Error::database(None, m.clone())),
    }
}

/// The process-wide runtime, built on first use. Refused (as every engine
/// call is) in a process forked after it was built.
///
/// The binding uses it to run async waits on the same runtime that owns the
/// engine's connections.
pub fn runtime() -> Result<&'static Runtime> {
    shared().map(|s| &s.runtime)
}

/// Runs `fut` to completion on the shared runtime, blocking this thread.
///
/// Must not be called from inside the runtime's own async context (tokio
/// panics on nested `block_on`); async callers await the engine's futures
/// directly instead.
pub fn block_on<F: Future>(fut: F) -> Result<F::Output> {
    Ok(shared()?.runtime.block_on(fut))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    thread_local! {
        /// Per thread, so other tests sharing the runtime are unaffected.
        pub(super) static FAKE_PID: Cell<Option<u32>> = const { Cell::new(None) };
    }

    #[test]
    fn a_forked_child_is_refused() -> Result<()> {
        assert_eq!(block_on(async { 7 })?, 7);
        FAKE_PID.set(Some(std::process::id().wrapping_add(1)));
        let refused = block_on(async { 7 });
        let also = runtime().map(|_| ());
        FAKE_PID.set(None);
        assert_eq!(refused, Err(Error::database(None, FORKED_MESSAGE)));
        assert_eq!(also, Err(Error::database(None, FORKED_MESSAGE)));
        assert_eq!(block_on(async { 8 })?, 8);
        Ok(())
    }
}
