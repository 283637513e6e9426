//! Enqueue and claim (SPEC §4.1, §4.2): order, stamps, ids, time.

use alkstore_core::{Error, JobState, NewJob, QueueOpts, ReadyAt, MAX_DURATION_S, MAX_INSTANT_S};

use crate::{job, opts, Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __queue_cases { ($harness:ty) => { $crate::__cases! { $harness; queue {
    claims_follow_priority_then_fifo, claim_stamps_the_row, queues_are_separate,
    delayed_jobs_wait_for_the_clock, enqueue_many_returns_ids_in_order_and_stamps_options,
    payload_text_round_trips_byte_identically, ids_are_never_reused,
    ids_are_never_reused_after_dead_rows_are_purged, reclaims_compete_with_ready_rows_in_claim_order,
    a_lapsed_lease_in_another_queue_does_not_matter, exhaustion_by_reclaim_moves_to_dead,
    enqueue_refuses_durations_and_instants_past_the_bound,
} } } }

/// Priority first, then FIFO, for single claims and batches; other queues untouched.
pub fn claims_follow_priority_then_fifo<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let a = db.put("q", &opts(), "1")?;
    let b = db.put("q", &opts(), "2")?;
    let hi = db.put_job("q", &opts(), NewJob { priority: 5, ..job("hi") })?;
    let lo = db.put_job("q", &opts(), NewJob { priority: -5, ..job("lo") })?;
    db.put("other", &opts(), "x")?;
    for id in [hi, a, b, lo] {
        assert_eq!(db.take("q", "w")?.id, id);
    }
    assert!(db.one("q", "w")?.is_none());
    assert_eq!(s.stats("other")?.pending, 1, "other queues are untouched");
    let mut ids = Vec::new();
    for p in [0, 3, 1, 3, 2] {
        ids.push(db.put_job("b", &opts(), NewJob { priority: p, ..job("x") })?);
    }
    let got: Vec<(i32, i64)> = s.claim("b", "w", 4)?.iter().map(|j| (j.priority, j.id)).collect();
    assert_eq!(got, vec![(3, ids[1]), (3, ids[3]), (2, ids[4]), (1, ids[2])]);
    assert_eq!(s.claim("b", "w", 10)?.iter().map(|j| j.id).collect::<Vec<_>>(), vec![ids[0]]);
    assert!(s.claim("b", "w", 10)?.is_empty());
    Ok(())
}

