//! The tokio runtime every Postgres store of one process shares.
//!
//! The engine's trait methods are synchronous (the binding calls them with the
//! GIL released), while tokio-postgres is async: each call `block_on`s this
//! runtime. One runtime per process, not per store, because connection tasks
//! and pool timers live on it. It is a current-thread runtime that its
//! callers drive (see [`Lane`]), with a driver thread for the idle moments.
//!
//! A runtime's threads do not survive `fork()`, and a store's sockets
//! belong to the process that opened it. So each store keeps the [`Rt`] it was
//! opened on, and every use of it from another process is refused with
//! [`FORKED_MESSAGE`]. A forked child that opens a store of its own gets a
//! fresh runtime: the parent's copy is left exactly as the fork found it —
//! never dropped (that would join threads that do not exist in the child)
//! and never touched (a lock one of its threads held at the fork stays held
//! forever in the child).

use std::future::Future;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use alkstore_core::{Error, Result};
use tokio::runtime::Runtime;
use tokio::sync::Notify;

/// How long no caller must have been inside the runtime before the driver
/// thread takes it over again (see [`Lane`]).
const IDLE: Duration = Duration::from_millis(2);

/// A runtime and the process that built it.
struct Shared {
    runtime: Runtime,
    pid: u32,
    lane: Lane,
}

/// Who drives the runtime. It is a current-thread runtime: whichever thread
/// is inside its `block_on` drives every task on it (the connections'
/// sockets, the LISTEN task, the timers). A caller blocked on a statement
/// therefore reads its own reply, as a plain blocking driver does: no round
/// trip crosses threads. (With a multi-thread runtime the sockets were read
/// by its worker threads, and every round trip paid a wake of a parked
/// worker and a wake of the parked caller: measured with the bare
/// tokio-postgres loop of `cargo bench`, 1,200 µs per claim + ack against
/// 519 µs driven on the calling thread; ADR 0032.)
///
/// While no caller is inside, a driver thread holds the runtime, so the
/// LISTEN task and the timers run while every thread is busy elsewhere (or
/// waiting on a wake). A caller asks it to leave ([`Lane::leave`]) and takes
/// the runtime; the driver comes back once no caller has been inside for
/// [`IDLE`], so back-to-back calls never wait for it to hand over.
struct Lane {
    /// Callers inside `block_on` now.
    active: AtomicUsize,
    /// When the last caller left, in nanoseconds since `base`.
    left_at: AtomicU64,
    base: Instant,
    /// Wakes the driver out of its `block_on`.
    leave: Notify,
}

impl Lane {
    fn new() -> Self {
        Lane { active: AtomicUsize::new(0), left_at: AtomicU64::new(0), base: Instant::now(), leave: Notify::new() }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// How long since the last caller left, when none is inside.
    fn idle_for(&self) -> Option<Duration> {
        if self.active.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(Duration::from_nanos(self.now().saturating_sub(self.left_at.load(Ordering::Acquire))))
    }
}

/// A caller inside the runtime; leaving (also by unwinding) notes the time.
struct Inside<'a>(&'a Lane);

impl<'a> Inside<'a> {
    fn enter(lane: &'a Lane) -> Self {
        lane.active.fetch_add(1, Ordering::AcqRel);
        // A permit when the driver is not waiting yet: it leaves at once.
        lane.leave.notify_one();
        Inside(lane)
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.left_at.store(self.0.now(), Ordering::Release);
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The driver thread: holds the runtime whenever no caller has been inside
/// for [`IDLE`], until a caller comes.
fn drive(shared: &'static Shared) {
    loop {
        loop {
            match shared.lane.idle_for() {
                Some(idle) if idle >= IDLE => break,
                Some(idle) => std::thread::park_timeout(IDLE - idle),
                None => std::thread::park_timeout(IDLE),
            }
        }
        shared.runtime.block_on(shared.lane.leave.notified());
    }
}

/// This process's runtime, or the inherited one of the parent before the
/// child built its own, or null before the first store. Leaked on purpose:
/// stores hold `&'static` references to it for their whole life. A pointer
/// swap rather than a lock, because a lock could be held by a parent thread
/// at the moment of a fork and then never be released in the child.
static CURRENT: AtomicPtr<Shared> = AtomicPtr::new(std::ptr::null_mut());

/// The message every call on a store gets in a process forked after the
/// store was opened.
pub const FORKED_MESSAGE: &str = "this Postgres store was opened in the parent process before fork() and \
                                  cannot be used here; open a new store in the child";

/// This process's id; a test can pretend to be a forked child.
fn current_pid() -> u32 {
    #[cfg(test)]
    if let Some(pid) = tests::FAKE_PID.get() {
        return pid;
    }
    std::process::id()
}

/// The runtime a store was opened on, usable only in the process that
/// opened the store. Cheap to copy.
#[derive(Clone, Copy)]
pub struct Rt {
    shared: &'static Shared,
}

impl std::fmt::Debug for Rt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rt").field("pid", &self.shared.pid).finish()
    }
}

