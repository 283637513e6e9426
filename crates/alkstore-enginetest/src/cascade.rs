//! The failure cascade (SPEC §25, ADR 0029, issue 43): a parent's death or
//! cancel settles every descendant it reaches in one statement's work, not
//! one nested trigger per generation, so a chain of any length fails at its
//! head in one call and the queue keeps serving.

use alkstore_core::{JobState, NewJob, OnFailure, QueueOpts};

use crate::{job, opts, Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __cascade_cases { ($harness:ty) => { $crate::__cases! { $harness; cascade {
    a_long_chain_dies_from_its_head_in_one_call, a_cancel_near_the_top_of_a_long_chain_kills_the_rest,
    an_exhausted_head_of_a_long_chain_leaves_its_queue_serving, a_death_reaches_a_diamond_once,
    a_run_child_deep_in_a_dying_chain_is_released, a_purged_dead_parent_kills_a_redriven_chain,
    a_chain_killed_from_its_head_runs_again_when_redriven,
    a_parent_redriven_first_keeps_its_result_for_its_dead_child,
} } } }

/// Longer than either engine's nesting limit when each generation was a
/// nested trigger (SQLite from about 350, Postgres from about 400).
const LONG: usize = 1200;

fn once() -> QueueOpts {
    QueueOpts { max_attempts: 1, ..opts() }
}

fn child(payload: &str, after: &[i64], mode: OnFailure) -> NewJob {
    NewJob { after: after.to_vec(), on_failure: mode, ..job(payload) }
}

/// A chain of `n` jobs of `queue`, each waiting for the one before, in one
/// transaction; the ids from the head.
fn chain<H: Harness>(db: &Db<H>, queue: &str, o: &QueueOpts, n: usize) -> TestResult<Vec<i64>> {
    let s = &db.store;
    let mut tx = s.begin()?;
    let mut ids = vec![s.enqueue(Some(&mut tx), queue, o, &[job("0")])?[0]];
    for i in 1..n {
        let prev = ids[i - 1];
        ids.push(s.enqueue(Some(&mut tx), queue, o, &[child(&i.to_string(), &[prev], OnFailure::Cancel)])?[0]);
    }
    tx.commit()?;
    Ok(ids)
}

fn state<H: Harness>(db: &Db<H>, queue: &str, id: i64) -> TestResult<Option<JobState>> {
    Ok(db.store.get_job(None, queue, id)?.map(|j| j.state))
}

fn last_error<H: Harness>(db: &Db<H>, queue: &str, id: i64) -> TestResult<Option<String>> {
    Ok(db.store.get_job(None, queue, id)?.and_then(|j| j.last_error))
}

/// Every id of `ids` is dead in `queue`.
fn all_dead<H: Harness>(db: &Db<H>, queue: &str, ids: &[i64]) -> TestResult {
    for &id in ids {
        assert_eq!(state(db, queue, id)?, Some(JobState::Dead), "job {id}");
    }
    Ok(())
}

pub fn a_long_chain_dies_from_its_head_in_one_call<H: Harness>(db: &Db<H>) -> TestResult {
    let ids = chain(db, "q", &once(), LONG)?;
    let other = db.put("q", &opts(), "unrelated")?;
    let head = db.take("q", "w")?;
    assert_eq!(head.id, ids[0]);
    assert!(db.store.fail(None, &head, "boom")?);
    all_dead(db, "q", &ids)?;
    assert_eq!(db.store.stats("q")?.dead, LONG as i64);
    assert_eq!(last_error(db, "q", ids[1])?, Some(format!("parent job {} died: boom", ids[0])));
    // Deeper down, the message names the job's own parent and the cause, so
    // it stays one line long however deep the chain.
    let (i, root) = (LONG - 1, format!("parent job {} died: boom", ids[0]));
    assert_eq!(last_error(db, "q", ids[i])?, Some(format!("parent job {} died: {root}", ids[i - 1])));
    assert_eq!(db.take("q", "w")?.id, other, "the queue keeps serving");
    Ok(())
}

pub fn a_cancel_near_the_top_of_a_long_chain_kills_the_rest<H: Harness>(db: &Db<H>) -> TestResult {
    let ids = chain(db, "q", &opts(), LONG)?;
    assert!(db.store.cancel(None, "q", ids[1])?);
    assert_eq!(state(db, "q", ids[0])?, Some(JobState::Pending), "above the cancel: untouched");
    assert_eq!(state(db, "q", ids[1])?, None, "cancelled: gone");
    all_dead(db, "q", &ids[2..])?;
    let root = format!("parent job {} was cancelled", ids[1]);
    assert_eq!(last_error(db, "q", ids[2])?, Some(root.clone()));
    assert_eq!(last_error(db, "q", ids[3])?, Some(format!("parent job {} died: {root}", ids[2])));
    Ok(())
}

pub fn an_exhausted_head_of_a_long_chain_leaves_its_queue_serving<H: Harness>(db: &Db<H>) -> TestResult {
    let ids = chain(db, "q", &once(), LONG)?;
    db.take("q", "w")?;
    let other = db.put("q", &opts(), "unrelated")?;
    db.clock(31)?;
    let got = db.take("q", "w")?;
    assert_eq!(got.id, other, "the claim buried the lapsed head and served the next job");
    all_dead(db, "q", &ids)?;
    assert_eq!(last_error(db, "q", ids[1])?, Some(format!("parent job {} died: attempts exhausted", ids[0])));
    Ok(())
}

/// a → b, a → c, (b, c) → d, (d, x) → r with `run`: d dies once, naming
/// its lower parent, and r counts d's death once.
pub fn a_death_reaches_a_diamond_once<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let a = db.put("q", &once(), "a")?;
    let b = db.put_job("q", &opts(), child("b", &[a], OnFailure::Cancel))?;
    let c = db.put_job("q", &opts(), child("c", &[a], OnFailure::Cancel))?;
    let d = db.put_job("q", &opts(), child("d", &[b, c], OnFailure::Cancel))?;
    let x = db.put("x", &opts(), "x")?;
    let r = db.put_job("r", &opts(), child("r", &[d, x], OnFailure::Run))?;
    let h = db.take("q", "w")?;
    assert!(s.fail(None, &h, "boom")?);
    all_dead(db, "q", &[a, b, c, d])?;
    let root = format!("parent job {a} died: boom");
    assert_eq!(last_error(db, "q", d)?, Some(format!("parent job {b} died: {root}")));
    assert_eq!(state(db, "r", r)?, Some(JobState::Waiting), "x is still to come");
    let hx = db.take("x", "w")?;
    assert_eq!(hx.id, x);
    assert_eq!(s.ack(None, &[&hx])?, 1);
    assert_eq!(state(db, "r", r)?, Some(JobState::Pending), "d's death counted once, x's ack once");
    assert_eq!(s.stats("q")?.dead, 4);
    Ok(())
}

