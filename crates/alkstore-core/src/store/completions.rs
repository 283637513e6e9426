//! Counting acks for the completion chart (SPEC §19, ADR 0020) without
//! writing on the ack path: each store adds its acks to an in-memory tally,
//! and a flusher thread, started by the first counted ack, hands the tally
//! to the engine at most every [`FLUSH_EVERY`]. `close` (and so dropping the
//! store) writes what is left; a process killed outright loses at most the
//! last few seconds of counts, never a job.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::engine::completions::{MinuteCount, KEEP_MINUTES};
use crate::engine::model::Claimed;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::store::Store;

/// How long counted acks wait in memory before they are written.
pub const FLUSH_EVERY: Duration = Duration::from_secs(5);

/// Acks counted in memory, per queue, not yet written.
pub struct Tally {
    state: Mutex<TallyState>,
    changed: Condvar,
    /// Weak, so a flusher never keeps a dropped store's engine open.
    engine: Weak<dyn Engine>,
}

#[derive(Default)]
struct TallyState {
    pending: HashMap<String, u64>,
    stopping: bool,
    /// The flusher, and the process it was started in: a forked child has no
    /// such thread and starts its own.
    flusher: Option<(u32, JoinHandle<()>)>,
}

impl Tally {
    /// An empty tally writing to `engine`.
    pub(crate) fn new(engine: &Arc<dyn Engine>) -> Self {
        Tally { state: Mutex::default(), changed: Condvar::new(), engine: Arc::downgrade(engine) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TallyState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `n` acks of `queue`, starting the flusher when none runs in this process.
    pub(crate) fn add(self: &Arc<Self>, queue: &str, n: u64) {
        if n == 0 {
            return;
        }
        let mut st = self.lock();
        if st.stopping {
            return;
        }
        // Only the first count after a write wakes the flusher: one futex
        // wake per flush, not per ack.
        let first = st.pending.is_empty();
        match st.pending.get_mut(queue) {
            Some(c) => *c += n,
            None => {
                st.pending.insert(queue.to_owned(), n);
            }
        }
        let pid = std::process::id();
        if st.flusher.as_ref().is_none_or(|(p, _)| *p != pid) {
            let tally = Arc::downgrade(self);
            let spawned =
                std::thread::Builder::new().name("alkstore-completions".into()).spawn(move || flush_loop(&tally));
            // Without a thread the counts still land at close.
            if let Ok(handle) = spawned {
                st.flusher = Some((pid, handle));
            }
        }
        drop(st);
        if first {
            self.changed.notify_all();
        }
    }

    /// Takes everything pending, sorted by queue (the engine's lock order).
    fn take(&self) -> Vec<(String, u64)> {
        let mut counts: Vec<(String, u64)> = self.lock().pending.drain().collect();
        counts.sort_unstable();
        counts
    }

    /// Drops the counts of `queue` not written yet: the queue was forgotten,
    /// and its counts go with it (`Store::forget_queue`).
    pub(crate) fn forget(&self, queue: &str) {
        self.lock().pending.remove(queue);
    }

    /// Puts back counts whose write failed, to try again with the next ones.
    fn restore(&self, counts: Vec<(String, u64)>) {
        let mut st = self.lock();
        for (queue, n) in counts {
            *st.pending.entry(queue).or_insert(0) += n;
        }
    }

    /// Writes what is pending now; on failure keeps it for the next try.
    pub(crate) fn flush(&self) -> Result<()> {
        let Some(engine) = self.engine.upgrade() else { return Ok(()) };
        let counts = self.take();
        if counts.is_empty() {
            return Ok(());
        }
        engine.record_completions(&counts).inspect_err(|_| self.restore(counts))
    }

    /// Stops and joins this process's flusher, then writes what is left.
    pub(crate) fn finish(&self) {
        let flusher = {
            let mut st = self.lock();
            st.stopping = true;
            st.flusher.take()
        };
        self.changed.notify_all();
        if let Some((pid, handle)) = flusher {
            if pid == std::process::id() {
                let _ = handle.join();
            }
        }
        // The last counts of a closing store: a failure here has nobody to tell.
        let _ = self.flush();
    }
}

/// The flusher: sleeps until something is counted, lets counts gather for
/// [`FLUSH_EVERY`], writes them, and repeats until the store stops or is gone.
fn flush_loop(tally: &Weak<Tally>) {
    loop {
        let Some(t) = tally.upgrade() else { return };
        {
            let st = t.lock();
            let st = t
                .changed
                .wait_while(st, |s| s.pending.is_empty() && !s.stopping)
                .unwrap_or_else(PoisonError::into_inner);
            let (st, _) =
                t.changed.wait_timeout_while(st, FLUSH_EVERY, |s| !s.stopping).unwrap_or_else(PoisonError::into_inner);
            if st.stopping {
                return;
            }
        }
        // A failed write keeps its counts; the next round tries again.
        let _ = t.flush();
    }
}

/// Calls `count(queue, n)` for the `landed` acks of `jobs`: once for the
/// usual batch of one queue; else once per job of the first `landed` (which
/// handles failed is not reported, and a chart of counts does not need it).
/// No allocation: this runs on every ack.
pub(crate) fn acked_per_queue(jobs: &[&Claimed], landed: usize, mut count: impl FnMut(&str, u64)) {
    match jobs {
        [] => {}
        [first, rest @ ..] if rest.iter().all(|j| j.queue == first.queue) => count(&first.queue, landed as u64),
        _ => jobs.iter().take(landed).for_each(|j| count(&j.queue, 1)),
    }
}

impl Store {
    /// `store.completions(minutes)`: acks per queue per minute over the last
    /// `minutes` minutes (1..=[`KEEP_MINUTES`]), the current one included,
    /// with this store's own unwritten counts written first.
    pub fn completions(&self, minutes: i64) -> Result<Vec<MinuteCount>> {
        if !(1..=KEEP_MINUTES).contains(&minutes) {
            return Err(Error::Value(format!("minutes must be between 1 and {KEEP_MINUTES}, got {minutes}")));
        }
        self.enter(None)?;
        self.done.flush()?;
        let now_minute = self.engine.now()?.div_euclid(60);
        self.engine.completions_since(now_minute - minutes + 1)
    }
}
