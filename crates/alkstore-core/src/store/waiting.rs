//! Waiting for work (SPEC §5): the one loop every blocking consumer uses.
//!
//! Engine-independent: engines only feed the store's [`WakeHub`] and answer
//! [`Engine::next_wake`]. The loop re-reads after every wake, sleeps until the
//! earliest of a wake, the next known deadline (to the millisecond: a rate
//! window of a fractional period opens between two whole seconds), the
//! safety-net poll, the caller's timeout or stop — in slices of at most
//! [`SLICE`] so the binding can let Ctrl-C through.
//!
//! [`Engine::next_wake`]: crate::ReadOps::next_wake

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::store::stop::StopToken;
use crate::store::wake::WakeHub;
use crate::store::Store;

/// The longest the loop sleeps before checking for signals and stop.
pub const SLICE: Duration = Duration::from_millis(100);

/// The shortest gap between two `next_wake` queries of one waiter. The query
/// may walk a queue's scheduled rows, so a waiter woken by every commit of a
/// busy store must not run it each time; a cached answer is re-checked at
/// most this much later, which bounds how late a newly scheduled job can be.
/// (The instant it named coming round is not such a commit: the waiter then
/// asks again at once.)
pub const NEXT_WAKE_EVERY: Duration = Duration::from_millis(100);

/// How long after the instant `next_wake` names the waiter looks. SQLite's
/// sub-second clock reads to the millisecond and a rate window's edge is
/// compared in floating point, so a look at the very instant could still
/// find the window shut; a millisecond later it is open.
pub const WAKE_MARGIN: Duration = Duration::from_millis(1);

/// How the caller wants to wait.
pub struct WaitSpec<'a> {
    /// `Some(d)`: give up after `d` (zero: one look, no wait). `None`: forever.
    pub timeout: Option<Duration>,
    /// Each ends the wait (with an empty result) when set: the caller's
    /// `stop`, and for asyncio callers a per-call cancel token.
    pub stops: &'a [&'a StopToken],
    /// Called about every [`SLICE`]; returns true to abandon the wait
    /// (the binding uses it for Ctrl-C). The loop then returns `Interrupted`.
    pub interrupted: &'a (dyn Fn() -> bool + Sync),
}

impl WaitSpec<'_> {
    /// Whether any stop token is set.
    pub fn stopped(&self) -> bool {
        self.stops.iter().any(|s| s.stopped())
    }
}

impl Store {
    /// Runs `attempt` until it yields something, waiting for commits between
    /// tries. `queue` names the queue whose deadlines bound the sleep (None: only
    /// commits and the safety-net poll wake it).
    pub fn wait_for<T>(
        &self,
        queue: Option<&str>,
        spec: &WaitSpec<'_>,
        mut attempt: impl FnMut() -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        let hub = self.wakes()?;
        let start = Instant::now();
        let give_up = spec.timeout.map(|t| start + t);
        let poll = Duration::from_secs_f64(self.options().poll_interval_s);
        // (when asked, the instant the queue gains work without a commit)
        let mut known: Option<(Instant, Option<Instant>)> = None;
        loop {
            if self.is_closed() {
                return Err(Error::StoreClosed);
            }
            // Stop is checked before every attempt, the first included: an
            // attempt may claim, and a claim made after the caller left (an
            // asyncio task cancelled before its wait thread ran) is held by
            // nobody until its lease lapses, eating an attempt.
            if spec.stopped() {
                return Ok(None);
            }
            // Subscribe before the read: a commit after this moves the generation.
            let seen = hub.generation();
            if let Some(found) = attempt()? {
                return Ok(Some(found));
            }
            let now = Instant::now();
            if give_up.is_some_and(|g| now >= g) || spec.stopped() {
                return Ok(None);
            }
            let mut until = now + poll;
            if let Some(g) = give_up {
                until = until.min(g);
            }
            if let Some(q) = queue {
                // A cached answer goes stale with time, and once the instant
                // it named has come: the waiter woke for it, and a look that
                // found nothing then (another claimer was first) must learn
                // the next instant rather than sleep on one that has passed.
                let fresh =
                    known.is_none_or(|(asked, due)| now >= asked + NEXT_WAKE_EVERY || due.is_some_and(|d| now >= d));
                if fresh {
                    // Measured from when the answer is back, so never early:
                    // the engine read its clock before that.
                    let due = self.engine().next_wake(q)?.and_then(|s| Instant::now().checked_add(wake_after(s)));
                    known = Some((now, due));
                    // A lease that lapsed between the attempt and that read is
                    // in neither (the read names only leases still live), so
                    // one more look before sleeping on it.
                    if spec.stopped() {
                        return Ok(None);
                    }
                    if let Some(found) = attempt()? {
                        return Ok(Some(found));
                    }
                }
                if let Some((asked, due)) = known {
                    if let Some(d) = due {
                        until = until.min(d);
                    }
                    if !fresh {
                        // A commit since may have scheduled something sooner.
                        until = until.min(asked + NEXT_WAKE_EVERY);
                    }
                }
            }
            if !self.nap(&hub, seen, until, spec)? {
                return Ok(None);
            }
        }
    }

