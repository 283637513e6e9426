//! Operating a queue (SPEC §18, §24): pause and resume, limits, the dead
//! letters' redrive and purge, and forgetting a queue. The Store checks the
//! arguments; the engines do each in one transaction (`ops/pause.rs`,
//! `ops/redrive.rs`, `ops/forget.rs`). Queue names come from a `Queue`
//! handle, checked when it was made (outbox queues included), except
//! `forget_queue`'s, which names a queue as `store.queues()` lists it.

use crate::engine::model::Forget;
use crate::engine::queue::DeadPick;
use crate::error::{Error, Result};
use crate::rules::batch::{batch_size, MAX_BATCH};
use crate::rules::duration::check_seconds;
use crate::rules::limits::{LimitChange, QueueLimits};
use crate::rules::names::{outbox_of, validate_name};
use crate::store::{Store, TxSession};

impl Store {
    /// `q.pause()`: claims of `queue` hand out nothing until `resume`.
    pub fn pause(&self, queue: &str) -> Result<()> {
        self.enter(None)?;
        self.engine().pause(queue)
    }

    /// `q.resume()`: claims hand out jobs again; waiting claimers wake.
    pub fn resume(&self, queue: &str) -> Result<()> {
        self.enter(None)?;
        self.engine().resume(queue)
    }

    /// `q.is_paused()`.
    pub fn is_paused(&self, queue: &str) -> Result<bool> {
        self.enter(None)?;
        self.engine().is_paused(queue)
    }

    /// `q.set_limits(...)` (SPEC §24): the kinds given change (a `None`
    /// clears one), the others stay; checked, then stored for every
    /// process. Returns the limits now in force.
    pub fn set_limits(&self, queue: &str, change: &LimitChange) -> Result<QueueLimits> {
        self.enter(None)?;
        let limits = change.apply(self.engine().limits(queue)?);
        limits.check()?;
        self.engine().set_limits(queue, &limits)?;
        Ok(limits)
    }

    /// `q.limits()`.
    pub fn limits(&self, queue: &str) -> Result<QueueLimits> {
        self.enter(None)?;
        self.engine().limits(queue)
    }

    /// `q.requeue_dead(ids, limit=…)`: the ids moved back to pending, ascending.
    pub fn requeue_dead(
        &self,
        tx: Option<&mut TxSession>,
        queue: &str,
        ids: Option<&[i64]>,
        limit: usize,
    ) -> Result<Vec<i64>> {
        let pick = pick(ids, None, limit)?;
        self.in_tx(tx, |t| self.engine().requeue_dead(t, queue, &pick))
    }

    /// `q.purge_dead(ids, older_than_s=…, limit=…)`: how many dead rows were deleted.
    pub fn purge_dead(
        &self,
        tx: Option<&mut TxSession>,
        queue: &str,
        ids: Option<&[i64]>,
        older_than_s: Option<i64>,
        limit: usize,
    ) -> Result<i64> {
        let pick = pick(ids, older_than_s, limit)?;
        self.in_tx(tx, |t| self.engine().purge_dead(t, queue, &pick))
    }
}

impl Store {
    /// `store.forget_queue(name)`: drops every row keyed by a queue that
    /// holds nothing a caller may still read, so it leaves `store.queues()`,
    /// `/metrics` and the dashboard (see [`crate::ForgetOps`]). True when
    /// the store knew the queue; a ValueError naming what it still holds
    /// otherwise, with nothing changed. `queue` is a name as
    /// `store.queues()` lists it: a queue's, or an outbox's backing queue.
    pub fn forget_queue(&self, queue: &str) -> Result<bool> {
        match outbox_of(queue) {
            Some(outbox) => validate_name("outbox", outbox)?,
            None => validate_name("queue", queue)?,
        }
        self.enter(None)?;
        match self.engine().forget_queue(queue)? {
            Forget::Forgotten { known } => {
                // This process's acks of the queue not written yet would list
                // it again in `completions()`; another process's last few
                // seconds of counts may still land (they list no queue).
                self.done.forget(queue);
                Ok(known)
            }
            Forget::Holds { live, dead, results } => Err(still_holds(queue, live, dead, results)),
        }
    }
}

/// The refusal of a forget: what `queue` holds, and what to do about it.
fn still_holds(queue: &str, live: bool, dead: bool, results: bool) -> Error {
    let held: Vec<&str> = [
        (live, "live jobs (pending, processing or waiting): cancel them or let them finish"),
        (dead, "dead jobs: purge them"),
        (results, "kept results: they go once their keep_result has passed"),
    ]
    .into_iter()
    .filter_map(|(holds, what)| holds.then_some(what))
    .collect();
    Error::Value(format!("cannot forget queue {queue:?}: it still holds {}; nothing was changed", held.join("; ")))
}

/// The selection, checked: `limit` in `1..=1000`, at most 1000 ids, a
/// bounded age.
fn pick(ids: Option<&[i64]>, older_than_s: Option<i64>, limit: usize) -> Result<DeadPick<'_>> {
    batch_size("limit", limit)?;
    if let Some(ids) = ids {
        if ids.len() > MAX_BATCH {
            return Err(Error::Value(format!("ids has {} entries, at most {MAX_BATCH} per call", ids.len())));
        }
    }
    if let Some(s) = older_than_s {
        check_seconds("older_than_s", s)?;
    }
    Ok(DeadPick { ids, older_than_s, limit })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_forget_says_what_the_queue_holds() {
        let e = still_holds("q\u{1b}", true, false, true).to_string();
        assert!(e.starts_with("cannot forget queue \"q\\u{1b}\": it still holds live jobs"), "{e}");
        assert!(e.contains("; kept results") && !e.contains("dead jobs") && e.ends_with("nothing was changed"), "{e}");
    }

    #[test]
    fn a_pick_is_bounded() {
        assert!(pick(None, None, 1).is_ok() && pick(Some(&[1, 2]), Some(0), MAX_BATCH).is_ok());
        assert!(matches!(pick(None, None, 0), Err(Error::Value(_))));
        assert!(matches!(pick(None, None, MAX_BATCH + 1), Err(Error::Value(_))));
        assert!(matches!(pick(Some(&[0; MAX_BATCH + 1]), None, 10), Err(Error::Value(_))));
        assert!(matches!(pick(None, Some(-1), 10), Err(Error::Value(_))));
    }
}
