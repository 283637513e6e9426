//! Completion counts (SPEC §19): how many jobs were acked per queue per
//! minute, for the dashboard's chart. Each process counts its own acks in
//! memory ([`crate::store::completions`]) and adds them to the engine's
//! per-minute rows every few seconds, so the ack itself writes nothing more.

use crate::error::Result;

/// How long minute rows are kept: a day. Older ones are dropped by the next
/// write, so the table never holds more than this many rows per queue.
pub const KEEP_MINUTES: i64 = 24 * 60;

/// The per-minute completion rows of an engine.
pub trait CompletionOps {
    /// Adds each `(queue, n)` to that queue's row of the current minute (the
    /// engine's clock), in one transaction that also drops rows older than
    /// [`KEEP_MINUTES`]. `counts` is non-empty and sorted by queue, so
    /// concurrent writers lock rows in the same order.
    fn record_completions(&self, counts: &[(String, u64)]) -> Result<()>;
    /// Every row from minute `since` (minutes since the epoch) on, by queue
    /// then minute.
    fn completions_since(&self, since: i64) -> Result<Vec<MinuteCount>>;
}

/// Jobs of one queue acked during one minute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinuteCount {
    /// The queue.
    pub queue: String,
    /// Minutes since the Unix epoch (the engine's clock).
    pub minute: i64,
    /// How many of its jobs were acked in that minute.
    pub count: i64,
}
