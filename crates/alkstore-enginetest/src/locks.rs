//! TTL locks (SPEC §10), judged by each handle's own database clock.

use alkstore_core::{Error, Result};

use crate::{Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __locks_cases { ($harness:ty) => { $crate::__cases! { $harness; locks {
    lock_lease_rules, a_lapsed_lease_is_not_renewed_even_when_nobody_took_it, operators_see_every_lease,
} } } }

/// Whether the lock was refused as held by another owner.
fn held(r: Result<()>) -> bool {
    matches!(r, Err(Error::LockHeld { .. }))
}

pub fn lock_lease_rules<H: Harness>(db: &Db<H>) -> TestResult {
    let (a, b) = (&db.store, db.reopen()?);
    a.lock_acquire("l", "me", 30)?;
    assert!(held(b.lock_acquire("l", "you", 30)), "held by another owner");
    b.lock_acquire("l", "me", 30)?;
    assert!(a.lock_renew("l", "me", 30)?);
    assert!(!a.lock_renew("l", "you", 30)?);
    // Past the lease on b's clock: lapsed, so another owner takes it.
    b.advance_clock(31)?;
    b.lock_acquire("l", "you", 30)?;
    assert!(!a.lock_renew("l", "me", 30)?, "lost");
    assert!(!a.lock_release("l", "me")?);
    assert!(a.lock_release("l", "you")?);
    a.lock_acquire("l", "me", 30)?;
    Ok(())
}

pub fn a_lapsed_lease_is_not_renewed_even_when_nobody_took_it<H: Harness>(db: &Db<H>) -> TestResult {
    let b = db.reopen()?;
    db.store.lock_acquire("l", "me", 10)?;
    b.advance_clock(11)?;
    assert!(!b.lock_renew("l", "me", 10)?, "past expires_at on b's clock");
    assert!(db.store.lock_renew("l", "me", 10)?, "still inside it on a's");
    Ok(())
}

/// `store.locks()`: every lease row by name, a lapsed one included, with its expiry.
pub fn operators_see_every_lease<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    assert!(s.locks()?.is_empty());
    s.lock_acquire("b", "me", 30)?;
    s.lock_acquire("a", "you", 5)?;
    db.clock(10)?;
    let now = db.now()?;
    let rows: Vec<(String, String, i64)> =
        s.locks()?.into_iter().map(|l| (l.name, l.owner, l.expires_at - now)).collect();
    let want = [("a", "you", -5), ("b", "me", 20)].map(|(n, o, t)| (n.to_owned(), o.to_owned(), t));
    assert!(rows.len() == 2 && rows.iter().zip(&want).all(|(r, w)| r.0 == w.0 && r.1 == w.1 && (r.2 - w.2).abs() <= 1));
    assert!(s.lock_release("b", "me")?);
    assert_eq!(s.locks()?.len(), 1);
    Ok(())
}