    /// Sleeps until `hub` moves past `seen` or `until` passes, in slices of
    /// at most [`SLICE`] that check close, stop and the interrupt. Returns
    /// false when a stop token ended the nap; `StoreClosed` / `Interrupted`
    /// when those did.
    pub(crate) fn nap(&self, hub: &WakeHub, seen: u64, until: Instant, spec: &WaitSpec<'_>) -> Result<bool> {
        loop {
            let slice_end = until.min(Instant::now() + SLICE);
            if hub.wait(seen, slice_end) || Instant::now() >= until {
                break;
            }
            if self.is_closed() {
                return Err(Error::StoreClosed);
            }
            if spec.stopped() {
                return Ok(false);
            }
            if (spec.interrupted)() {
                return Err(Error::Interrupted);
            }
        }
        if (spec.interrupted)() {
            return Err(Error::Interrupted);
        }
        Ok(true)
    }
}

/// The sleep before a look at work due in `seconds` (the engine's
/// `next_wake`, sub-second): that long plus [`WAKE_MARGIN`]. A negative or
/// NaN answer is due now; one past any sleep this loop takes is capped,
/// since the loop wakes for the safety-net poll sooner anyway.
fn wake_after(seconds: f64) -> Duration {
    const CAP: Duration = Duration::from_secs(86_400);
    Duration::try_from_secs_f64(seconds.max(0.0)).map_or(CAP, |d| d.min(CAP)) + WAKE_MARGIN
}

/// How long until the database clock reaches second `at`, given it reads
/// `now` (whole seconds, so the current second may be nearly over). Within the
/// last second we re-check every 50 ms instead of guessing its phase.
pub(crate) fn until_db_second(at: i64, now: i64) -> Duration {
    let whole = at - now - 1;
    if whole <= 0 {
        Duration::from_millis(50)
    } else {
        Duration::from_secs(whole as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_is_sub_second_and_never_early() {
        assert_eq!(wake_after(0.25), Duration::from_millis(251));
        assert_eq!(wake_after(1.5), Duration::from_millis(1501));
        assert_eq!(wake_after(-0.5), WAKE_MARGIN, "past: now");
        assert_eq!(wake_after(f64::NAN), WAKE_MARGIN);
        assert_eq!(wake_after(1e300), Duration::from_secs(86_400) + WAKE_MARGIN, "no overflow");
    }

    #[test]
    fn deadline_rounding() {
        assert_eq!(until_db_second(10, 10), Duration::from_millis(50));
        assert_eq!(until_db_second(11, 10), Duration::from_millis(50));
        assert_eq!(until_db_second(13, 10), Duration::from_secs(2));
    }
}
