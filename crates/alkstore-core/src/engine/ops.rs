//! Storage traits beyond the queue: locks (SPEC §10), schedules (§8) and
//! streams (§9). Each engine implements them in files of their own; the
//! loops built on them (the schedule runner, stream subscriptions) live once
//! in this crate.

use crate::engine::Tx;
use crate::error::Result;

/// TTL leases in an engine table (SPEC §10).
pub trait LockOps {
    /// Takes `name` for `owner` until `now + ttl_s` when it is free, lapsed
    /// (`expires_at < now`) or already `owner`'s. Returns whether `owner` holds it.
    fn lock_acquire(&self, name: &str, owner: &str, ttl_s: i64) -> Result<bool>;
    /// Extends `owner`'s unexpired lease (`now <= expires_at`) to `now + ttl_s`.
    fn lock_renew(&self, name: &str, owner: &str, ttl_s: i64) -> Result<bool>;
    /// Drops `owner`'s lease; false when `owner` did not hold it.
    fn lock_release(&self, name: &str, owner: &str) -> Result<bool>;
}

/// A stored schedule (SPEC §8).
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleRow {
    /// Unique name.
    pub name: String,
    /// The spec text as last registered.
    pub spec: String,
    /// Its interval in seconds.
    pub interval_s: i64,
    /// Target queue.
    pub queue: String,
    /// JSON text enqueued on each fire.
    pub payload: String,
    /// Priority of fired jobs.
    pub priority: i32,
    /// `max_attempts` of fired jobs (None: the derived default, 3).
    pub max_attempts: Option<i64>,
    /// Relative expiry of fired jobs, seconds.
    pub expires_s: Option<i64>,
    /// The next boundary to fire.
    pub next_fire_at: i64,
}

/// What one tick of the runner did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TickReport {
    /// Jobs enqueued by fires.
    pub fired: i64,
    /// Boundaries skipped past the catch-up cap.
    pub skipped: i64,
    /// The earliest `next_fire_at` over all schedules after the tick.
    pub next_due: Option<i64>,
}

/// Schedule storage and the atomic fire-and-advance (SPEC §8).
pub trait ScheduleOps {
    /// Upserts by name. Same interval as stored: keep `next_fire_at` (store the
    /// new spec text and options). New or changed interval: `next_fire_at` =
    /// the first boundary strictly after now (the engine's clock, offset
    /// included; `row.next_fire_at` is ignored). Sends a wake (pg: `pg_notify`).
    fn schedule_upsert(&self, tx: Option<&mut dyn Tx>, row: &ScheduleRow) -> Result<()>;
    /// Deletes by name; false when absent.
    fn schedule_delete(&self, tx: Option<&mut dyn Tx>, name: &str) -> Result<bool>;
    /// Every schedule, by name (byte order, the same on both engines).
    fn schedule_list(&self) -> Result<Vec<ScheduleRow>>;
    /// The earliest `next_fire_at` over all schedules; a read only, so the
    /// runner can re-check after a wake without writing (a write would wake
    /// it again).
    fn schedule_next_due(&self) -> Result<Option<i64>>;
    /// For every schedule due at `now`: under a row lock, enqueue the fires
    /// planned by [`crate::schedule::spec::plan_tick`] (derived queue defaults:
    /// vt 300 s, base 5 s, retention none; the row's priority, max_attempts
    /// (default 3) and expires) and advance `next_fire_at` with a conditional
    /// update (`WHERE next_fire_at = <the value read>`), all in one
    /// transaction per schedule.
    fn schedule_tick(&self) -> Result<TickReport>;
}

/// One stream event (SPEC §9).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Position in the stream, increasing in commit order.
    pub offset: i64,
    /// Optional key.
    pub key: Option<String>,
    /// JSON text.
    pub payload: String,
    /// Publish time.
    pub published_at: i64,
}

/// Stream storage (SPEC §9).
pub trait StreamOps {
    /// Appends; returns the offset. Offsets increase in commit order per
    /// stream. Sends a wake (pg: `pg_notify`).
    fn publish(&self, tx: Option<&mut dyn Tx>, stream: &str, key: Option<&str>, payload: &str) -> Result<i64>;
    /// Events with `offset > after`, ascending, at most `limit`.
    fn read(&self, tx: Option<&mut dyn Tx>, stream: &str, after: i64, limit: usize) -> Result<Vec<Event>>;
    /// Stores `max(saved, offset)` for `consumer`.
    fn save_offset(&self, tx: Option<&mut dyn Tx>, stream: &str, consumer: &str, offset: i64) -> Result<()>;
    /// The saved offset, 0 when never saved.
    fn get_offset(&self, tx: Option<&mut dyn Tx>, stream: &str, consumer: &str) -> Result<i64>;
    /// Deletes events with `offset < before`; returns how many.
    fn trim_to(&self, stream: &str, before: i64) -> Result<i64>;
}
