//! One tick of the schedules (SPEC §8), decided once for every engine: which
//! schedules to look at, what each fire enqueues, and how the fires add up.
//! The engine supplies the due list and the atomic fire-and-advance
//! ([`ScheduleOps::schedule_fire`]): each schedule's fires commit together
//! with a conditional advance of its row under a row lock, so two tickers
//! (another process, a rogue runner) never fire one boundary twice — the
//! loser re-reads the advanced row and plans nothing, and the conditional
//! advance backs that up.

use crate::engine::model::{NewJob, QueueOpts, ReadyAt};
use crate::engine::schedules::{Firing, ScheduleOps, ScheduleRow};
use crate::error::Result;

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

/// What firing `row` at `now` writes, with the boundaries skipped past the
/// catch-up cap; `None` when nothing is due (another ticker fired it).
/// Fired jobs are ready now and take the derived queue defaults (vt 300 s,
/// base 5 s, no retention) with the row's priority, max_attempts (default 3)
/// and expiry.
pub fn firing(row: &ScheduleRow, now: i64) -> Option<(Firing, i64)> {
    // A row this build cannot read fires nothing (its zone left the database);
    // the others still do.
    let plan = row.timetable().ok()?.plan(row.next_fire_at, now);
    if plan.fire.is_empty() {
        return None;
    }
    let job = NewJob {
        payload: row.payload.clone(),
        ready: ReadyAt::Now,
        priority: row.priority,
        max_attempts: row.max_attempts,
        expires_s: row.expires_s,
        unique_key: None,
        group: None,
        ..NewJob::of(String::new())
    };
    let jobs = vec![job; plan.fire.len()];
    let f = Firing { next_fire_at: plan.next_fire_at, queue: row.queue.clone(), opts: QueueOpts::default(), jobs };
    Some((f, plan.skipped))
}

/// Fires every due schedule, each in its own transaction.
pub fn tick<E: ScheduleOps + ?Sized>(engine: &E) -> Result<TickReport> {
    let mut report = TickReport::default();
    for name in engine.schedule_due()? {
        let mut planned = (0, 0);
        let landed = engine.schedule_fire(&name, &mut |row, now| {
            let (f, skipped) = firing(row, now)?;
            planned = (f.jobs.len() as i64, skipped);
            Some(f)
        })?;
        if landed {
            report.fired += planned.0;
            report.skipped += planned.1;
        }
    }
    report.next_due = engine.schedule_next_due()?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(next_fire_at: i64) -> ScheduleRow {
        ScheduleRow {
            name: "s".into(),
            spec: "@every 10s".into(),
            interval_s: 10,
            tz: "UTC".into(),
            key: "every:10".into(),
            queue: "q".into(),
            payload: "{}".into(),
            priority: 7,
            max_attempts: Some(5),
            expires_s: Some(60),
            next_fire_at,
        }
    }

    #[test]
    fn a_due_row_fires_one_job_per_boundary_with_its_options() {
        let (f, skipped) = firing(&row(100), 125).expect("due");
        assert_eq!((f.next_fire_at, skipped, f.jobs.len()), (130, 0, 3));
        assert_eq!(f.queue, "q");
        assert_eq!(f.opts, QueueOpts::default());
        let j = &f.jobs[0];
        assert_eq!((j.priority, j.max_attempts, j.expires_s, j.ready), (7, Some(5), Some(60), ReadyAt::Now));
    }

    #[test]
    fn a_row_not_yet_due_fires_nothing() {
        assert!(firing(&row(100), 99).is_none());
    }
}