pub fn claim_stamps_the_row<H: Harness>(db: &Db<H>) -> TestResult {
    let now = db.now()?;
    let id = db.put("q", &QueueOpts { visibility_timeout_s: 77, ..opts() }, r#"{"b":1,"a":[1.5,null]}"#)?;
    let j = db.take("q", "w1")?;
    assert_eq!(j.id, id);
    assert_eq!(j.payload, r#"{"b":1,"a":[1.5,null]}"#, "payload text kept byte-for-byte");
    assert_eq!((j.attempts, j.claim_token, j.max_attempts), (1, 1, 3));
    assert_eq!((j.worker_id.as_str(), j.queue.as_str()), ("w1", "q"));
    assert!(j.claimed_at >= now && j.claimed_at <= now + 1);
    assert_eq!((j.deadline - j.claimed_at, j.visibility_timeout_s), (77, 77));
    let row = db.store.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!(row.state, JobState::Processing);
    assert_eq!((row.deadline, row.worker_id.as_deref()), (Some(j.deadline), Some("w1")));
    Ok(())
}

pub fn queues_are_separate<H: Harness>(db: &Db<H>) -> TestResult {
    let id = db.put("a", &opts(), "1")?;
    assert!(db.one("b", "w")?.is_none());
    assert!(db.store.get_job(None, "b", id)?.is_none());
    assert!(!db.store.cancel(None, "b", id)?);
    assert_eq!(db.one("a", "w")?.map(|j| j.id), Some(id));
    Ok(())
}

pub fn delayed_jobs_wait_for_the_clock<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let now = db.now()?;
    let delayed = db.put_job("q", &opts(), NewJob { ready: ReadyAt::Delay(100), ..job("d") })?;
    let at = db.put_job("q", &opts(), NewJob { ready: ReadyAt::At(now + 200), ..job("a") })?;
    assert!(s.claim("q", "w", 5)?.is_empty());
    assert_eq!(s.stats("q")?.scheduled, 2);
    let row = s.get_job(None, "q", delayed)?.ok_or("job")?;
    assert!((now + 100..=now + 101).contains(&row.run_at), "run_at {} vs now {now}", row.run_at);
    assert_eq!(s.get_job(None, "q", at)?.ok_or("job")?.run_at, now + 200);
    db.clock(101)?;
    let d = s.claim("q", "w", 5)?;
    assert_eq!(d.iter().map(|j| j.id).collect::<Vec<_>>(), vec![delayed]);
    assert_eq!(s.ack(None, &[&d[0]])?, 1);
    assert!(db.one("q", "w")?.is_none());
    db.clock(100)?;
    assert_eq!(s.claim("q", "w", 5)?.iter().map(|j| j.id).collect::<Vec<_>>(), vec![at]);
    Ok(())
}

pub fn enqueue_many_returns_ids_in_order_and_stamps_options<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let o =
        QueueOpts { visibility_timeout_s: 9, max_attempts: 4, backoff_base_s: 2.5, dead_letter_retention_s: Some(7) };
    let ids = s.enqueue(None, "q", &o, &[job("1"), NewJob { max_attempts: Some(1), ..job("2") }, job("3")])?;
    assert_eq!(ids.len(), 3);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let c = s.claim("q", "w", 3)?;
    assert_eq!(c.iter().map(|j| j.max_attempts).collect::<Vec<_>>(), vec![4, 1, 4]);
    assert!(c.iter().all(|j| j.visibility_timeout_s == 9 && j.backoff_base_s == 2.5 && j.deadline - j.claimed_at == 9));
    assert!(s.enqueue(None, "q", &o, &[])?.is_empty());
    let jobs: Vec<NewJob> = (0..50)
        .map(|i| NewJob { priority: i % 3, max_attempts: Some(1 + i64::from(i)), ..job(&format!("[{i}]")) })
        .collect();
    let ids = s.enqueue(None, "many", &opts(), &jobs)?;
    assert_eq!(ids.len(), 50);
    for (i, id) in ids.iter().enumerate() {
        let j = s.get_job(None, "many", *id)?.ok_or("job")?;
        assert_eq!((j.payload, j.max_attempts), (format!("[{i}]"), 1 + i as i64));
    }
    // Options are stamped per job, not per queue.
    let a = db.put("per", &QueueOpts { visibility_timeout_s: 10, ..opts() }, "a")?;
    let b = db.put("per", &QueueOpts { visibility_timeout_s: 99, max_attempts: 7, ..opts() }, "b")?;
    let (ca, cb) = (db.take("per", "w")?, db.take("per", "w")?);
    assert_eq!((ca.id, ca.deadline - ca.claimed_at, ca.max_attempts), (a, 10, 3));
    assert_eq!((cb.id, cb.deadline - cb.claimed_at, cb.max_attempts), (b, 99, 7));
    Ok(())
}

pub fn payload_text_round_trips_byte_identically<H: Harness>(db: &Db<H>) -> TestResult {
    let texts = [
        r#"{"b":1,"a":[1.0,"x"]}"#,
        r#"{ "z" : 1 ,  "a":{"y":2,"b":[ 1.50, -0.0 ]} }"#,
        r#""unicode \u00e9 é ✓ 😀""#,
        "null",
        "12345678901234567890.000",
    ];
    for t in texts {
        let id = db.put("q", &opts(), t)?;
        assert_eq!(db.store.get_job(None, "q", id)?.ok_or("job")?.payload, t);
        let c = db.take("q", "w")?;
        assert_eq!(c.payload, t);
        assert!(db.store.fail(None, &c, "x")?);
        assert_eq!(db.store.get_job(None, "q", id)?.ok_or("job")?.payload, t);
    }
    Ok(())
}

