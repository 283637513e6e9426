//! Flow control (SPEC §24): concurrency, rate and group limits enforced by
//! the claim, slots freed by the fenced op that settles a job.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use alkstore_core::{Error, JobState, LimitChange, NewJob, ParamStyle, QueueLimits, QueueOpts, Store, WaitSpec};

use crate::{job, opts, Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __limits_cases { ($harness:ty) => { $crate::__cases! { $harness; limits {
    limits_persist_for_every_store_and_change_one_kind_at_a_time, bad_limits_and_groups_are_refused,
    concurrency_caps_claims_and_each_settling_op_frees_a_slot, concurrency_zero_hands_out_nothing,
    a_lapsed_lease_keeps_its_slot_until_reclaimed, a_stale_handle_frees_nothing,
    an_exhausted_lapsed_lease_frees_its_slot, rate_limits_claims_in_a_sliding_window,
    group_concurrency_holds_a_group_while_others_run, a_foreign_enqueue_keeps_the_group,
    a_freed_slot_wakes_a_waiting_claimer, cleared_limits_hand_out_everything,
    held_back_jobs_stay_pending_and_unattempted, claims_racing_on_a_limited_queue_never_exceed_it,
    jobs_claimed_before_a_limit_count_toward_it, a_lowered_limit_waits_for_the_jobs_above_it,
    jobs_claimed_under_a_group_limit_count_after_it_is_lifted, a_workers_ack_hands_its_slot_to_the_next_job,
    a_handover_never_passes_a_lowered_limit_or_another_queue, claims_racing_with_handovers_never_exceed_the_limit,
    a_claim_without_room_still_buries_an_exhausted_lease, a_rate_limited_waiter_wakes_as_its_window_opens,
} } } }

fn grouped(payload: &str, group: &str) -> NewJob {
    NewJob { group: Some(group.to_owned()), ..job(payload) }
}

fn concurrency(n: i64) -> LimitChange {
    LimitChange { concurrency: Some(Some(n)), ..LimitChange::default() }
}

fn fill<H: Harness>(db: &Db<H>, queue: &str, n: usize) -> TestResult<Vec<i64>> {
    (0..n).map(|i| db.put(queue, &opts(), &format!("[{i}]"))).collect()
}

pub fn limits_persist_for_every_store_and_change_one_kind_at_a_time<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    assert_eq!(s.limits("q")?, QueueLimits::default(), "no limits until set");
    let set = s.set_limits("q", &LimitChange { rate: Some(Some((100, 60.0))), ..concurrency(5) })?;
    assert_eq!(set, QueueLimits { concurrency: Some(5), rate: Some((100, 60.0)), group_concurrency: None });
    let other: Store = db.reopen()?;
    assert_eq!(other.limits("q")?, set, "another store sees them");
    let grouped = other.set_limits("q", &LimitChange { group_concurrency: Some(Some(1)), ..LimitChange::default() })?;
    assert_eq!(grouped, QueueLimits { group_concurrency: Some(1), ..set }, "the other kinds stay");
    let cleared = s.set_limits("q", &LimitChange { concurrency: Some(None), ..LimitChange::default() })?;
    assert_eq!(cleared, QueueLimits { concurrency: None, ..grouped }, "None clears one kind");
    assert_eq!(s.limits("other")?, QueueLimits::default(), "limits are per queue");
    let none = LimitChange { concurrency: Some(None), rate: Some(None), group_concurrency: Some(None) };
    assert_eq!(other.set_limits("q", &none)?, QueueLimits::default());
    assert_eq!(s.limits("q")?, QueueLimits::default());
    Ok(())
}

