//! Registering schedules (SPEC §8): the validated front over the engine's
//! [`ScheduleOps`] storage. The loop that fires them is in [`crate::schedule::runner`].
//!
//! [`ScheduleOps`]: crate::engine::schedules::ScheduleOps

use crate::engine::schedules::ScheduleRow;
use crate::error::{Error, Result};
use crate::rules::duration::check_seconds;
use crate::rules::names::validate_name;
use crate::schedule::spec::{Spec, Timetable};
use crate::store::{Store, TxSession};

/// A schedule as the caller registers it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSchedule {
    /// Unique name; re-registering the name updates the schedule.
    pub name: String,
    /// `@every <n><s|m|h|d>` or a cron spec (SPEC §23).
    pub spec: String,
    /// The IANA zone a cron spec is read in (`@every` ignores it).
    pub tz: String,
    /// The queue each fire enqueues into.
    pub queue: String,
    /// JSON text of the payload every fire enqueues.
    pub payload: String,
    /// Priority of fired jobs.
    pub priority: i32,
    /// `max_attempts` of fired jobs (None: the derived default).
    pub max_attempts: Option<i64>,
    /// Relative expiry of fired jobs, whole seconds.
    pub expires_s: Option<i64>,
}

impl Store {
    /// `store.schedule(...)`: validates everything, then upserts by name
    /// (an equal spec and zone keep the next fire; see
    /// [`crate::engine::schedules::ScheduleOps`]).
    pub fn schedule(&self, tx: Option<&mut TxSession>, s: &NewSchedule) -> Result<()> {
        // The queue is validated like any name: a schedule must not reach the
        // engine's own queues (outbox backing queues) either.
        validate_name("schedule", &s.name)?;
        validate_name("queue", &s.queue)?;
        let table = Timetable::new(&s.spec, &s.tz)?;
        let interval_s = match table.spec {
            Spec::Every(i) => i,
            Spec::Cron(_) => 0,
        };
        self.check_payload(&s.payload)?;
        if let Some(m) = s.max_attempts {
            if m < 1 {
                return Err(Error::Value(format!("max_attempts must be >= 1, got {m}")));
            }
        }
        if let Some(e) = s.expires_s {
            check_seconds("expires", e)?;
        }
        let row = ScheduleRow {
            name: s.name.clone(),
            spec: s.spec.clone(),
            interval_s,
            tz: s.tz.clone(),
            key: table.key(),
            queue: s.queue.clone(),
            payload: s.payload.clone(),
            priority: s.priority,
            max_attempts: s.max_attempts,
            expires_s: s.expires_s,
            // Decided by the engine against the stored row and its clock.
            next_fire_at: 0,
        };
        self.in_tx(tx, |t| self.engine().schedule_upsert(t, &row, &|now| table.next_after(now)))
    }

    /// `store.unschedule(name)`: false when there was no such schedule.
    pub fn unschedule(&self, tx: Option<&mut TxSession>, name: &str) -> Result<bool> {
        validate_name("schedule", name)?;
        self.in_tx(tx, |t| self.engine().schedule_delete(t, name))
    }

    /// `store.schedules()`: every schedule, by name.
    pub fn schedules(&self) -> Result<Vec<ScheduleRow>> {
        self.enter(None)?;
        self.engine().schedule_list()
    }
}