pub fn ids_are_never_reused<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let first = db.put("q", &opts(), "a")?;
    let top = db.put("q", &opts(), "b")?;
    s.claim("q", "w", 2)?;
    assert!(s.cancel(None, "q", top)?);
    let next = db.put("q", &opts(), "c")?;
    assert!(first > 0 && first < top && next > top, "{next} after deleting {top}");
    let j = db.take("q", "w")?;
    assert_eq!(s.ack(None, &[&j])?, 1);
    // A cancelled pending row and an acked one leave their ids behind too.
    let pending = db.put("p", &opts(), "d")?;
    assert!(s.cancel(None, "p", pending)?);
    let acked = db.put("p", &opts(), "e")?;
    assert_eq!(s.ack(None, &[&db.take("p", "w")?])?, 1);
    let last = db.put("p", &opts(), "f")?;
    assert!(next < pending && pending < acked && acked < last);
    // Also across a reopen: the high-water mark is stored, not remembered.
    s.close();
    let again = db.reopen()?;
    assert!(again.enqueue(None, "q", &opts(), &[job("g")])?[0] > last);
    Ok(())
}

pub fn ids_are_never_reused_after_dead_rows_are_purged<H: Harness>(db: &Db<H>) -> TestResult {
    let keep_briefly = QueueOpts { dead_letter_retention_s: Some(1), ..opts() };
    let top = db.put("q", &keep_briefly, "x")?;
    let j = db.take("q", "w")?;
    assert!(db.store.fail(None, &j, "boom")?);
    db.clock(5)?;
    assert_eq!(db.store.sweep_expired("q")?.purged, 1);
    let next = db.put("q", &opts(), "y")?;
    assert!(next > top, "{next} after purging {top}");
    Ok(())
}

/// A lapsed lease is reclaimed in claim order (priority, then run_at), not deadline order.
pub fn reclaims_compete_with_ready_rows_in_claim_order<H: Harness>(db: &Db<H>) -> TestResult {
    let old = db.put("q", &opts(), "old")?;
    let low = db.put_job("q", &opts(), NewJob { priority: -1, ..job("low") })?;
    assert_eq!(db.take("q", "w")?.id, old);
    db.clock(31)?;
    let fresh = db.put("q", &opts(), "fresh")?;
    let high = db.put_job("q", &opts(), NewJob { priority: 9, ..job("high") })?;
    // Lapsed `old` (priority 0, oldest run_at) sits between `high` and `fresh`.
    let got: Vec<i64> = db.store.claim("q", "w2", 3)?.iter().map(|j| j.id).collect();
    assert_eq!(got, vec![high, old, fresh]);
    assert_eq!(db.one("q", "w2")?.map(|j| j.id), Some(low));
    let short = QueueOpts { visibility_timeout_s: 10, ..opts() };
    let low = db.put_job("r", &short, NewJob { priority: 0, ..job("low") })?;
    db.take("r", "w")?;
    let high =
        db.put_job("r", &QueueOpts { visibility_timeout_s: 20, ..opts() }, NewJob { priority: 9, ..job("high") })?;
    db.take("r", "w")?;
    db.clock(21)?;
    // Both leases lapsed; the low one lapsed first, the high one ranks first.
    assert_eq!(db.take("r", "w2")?.id, high);
    assert_eq!(db.take("r", "w2")?.id, low);
    Ok(())
}

pub fn a_lapsed_lease_in_another_queue_does_not_matter<H: Harness>(db: &Db<H>) -> TestResult {
    db.put("other", &opts(), "x")?;
    db.take("other", "w")?;
    db.clock(31)?;
    let id = db.put("q", &opts(), "y")?;
    assert_eq!(db.one("q", "w")?.map(|j| j.id), Some(id));
    Ok(())
}