pub fn bad_limits_and_groups_are_refused<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    s.set_limits("q", &concurrency(2))?;
    let bad = [
        concurrency(-1),
        LimitChange { rate: Some(Some((0, 1.0))), ..LimitChange::default() },
        LimitChange { rate: Some(Some((5, 0.0))), ..LimitChange::default() },
        LimitChange { rate: Some(Some((5, f64::NAN))), ..LimitChange::default() },
        LimitChange { group_concurrency: Some(Some(0)), ..LimitChange::default() },
    ];
    for change in bad {
        assert!(matches!(s.set_limits("q", &change), Err(Error::Value(_))), "{change:?}");
    }
    assert_eq!(s.limits("q")?.concurrency, Some(2), "a refused change changes nothing");
    for g in [String::new(), "g".repeat(201), "a\0b".to_owned()] {
        let res = s.enqueue(None, "q", &opts(), &[job("ok"), grouped("x", &g)]);
        assert!(matches!(res, Err(Error::Value(_))), "{g:?}");
    }
    assert_eq!(s.stats("q")?.pending, 0, "nothing of a refused batch is written");
    Ok(())
}

pub fn concurrency_caps_claims_and_each_settling_op_frees_a_slot<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    fill(db, "q", 8)?;
    s.set_limits("q", &concurrency(2))?;
    // Other limited queues must not disturb this one's ops.
    s.set_limits("a", &concurrency(1))?;
    s.set_limits("z", &concurrency(1))?;
    let mut held = s.claim("q", "w", 5)?;
    assert_eq!(held.len(), 2, "a batch returns fewer");
    assert!(s.claim("q", "w", 1)?.is_empty(), "the queue is full");
    assert_eq!(s.stats("q")?.processing, 2);
    // Each op that moves a job out of processing frees its slot.
    let a = held.pop().ok_or("a job")?;
    assert_eq!(s.ack(None, &[&a])?, 1);
    held.extend(s.claim("q", "w", 5)?);
    assert_eq!(held.len(), 2, "the ack freed one slot");
    let b = held.pop().ok_or("a job")?;
    assert!(s.retry(None, &b, "again", Some(0))?);
    held.extend(s.claim("q", "w", 5)?);
    assert_eq!(held.len(), 2, "the retry freed one slot");
    let c = held.pop().ok_or("a job")?;
    assert!(s.fail(None, &c, "boom")?);
    held.extend(s.claim("q", "w", 5)?);
    let d = held.pop().ok_or("a job")?;
    assert!(s.release(&d)?);
    held.extend(s.claim("q", "w", 5)?);
    let e = held.pop().ok_or("a job")?;
    assert!(s.snooze(&e, 60)?);
    held.extend(s.claim("q", "w", 5)?);
    assert_eq!(held.len(), 2);
    assert!(s.claim("q", "w", 5)?.is_empty());
    let f = held.pop().ok_or("a job")?;
    assert!(s.cancel(None, "q", f.id)?, "cancel of a processing job");
    // Whether cancel ends the row now or asks its Worker to stop, the row
    // leaves processing only when it is settled; the count is the rows.
    let running = s.stats("q")?.processing;
    assert_eq!(s.claim("q", "w", 5)?.len(), usize::try_from(2 - running)?);
    assert!(s.stats("q")?.processing <= 2);
    Ok(())
}

pub fn concurrency_zero_hands_out_nothing<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    fill(db, "q", 3)?;
    s.set_limits("q", &concurrency(0))?;
    assert!(s.claim("q", "w", 3)?.is_empty());
    assert_eq!(s.stats("q")?.pending, 3, "held back, not failed");
    s.set_limits("q", &concurrency(1))?;
    assert_eq!(s.claim("q", "w", 3)?.len(), 1, "raising the limit hands out again");
    Ok(())
}

pub fn a_lapsed_lease_keeps_its_slot_until_reclaimed<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let ids = fill(db, "q", 3)?;
    s.set_limits("q", &concurrency(1))?;
    let first = db.take("q", "w1")?;
    assert_eq!(first.id, ids[0]);
    db.clock(opts().visibility_timeout_s + 5)?;
    assert_eq!(s.stats("q")?.processing, 1, "a lapsed lease still counts");
    let again = s.claim("q", "w2", 3)?;
    assert_eq!(again.len(), 1, "the reclaim takes the slot the lease held, and no other");
    assert_eq!((again[0].id, again[0].claim_token), (ids[0], first.claim_token + 1));
    assert!(s.claim("q", "w3", 3)?.is_empty());
    Ok(())
}