impl Rt {
    /// This process's runtime, built on first use — and built anew in a
    /// forked child, whose inherited runtime has no threads.
    pub fn current() -> Result<Rt> {
        let pid = current_pid();
        loop {
            let seen = CURRENT.load(Ordering::Acquire);
            // SAFETY: every non-null value stored in CURRENT comes from
            // `Box::leak` and is never freed.
            if let Some(shared) = unsafe { seen.as_ref() } {
                if shared.pid == pid {
                    return Ok(Rt { shared });
                }
            }
            let built: &'static mut Shared = Box::leak(Box::new(build(pid)?));
            match CURRENT.compare_exchange(seen, built, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    let shared: &'static Shared = built;
                    std::thread::Builder::new().name("alkstore-pg".into()).spawn(move || drive(shared)).map_err(
                        |e| Error::database(None, format!("could not start the Postgres engine's driver: {e}")),
                    )?;
                    return Ok(Rt { shared });
                }
                Err(_) => {
                    // Another thread of this process installed one first:
                    // ours never ran anything, so stop its threads and use theirs.
                    // SAFETY: `built` was leaked just above and published nowhere.
                    let ours = unsafe { Box::from_raw(built) };
                    ours.runtime.shutdown_background();
                }
            }
        }
    }

    /// Whether this is the calling process's runtime.
    pub fn is_ours(&self) -> bool {
        self.shared.pid == current_pid()
    }

    /// The runtime itself; refused in a process forked after the store opened.
    ///
    /// The binding uses it to run async waits on the same runtime that owns
    /// the engine's connections.
    pub fn runtime(&self) -> Result<&'static Runtime> {
        if self.is_ours() {
            Ok(&self.shared.runtime)
        } else {
            Err(Error::database(None, FORKED_MESSAGE))
        }
    }

    /// Runs `fut` to completion on the runtime, blocking this thread.
    ///
    /// Must not be called from inside the runtime's own async context (tokio
    /// panics on nested `block_on`); async callers await the engine's futures
    /// directly instead.
    pub fn block_on<F: Future>(&self, fut: F) -> Result<F::Output> {
        let runtime = self.runtime()?;
        let _inside = Inside::enter(&self.shared.lane);
        Ok(runtime.block_on(fut))
    }
}

fn build(pid: u32) -> Result<Shared> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map(|runtime| Shared { runtime, pid, lane: Lane::new() })
        .map_err(|e| Error::database(None, format!("could not start the Postgres engine's runtime: {e}")))
}

/// This process's runtime (built on first use, also in a forked child).
pub fn runtime() -> Result<&'static Runtime> {
    Rt::current()?.runtime()
}

/// Runs `fut` to completion on this process's runtime, blocking this thread.
pub fn block_on<F: Future>(fut: F) -> Result<F::Output> {
    Rt::current()?.block_on(fut)
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
    fn a_forked_child_is_refused_the_parents_runtime_but_gets_its_own() -> Result<()> {
        let parents = Rt::current()?;
        assert_eq!(parents.block_on(async { 7 })?, 7);
        let real = std::process::id();
        FAKE_PID.set(Some(real.wrapping_add(1)));
        let refused = parents.block_on(async { 7 });
        let also = parents.runtime().map(|_| ());
        let childs = Rt::current();
        let in_child = childs.and_then(|rt| rt.block_on(async { 8 }));
        FAKE_PID.set(None);
        assert_eq!(refused, Err(Error::database(None, FORKED_MESSAGE)));
        assert_eq!(also, Err(Error::database(None, FORKED_MESSAGE)));
        assert_eq!(in_child, Ok(8));
        // Back in the "parent": its runtime still answers, and the next
        // `current` is a runtime of this process again.
        assert_eq!(parents.block_on(async { 9 })?, 9);
        assert!(Rt::current()?.is_ours());
        Ok(())
    }
}
