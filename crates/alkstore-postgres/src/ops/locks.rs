//! TTL locks (SPEC §10): one row per name in `<schema>.locks`, each op a
//! single statement judged by the server clock plus the handle's offset.
//!
//! A lease covers `now <= expires_at` (the job handle's rule), so it can be
//! taken over once `expires_at < now`.

use alkstore_core::{LockOps, LockRow, Result};

use crate::conn::NOW;
use crate::engine::PgEngine;
use crate::rows::col;

/// The lock statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// Takes the lease when free, lapsed or already this owner's: one
    /// upsert, so two acquirers never both win (the loser's conflict check
    /// runs against the winner's committed row). `$2` name, `$3` owner, `$4`
    /// ttl. `excluded.expires_at - $4` is `now`: the conflict clause cannot
    /// see the CTE. Returns a row exactly when acquired.
    pub(crate) acquire: String,
    /// Extends the owner's unexpired lease; same parameters.
    pub(crate) renew: String,
    /// Drops the owner's lease (`$1` name, `$2` owner) and wakes the
    /// store's waiters, so a standby scheduler takes over at once, as every
    /// commit does on SQLite.
    pub(crate) release: String,
    /// Every lease row by name (for operators).
    pub(crate) list: String,
}

impl Sql {
    /// For the quoted schema `s` and the store's notification `channel`.
    pub(crate) fn new(s: &str, channel: &str) -> Self {
        Sql {
            acquire: format!(
                "{NOW} INSERT INTO {s}.locks AS l (name, owner, expires_at) \
                 SELECT $2::text, $3::text, n.t + $4::bigint FROM n \
                 ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at \
                 WHERE l.expires_at < excluded.expires_at - $4::bigint OR l.owner = excluded.owner \
                 RETURNING 1"
            ),
            renew: format!(
                "{NOW} UPDATE {s}.locks SET expires_at = (SELECT t FROM n) + $4::bigint \
                 WHERE name = $2::text AND owner = $3::text AND expires_at >= (SELECT t FROM n)"
            ),
            release: format!(
                "DELETE FROM {s}.locks WHERE name = $1::text AND owner = $2::text \
                 RETURNING pg_notify('{channel}', name)"
            ),
            list: format!("SELECT name, owner, expires_at FROM {s}.locks ORDER BY name COLLATE \"C\""),
        }
    }
}

impl LockOps for PgEngine {
    fn lock_acquire(&self, name: &str, owner: &str, ttl_s: i64) -> Result<bool> {
        self.run(None, async |cx| {
            Ok(!cx.query(&cx.sql.locks.acquire, &[&cx.offset, &name, &owner, &ttl_s]).await?.is_empty())
        })
    }

    fn lock_renew(&self, name: &str, owner: &str, ttl_s: i64) -> Result<bool> {
        self.run(None, async |cx| Ok(cx.execute(&cx.sql.locks.renew, &[&cx.offset, &name, &owner, &ttl_s]).await? > 0))
    }

    fn lock_release(&self, name: &str, owner: &str) -> Result<bool> {
        self.run(None, async |cx| Ok(cx.execute(&cx.sql.locks.release, &[&name, &owner]).await? > 0))
    }

    fn lock_list(&self) -> Result<Vec<LockRow>> {
        self.run(None, async |cx| {
            let rows = cx.query(&cx.sql.locks.list, &[]).await?;
            rows.iter().map(|r| Ok(LockRow { name: col(r, 0)?, owner: col(r, 1)?, expires_at: col(r, 2)? })).collect()
        })
    }
}