pub fn a_stale_handle_frees_nothing<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    fill(db, "q", 3)?;
    s.set_limits("q", &concurrency(1))?;
    let zombie = db.take("q", "w1")?;
    db.clock(opts().visibility_timeout_s + 5)?;
    let live = db.take("q", "w2")?;
    assert_eq!(live.id, zombie.id);
    assert_eq!(s.ack(None, &[&zombie])?, 0, "the zombie's ack lands nowhere");
    assert!(!s.retry(None, &zombie, "late", Some(0))?);
    assert!(!s.fail(None, &zombie, "late")?);
    assert!(!s.release(&zombie)?);
    assert!(s.claim("q", "w3", 3)?.is_empty(), "the live holder keeps the only slot");
    assert_eq!(s.stats("q")?.processing, 1);
    assert_eq!(s.ack(None, &[&live])?, 1);
    assert_eq!(s.claim("q", "w3", 3)?.len(), 1, "its own ack frees it, once");
    assert!(s.claim("q", "w3", 3)?.is_empty());
    Ok(())
}

pub fn an_exhausted_lapsed_lease_frees_its_slot<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let o = QueueOpts { max_attempts: 1, ..opts() };
    let spent = db.put("q", &o, "spent")?;
    let next = db.put("q", &o, "next")?;
    s.set_limits("q", &concurrency(1))?;
    assert_eq!(db.take("q", "w1")?.id, spent);
    db.clock(o.visibility_timeout_s + 5)?;
    let got = db.take("q", "w2")?;
    assert_eq!(got.id, next, "the spent lease went dead and gave up its slot");
    let dead = s.get_job(None, "q", spent)?.ok_or("the dead job")?;
    assert_eq!(dead.state, JobState::Dead);
    Ok(())
}

/// A claim of a queue with no room for a new start (here concurrency 0, so
/// no slot to take) still moves an exhausted lapsed lease to dead, as every
/// claim does (a lease taken before the limit was set, so it holds no slot).
pub fn a_claim_without_room_still_buries_an_exhausted_lease<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let o = QueueOpts { max_attempts: 1, ..opts() };
    let spent = db.put("q", &o, "spent")?;
    assert_eq!(db.take("q", "w1")?.id, spent);
    s.set_limits("q", &concurrency(0))?;
    assert!(s.claim("q", "w1", 1)?.is_empty());
    db.clock(o.visibility_timeout_s + 5)?;
    assert!(s.claim("q", "w1", 1)?.is_empty());
    let dead = s.get_job(None, "q", spent)?.ok_or("the dead job")?;
    assert_eq!((dead.state, dead.last_error.as_deref()), (JobState::Dead, Some("attempts exhausted")));
    Ok(())
}

pub fn rate_limits_claims_in_a_sliding_window<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    fill(db, "q", 20)?;
    s.set_limits("q", &LimitChange { rate: Some(Some((3, 10.0))), ..LimitChange::default() })?;
    let mut got = s.claim("q", "w", 2)?;
    db.clock(6)?;
    got.extend(s.claim("q", "w", 5)?);
    assert_eq!(got.len(), 3, "three claims in any ten seconds");
    assert!(s.claim("q", "w", 5)?.is_empty());
    s.ack(None, &got.iter().collect::<Vec<_>>())?;
    assert!(s.claim("q", "w", 5)?.is_empty(), "acks free no rate: it counts starts");
    db.clock(5)?; // 11 s after the first two: they left the window, the third did not.
    assert_eq!(s.claim("q", "w", 5)?.len(), 2, "a sliding window, not a fixed bucket");
    // 17 s: the claim at 6 s has left too (an engine may log a claim up to
    // 1/64 of the window late, which only makes the limit stricter).
    db.clock(6)?;
    assert_eq!(s.claim("q", "w", 5)?.len(), 1);
    Ok(())
}

