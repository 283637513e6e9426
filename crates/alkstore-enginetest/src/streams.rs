//! Streams (SPEC §9): offsets in commit order, never reused, per-consumer
//! saved offsets that only move forward.

use std::time::Duration;

use alkstore_core::{Error, ParamStyle};

use crate::{Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __streams_cases { ($harness:ty) => { $crate::__cases! { $harness; streams {
    publish_read_offsets_trim, rolled_back_publish_leaves_no_gap,
    second_publisher_waits_for_the_first_commit, operators_see_each_head_and_consumer_lag,
    a_key_is_bounded_like_every_key,
} } } }

pub fn publish_read_offsets_trim<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    assert_eq!(s.publish(None, "s", None, "1")?, 1);
    assert_eq!(s.publish(None, "s", Some("k"), "2")?, 2);
    assert_eq!(s.publish(None, "other", None, "x")?, 1);
    let got = s.read(None, "s", 0, 10)?;
    assert_eq!(got.iter().map(|ev| ev.offset).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(got[1].key.as_deref(), Some("k"));
    assert_eq!(s.read(None, "s", 1, 10)?.len(), 1);
    assert_eq!(s.read(None, "s", 0, 1)?.len(), 1);

    assert_eq!(s.get_offset(None, "s", "c")?, 0);
    s.save_offset(None, "s", "c", 2)?;
    s.save_offset(None, "s", "c", 1)?;
    assert_eq!(s.get_offset(None, "s", "c")?, 2);

    assert_eq!(s.trim_to("s", 3)?, 2);
    assert!(s.read(None, "s", 0, 10)?.is_empty());
    // The head row survives the trim: offsets are never reused.
    assert_eq!(s.publish(None, "s", None, "3")?, 3);
    Ok(())
}

pub fn rolled_back_publish_leaves_no_gap<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    assert_eq!(s.publish(None, "s", None, "1")?, 1);
    let mut tx = s.begin()?;
    assert_eq!(s.publish(Some(&mut tx), "s", None, "2")?, 2);
    assert_eq!(s.read(Some(&mut tx), "s", 0, 10)?.len(), 2);
    tx.rollback()?;
    assert_eq!(s.read(None, "s", 0, 10)?.len(), 1);
    assert_eq!(s.publish(None, "s", None, "2")?, 2);
    Ok(())
}

/// A publisher whose transaction is open holds the stream's head: a second
/// publisher waits for its commit and then takes the next offset.
pub fn second_publisher_waits_for_the_first_commit<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let mut tx = s.begin()?;
    assert_eq!(s.publish(Some(&mut tx), "s", None, "first")?, 1);
    std::thread::scope(|scope| -> TestResult {
        let second = scope.spawn(|| s.publish(None, "s", None, "second"));
        std::thread::sleep(Duration::from_millis(300));
        assert!(!second.is_finished(), "the second publisher must wait for the head row");
        tx.commit()?;
        assert_eq!(second.join().map_err(|_| "publisher thread panicked")??, 2);
        Ok(())
    })?;
    Ok(())
}

/// `store.streams()`: each stream's head and each saved consumer with its
/// lag; a trim moves neither; a consumer of a stream never published shows.
pub fn operators_see_each_head_and_consumer_lag<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    assert!(s.streams()?.is_empty());
    for p in ["1", "2", "3"] {
        s.publish(None, "orders", None, p)?;
    }
    s.publish(None, "audit", None, "x")?;
    s.save_offset(None, "orders", "billing", 1)?;
    s.save_offset(None, "orders", "archive", 3)?;
    s.save_offset(None, "quiet", "early", 0)?;
    s.trim_to("orders", 4)?;
    type Seen = (String, i64, Vec<(String, i64, i64)>);
    let got: Vec<Seen> = s
        .streams()?
        .into_iter()
        .map(|st| (st.stream, st.head, st.consumers.into_iter().map(|c| (c.consumer, c.offset, c.lag)).collect()))
        .collect();
    let o = |c: &str, off, lag| (c.to_owned(), off, lag);
    assert_eq!(
        got,
        [
            ("audit".to_owned(), 1, vec![]),
            ("orders".to_owned(), 3, vec![o("archive", 3, 0), o("billing", 1, 2)]),
            ("quiet".to_owned(), 0, vec![o("early", 0, 0)]),
        ]
    );
    Ok(())
}

/// An event's key is 1-200 characters without NUL, as a unique key and a
/// group are, whatever `max_payload_bytes` allows; a refused one writes nothing.
pub fn a_key_is_bounded_like_every_key<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let longest = "é".repeat(200);
    assert_eq!(s.publish(None, "s", Some(&longest), "1")?, 1, "200 characters, not bytes");
    for bad in [String::new(), "x".repeat(201), "k".repeat(5_000_000), "a\0b".to_owned()] {
        let refused = s.publish(None, "s", Some(&bad), "2");
        assert!(matches!(&refused, Err(Error::Value(m)) if m.starts_with("key must")), "{refused:?}");
        let foreign = s.foreign_publish("s", Some(&bad), "2", ParamStyle::Dollar);
        assert!(matches!(foreign, Err(Error::Value(_))), "conn= too");
    }
    let events = s.read(None, "s", 0, 10)?;
    assert_eq!(events.len(), 1, "nothing else was written");
    assert_eq!(events[0].key.as_deref(), Some(longest.as_str()));
    Ok(())
}
