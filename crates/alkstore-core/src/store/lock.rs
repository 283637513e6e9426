//! TTL locks (SPEC §10): the validated front over the engine's [`LockOps`].
//!
//! A lease is judged by the database clock (plus the handle's test offset),
//! never the caller's, so processes on skewed machines agree on who holds it.
//! The scheduler's leadership lease is one of these rows, but its name is
//! reserved: only the runner (which calls the engine directly) can take it.
//!
//! [`LockOps`]: crate::engine::locks::LockOps

use crate::engine::locks::LockRow;
use crate::error::{Error, Result};
use crate::rules::duration::MAX_DURATION_S;
use crate::rules::names::validate_name;
use crate::store::Store;

/// The longest lease a caller may ask for: the duration bound of every
/// argument (100 years, ADR 0011), i.e. "until released".
pub const MAX_TTL_S: i64 = MAX_DURATION_S;

/// The argument rules of every lock call; `ttl_s` None skips the ttl check.
/// Public so a binding can refuse bad arguments when the lock object is
/// made, before any I/O.
pub fn validate_lock(name: &str, owner: &str, ttl_s: Option<i64>) -> Result<()> {
    validate_name("lock", name)?;
    validate_name("lock owner", owner)?;
    if let Some(t) = ttl_s {
        if !(1..=MAX_TTL_S).contains(&t) {
            return Err(Error::Value(format!("ttl_s must be between 1 and {MAX_TTL_S} seconds, got {t}")));
        }
    }
    Ok(())
}

impl Store {
    /// `store.locks()`: every lease row by name, lapsed ones and the
    /// scheduler's leadership included (for operators: a scan of the table).
    pub fn locks(&self) -> Result<Vec<LockRow>> {
        self.enter(None)?;
        self.engine().lock_list()
    }

    /// Takes `name` for `owner` until `now + ttl_s`: when it is free, lapsed,
    /// or already `owner`'s (re-acquiring extends it). `LockHeld` otherwise.
    pub fn lock_acquire(&self, name: &str, owner: &str, ttl_s: i64) -> Result<()> {
        validate_lock(name, owner, Some(ttl_s))?;
        self.enter(None)?;
        if self.engine().lock_acquire(name, owner, ttl_s)? {
            Ok(())
        } else {
            Err(Error::LockHeld { name: name.to_owned() })
        }
    }

    /// Extends `owner`'s lease to `now + ttl_s` while it is unexpired
    /// (`now <= expires_at`); false once it lapsed or another owner took it.
    pub fn lock_renew(&self, name: &str, owner: &str, ttl_s: i64) -> Result<bool> {
        validate_lock(name, owner, Some(ttl_s))?;
        self.enter(None)?;
        self.engine().lock_renew(name, owner, ttl_s)
    }

    /// Drops `owner`'s lease; false when `owner` did not hold it.
    pub fn lock_release(&self, name: &str, owner: &str) -> Result<bool> {
        validate_lock(name, owner, None)?;
        self.enter(None)?;
        self.engine().lock_release(name, owner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::names::SCHEDULER_LOCK;

    #[test]
    fn arguments() {
        assert!(validate_lock("nightly", "me", Some(1)).is_ok());
        assert!(matches!(validate_lock(SCHEDULER_LOCK, "me", Some(30)), Err(Error::InvalidName { .. })));
        assert!(matches!(validate_lock("", "me", None), Err(Error::InvalidName { .. })));
        assert!(matches!(validate_lock("x", "", None), Err(Error::InvalidName { .. })));
        assert!(matches!(validate_lock("x", "me", Some(0)), Err(Error::Value(_))));
        assert!(matches!(validate_lock("x", "me", Some(MAX_TTL_S + 1)), Err(Error::Value(_))));
    }
}
