//! Interpreter exit: keeps waiting threads out of a finalizing interpreter.
//!
//! A wait runs with the thread detached and re-attaches about every 100 ms
//! (to let Ctrl-C through) and once more when it ends. A daemon thread that
//! does either after the interpreter began to finalize is killed inside
//! CPython (`pthread_exit` up to 3.13) while Rust frames are on its stack, or
//! trips pyo3's "interpreter not initialized" panic: either way the process
//! aborts. CPython itself parks daemon threads at exit; waiting threads here
//! do the same, before they would re-attach.
//!
//! `at_exit` runs from Python's `atexit`, while the interpreter is still
//! whole: it raises the flag, then — detached — lets the threads already on
//! their way back in finish (a Dekker pair with [`entering`]: a thread either
//! sees the flag, or is counted and waited for).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use pyo3::prelude::*;

/// Set by `at_exit`: the interpreter is about to finalize.
static EXITING: AtomicBool = AtomicBool::new(false);
/// The thread that ran `at_exit`: it finalizes the interpreter and may still attach.
static EXIT_THREAD: OnceLock<ThreadId> = OnceLock::new();
/// Waiting threads between "may I attach?" and having attached and let go.
static ENTERING: AtomicUsize = AtomicUsize::new(0);

/// How long `at_exit` waits for threads already re-attaching; they hold the
/// GIL only for a signal check or to return, so this is never reached in practice.
const ENTERING_GRACE: Duration = Duration::from_secs(2);

/// Permission for a waiting thread to attach; drop it once detached again
/// (or, for the final return, once attached).
pub struct Entering(());

impl Drop for Entering {
    fn drop(&mut self) {
        ENTERING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether this thread must stay away from the interpreter: it is exiting,
/// and this is not the thread that finalizes it.
fn shut_out() -> bool {
    let finalizing = EXITING.load(Ordering::SeqCst) || unsafe { pyo3::ffi::Py_IsInitialized() } == 0;
    finalizing && EXIT_THREAD.get() != Some(&std::thread::current().id())
}

/// Permission to attach, or None when the interpreter is exiting.
pub fn entering() -> Option<Entering> {
    ENTERING.fetch_add(1, Ordering::SeqCst);
    let guard = Entering(());
    if shut_out() {
        return None;
    }
    Some(guard)
}

/// Permission to return into the interpreter; when it is exiting, this
/// thread parks for good instead (it is a daemon thread the process is
/// about to end without).
pub fn entering_or_park() -> Entering {
    match entering() {
        Some(guard) => guard,
        None => loop {
            std::thread::park();
        },
    }
}

/// `py.detach(f)` for every call into the store: when the interpreter began
/// to exit while `f` ran, the thread parks instead of re-attaching (a daemon
/// thread — a Worker's handler or heartbeat thread — can be inside an ack or
/// a heartbeat when the main thread closes the store and returns).
#[inline]
pub fn detach<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
    let (r, entering) = py.detach(|| {
        let r = f();
        (r, entering_or_park())
    });
    drop(entering);
    r
}

/// Whether waits should end rather than go on: the interpreter is exiting.
pub fn exiting() -> bool {
    shut_out()
}

/// Registered with `atexit` by the module: from here on, waiting threads
/// park instead of re-attaching.
#[pyfunction]
pub fn at_exit(py: Python<'_>) {
    let _ = EXIT_THREAD.set(std::thread::current().id());
    EXITING.store(true, Ordering::SeqCst);
    py.detach(|| {
        let until = Instant::now() + ENTERING_GRACE;
        while ENTERING.load(Ordering::SeqCst) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}
