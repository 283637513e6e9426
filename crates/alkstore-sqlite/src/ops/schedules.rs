//! Schedules (SPEC §8) in `__alkstore_scheduler_tasks`: registration, and
//! the tick that fires due boundaries.
//!
//! The tick loop and what a fire enqueues are core's
//! ([`alkstore_core::schedule::tick`]); here is one schedule's fire, in its
//! own `BEGIN IMMEDIATE` transaction on the writer: re-read the row, let
//! core plan against the clock, advance `next_fire_at` with a conditional
//! update, and enqueue the fires through the engine's one enqueue path.
//! The single writer already serialises tickers; the conditional advance is
//! what makes a second ticker (another process, a rogue runner) fire
//! nothing when it loses the race.

use alkstore_core::{Firing, Result, ScheduleOps, ScheduleRow, Tx};
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::conn::{atomic, now, Scope};
use crate::engine::SqliteEngine;
use crate::error::DbResult;
use crate::ops::enqueue;

/// The columns [`row`] reads, in order.
macro_rules! cols {
    () => {
        "name, spec, interval_s, queue, payload, priority, max_attempts, expires_s, next_fire_at, tz, spec_key"
    };
}

/// Upsert by name. `?9` is the first fire after now, used only when the
/// key (`?11`, core's: the interval in any unit, or the cron values and zone)
/// is new or changed: re-registering an equal one keeps the stored next
/// fire, so a restart never delays or skips one.
pub(crate) const UPSERT: &str = concat!(
    "INSERT INTO __alkstore_scheduler_tasks (",
    cols!(),
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
     ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, interval_s = excluded.interval_s, \
     queue = excluded.queue, payload = excluded.payload, priority = excluded.priority, \
     max_attempts = excluded.max_attempts, expires_s = excluded.expires_s, tz = excluded.tz, \
     next_fire_at = CASE WHEN __alkstore_scheduler_tasks.spec_key = excluded.spec_key \
     THEN __alkstore_scheduler_tasks.next_fire_at ELSE excluded.next_fire_at END, spec_key = excluded.spec_key"
);

/// Deletes by name.
pub(crate) const DELETE: &str = "DELETE FROM __alkstore_scheduler_tasks WHERE name = ?1";

/// Every schedule in name order (BINARY collation: byte order, as pg's `COLLATE "C"`).
pub(crate) const LIST: &str = concat!("SELECT ", cols!(), " FROM __alkstore_scheduler_tasks ORDER BY name");

/// One schedule, read inside the tick's transaction.
pub(crate) const ONE: &str = concat!("SELECT ", cols!(), " FROM __alkstore_scheduler_tasks WHERE name = ?1");

/// Names of the schedules due at `?1`, oldest boundary first.
pub(crate) const DUE: &str =
    "SELECT name FROM __alkstore_scheduler_tasks WHERE next_fire_at <= ?1 ORDER BY next_fire_at, name";

/// The conditional advance: lands only if nobody moved the row since we
/// read `?2`. `?1` name, `?3` the new next fire.
pub(crate) const ADVANCE: &str =
    "UPDATE __alkstore_scheduler_tasks SET next_fire_at = ?3 WHERE name = ?1 AND next_fire_at = ?2";

/// The earliest next fire (an index seek on `__alkstore_scheduler_due`).
pub(crate) const NEXT_DUE: &str = "SELECT min(next_fire_at) FROM __alkstore_scheduler_tasks";

fn row(r: &Row<'_>) -> rusqlite::Result<ScheduleRow> {
    Ok(ScheduleRow {
        name: r.get(0)?,
        spec: r.get(1)?,
        interval_s: r.get(2)?,
        queue: r.get(3)?,
        payload: r.get(4)?,
        priority: r.get(5)?,
        max_attempts: r.get(6)?,
        expires_s: r.get(7)?,
        next_fire_at: r.get(8)?,
        tz: r.get(9)?,
        key: r.get(10)?,
    })
}

/// One schedule's fire-and-advance in one transaction; see
/// [`ScheduleOps::schedule_fire`].
fn fire_one(
    conn: &Connection,
    offset: i64,
    name: &str,
    plan: &mut dyn FnMut(&ScheduleRow, i64) -> Option<Firing>,
) -> Result<bool> {
    atomic(conn, Scope::Own, |c| {
        let Some(s) = c.prepare_cached(ONE).and_then(|mut st| st.query_row([name], row).optional()).db()? else {
            return Ok(false); // unscheduled since we listed it
        };
        let Some(f) = plan(&s, now(c, offset)?) else {
            return Ok(false); // another ticker fired it first
        };
        // Advance first: when it does not land, nothing was written and the
        // empty transaction commits harmlessly.
        let moved = c
            .prepare_cached(ADVANCE)
            .and_then(|mut st| st.execute(params![name, s.next_fire_at, f.next_fire_at]))
            .db()?;
        if moved == 0 {
            return Ok(false);
        }
        // Inside our transaction: a batch becomes a savepoint of it.
        enqueue::enqueue(c, Scope::Caller, offset, &f.queue, &f.opts, &f.jobs)?;
        Ok(true)
    })
}

impl ScheduleOps for SqliteEngine {
    fn schedule_upsert(&self, tx: Option<&mut dyn Tx>, r: &ScheduleRow, first: &dyn Fn(i64) -> i64) -> Result<()> {
        let offset = self.offset();
        self.write(tx, |c, _| {
            let next = first(now(c, offset)?);
            c.prepare_cached(UPSERT)
                .and_then(|mut st| {
                    st.execute(params![
                        r.name,
                        r.spec,
                        r.interval_s,
                        r.queue,
                        r.payload,
                        r.priority,
                        r.max_attempts,
                        r.expires_s,
                        next,
                        r.tz,
                        r.key
                    ])
                })
                .db()?;
            Ok(())
        })
    }

    fn schedule_delete(&self, tx: Option<&mut dyn Tx>, name: &str) -> Result<bool> {
        self.write(tx, |c, _| Ok(c.prepare_cached(DELETE).and_then(|mut st| st.execute([name])).db()? > 0))
    }

    fn schedule_list(&self) -> Result<Vec<ScheduleRow>> {
        self.conns.with_reader(|c| {
            let mut st = c.prepare_cached(LIST).db()?;
            let rows = st.query_map([], row).db()?;
            rows.collect::<rusqlite::Result<Vec<_>>>().db()
        })
    }

    fn schedule_next_due(&self) -> Result<Option<i64>> {
        self.conns.with_reader(|c| c.prepare_cached(NEXT_DUE).and_then(|mut st| st.query_row([], |r| r.get(0))).db())
    }

    fn schedule_due(&self) -> Result<Vec<String>> {
        let offset = self.offset();
        self.conns.with_reader(|c| {
            let at = now(c, offset)?;
            let mut st = c.prepare_cached(DUE).db()?;
            let names = st.query_map([at], |r| r.get(0)).db()?;
            names.collect::<rusqlite::Result<Vec<_>>>().db()
        })
    }

    fn schedule_fire(&self, name: &str, plan: &mut dyn FnMut(&ScheduleRow, i64) -> Option<Firing>) -> Result<bool> {
        let offset = self.offset();
        self.conns.with_writer(|c| fire_one(c, offset, name, plan))
    }
}
