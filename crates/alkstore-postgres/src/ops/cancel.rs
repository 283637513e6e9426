//! `cancel` (SPEC §4.4): another party deletes a live row. It is not an
//! interrupt and records no dead row; the holder's next handle op finds the
//! row gone and returns false.

use alkstore_core::{CancelOps, Result, Tx};

use crate::conn::Ctx;
use crate::engine::PgEngine;

/// The cancel statement of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// Delete a live row of a queue: `$1` id, `$2` queue.
    pub(crate) cancel: String,
    /// A parent being cancelled is marked first, so migration 0012's trigger
    /// fails its children instead of releasing them as an ack would.
    pub(crate) mark: String,
}

impl Sql {
    /// For the quoted schema `s`, and the store's notification `channel`
    /// (a cancelled processing job of a limited queue frees its slot).
    pub(crate) fn new(s: &str, channel: &str) -> Self {
        let freed = super::slot_freed(s, channel, "queue");
        Sql {
            cancel: format!(
                "DELETE FROM {s}.jobs WHERE id = $1::bigint AND queue = $2::text \
                 RETURNING CASE WHEN state IN ('processing', 'cancelled') THEN {freed} END"
            ),
            mark: format!(
                "UPDATE {s}.jobs SET state = 'cancelled' WHERE id = $1::bigint AND queue = $2::text AND has_children"
            ),
        }
    }
}

/// Deletes a pending or processing row of `queue`.
pub(crate) async fn cancel(cx: &Ctx<'_>, queue: &str, id: i64) -> Result<bool> {
    cx.execute(&cx.sql.cancel.mark, &[&id, &queue]).await?;
    Ok(cx.execute(&cx.sql.cancel.cancel, &[&id, &queue]).await? > 0)
}

impl CancelOps for PgEngine {
    fn cancel(&self, tx: Option<&mut dyn Tx>, queue: &str, id: i64) -> Result<bool> {
        self.run_atomic(tx, async |cx| cancel(cx, queue, id).await)
    }
}