/// A claim held back by a rate limit wakes when the window opens, not at
/// the database clock's next whole second (issue 43: with `rate=(1, 0.5)`
/// a waiter slept until the second after the window opened, so every claim
/// came a second after the one before). Counted over many windows, so one
/// stall of a loaded machine does not decide it: each claim comes at or
/// after its window opened (the limit holds), and at most a quarter of the
/// windows are claimed more than 0.3 s after they opened (whole seconds
/// made that every one of them).
pub fn a_rate_limited_waiter_wakes_as_its_window_opens<H: Harness>(db: &Db<H>) -> TestResult {
    const PERIOD: f64 = 0.5;
    const WINDOWS: usize = 10;
    let s = &db.store;
    fill(db, "q", WINDOWS + 1)?;
    s.set_limits("q", &LimitChange { rate: Some(Some((1, PERIOD))), ..LimitChange::default() })?;
    let never = || false;
    let spec = WaitSpec { timeout: Some(Duration::from_secs(10)), stops: &[], interrupted: &never };
    let start = Instant::now();
    let mut claimed_at = Vec::with_capacity(WINDOWS + 1);
    for _ in 0..=WINDOWS {
        assert_eq!(s.claim_wait("q", "w", 1, &spec)?.len(), 1, "each window hands out its job");
        claimed_at.push(start.elapsed().as_secs_f64());
    }
    for (i, at) in claimed_at.iter().enumerate() {
        // (SQLite's clock reads to the millisecond: a millisecond's slack.)
        assert!(*at >= i as f64 * PERIOD - 0.001, "claim {i} at {at:.3} s, before its window opened");
    }
    let late: Vec<f64> = claimed_at.windows(2).map(|w| w[1] - w[0] - PERIOD).filter(|late| *late > 0.3).collect();
    assert!(
        late.len() <= WINDOWS / 4,
        "{} of {WINDOWS} windows claimed late: {late:.3?} ({claimed_at:.3?})",
        late.len()
    );
    Ok(())
}

pub fn group_concurrency_holds_a_group_while_others_run<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    s.set_limits("q", &LimitChange { group_concurrency: Some(Some(1)), ..LimitChange::default() })?;
    let a1 = db.put_job("q", &opts(), grouped("a1", "a"))?;
    let a2 = db.put_job("q", &opts(), grouped("a2", "a"))?;
    let b1 = db.put_job("q", &opts(), grouped("b1", "b"))?;
    let free = db.put("q", &opts(), "no group")?;
    let c1 = db.put_job("q", &opts(), grouped("c1", "c"))?;
    let first = s.claim("q", "w", 10)?;
    let ids: HashSet<i64> = first.iter().map(|c| c.id).collect();
    assert_eq!(ids, HashSet::from([a1, b1, free, c1]), "one of a, the others all");
    assert_eq!(s.get_job(None, "q", a2)?.ok_or("a2")?.state, JobState::Pending);
    assert!(s.claim("q", "w", 10)?.is_empty());
    let done = first.iter().find(|c| c.id == a1).ok_or("a1")?;
    assert_eq!(s.ack(None, &[done])?, 1);
    let next = db.take("q", "w")?;
    assert_eq!(next.id, a2, "a's next job once a1 is done");
    let job = s.get_job(None, "q", a2)?.ok_or("a2")?;
    assert_eq!(job.group.as_deref(), Some("a"), "a job keeps its group");
    assert_eq!(s.get_job(None, "q", free)?.ok_or("free")?.group, None);
    Ok(())
}

pub fn a_foreign_enqueue_keeps_the_group<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let style = if s.engine_kind() == "sqlite" { ParamStyle::Qmark } else { ParamStyle::Dollar };
    let call = s.foreign_enqueue("q", &opts(), &[grouped("x", "tenant-7"), job("y")], style)?.ok_or("a statement")?;
    let ids = db.run_foreign(&call)?;
    assert_eq!(s.get_job(None, "q", ids[0])?.ok_or("x")?.group.as_deref(), Some("tenant-7"));
    assert_eq!(s.get_job(None, "q", ids[1])?.ok_or("y")?.group, None);
    Ok(())
}