pub fn exhaustion_by_reclaim_moves_to_dead<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let id = db.put_job("q", &opts(), NewJob { max_attempts: Some(2), ..job("x") })?;
    let other = db.put_job("q", &opts(), NewJob { priority: -1, ..job("y") })?;
    assert_eq!(db.take("q", "w")?.id, id);
    db.clock(31)?;
    let b = db.take("q", "w")?;
    assert_eq!((b.id, b.attempts), (id, 2));
    db.clock(31)?;
    // The exhausted row goes to dead and the claim goes on to the next job.
    assert_eq!(db.take("q", "w")?.id, other);
    let dead = s.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(dead.last_error.as_deref(), Some("attempts exhausted"));
    assert_eq!((dead.attempts, dead.max_attempts), (2, 2));
    assert_eq!((dead.worker_id.as_deref(), dead.deadline), (Some("w"), Some(b.deadline)));
    assert!(dead.died_at.is_some());
    assert_eq!(s.ack(None, &[&b])?, 0);
    // A budget of one: the lapse itself exhausts it, and nothing is claimed.
    let once = db.put("one", &QueueOpts { visibility_timeout_s: 10, max_attempts: 1, ..opts() }, r#"{"k":1}"#)?;
    let c = db.take("one", "w1")?;
    db.clock(11)?;
    assert!(s.claim("one", "w2", 5)?.is_empty());
    let dead = s.get_job(None, "one", once)?.ok_or("job")?;
    assert_eq!(
        (dead.state, dead.last_error.as_deref(), dead.attempts),
        (JobState::Dead, Some("attempts exhausted"), 1)
    );
    assert_eq!((dead.worker_id.as_deref(), dead.deadline), (Some("w1"), Some(c.deadline)));
    assert_eq!(dead.payload, r#"{"k":1}"#);
    let st = s.stats("one")?;
    assert_eq!((st.pending, st.processing, st.dead), (0, 0, 1));
    Ok(())
}

/// A `Value` error naming `what`.
pub(crate) fn names<T: std::fmt::Debug>(r: alkstore_core::Result<T>, what: &str) {
    match r {
        Err(Error::Value(m)) => assert!(m.contains(what), "{what}: {m}"),
        other => panic!("{what}: expected a Value error, got {other:?}"),
    }
}

/// The front's duration bound (ADR 0011): past 100 years or year 9999 is a
/// `Value` error naming the argument, and nothing is written.
pub fn enqueue_refuses_durations_and_instants_past_the_bound<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let over = MAX_DURATION_S + 1;
    for (bad, what) in [
        (QueueOpts { visibility_timeout_s: over, ..opts() }, "visibility_timeout_s"),
        (QueueOpts { visibility_timeout_s: 0, ..opts() }, "visibility_timeout_s"),
        (QueueOpts { dead_letter_retention_s: Some(i64::MAX), ..opts() }, "dead_letter_retention_s"),
        (QueueOpts { backoff_base_s: 1e300, ..opts() }, "backoff_base_s"),
        (QueueOpts { backoff_base_s: f64::NAN, ..opts() }, "backoff_base_s"),
    ] {
        names(s.enqueue(None, "q", &bad, &[job("x")]), what);
    }
    for (bad, what) in [
        (NewJob { ready: ReadyAt::Delay(over), ..job("x") }, "delay"),
        (NewJob { ready: ReadyAt::Delay(-1), ..job("x") }, "delay"),
        (NewJob { ready: ReadyAt::At(MAX_INSTANT_S + 1), ..job("x") }, "run_at"),
        (NewJob { ready: ReadyAt::At(-1), ..job("x") }, "run_at"),
        (NewJob { expires_s: Some(i64::MAX), ..job("x") }, "expires"),
    ] {
        // Second in a batch: the whole batch is refused before any write.
        names(s.enqueue(None, "q", &opts(), &[job("ok"), bad]), what);
    }
    assert_eq!(s.stats("q")?.pending + s.stats("q")?.scheduled, 0);
    let at_bound =
        QueueOpts { visibility_timeout_s: MAX_DURATION_S, dead_letter_retention_s: Some(MAX_DURATION_S), ..opts() };
    let last = NewJob { ready: ReadyAt::At(MAX_INSTANT_S), expires_s: Some(MAX_DURATION_S), ..job("x") };
    s.enqueue(None, "q", &at_bound, &[job("now"), last])?;
    let c = db.take("q", "w")?;
    assert_eq!(c.deadline - c.claimed_at, MAX_DURATION_S);
    Ok(())
}
