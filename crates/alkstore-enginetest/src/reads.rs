//! Reads for operators (SPEC §4.4, ADR 0007): one job, dead and live
//! pages, counts, queue names, and the clock they are judged by.

use alkstore_core::{JobState, NewJob, QueueOpts, QueueStats, ReadyAt};

use crate::{job, opts, Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __reads_cases { ($harness:ty) => { $crate::__cases! { $harness; reads {
    get_job_sees_live_and_dead_rows_of_its_queue_only, a_job_is_found_by_id_whatever_its_queue,
    dead_jobs_page_newest_first,
    stats_follow_the_spec_definitions, queue_names_lists_live_and_dead_queues_once_sorted,
    live_jobs_pages_pending_and_processing_rows_newest_first, now_moves_with_advance_clock,
    every_handle_shares_the_store_identity_and_no_other_store_does,
} } } }

pub fn get_job_sees_live_and_dead_rows_of_its_queue_only<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let id = db.put("q", &opts(), "[1]")?;
    let j = s.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!((j.state, j.attempts, j.claimed_at, j.worker_id), (JobState::Pending, 0, None, None));
    assert_eq!((j.last_error, j.died_at), (None, None));
    assert!(s.get_job(None, "other", id)?.is_none());
    assert!(s.fail(None, &db.take("q", "w")?, "x")?);
    assert_eq!(s.get_job(None, "q", id)?.ok_or("job")?.state, JobState::Dead);
    assert!(s.get_job(None, "other", id)?.is_none());
    assert!(s.get_job(None, "q", id + 1000)?.is_none());
    Ok(())
}

/// The store's read by id: the live or the dead row, in whichever queue
/// (an outbox's backing queue too); None once the job is gone.
pub fn a_job_is_found_by_id_whatever_its_queue<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let backing = alkstore_core::rules::names::outbox_queue("hooks");
    let (a, b, c) = (db.put("a", &opts(), "[1]")?, db.put("b", &opts(), "[2]")?, db.put(&backing, &opts(), "[3]")?);
    let dead = db.put("d", &opts(), "[4]")?;
    assert!(s.fail(None, &db.take("d", "w")?, "boom")?);
    let processing = db.take("b", "w")?;
    for (id, queue, state) in
        [(a, "a", JobState::Pending), (b, "b", JobState::Processing), (c, backing.as_str(), JobState::Pending)]
    {
        let j = s.job_by_id(id)?.ok_or("the live row")?;
        assert_eq!((j.id, j.queue.as_str(), j.state), (id, queue, state));
        assert_eq!(Some(&j), s.get_job(None, queue, id)?.as_ref(), "the same row as the queue's read");
    }
    let d = s.job_by_id(dead)?.ok_or("the dead row")?;
    assert_eq!((d.queue.as_str(), d.state, d.last_error.as_deref()), ("d", JobState::Dead, Some("boom")));
    assert_eq!(s.ack(None, &[&processing])?, 1);
    assert_eq!(s.job_by_id(b)?, None, "acked: gone");
    assert_eq!(s.job_by_id(dead + 1000)?, None, "never issued");
    Ok(())
}

pub fn dead_jobs_page_newest_first<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(db.put("q", &opts(), &i.to_string())?);
        assert!(s.fail(None, &db.take("q", "w")?, &format!("e{i}"))?);
    }
    let other = db.put("other", &opts(), "x")?;
    assert!(s.fail(None, &db.take("other", "w")?, "o")?);
    let page1 = s.dead_jobs("q", 2, None)?;
    assert_eq!(page1.iter().map(|j| j.id).collect::<Vec<_>>(), vec![ids[4], ids[3]]);
    let page2 = s.dead_jobs("q", 2, Some(page1[1].id))?;
    assert_eq!(page2.iter().map(|j| j.id).collect::<Vec<_>>(), vec![ids[2], ids[1]]);
    let page3 = s.dead_jobs("q", 2, Some(page2[1].id))?;
    assert_eq!(page3.iter().map(|j| j.id).collect::<Vec<_>>(), vec![ids[0]]);
    assert!(s.dead_jobs("q", 2, Some(ids[0]))?.is_empty());
    assert!(s.dead_jobs("q", 10, None)?.iter().all(|j| j.state == JobState::Dead && j.queue == "q"));
    assert_eq!(page3[0].last_error.as_deref(), Some("e0"));
    assert_eq!(s.dead_jobs("other", 10, None)?.iter().map(|j| j.id).collect::<Vec<_>>(), vec![other]);
    Ok(())
}

