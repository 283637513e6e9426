//! Flow control (SPEC §24): what a queue's limits may be, and how many jobs
//! one claim may take under them, decided once for every engine.
//!
//! The engines hold no counter that could drift. A queue's concurrency is
//! the number of its `processing` rows (a lapsed lease counts until it is
//! reclaimed, which keeps it processing, or dies); a group's is the number of
//! its processing rows; a rate is the claims recorded in the window. Each
//! slot is therefore freed by whatever transaction moves its row out of
//! `processing` — an ack, retry, fail, release, cancel, sweep or exhaustion —
//! and only a valid handle's op can do that (the claim token fences a zombie),
//! so nothing is ever freed twice. Claims on a limited queue are serialised
//! per queue (SQLite's one writer; a Postgres advisory lock) so two claimers
//! never count the same free slot. ADR 0028.

use crate::error::{Error, Result};
use crate::rules::duration;
use crate::rules::unique::check_key;

/// A queue's limits; `None` is no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct QueueLimits {
    /// At most this many of the queue's jobs processing at once (0 hands out nothing).
    pub concurrency: Option<i64>,
    /// At most `.0` claims in any window of `.1` seconds.
    pub rate: Option<(i64, f64)>,
    /// At most this many processing jobs per group key.
    pub group_concurrency: Option<i64>,
}

impl QueueLimits {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.concurrency.is_some() || self.rate.is_some() || self.group_concurrency.is_some()
    }

    /// Checks every limit (`set_limits` arguments).
    pub fn check(&self) -> Result<()> {
        if let Some(c) = self.concurrency {
            if !(0..=1_000_000).contains(&c) {
                return Err(Error::Value(format!("concurrency must be between 0 and 1000000, got {c}")));
            }
        }
        if let Some((count, period)) = self.rate {
            if !(1..=1_000_000_000).contains(&count) {
                return Err(Error::Value(format!("rate's count must be between 1 and 1000000000, got {count}")));
            }
            if !period.is_finite() || period <= 0.0 {
                return Err(Error::Value(format!(
                    "rate's period must be a finite number of seconds > 0, got {period}"
                )));
            }
            duration::fractional_seconds("rate's period", period)?;
        }
        if let Some(g) = self.group_concurrency {
            if !(1..=1_000_000).contains(&g) {
                return Err(Error::Value(format!("group_concurrency must be between 1 and 1000000, got {g}")));
            }
        }
        Ok(())
    }
}

/// A change to a queue's limits: each kind `Some(new)` is set (`Some(None)`
/// clears it), `None` keeps what is stored.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LimitChange {
    /// The new concurrency limit, if it changes.
    pub concurrency: Option<Option<i64>>,
    /// The new rate limit, if it changes.
    pub rate: Option<Option<(i64, f64)>>,
    /// The new group limit, if it changes.
    pub group_concurrency: Option<Option<i64>>,
}

impl LimitChange {
    /// `current` with this change applied.
    pub fn apply(&self, current: QueueLimits) -> QueueLimits {
        QueueLimits {
            concurrency: self.concurrency.unwrap_or(current.concurrency),
            rate: self.rate.unwrap_or(current.rate),
            group_concurrency: self.group_concurrency.unwrap_or(current.group_concurrency),
        }
    }
}

/// A group key is 1–200 characters, without NUL, as a unique key is.
pub fn check_group(group: &str) -> Result<()> {
    check_key("group", group)
}

/// What the limits leave for one claim of up to `n` jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Jobs this claim may take in all (lapsed leases included): the rate's room.
    pub total: usize,
    /// Of those, pending jobs it may start: the concurrency's room (a reclaim
    /// keeps its slot, so it needs none).
    pub fresh: usize,
}

/// The budget of a claim of up to `n` on a queue with `limits`, where
/// `running` rows are processing and `recent` claims fall in the rate window.
pub fn budget(limits: &QueueLimits, n: usize, running: i64, recent: i64) -> Budget {
    let room = |cap: i64, used: i64| usize::try_from((cap - used).max(0)).unwrap_or(usize::MAX);
    let total = match limits.rate {
        Some((count, _)) => n.min(room(count, recent)),
        None => n,
    };
    let fresh = match limits.concurrency {
        Some(c) => total.min(room(c, running)),
        None => total,
    };
    Budget { total, fresh }
}

