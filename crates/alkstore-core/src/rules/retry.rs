//! Where a retried job goes (SPEC §4.5), decided once for every engine:
//! dead when its attempt budget is spent, else back to pending after the
//! caller's delay or a draw from the retry curve.

use crate::engine::model::Claimed;
use crate::rules::backoff::backoff_delay;

/// The outcome of `job.retry`, resolved before the engine is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryTo {
    /// The budget is spent: to dead with the caller's error.
    Dead,
    /// Back to pending, ready after this many whole seconds.
    Pending {
        /// The resolved delay.
        delay_s: i64,
    },
}

/// Resolves a retry of `job`. The handle's `attempts` stands for the row's:
/// only a claim (which bumps the token) or a release (which leaves
/// `processing`) changes a row's `attempts`, and either invalidates this
/// handle, so whenever the engine's statement can land the two are equal.
pub fn retry_to(job: &Claimed, delay_s: Option<i64>) -> RetryTo {
    if job.attempts >= job.max_attempts {
        return RetryTo::Dead;
    }
    RetryTo::Pending { delay_s: delay_s.unwrap_or_else(|| backoff_delay(job.attempts, job.backoff_base_s)) }
}
