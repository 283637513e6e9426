//! The schedule runner (SPEC §8): one leader fires every schedule's due
//! boundaries; any other runner waits as a hot standby.
//!
//! Leadership is a TTL lease in the lock table ([`SCHEDULER_LOCK`]). The
//! leader renews it before every tick and raises `LeadershipLost` instead of
//! ticking when the renewal fails. The lease only keeps the work on one
//! runner; correctness does not rest on it: each fire commits together with
//! a conditional advance of its schedule row under a row lock (see
//! [`crate::schedule::tick`]), so a rogue second ticker
//! cannot fire a boundary twice.
//!
//! Between ticks the leader sleeps until the earliest of the next due
//! boundary, the next renewal, a commit (a schedule may have changed), the
//! safety-net poll and stop — in the shared wait's slices, so close and
//! Ctrl-C end it promptly. After a wake it only *reads* (the next due
//! boundary); a write there would wake it again, forever, on SQLite where
//! every commit — its own included — bumps the store's wake hub.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::rules::names::SCHEDULER_LOCK;
use crate::schedule::tick::tick;
use crate::store::stop::StopToken;
use crate::store::waiting::{until_db_second, WaitSpec, NEXT_WAKE_EVERY};
use crate::store::wake::WakeHub;
use crate::store::Store;

/// Length of the leadership lease, seconds.
pub const LEASE_S: i64 = 30;

/// How often the leader renews at the latest: a third of the lease, so two
/// renewals can be late before it lapses.
pub const RENEW_EVERY: Duration = Duration::from_secs(10);

/// How often a standby retries the lease when no commit wakes it sooner.
pub const STANDBY_RETRY: Duration = Duration::from_secs(1);

/// The shortest gap between two looks of one runner: on a busy store every
/// commit wakes it, and each look costs a round trip or two.
const MIN_LOOK_GAP: Duration = NEXT_WAKE_EVERY;

/// A fresh owner id per `run_schedules` call: two runners in one process
/// must not share a lease.
fn runner_owner() -> String {
    format!("runner-{}-{:032x}", std::process::id(), rand::random::<u128>())
}

impl Store {
    /// `store.run_schedules(stop)`: blocks as standby, then as leader, until
    /// a stop token is set (Ok, lease released), the store closes
    /// (`StoreClosed`), the lease is lost (`LeadershipLost`), `interrupted`
    /// returns true (`Interrupted`, lease released) or a statement fails.
    pub fn run_schedules(&self, stops: &[&StopToken], interrupted: &(dyn Fn() -> bool + Sync)) -> Result<()> {
        self.enter(None)?;
        let spec = WaitSpec { timeout: None, stops, interrupted };
        let hub = self.wakes()?;
        let owner = runner_owner();
        if !self.standby(&hub, &owner, &spec)? {
            return Ok(());
        }
        match self.lead(&hub, &owner, &spec) {
            Ok(()) => self.engine().lock_release(SCHEDULER_LOCK, &owner).map(|_| ()),
            // Another runner holds it now, or nothing can be written any more.
            Err(e @ (Error::LeadershipLost | Error::StoreClosed)) => Err(e),
            Err(e) => {
                // Hand over now rather than after the lease lapses; the
                // original error is the one to report.
                let _ = self.engine().lock_release(SCHEDULER_LOCK, &owner);
                Err(e)
            }
        }
    }

    /// Waits until this runner holds the lease (true) or a stop token is set (false).
    fn standby(&self, hub: &WakeHub, owner: &str, spec: &WaitSpec<'_>) -> Result<bool> {
        loop {
            if self.is_closed() {
                return Err(Error::StoreClosed);
            }
            if spec.stopped() {
                return Ok(false);
            }
            let seen = hub.generation();
            let looked = Instant::now();
            if self.engine().lock_acquire(SCHEDULER_LOCK, owner, LEASE_S)? {
                return Ok(true);
            }
            // A commit (the leader's release among them) ends the wait early.
            if !self.nap(hub, seen, looked + STANDBY_RETRY, spec)? || !self.hold(hub, looked + MIN_LOOK_GAP, spec)? {
                return Ok(false);
            }
        }
    }

    /// Ticks as leader until a stop token is set (Ok) or something fails.
    fn lead(&self, hub: &WakeHub, owner: &str, spec: &WaitSpec<'_>) -> Result<()> {
        let engine = self.engine();
        let poll = Duration::from_secs_f64(self.options().poll_interval_s);
        // Tick at once: boundaries that passed while nobody led are due now.
        let mut renew_at = Instant::now();
        loop {
            if self.is_closed() {
                return Err(Error::StoreClosed);
            }
            if spec.stopped() {
                return Ok(());
            }
            let seen = hub.generation();
            let looked = Instant::now();
            let mut now = engine.now()?;
            let mut next_due = engine.schedule_next_due()?;
            if looked >= renew_at || next_due.is_some_and(|d| d <= now) {
                // Renew before firing: a runner whose lease lapsed must not tick.
                if !engine.lock_renew(SCHEDULER_LOCK, owner, LEASE_S)? {
                    return Err(Error::LeadershipLost);
                }
                renew_at = Instant::now() + RENEW_EVERY;
                next_due = tick(&**engine)?.next_due;
                now = engine.now()?;
            }
            let start = Instant::now();
            let mut until = renew_at.min(start + poll);
            if let Some(due) = next_due {
                until = until.min(start + until_db_second(due, now));
            }
            if !self.nap(hub, seen, until, spec)? || !self.hold(hub, looked + MIN_LOOK_GAP, spec)? {
                return Ok(());
            }
        }
    }

    /// Sleeps until `until` whatever commits happen meanwhile (still
    /// honouring close, stop and the interrupt); false when stopped.
    fn hold(&self, hub: &WakeHub, until: Instant, spec: &WaitSpec<'_>) -> Result<bool> {
        while Instant::now() < until {
            if !self.nap(hub, hub.generation(), until, spec)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_distinct() {
        assert_ne!(runner_owner(), runner_owner());
        assert!(runner_owner().len() <= crate::rules::names::MAX_NAME_CHARS);
    }

    #[test]
    fn renewal_leaves_two_misses_of_margin() {
        assert!(RENEW_EVERY.as_secs() as i64 * 3 <= LEASE_S);
    }
}
