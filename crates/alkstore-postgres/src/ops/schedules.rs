//! Schedules (SPEC §8) in `<schema>.schedules`: registration, and the tick
//! that fires due boundaries.
//!
//! The tick loop and what a fire enqueues are core's
//! ([`alkstore_core::schedule::tick`]); here is one schedule's fire, in its
//! own transaction: lock the row (`SELECT … FOR UPDATE`), let core plan
//! against the clock, advance `next_fire_at` with a conditional update, and
//! enqueue the fires through the engine's one enqueue path — all committed
//! together. Two tickers queue on the row lock; the second then reads the
//! advanced row and fires nothing, and the conditional advance backs that up.

use alkstore_core::{Engine, Firing, Result, ScheduleOps, ScheduleRow, Tx};
use tokio_postgres::Row;

use crate::conn::{now, Ctx, NOW};
use crate::engine::PgEngine;
use crate::ops::enqueue;
use crate::rows::col;

/// The columns [`schedule_row`] reads, in order.
const COLS: &str =
    "name, spec, interval_s, queue, payload, priority, max_attempts, expires_s, next_fire_at, tz, spec_key";

/// The schedule statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// Upsert by name (`$1`..`$11` in [`COLS`] order). `$9`, the first fire
    /// after now, is used only when the key (`$11`, core's: the interval in
    /// any unit, or the cron values and zone) is new or changed: an equal
    /// key keeps the stored next fire. Wakes the store's waiters at commit
    /// (the runner may need to fire sooner).
    pub(crate) upsert: String,
    /// Deletes by name.
    pub(crate) delete: String,
    /// Every schedule in byte order of name (`COLLATE "C"`, as SQLite's BINARY).
    pub(crate) list: String,
    /// Names due at the clock (`$1` offset), oldest boundary first.
    pub(crate) due: String,
    /// One schedule, row-locked until the tick's transaction ends.
    pub(crate) one: String,
    /// `next_fire_at := $3` for `$1` only if it still is `$2`.
    pub(crate) advance: String,
    /// The earliest next fire (an index seek on `schedules_due`).
    pub(crate) next_due: String,
}

impl Sql {
    /// For the quoted schema `s` and the store's notification `channel`.
    pub(crate) fn new(s: &str, channel: &str) -> Self {
        Sql {
            upsert: format!(
                "INSERT INTO {s}.schedules AS x ({COLS}) \
                 VALUES ($1::text, $2::text, $3::bigint, $4::text, $5::text, $6::int, $7::bigint, $8::bigint, \
                 $9::bigint, $10::text, $11::text) \
                 ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, interval_s = excluded.interval_s, \
                 queue = excluded.queue, payload = excluded.payload, priority = excluded.priority, \
                 max_attempts = excluded.max_attempts, expires_s = excluded.expires_s, tz = excluded.tz, \
                 next_fire_at = CASE WHEN x.spec_key = excluded.spec_key \
                 THEN x.next_fire_at ELSE excluded.next_fire_at END, spec_key = excluded.spec_key \
                 RETURNING pg_notify('{channel}', x.name)"
            ),
            delete: format!("DELETE FROM {s}.schedules WHERE name = $1::text"),
            list: format!("SELECT {COLS} FROM {s}.schedules ORDER BY name COLLATE \"C\""),
            due: format!(
                "{NOW} SELECT name FROM {s}.schedules WHERE next_fire_at <= (SELECT t FROM n) \
                 ORDER BY next_fire_at, name COLLATE \"C\""
            ),
            one: format!("SELECT {COLS} FROM {s}.schedules WHERE name = $1::text FOR UPDATE"),
            advance: format!(
                "UPDATE {s}.schedules SET next_fire_at = $3::bigint WHERE name = $1::text AND next_fire_at = $2::bigint"
            ),
            next_due: format!("SELECT min(next_fire_at) FROM {s}.schedules"),
        }
    }
}

fn schedule_row(r: &Row) -> Result<ScheduleRow> {
    Ok(ScheduleRow {
        name: col(r, 0)?,
        spec: col(r, 1)?,
        interval_s: col(r, 2)?,
        queue: col(r, 3)?,
        payload: col(r, 4)?,
        priority: col(r, 5)?,
        max_attempts: col(r, 6)?,
        expires_s: col(r, 7)?,
        next_fire_at: col(r, 8)?,
        tz: col(r, 9)?,
        key: col(r, 10)?,
    })
}

/// One schedule's fire-and-advance, inside its transaction: true to
/// commit, false when there is nothing to keep.
async fn fire(cx: &Ctx<'_>, name: &str, plan: &mut dyn FnMut(&ScheduleRow, i64) -> Option<Firing>) -> Result<bool> {
    let rows = cx.query(&cx.sql.schedules.one, &[&name]).await?;
    let Some(r) = rows.first() else {
        return Ok(false); // unscheduled since we listed it
    };
    let s = schedule_row(r)?;
    // Read after the lock: it may have waited behind another ticker.
    let Some(f) = plan(&s, now(cx).await?) else {
        return Ok(false); // the other ticker fired it
    };
    let moved = cx.execute(&cx.sql.schedules.advance, &[&name, &s.next_fire_at, &f.next_fire_at]).await?;
    if moved == 0 {
        return Ok(false);
    }
    enqueue::enqueue(cx, &f.queue, &f.opts, &f.jobs).await?;
    Ok(true)
}

impl ScheduleOps for PgEngine {
    fn schedule_upsert(&self, tx: Option<&mut dyn Tx>, r: &ScheduleRow, first: &dyn Fn(i64) -> i64) -> Result<()> {
        self.run(tx, async |cx| {
            let next = first(now(cx).await?);
            cx.execute(
                &cx.sql.schedules.upsert,
                &[
                    &r.name,
                    &r.spec,
                    &r.interval_s,
                    &r.queue,
                    &r.payload,
                    &r.priority,
                    &r.max_attempts,
                    &r.expires_s,
                    &next,
                    &r.tz,
                    &r.key,
                ],
            )
            .await?;
            Ok(())
        })
    }

    fn schedule_delete(&self, tx: Option<&mut dyn Tx>, name: &str) -> Result<bool> {
        self.run(tx, async |cx| Ok(cx.execute(&cx.sql.schedules.delete, &[&name]).await? > 0))
    }

    fn schedule_list(&self) -> Result<Vec<ScheduleRow>> {
        self.run(None, async |cx| cx.query(&cx.sql.schedules.list, &[]).await?.iter().map(schedule_row).collect())
    }

    fn schedule_next_due(&self) -> Result<Option<i64>> {
        self.run(None, async |cx| col(&cx.query_one(&cx.sql.schedules.next_due, &[]).await?, 0))
    }

    fn schedule_due(&self) -> Result<Vec<String>> {
        self.run(None, async |cx| {
            cx.query(&cx.sql.schedules.due, &[&cx.offset]).await?.iter().map(|r| col(r, 0)).collect()
        })
    }

    fn schedule_fire(&self, name: &str, plan: &mut dyn FnMut(&ScheduleRow, i64) -> Option<Firing>) -> Result<bool> {
        let mut tx = self.begin()?;
        match self.run(Some(tx.as_mut()), async |cx| fire(cx, name, plan).await) {
            Ok(true) => tx.commit().map(|()| true),
            Ok(false) => tx.rollback().map(|()| false),
            Err(e) => {
                // The original error is the one to report.
                let _ = tx.rollback();
                Err(e)
            }
        }
    }
}