/// How many ready rows a limited claim of up to `n` (`fresh` of them new
/// starts) looks at first. Without a group limit every ready row qualifies,
/// so the best `fresh` are all it needs. With one, enough that a few
/// saturated groups at the head of the queue do not hide the others; the
/// engines look ten times further while they find too few and more ready
/// rows exist. Kept the same from call to call for one `n`, so a statement
/// that bakes the value into its plan is not re-prepared.
pub fn first_scan(limits: &QueueLimits, n: usize, fresh: usize) -> i64 {
    let rows = if limits.group_concurrency.is_some() { n.saturating_mul(4).max(16) } else { fresh };
    i64::try_from(rows).unwrap_or(i64::MAX)
}

/// Into how many slices a rate's window is cut for its log: claims are
/// logged per slice, so summing the window reads at most this many rows
/// (plus one) however many claims it holds.
pub const RATE_SLICES: f64 = 64.0;

/// Where a claim at `at` (Unix seconds) is logged for a rate of window
/// `period`: the end of its slice, never earlier than the claim. A claim
/// logged later than it happened stays in the window a little longer, so the
/// limit can only be stricter, never looser.
pub fn rate_slot(at: f64, period: f64) -> f64 {
    let slice = period / RATE_SLICES;
    (at / slice).ceil() * slice
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_the_least_room_left() {
        let none = QueueLimits::default();
        assert_eq!(budget(&none, 10, 99, 99), Budget { total: 10, fresh: 10 });
        let c3 = QueueLimits { concurrency: Some(3), ..none };
        assert_eq!(budget(&c3, 10, 1, 0), Budget { total: 10, fresh: 2 });
        assert_eq!(budget(&c3, 10, 5, 0), Budget { total: 10, fresh: 0 }, "over after a lowered limit: none");
        let r = QueueLimits { rate: Some((50, 1.0)), concurrency: Some(8), ..none };
        assert_eq!(budget(&r, 32, 0, 45), Budget { total: 5, fresh: 5 });
        assert_eq!(budget(&r, 32, 7, 0), Budget { total: 32, fresh: 1 });
        assert_eq!(budget(&r, 32, 0, 60), Budget { total: 0, fresh: 0 });
    }

    #[test]
    fn a_claim_looks_further_only_under_a_group_limit() {
        let none = QueueLimits::default();
        assert_eq!(first_scan(&QueueLimits { concurrency: Some(8), ..none }, 1, 1), 1);
        assert_eq!(first_scan(&QueueLimits { concurrency: Some(8), ..none }, 32, 0), 0, "no room: lapsed leases only");
        let grouped = QueueLimits { group_concurrency: Some(1), ..none };
        assert_eq!(first_scan(&grouped, 1, 1), 16);
        assert_eq!(first_scan(&grouped, 100, 100), 400);
    }

    #[test]
    fn a_claim_is_logged_at_its_slice_end_never_before_it() {
        for (at, period) in [(100.0, 1.0), (100.001, 1.0), (1_764_900_000.123, 60.0), (5.0, 1500.0)] {
            let slot = rate_slot(at, period);
            assert!(slot >= at && slot - at <= period / RATE_SLICES + 1e-6, "{at} {period} -> {slot}");
        }
        assert_eq!(rate_slot(1.0, 64.0), 1.0, "a claim on a slice's end is logged there");
    }

    #[test]
    fn limits_and_groups_are_checked() {
        let bad = [
            QueueLimits { concurrency: Some(-1), ..Default::default() },
            QueueLimits { rate: Some((0, 1.0)), ..Default::default() },
            QueueLimits { rate: Some((5, 0.0)), ..Default::default() },
            QueueLimits { rate: Some((5, f64::NAN)), ..Default::default() },
            QueueLimits { group_concurrency: Some(0), ..Default::default() },
        ];
        for l in bad {
            assert!(matches!(l.check(), Err(Error::Value(_))), "{l:?}");
        }
        assert!(QueueLimits { concurrency: Some(0), ..Default::default() }.check().is_ok(), "0 is like pause");
        assert!(check_group("customer-7").is_ok());
        assert!(check_group("").is_err() && check_group("a\0b").is_err() && check_group(&"x".repeat(201)).is_err());
    }
}
