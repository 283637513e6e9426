//! Lock storage (SPEC §10): the TTL leases the Store's locks and the
//! schedule runner's leadership are made of.

use crate::error::Result;

/// TTL leases in an engine table (SPEC §10).
pub trait LockOps {
    /// Takes `name` for `owner` until `now + ttl_s` when it is free, lapsed
    /// (`expires_at < now`) or already `owner`'s. Returns whether `owner` holds it.
    fn lock_acquire(&self, name: &str, owner: &str, ttl_s: i64) -> Result<bool>;
    /// Extends `owner`'s unexpired lease (`now <= expires_at`) to `now + ttl_s`.
    fn lock_renew(&self, name: &str, owner: &str, ttl_s: i64) -> Result<bool>;
    /// Drops `owner`'s lease; false when `owner` did not hold it.
    fn lock_release(&self, name: &str, owner: &str) -> Result<bool>;
    /// Every lease row, lapsed ones included, by name: for operators.
    fn lock_list(&self) -> Result<Vec<LockRow>>;
}

/// One lease row as operators see it (`store.locks()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockRow {
    /// The lock's name.
    pub name: String,
    /// Who holds (or last held) it.
    pub owner: String,
    /// The lease covers `now <= expires_at`.
    pub expires_at: i64,
}
