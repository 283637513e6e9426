//! Streams (SPEC §9) on Postgres, and why their offsets follow commit order.
//!
//! A sequence would not do: two transactions can take 5 and 6 and commit as
//! 6 then 5, and a reader that saw 6 would skip 5 forever. Instead each
//! publish bumps the stream's row in `stream_heads` with an upsert and keeps
//! that row lock until its transaction ends. A second publisher to the same
//! stream waits on the lock and reads the head only after the first has
//! committed (or rolled back, taking its increment with it: no gap), so a
//! larger offset always commits later, and Postgres makes a transaction
//! visible before it releases its locks. The cost — publishers to one stream
//! serialise — is measured in docs/adr/0006-stream-commit-order.md.
//!
//! Each statement is one round trip; `publish` is one statement too (the
//! head upsert, the insert and the `pg_notify` in data-modifying CTEs), so
//! outside a caller transaction it is its own transaction and the lock is
//! held only for that statement.

use alkstore_core::{foreign_publish_params, Engine, Event, Result, SqlValue, StreamOps, Tx};

use crate::conn::{now_cte, NOW};
use crate::engine::PgEngine;
use crate::rows::col;

/// The stream statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// Head upsert + insert + wake: `$1` clock offset, `$2` stream, `$3` key, `$4` payload.
    pub(crate) publish: String,
    /// `publish` for a caller's own connection (ADR 0015): the head upsert
    /// only where the connection reaches this store. `$1` store_id, `$2`
    /// stream, `$3` key, `$4` payload, `$5` clock offset
    /// (`alkstore_core::foreign_publish_params`).
    pub(crate) foreign_publish: String,
    /// `$1` stream, `$2` after, `$3` limit.
    pub(crate) read: String,
    /// Monotonic upsert: `$1` stream, `$2` consumer, `$3` offset.
    pub(crate) save_offset: String,
    /// `$1` stream, `$2` consumer.
    pub(crate) get_offset: String,
    /// `$1` stream, `$2` first offset kept.
    pub(crate) trim: String,
    /// Every stream's head, by name (for operators).
    pub(crate) heads: String,
    /// Every saved consumer offset, by stream then consumer (for operators).
    pub(crate) offsets: String,
}

impl Sql {
    /// For the quoted schema `s`, and the store's notification `channel`.
    pub(crate) fn new(s: &str, channel: &str) -> Self {
        // The stream name is the payload: repeats within one transaction
        // fold into one.
        let notify = format!("pg_notify('{channel}', $2::text)");
        let event = |head: &str| {
            format!(
                "head AS ({head} ON CONFLICT (stream) DO UPDATE SET last_seq = h.last_seq + 1 RETURNING h.last_seq), \
                 ev AS ( \
                   INSERT INTO {s}.stream_events (stream, seq, key, payload, published_at) \
                   SELECT $2::text, head.last_seq, $3::text, $4::text, n.t FROM head, n RETURNING seq)"
            )
        };
        let heads = format!("INSERT INTO {s}.stream_heads AS h (stream, last_seq)");
        Sql {
            foreign_publish: format!(
                "{now}, {ev} SELECT seq, NULL::text, {notify}::text AS notified FROM ev",
                now = now_cte!("$5"),
                ev = event(&format!(
                    "{heads} SELECT $2::text, 1 FROM {s}.meta WHERE key = 'store_id' AND {identity} = $1::text",
                    identity = crate::migrate::STORE_IDENTITY
                )),
            ),
            publish: format!(
                "{NOW}, {ev} SELECT seq, {notify} FROM ev",
                ev = event(&format!("{heads} VALUES ($2::text, 1)")),
            ),
            read: format!(
                "SELECT seq, key, payload, published_at FROM {s}.stream_events \
                 WHERE stream = $1::text AND seq > $2::bigint ORDER BY seq LIMIT $3::bigint"
            ),
            save_offset: format!(
                "INSERT INTO {s}.stream_offsets AS o (stream, consumer, seq) VALUES ($1::text, $2::text, $3::bigint) \
                 ON CONFLICT (stream, consumer) DO UPDATE SET seq = greatest(o.seq, excluded.seq)"
            ),
            get_offset: format!("SELECT seq FROM {s}.stream_offsets WHERE stream = $1::text AND consumer = $2::text"),
            trim: format!("DELETE FROM {s}.stream_events WHERE stream = $1::text AND seq < $2::bigint"),
            heads: format!("SELECT stream, last_seq FROM {s}.stream_heads ORDER BY stream COLLATE \"C\""),
            offsets: format!(
                "SELECT stream, consumer, seq FROM {s}.stream_offsets ORDER BY stream COLLATE \"C\", consumer COLLATE \"C\""
            ),
        }
    }
}

impl StreamOps for PgEngine {
    fn publish(&self, tx: Option<&mut dyn Tx>, stream: &str, key: Option<&str>, payload: &str) -> Result<i64> {
        self.run(tx, async |cx| {
            let row = cx.query_one(&cx.sql.streams.publish, &[&cx.offset, &stream, &key, &payload]).await?;
            col(&row, 0)
        })
    }

    fn foreign_publish(&self, stream: &str, key: Option<&str>, payload: &str) -> Result<(String, Vec<SqlValue>)> {
        let offset = self.offset.load(std::sync::atomic::Ordering::SeqCst);
        let params = foreign_publish_params(self.store_id(), stream, key, payload, offset);
        Ok((self.sql.streams.foreign_publish.clone(), params))
    }

    fn read(&self, tx: Option<&mut dyn Tx>, stream: &str, after: i64, limit: usize) -> Result<Vec<Event>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.run(tx, async |cx| {
            let rows = cx.query(&cx.sql.streams.read, &[&stream, &after, &limit]).await?;
            rows.iter()
                .map(|r| {
                    Ok(Event { offset: col(r, 0)?, key: col(r, 1)?, payload: col(r, 2)?, published_at: col(r, 3)? })
                })
                .collect()
        })
    }

    fn save_offset(&self, tx: Option<&mut dyn Tx>, stream: &str, consumer: &str, offset: i64) -> Result<()> {
        self.run(tx, async |cx| cx.execute(&cx.sql.streams.save_offset, &[&stream, &consumer, &offset]).await.map(drop))
    }

    fn get_offset(&self, tx: Option<&mut dyn Tx>, stream: &str, consumer: &str) -> Result<i64> {
        self.run(tx, async |cx| {
            let rows = cx.query(&cx.sql.streams.get_offset, &[&stream, &consumer]).await?;
            rows.first().map_or(Ok(0), |r| col(r, 0))
        })
    }

    fn stream_heads(&self) -> Result<Vec<(String, i64)>> {
        self.run(None, async |cx| {
            let rows = cx.query(&cx.sql.streams.heads, &[]).await?;
            rows.iter().map(|r| Ok((col(r, 0)?, col(r, 1)?))).collect()
        })
    }

    fn stream_offsets(&self) -> Result<Vec<(String, String, i64)>> {
        self.run(None, async |cx| {
            let rows = cx.query(&cx.sql.streams.offsets, &[]).await?;
            rows.iter().map(|r| Ok((col(r, 0)?, col(r, 1)?, col(r, 2)?))).collect()
        })
    }

    fn trim_to(&self, stream: &str, before: i64) -> Result<i64> {
        let n = self.run(None, async |cx| cx.execute(&cx.sql.streams.trim, &[&stream, &before]).await)?;
        Ok(i64::try_from(n).unwrap_or(i64::MAX))
    }
}