pub fn a_freed_slot_wakes_a_waiting_claimer<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let hub = s.wakes()?;
    fill(db, "q", 2)?;
    s.set_limits("q", &concurrency(1))?;
    let other: Store = db.reopen()?;
    let held = other.claim("q", "w1", 1)?.pop().ok_or("a job")?;
    assert!(s.claim("q", "w2", 1)?.is_empty());
    let seen = hub.generation();
    assert_eq!(other.ack(None, &[&held])?, 1);
    assert!(hub.wait(seen, Instant::now() + Duration::from_secs(5)), "the ack's commit wakes");
    assert_eq!(s.claim("q", "w2", 1)?.len(), 1);
    Ok(())
}

pub fn cleared_limits_hand_out_everything<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    fill(db, "q", 5)?;
    s.set_limits("q", &LimitChange { rate: Some(Some((1, 3600.0))), ..concurrency(1) })?;
    assert_eq!(s.claim("q", "w", 5)?.len(), 1);
    let other: Store = db.reopen()?;
    other.set_limits("q", &LimitChange { concurrency: Some(None), rate: Some(None), ..LimitChange::default() })?;
    assert_eq!(s.claim("q", "w", 5)?.len(), 4, "every process sees the change at its next claim");
    Ok(())
}

pub fn held_back_jobs_stay_pending_and_unattempted<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let ids = fill(db, "q", 3)?;
    s.set_limits("q", &concurrency(1))?;
    db.take("q", "w")?;
    for _ in 0..5 {
        assert!(s.claim("q", "w", 3)?.is_empty());
    }
    for id in &ids[1..] {
        let j = s.get_job(None, "q", *id)?.ok_or("the job")?;
        assert_eq!((j.state, j.attempts, j.last_error), (JobState::Pending, 0, None));
    }
    Ok(())
}

/// Ack every job of `held`, one at a time.
fn ack_all(s: &Store, held: &[alkstore_core::Claimed]) -> TestResult {
    for job in held {
        assert_eq!(s.ack(None, &[job])?, 1);
    }
    Ok(())
}

/// Jobs a queue's claims handed out before it had a limit are processing
/// rows like any other: they count toward the limit (the Postgres slot
/// claim cannot place them, and must leave the queue to a claim that counts).
/// A fresh store claims at each step, so no claim relies on what an earlier
/// one of the same store learned about the queue.
pub fn jobs_claimed_before_a_limit_count_toward_it<H: Harness>(db: &Db<H>) -> TestResult {
    fill(db, "q", 10)?;
    let early = db.store.claim("q", "w", 3)?;
    assert_eq!(early.len(), 3);
    db.store.set_limits("q", &concurrency(3))?;
    assert!(db.reopen()?.claim("q", "w", 5)?.is_empty(), "three running before the limit fill it");
    db.store.set_limits("q", &concurrency(4))?;
    let s: Store = db.reopen()?;
    let one = s.claim("q", "w", 5)?;
    assert_eq!(one.len(), 1, "room for one more");
    assert!(s.claim("q", "w", 5)?.is_empty());
    ack_all(&db.store, &early)?;
    let s: Store = db.reopen()?;
    assert_eq!(s.claim("q", "w", 5)?.len(), 3, "the early jobs' acks freed three");
    assert!(db.reopen()?.claim("q", "w", 5)?.is_empty());
    assert_eq!(db.store.stats("q")?.processing, 4);
    Ok(())
}

/// A limit lowered below the running jobs holds every claim back until the
/// running count is under the new limit, then fills it to the limit.
pub fn a_lowered_limit_waits_for_the_jobs_above_it<H: Harness>(db: &Db<H>) -> TestResult {
    fill(db, "q", 10)?;
    db.store.set_limits("q", &concurrency(4))?;
    let held = db.reopen()?.claim("q", "w", 5)?;
    assert_eq!(held.len(), 4);
    db.store.set_limits("q", &concurrency(2))?;
    for (acked, job) in held.iter().enumerate().take(3) {
        assert!(db.reopen()?.claim("q", "w", 5)?.is_empty(), "{} running, limit 2", 4 - acked);
        assert_eq!(db.store.ack(None, &[job])?, 1);
    }
    let s: Store = db.reopen()?;
    assert_eq!(s.claim("q", "w", 5)?.len(), 1, "one running: one more");
    assert!(db.reopen()?.claim("q", "w", 5)?.is_empty());
    db.store.set_limits("q", &concurrency(5))?;
    assert_eq!(db.reopen()?.claim("q", "w", 5)?.len(), 3, "a raised limit fills up to it");
    assert_eq!(db.store.stats("q")?.processing, 5);
    Ok(())
}

