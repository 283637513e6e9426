//! TTL locks (SPEC §10): one row per name in `__alkstore_locks`, each op a
//! single statement judged by `unixepoch()` plus the handle's clock offset.
//!
//! A lease covers `now <= expires_at` (the job handle's rule), so it can be
//! taken over once `expires_at < now`.

use alkstore_core::{LockOps, LockRow, Result};
use rusqlite::params;

use crate::engine::SqliteEngine;
use crate::error::DbResult;

/// Takes the lease when it is free, lapsed or already this owner's: one
/// upsert, so two acquirers can never both win. `?1` name, `?2` owner,
/// `?3` ttl, `?4` clock offset. Changes one row exactly when acquired.
pub(crate) const ACQUIRE: &str = "\
INSERT INTO __alkstore_locks (name, owner, expires_at) VALUES (?1, ?2, unixepoch() + ?4 + ?3) \
ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at \
WHERE __alkstore_locks.expires_at < unixepoch() + ?4 OR __alkstore_locks.owner = excluded.owner";

/// Extends the owner's unexpired lease. Same parameters as [`ACQUIRE`].
pub(crate) const RENEW: &str = "\
UPDATE __alkstore_locks SET expires_at = unixepoch() + ?4 + ?3 \
WHERE name = ?1 AND owner = ?2 AND expires_at >= unixepoch() + ?4";

/// Drops the owner's lease, lapsed or not. `?1` name, `?2` owner.
pub(crate) const RELEASE: &str = "DELETE FROM __alkstore_locks WHERE name = ?1 AND owner = ?2";

/// Every lease row by name (for operators: the table is one row per lock).
pub(crate) const LIST: &str = "SELECT name, owner, expires_at FROM __alkstore_locks ORDER BY name";

impl LockOps for SqliteEngine {
    fn lock_acquire(&self, name: &str, owner: &str, ttl_s: i64) -> Result<bool> {
        let offset = self.offset();
        self.conns.with_writer(|c| {
            let n = c.prepare_cached(ACQUIRE).and_then(|mut s| s.execute(params![name, owner, ttl_s, offset])).db()?;
            Ok(n > 0)
        })
    }

    fn lock_renew(&self, name: &str, owner: &str, ttl_s: i64) -> Result<bool> {
        let offset = self.offset();
        self.conns.with_writer(|c| {
            let n = c.prepare_cached(RENEW).and_then(|mut s| s.execute(params![name, owner, ttl_s, offset])).db()?;
            Ok(n > 0)
        })
    }

    fn lock_release(&self, name: &str, owner: &str) -> Result<bool> {
        self.conns.with_writer(|c| {
            let n = c.prepare_cached(RELEASE).and_then(|mut s| s.execute(params![name, owner])).db()?;
            Ok(n > 0)
        })
    }

    fn lock_list(&self) -> Result<Vec<LockRow>> {
        self.read(None, |c| {
            let mut stmt = c.prepare_cached(LIST).db()?;
            let rows = stmt
                .query_map([], |r| Ok(LockRow { name: r.get(0)?, owner: r.get(1)?, expires_at: r.get(2)? }))
                .db()?;
            rows.map(|r| r.db()).collect()
        })
    }
}
