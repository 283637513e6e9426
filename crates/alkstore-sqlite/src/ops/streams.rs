//! Streams (SPEC §9) on SQLite.
//!
//! Offsets follow commit order for free here: a publish is a write
//! transaction, and SQLite has one writer per file, so the transaction that
//! takes offset N+1 cannot start before the one that took N has committed
//! (or rolled back, taking its head increment with it: no gap). The head row
//! in `__alkstore_stream_heads` keeps offsets from being reused after
//! `trim_to` deletes the newest events.

use alkstore_core::{foreign_publish_params, Engine, Event, Result, SqlValue, StreamOps, Tx};
use rusqlite::{params, Connection};

use crate::conn::atomic;
use crate::engine::SqliteEngine;
use crate::error::DbResult;

/// Takes the stream's next offset: 1 for a new stream, else `last_seq + 1`.
pub(crate) const PUBLISH_HEAD: &str = "\
INSERT INTO __alkstore_stream_heads (stream, last_seq) VALUES (?1, 1) \
ON CONFLICT (stream) DO UPDATE SET last_seq = last_seq + 1 RETURNING last_seq";

/// Stores the event at the offset [`PUBLISH_HEAD`] returned; `?5` clock offset.
pub(crate) const PUBLISH_EVENT: &str = "\
INSERT INTO __alkstore_stream_events (stream, seq, key, payload, published_at) \
VALUES (?1, ?2, ?3, ?4, unixepoch() + ?5)";

/// `publish` for a caller's own connection (ADR 0015), one statement: the
/// event takes the offset after the head, and the trigger of migration 0005
/// moves the head to it. The clock is `strftime('%s')`, as in the foreign
/// enqueue (that connection's SQLite may be older). `$1` store_id, `$2`
/// stream, `$3` key, `$4` payload, `$5` clock offset
/// (`alkstore_core::foreign_publish_params`).
pub(crate) const FOREIGN_PUBLISH: &str = concat!(
    "INSERT INTO __alkstore_stream_events (stream, seq, key, payload, published_at) \
SELECT $2, coalesce((SELECT last_seq FROM __alkstore_stream_heads WHERE stream = $2), 0) + 1, $3, $4, \
CAST(strftime('%s', 'now') AS INTEGER) + $5 \
WHERE (SELECT ",
    store_identity!(),
    " FROM __alkstore_meta WHERE key = 'store_id') = $1 RETURNING seq, NULL"
);

/// Events after `?2`, ascending, at most `?3`: a range scan of the primary key.
pub(crate) const READ: &str = "\
SELECT seq, key, payload, published_at FROM __alkstore_stream_events \
WHERE stream = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3";

/// Monotonic save: an older offset never overwrites a newer one.
pub(crate) const SAVE_OFFSET: &str = "\
INSERT INTO __alkstore_stream_offsets (stream, consumer, seq) VALUES (?1, ?2, ?3) \
ON CONFLICT (stream, consumer) DO UPDATE SET seq = max(seq, excluded.seq)";

/// The saved offset of one consumer.
pub(crate) const GET_OFFSET: &str = "SELECT seq FROM __alkstore_stream_offsets WHERE stream = ?1 AND consumer = ?2";

/// Every stream's head, by name (for operators).
pub(crate) const HEADS: &str = "SELECT stream, last_seq FROM __alkstore_stream_heads ORDER BY stream";

/// Every saved consumer offset, by stream then consumer (for operators).
pub(crate) const OFFSETS: &str =
    "SELECT stream, consumer, seq FROM __alkstore_stream_offsets ORDER BY stream, consumer";

/// Deletes the events below `?2`; the head row stays.
pub(crate) const TRIM: &str = "DELETE FROM __alkstore_stream_events WHERE stream = ?1 AND seq < ?2";

fn publish(conn: &Connection, offset: i64, stream: &str, key: Option<&str>, payload: &str) -> Result<i64> {
    let seq: i64 = conn.prepare_cached(PUBLISH_HEAD).and_then(|mut s| s.query_row([stream], |r| r.get(0))).db()?;
    conn.prepare_cached(PUBLISH_EVENT).and_then(|mut s| s.execute(params![stream, seq, key, payload, offset])).db()?;
    Ok(seq)
}

fn read(conn: &Connection, stream: &str, after: i64, limit: usize) -> Result<Vec<Event>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut stmt = conn.prepare_cached(READ).db()?;
    let rows = stmt
        .query_map(params![stream, after, limit], |r| {
            Ok(Event { offset: r.get(0)?, key: r.get(1)?, payload: r.get(2)?, published_at: r.get(3)? })
        })
        .db()?;
    rows.map(|r| r.db()).collect()
}

fn get_offset(conn: &Connection, stream: &str, consumer: &str) -> Result<i64> {
    let mut stmt = conn.prepare_cached(GET_OFFSET).db()?;
    let mut rows = stmt.query(params![stream, consumer]).db()?;
    match rows.next().db()? {
        Some(row) => row.get(0).db(),
        None => Ok(0),
    }
}

// `SqliteEngine::read` / `write` below are the engine's connection routers
// (caller transaction, reader or writer), not the trait's `read`.
impl StreamOps for SqliteEngine {
    fn publish(&self, tx: Option<&mut dyn Tx>, stream: &str, key: Option<&str>, payload: &str) -> Result<i64> {
        let offset = self.offset();
        // Two statements: BEGIN IMMEDIATE on our own, a savepoint inside the caller's.
        SqliteEngine::write(self, tx, |c, scope| atomic(c, scope, |c| publish(c, offset, stream, key, payload)))
    }

    fn foreign_publish(&self, stream: &str, key: Option<&str>, payload: &str) -> Result<(String, Vec<SqlValue>)> {
        let params = foreign_publish_params(self.store_id(), stream, key, payload, self.offset());
        Ok((FOREIGN_PUBLISH.to_owned(), params))
    }

    fn read(&self, tx: Option<&mut dyn Tx>, stream: &str, after: i64, limit: usize) -> Result<Vec<Event>> {
        SqliteEngine::read(self, tx, |c| read(c, stream, after, limit))
    }

    fn save_offset(&self, tx: Option<&mut dyn Tx>, stream: &str, consumer: &str, offset: i64) -> Result<()> {
        SqliteEngine::write(self, tx, |c, _| {
            c.prepare_cached(SAVE_OFFSET).and_then(|mut s| s.execute(params![stream, consumer, offset])).db()?;
            Ok(())
        })
    }

    fn get_offset(&self, tx: Option<&mut dyn Tx>, stream: &str, consumer: &str) -> Result<i64> {
        SqliteEngine::read(self, tx, |c| get_offset(c, stream, consumer))
    }

    fn stream_heads(&self) -> Result<Vec<(String, i64)>> {
        SqliteEngine::read(self, None, |c| {
            let mut stmt = c.prepare_cached(HEADS).db()?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).db()?;
            rows.map(|r| r.db()).collect()
        })
    }

    fn stream_offsets(&self) -> Result<Vec<(String, String, i64)>> {
        SqliteEngine::read(self, None, |c| {
            let mut stmt = c.prepare_cached(OFFSETS).db()?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).db()?;
            rows.map(|r| r.db()).collect()
        })
    }

    fn trim_to(&self, stream: &str, before: i64) -> Result<i64> {
        let n = SqliteEngine::write(self, None, |c, _| {
            c.prepare_cached(TRIM).and_then(|mut s| s.execute(params![stream, before])).db()
        })?;
        Ok(n as i64)
    }
}