/// Jobs claimed while a group limit applied still count toward the
/// concurrency when the group limit is lifted.
pub fn jobs_claimed_under_a_group_limit_count_after_it_is_lifted<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    for g in ["a", "b", "c", "d"] {
        s.enqueue(None, "q", &opts(), &[grouped(g, g), grouped(g, g)])?;
    }
    s.set_limits("q", &LimitChange { group_concurrency: Some(Some(1)), ..concurrency(3) })?;
    let held = db.reopen()?.claim("q", "w", 8)?;
    assert_eq!(held.len(), 3);
    s.set_limits("q", &LimitChange { group_concurrency: Some(None), ..LimitChange::default() })?;
    assert!(db.reopen()?.claim("q", "w", 8)?.is_empty(), "the three still fill the limit");
    ack_all(s, &held[..1])?;
    let other: Store = db.reopen()?;
    assert_eq!(other.claim("q", "w", 8)?.len(), 1);
    assert!(db.reopen()?.claim("q", "w", 8)?.is_empty());
    ack_all(s, &held[1..])?;
    assert_eq!(db.reopen()?.claim("q", "w", 8)?.len(), 2);
    assert_eq!(s.stats("q")?.processing, 3);
    Ok(())
}

/// The Worker's ack-and-claim on a full limited queue: the ack's slot goes
/// to the next job in the same step, and a stale handle's ack frees nothing
/// and takes nothing.
pub fn a_workers_ack_hands_its_slot_to_the_next_job<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let ids = fill(db, "q", 6)?;
    s.set_limits("q", &concurrency(2))?;
    let held = s.claim("q", "w", 2)?;
    assert_eq!(held.len(), 2);
    let (landed, next) = s.ack_then_claim(&held[0], "q", "w", 1)?;
    assert!(landed);
    assert_eq!(next.iter().map(|j| j.id).collect::<Vec<_>>(), [ids[2]], "the next job, in the freed slot");
    assert_eq!(s.stats("q")?.processing, 2);
    assert!(s.claim("q", "w", 5)?.is_empty(), "still full");
    let (again, none) = s.ack_then_claim(&held[0], "q", "w", 1)?;
    assert!(!again && none.is_empty(), "a second ack of the same handle lands nowhere and takes nothing");
    assert_eq!(s.stats("q")?.processing, 2);
    // A batch: the ack-and-claim may leave it to the claim (an empty claim
    // there does not mean an empty queue); between them, the one freed slot.
    let (landed, more) = s.ack_then_claim(&next[0], "q", "w", 3)?;
    assert!(landed);
    assert_eq!(more.len() + s.claim("q", "w", 3)?.len(), 1, "a batch after an ack gets the one freed slot");
    assert_eq!(s.stats("q")?.processing, 2);
    Ok(())
}

/// No handover takes a job past a limit lowered below the running jobs,
/// and an ack in one queue frees no slot of another.
pub fn a_handover_never_passes_a_lowered_limit_or_another_queue<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    fill(db, "q", 8)?;
    fill(db, "other", 2)?;
    s.set_limits("q", &concurrency(3))?;
    s.set_limits("other", &concurrency(1))?;
    let held = s.claim("q", "w", 3)?;
    let other = s.claim("other", "w", 5)?;
    assert_eq!((held.len(), other.len()), (3, 1));
    let (landed, got) = s.ack_then_claim(&other[0], "q", "w", 1)?;
    assert!(landed && got.is_empty(), "other's slot is not q's: {got:?}");
    s.set_limits("q", &concurrency(1))?;
    let (landed, got) = s.ack_then_claim(&held[0], "q", "w", 1)?;
    assert!(landed && got.is_empty(), "two still running over a limit of one");
    let (landed, got) = s.ack_then_claim(&held[1], "q", "w", 1)?;
    assert!(landed && got.is_empty(), "one running at a limit of one");
    assert_eq!(s.stats("q")?.processing, 1);
    let (landed, got) = s.ack_then_claim(&held[2], "q", "w", 1)?;
    assert!(landed);
    let running = got.len() + s.claim("q", "w", 5)?.len();
    assert_eq!(running, 1, "the last ack leaves room for exactly one");
    assert_eq!(s.stats("q")?.processing, 1);
    Ok(())
}

