//! Schedule storage (SPEC §8) and the values it exchanges with core. The
//! tick loop and what a fire enqueues are core's ([`crate::schedule::tick`]);
//! the engine stores rows and runs one schedule's atomic fire-and-advance.

use crate::engine::model::{NewJob, QueueOpts};
use crate::engine::Tx;
use crate::error::Result;
use crate::schedule::Timetable;

/// A stored schedule (SPEC §8).
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleRow {
    /// Unique name.
    pub name: String,
    /// The spec text as last registered.
    pub spec: String,
    /// Its interval in seconds (`@every`); 0 for a cron spec.
    pub interval_s: i64,
    /// The IANA time zone a cron spec is read in, as last registered.
    pub tz: String,
    /// What two registrations that fire alike share (core's
    /// [`crate::schedule::Timetable::key`]): re-registering an equal key keeps
    /// `next_fire_at`.
    pub key: String,
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

impl ScheduleRow {
    /// The row's timetable. A stored row was checked when it was registered;
    /// a spec or zone this build cannot read (a zone dropped from the
    /// database) is an error for this row only.
    pub fn timetable(&self) -> Result<Timetable> {
        Timetable::new(&self.spec, &self.tz)
    }
}

/// What one fire of a schedule writes, decided by core
/// ([`crate::schedule::tick::firing`]) from the row the engine read under
/// its row lock and the engine's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Firing {
    /// The schedule's next fire after this one. The engine's advance to it
    /// is conditional on the row still holding the `next_fire_at` it read.
    pub next_fire_at: i64,
    /// The queue the fires go to.
    pub queue: String,
    /// The options stamped on them (the derived queue defaults).
    pub opts: QueueOpts,
    /// The jobs, one per boundary fired; never empty.
    pub jobs: Vec<NewJob>,
}

/// Schedule storage and the atomic fire-and-advance (SPEC §8).
pub trait ScheduleOps {
    /// Upserts by name. Same `key` as stored: keep `next_fire_at` (store the
    /// new spec text, zone and options). New or changed key: `next_fire_at` =
    /// `first(now)`, the first fire strictly after now (the engine's clock,
    /// offset included; `row.next_fire_at` is ignored). Sends a wake (pg:
    /// `pg_notify`).
    fn schedule_upsert(&self, tx: Option<&mut dyn Tx>, row: &ScheduleRow, first: &dyn Fn(i64) -> i64) -> Result<()>;
    /// Deletes by name; false when absent.
    fn schedule_delete(&self, tx: Option<&mut dyn Tx>, name: &str) -> Result<bool>;
    /// Every schedule, by name (byte order, the same on both engines).
    fn schedule_list(&self) -> Result<Vec<ScheduleRow>>;
    /// The earliest `next_fire_at` over all schedules; a read only, so the
    /// runner can re-check after a wake without writing (a write would wake
    /// it again).
    fn schedule_next_due(&self) -> Result<Option<i64>>;
    /// Names of the schedules due at the engine's clock (offset included),
    /// oldest boundary first (ties by name). A read only.
    fn schedule_due(&self) -> Result<Vec<String>>;
    /// One schedule's atomic fire-and-advance, in one transaction of its own:
    /// lock `name`'s row (it may wait behind another ticker), read the clock,
    /// and hand both to `plan`. When `plan` returns a [`Firing`], advance
    /// `next_fire_at` to its value with a conditional update (`WHERE
    /// next_fire_at = <the value read>`) and, only when that update landed,
    /// enqueue its jobs through the engine's one enqueue path; then commit.
    /// True when the firing landed; false (nothing written) when the row is
    /// gone, `plan` returned `None`, or the advance lost a race.
    fn schedule_fire(&self, name: &str, plan: &mut dyn FnMut(&ScheduleRow, i64) -> Option<Firing>) -> Result<bool>;
}
