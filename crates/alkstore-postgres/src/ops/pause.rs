//! Pause and resume (SPEC §18): a row in `paused` per paused queue. The
//! claim statement checks it (`claim.rs`); a resume notifies the queue's
//! channel, so LISTENing claimers wake at its commit, as after an enqueue.

use alkstore_core::{PauseOps, Result};

use crate::conn::{Ctx, NOW};
use crate::engine::PgEngine;
use crate::rows::col;

/// The pause statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// Marks `$2` paused; a second pause keeps the first instant. `$1` clock offset.
    pub(crate) pause: String,
    /// Clears the mark of `$1` and wakes its claimers.
    pub(crate) resume: String,
    /// Whether `$1` is paused.
    pub(crate) is_paused: String,
}

impl Sql {
    /// For the quoted schema `s`, and the store's notification `channel`.
    pub(crate) fn new(s: &str, channel: &str) -> Self {
        Sql {
            pause: format!(
                "{NOW} INSERT INTO {s}.paused (queue, paused_at) SELECT $2::text, t FROM n ON CONFLICT (queue) DO NOTHING"
            ),
            resume: format!(
                "WITH d AS (DELETE FROM {s}.paused WHERE queue = $1::text) SELECT pg_notify('{channel}', $1::text)::text"
            ),
            is_paused: format!("SELECT EXISTS (SELECT 1 FROM {s}.paused WHERE queue = $1::text)"),
        }
    }
}

async fn pause(cx: &Ctx<'_>, queue: &str) -> Result<()> {
    cx.execute(&cx.sql.pause.pause, &[&cx.offset, &queue]).await.map(drop)
}

impl PauseOps for PgEngine {
    fn pause(&self, queue: &str) -> Result<()> {
        self.run(None, async |cx| pause(cx, queue).await)
    }

    fn resume(&self, queue: &str) -> Result<()> {
        self.run(None, async |cx| cx.query_one(&cx.sql.pause.resume, &[&queue]).await.map(drop))
    }

    fn is_paused(&self, queue: &str) -> Result<bool> {
        self.run(None, async |cx| col(&cx.query_one(&cx.sql.pause.is_paused, &[&queue]).await?, 0))
    }
}