/// Four stores run the Worker's loop (claim, then ack-and-claim) on a
/// limited queue; a count after each step never exceeds the limit.
pub fn claims_racing_with_handovers_never_exceed_the_limit<H: Harness>(db: &Db<H>) -> TestResult {
    db.store.set_limits("q", &concurrency(3))?;
    fill(db, "q", 160)?;
    let stores = (0..4).map(|_| db.reopen()).collect::<TestResult<Vec<Store>>>()?;
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(i, s)| {
                scope.spawn(move || -> Result<(i64, usize), String> {
                    let worker = format!("w{i}");
                    let (mut peak, mut done) = (0, 0);
                    let mut job = None;
                    loop {
                        let next = match job.take() {
                            Some(j) => {
                                let (landed, next) =
                                    s.ack_then_claim(&j, "q", &worker, 1).map_err(|e| e.to_string())?;
                                done += usize::from(landed);
                                next
                            }
                            None => s.claim("q", &worker, 1).map_err(|e| e.to_string())?,
                        };
                        peak = peak.max(s.stats("q").map_err(|e| e.to_string())?.processing);
                        job = next.into_iter().next();
                        if job.is_none() {
                            let st = s.stats("q").map_err(|e| e.to_string())?;
                            if st.pending == 0 && st.processing == 0 {
                                return Ok((peak, done));
                            }
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| "a worker panicked".to_string())?)
            .collect::<Result<Vec<_>, _>>()
    })?;
    let done: usize = results.iter().map(|r| r.1).sum();
    assert_eq!(done, 160, "every job acked once");
    assert!(results.iter().all(|r| r.0 <= 3), "never more than 3 processing: {results:?}");
    Ok(())
}

/// Four stores claim, hold and ack in a loop on threads; each claim checks
/// the processing count right after it, and no count ever exceeds the limit.
pub fn claims_racing_on_a_limited_queue_never_exceed_it<H: Harness>(db: &Db<H>) -> TestResult {
    db.store.set_limits("q", &concurrency(3))?;
    fill(db, "q", 120)?;
    let stores = (0..4).map(|_| db.reopen()).collect::<TestResult<Vec<Store>>>()?;
    let peaks = std::thread::scope(|scope| {
        let handles: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(i, s)| {
                scope.spawn(move || -> Result<(i64, usize), String> {
                    let (mut peak, mut done) = (0, 0);
                    loop {
                        let got = s.claim("q", &format!("w{i}"), 2).map_err(|e| e.to_string())?;
                        if got.is_empty() {
                            let st = s.stats("q").map_err(|e| e.to_string())?;
                            if st.pending == 0 && st.processing == 0 {
                                return Ok((peak, done));
                            }
                            std::thread::yield_now();
                            continue;
                        }
                        peak = peak.max(s.stats("q").map_err(|e| e.to_string())?.processing);
                        done += s.ack(None, &got.iter().collect::<Vec<_>>()).map_err(|e| e.to_string())?;
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| "a claimer panicked".to_string())?)
            .collect::<Result<Vec<_>, _>>()
    })?;
    let done: usize = peaks.iter().map(|p| p.1).sum();
    assert_eq!(done, 120, "every job acked once");
    assert!(peaks.iter().all(|p| p.0 <= 3), "never more than 3 processing: {peaks:?}");
    Ok(())
}
