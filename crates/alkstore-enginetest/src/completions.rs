//! Completion counts (SPEC §19): acks per queue per minute for the
//! dashboard's chart, counted in memory and written by each store.

use alkstore_core::{MinuteCount, KEEP_MINUTES};

use crate::{opts, Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __completions_cases { ($harness:ty) => { $crate::__cases! { $harness; completions {
    landed_acks_are_counted_per_queue_and_minute, acks_in_a_transaction_count_only_when_it_commits,
    every_handles_counts_add_up_and_a_day_is_kept, the_window_is_checked,
} } } }

/// Total per queue, in queue order.
fn totals(rows: &[MinuteCount]) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = Vec::new();
    for r in rows {
        match out.last_mut() {
            Some((q, n)) if *q == r.queue => *n += r.count,
            _ => out.push((r.queue.clone(), r.count)),
        }
    }
    out
}

fn want(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
    pairs.iter().map(|(q, n)| ((*q).to_owned(), *n)).collect()
}

pub fn landed_acks_are_counted_per_queue_and_minute<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    assert!(s.completions(60)?.is_empty());
    for _ in 0..4 {
        db.put("a", &opts(), "{}")?;
    }
    for _ in 0..3 {
        db.put("b", &opts(), "{}")?;
    }
    let batch = s.claim("a", "w", 3)?;
    assert_eq!(s.ack(None, &batch.iter().collect::<Vec<_>>())?, 3);
    let (b1, b2, b3) = (db.take("b", "w")?, db.take("b", "w")?, db.take("b", "w")?);
    assert_eq!(s.ack(None, &[&b1])?, 1);
    assert_eq!(s.ack(None, &[&b1])?, 0, "a second ack lands nothing and counts nothing");
    assert!(s.fail(None, &b2, "boom")?, "a dead job is not a completion");
    assert!(s.retry(None, &b3, "again", Some(0))?, "nor is a retry");
    let rows = s.completions(60)?;
    assert_eq!(totals(&rows), want(&[("a", 3), ("b", 1)]));
    let minute = db.now()?.div_euclid(60);
    assert!(rows.iter().all(|r| (r.minute - minute).abs() <= 1), "{rows:?} at minute {minute}");
    // Two minutes on, the next ack is a row of its own; a one-minute window sees only it.
    db.clock(120)?;
    let a = db.take("a", "w")?;
    assert_eq!(s.ack(None, &[&a])?, 1);
    let rows = s.completions(60)?;
    assert_eq!(totals(&rows), want(&[("a", 4), ("b", 1)]));
    assert_eq!(rows.iter().filter(|r| r.queue == "a").count(), 2, "{rows:?}");
    assert_eq!(totals(&s.completions(1)?), want(&[("a", 1)]));
    Ok(())
}

pub fn acks_in_a_transaction_count_only_when_it_commits<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    db.put("q", &opts(), "{}")?;
    db.put("q", &opts(), "{}")?;
    let (one, two) = (db.take("q", "w")?, db.take("q", "w")?);
    let mut tx = s.begin()?;
    assert_eq!(s.ack(Some(&mut tx), &[&one])?, 1);
    tx.rollback()?;
    assert!(s.completions(60)?.is_empty(), "rolled back: not completed");
    let mut tx = s.begin()?;
    assert_eq!(s.ack(Some(&mut tx), &[&one, &two])?, 2);
    tx.commit()?;
    assert_eq!(totals(&s.completions(60)?), want(&[("q", 2)]));
    Ok(())
}

pub fn every_handles_counts_add_up_and_a_day_is_kept<H: Harness>(db: &Db<H>) -> TestResult {
    let other = db.reopen()?;
    for _ in 0..3 {
        db.put("q", &opts(), "{}")?;
    }
    let theirs = other.claim("q", "w", 2)?;
    assert_eq!(other.ack(None, &theirs.iter().collect::<Vec<_>>())?, 2);
    // Closing writes what the other handle counted.
    other.close();
    let mine = db.take("q", "w")?;
    assert_eq!(db.store.ack(None, &[&mine])?, 1);
    assert_eq!(totals(&db.store.completions(60)?), want(&[("q", 3)]));
    // A day and a bit later, the next write drops the old minute.
    db.clock((KEEP_MINUTES + 2) * 60)?;
    db.put("q", &opts(), "{}")?;
    let late = db.take("q", "w")?;
    assert_eq!(db.store.ack(None, &[&late])?, 1);
    assert_eq!(totals(&db.store.completions(60)?), want(&[("q", 1)]));
    let all = db.engine().completions_since(i64::MIN)?;
    assert_eq!(totals(&all), want(&[("q", 1)]), "rows older than a day are gone: {all:?}");
    Ok(())
}

pub fn the_window_is_checked<H: Harness>(db: &Db<H>) -> TestResult {
    for bad in [0, -1, KEEP_MINUTES + 1] {
        let e = db.store.completions(bad).expect_err("out of range");
        assert!(e.to_string().contains("minutes must be between 1 and 1440"), "{e}");
    }
    assert!(db.store.completions(KEEP_MINUTES)?.is_empty());
    Ok(())
}