pub fn stats_follow_the_spec_definitions<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    assert_eq!(s.stats("p")?, QueueStats::default());
    let o = QueueOpts { visibility_timeout_s: 10, ..opts() };
    db.put("p", &o, "a")?;
    db.clock(5)?;
    db.put("p", &o, "b")?;
    db.put_job("p", &o, NewJob { ready: ReadyAt::Delay(100), ..job("later") })?;
    s.enqueue(None, "p", &o, &[job("leased"), job("dead")])?;
    let st = s.stats("p")?;
    assert_eq!((st.pending, st.scheduled, st.processing, st.dead), (4, 1, 0, 0));
    assert!(matches!(st.oldest_ready_age_s, Some(5 | 6)), "{st:?}");
    db.take("p", "w")?;
    assert!(s.fail(None, &db.take("p", "w")?, "x")?);
    db.clock(11)?;
    // A lapsed lease still counts as processing.
    let st = s.stats("p")?;
    assert_eq!((st.pending, st.scheduled, st.processing, st.dead), (2, 1, 1, 1), "{st:?}");
    db.clock(100)?;
    let st = s.stats("p")?;
    assert_eq!((st.pending, st.scheduled), (3, 0));

    assert_eq!(s.stats("q")?, QueueStats::default());
    db.put("q", &opts(), "a")?;
    db.put_job("q", &opts(), NewJob { expires_s: Some(5), ..job("expiring") })?;
    db.put_job("q", &opts(), NewJob { ready: ReadyAt::Delay(100), ..job("later") })?;
    db.put("q", &opts(), "to-claim")?;
    db.put("q", &opts(), "to-fail")?;
    db.put("elsewhere", &opts(), "x")?;
    db.clock(10)?;
    let mut claimed = s.claim("q", "w", 10)?;
    assert_eq!(claimed.len(), 3, "the expired pending row is not claimable");
    assert!(s.fail(None, &claimed.pop().ok_or("claimed")?, "x")?);
    assert!(s.release(&claimed.pop().ok_or("claimed")?)?);
    // Now: pending = released + expired-unswept; scheduled = later; processing = 1; dead = 1.
    let st = s.stats("q")?;
    assert_eq!((st.pending, st.scheduled, st.processing, st.dead), (2, 1, 1, 1), "{st:?}");
    // The oldest ready row is the unswept expired one, ready since enqueue (10 s ago).
    let age = st.oldest_ready_age_s.ok_or("an age")?;
    assert!((10..=11).contains(&age), "{age}");
    db.clock(31)?;
    assert_eq!(s.stats("q")?.processing, 1, "lapsed leases still count as processing");
    Ok(())
}

pub fn queue_names_lists_live_and_dead_queues_once_sorted<H: Harness>(db: &Db<H>) -> TestResult {
    assert!(db.store.queue_names()?.is_empty(), "a fresh store has no queues");
    for (queue, payload) in [("b", "1"), ("b", "2"), ("a", "3"), ("Z", "4"), ("dead-only", "5")] {
        db.put(queue, &opts(), payload)?;
    }
    assert!(db.store.fail(None, &db.take("dead-only", "w")?, "boom")?);
    // Byte order on every engine, whatever the database locale: upper case first.
    assert_eq!(db.store.queue_names()?, ["Z", "a", "b", "dead-only"]);
    // A queue whose jobs are all gone was used: it stays listed (with zeros).
    let z = db.take("Z", "w")?;
    assert_eq!(db.store.ack(None, &[&z])?, 1);
    assert_eq!(db.store.purge_dead(None, "dead-only", None, None, 10)?, 1);
    assert_eq!(db.store.queue_names()?, ["Z", "a", "b", "dead-only"]);
    assert_eq!(db.store.stats("Z")?, QueueStats::default());
    Ok(())
}

pub fn live_jobs_pages_pending_and_processing_rows_newest_first<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let a = db.put("q", &opts(), "1")?;
    let b = db.put("q", &opts(), "2")?;
    let c = db.put("q", &opts(), "3")?;
    db.put("other", &opts(), "4")?;
    let claimed = db.take("q", "w")?;
    assert_eq!(claimed.id, a);
    let all = s.live_jobs("q", 10, None)?;
    assert_eq!(all.iter().map(|j| j.id).collect::<Vec<_>>(), [c, b, a]);
    assert_eq!((all[2].state, all[0].state), (JobState::Processing, JobState::Pending));
    let page = s.live_jobs("q", 1, Some(c))?;
    assert_eq!(page.iter().map(|j| j.id).collect::<Vec<_>>(), [b]);
    // Dead rows are dead_jobs' business.
    assert!(s.fail(None, &claimed, "x")?);
    assert_eq!(s.live_jobs("q", 10, None)?.len(), 2);
    Ok(())
}

pub fn now_moves_with_advance_clock<H: Harness>(db: &Db<H>) -> TestResult {
    let a = db.now()?;
    db.clock(1000)?;
    let b = db.now()?;
    assert!((1000..=1001).contains(&(b - a)));
    // Another handle on the same database keeps its own clock.
    assert!(db.reopen_engine()?.now()? < b);
    Ok(())
}

/// ADR 0015: every handle on a store has its identity; another store has another.
pub fn every_handle_shares_the_store_identity_and_no_other_store_does<H: Harness>(db: &Db<H>) -> TestResult {
    let id = db.engine().store_id().to_owned();
    // The random id, then where the store lives (a copy keeps the id, not the place).
    let (random, place) = id.split_at(32);
    assert!(random.bytes().all(|b| b.is_ascii_hexdigit()) && place.len() > 1, "{id:?}");
    assert_eq!(db.reopen_engine()?.store_id(), id);
    let other = H::fresh()?.ok_or("a second database")?;
    assert_ne!(other.engine().store_id(), id);
    Ok(())
}