pub fn a_run_child_deep_in_a_dying_chain_is_released<H: Harness>(db: &Db<H>) -> TestResult {
    let ids = chain(db, "q", &once(), 50)?;
    let report = db.put_job("r", &opts(), child("report", &[ids[30]], OnFailure::Run))?;
    let fan = db.put_job("r", &opts(), child("fan", &[ids[10], ids[20], ids[49]], OnFailure::Run))?;
    let h = db.take("q", "w")?;
    assert!(db.store.fail(None, &h, "boom")?);
    all_dead(db, "q", &ids)?;
    assert_eq!(state(db, "r", report)?, Some(JobState::Pending));
    assert_eq!(state(db, "r", fan)?, Some(JobState::Pending), "three dead parents, each counted once");
    Ok(())
}

/// A redriven chain waits for its dead head; purging the head kills the
/// chain again, all of it.
pub fn a_purged_dead_parent_kills_a_redriven_chain<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let ids = chain(db, "q", &once(), LONG)?;
    let h = db.take("q", "w")?;
    assert!(s.fail(None, &h, "boom")?);
    let rest = &ids[1..];
    for part in rest.chunks(1000) {
        assert_eq!(s.requeue_dead(None, "q", Some(part), part.len())?.len(), part.len());
    }
    assert_eq!(state(db, "q", ids[1])?, Some(JobState::Waiting), "waits for its dead parent");
    assert_eq!(state(db, "q", ids[LONG - 1])?, Some(JobState::Waiting));
    assert_eq!(s.purge_dead(None, "q", Some(&[ids[0]]), None, 1)?, 1);
    all_dead(db, "q", rest)?;
    assert_eq!(last_error(db, "q", ids[1])?, Some(format!("parent job {} died: boom", ids[0])));
    Ok(())
}

pub fn a_chain_killed_from_its_head_runs_again_when_redriven<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let ids = chain(db, "q", &opts(), 40)?;
    let h = db.take("q", "w")?;
    assert!(s.fail(None, &h, "boom")?);
    assert_eq!(s.requeue_dead(None, "q", Some(&ids), ids.len())?.len(), ids.len());
    assert_eq!(state(db, "q", ids[0])?, Some(JobState::Pending));
    for &id in &ids[1..] {
        assert_eq!(state(db, "q", id)?, Some(JobState::Waiting), "job {id}");
    }
    for &id in &ids {
        let h = db.take("q", "w")?;
        assert_eq!(h.id, id, "in chain order");
        assert_eq!(s.ack(None, &[&h])?, 1);
    }
    assert_eq!(s.stats("q")?, Default::default());
    Ok(())
}

/// docs/workflows.md's redrive order: the failed parent first, its child
/// after the parent's ack. The child reads the parent's result.
pub fn a_parent_redriven_first_keeps_its_result_for_its_dead_child<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let p = db.put("p", &once(), "parent")?;
    let c = db.put_job("c", &opts(), child("child", &[p], OnFailure::Cancel))?;
    let h = db.take("p", "w")?;
    assert!(s.fail(None, &h, "bad header")?);
    assert_eq!(state(db, "c", c)?, Some(JobState::Dead));
    assert_eq!(s.requeue_dead(None, "p", Some(&[p]), 1)?, vec![p]);
    let h = db.take("p", "w")?;
    assert!(s.ack_result(None, &h, r#"{"rows": 42}"#)?);
    assert_eq!(s.result(p)?.and_then(|r| r.value).as_deref(), Some(r#"{"rows": 42}"#));
    assert_eq!(s.requeue_dead(None, "c", Some(&[c]), 1)?, vec![c]);
    let hc = db.take("c", "w")?;
    assert_eq!(hc.id, c);
    let got = s.parent_results(None, c)?;
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].0, got[0].1.as_ref().and_then(|r| r.value.as_deref())), (p, Some(r#"{"rows": 42}"#)));
    assert_eq!(s.ack(None, &[&hc])?, 1);
    assert_eq!(s.result(p)?, None, "no child needs it any more");
    Ok(())
}
