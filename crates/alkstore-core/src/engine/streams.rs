//! Stream storage (SPEC §9) and the event it hands out. The subscription
//! loops built on it live in [`crate::store::stream`].

use crate::engine::sql::SqlValue;
use crate::engine::Tx;
use crate::error::Result;

/// One stream event (SPEC §9).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Position in the stream, increasing in commit order.
    pub offset: i64,
    /// Optional key.
    pub key: Option<String>,
    /// JSON text.
    pub payload: String,
    /// Publish time.
    pub published_at: i64,
}

/// Stream storage (SPEC §9).
pub trait StreamOps {
    /// Appends; returns the offset. Offsets increase in commit order per
    /// stream. Sends a wake (pg: `pg_notify`).
    fn publish(&self, tx: Option<&mut dyn Tx>, stream: &str, key: Option<&str>, payload: &str) -> Result<i64>;
    /// `publish` as one statement for a caller's own connection (ADR 0015),
    /// with `$N` placeholders and their values; nothing runs here. Like
    /// [`crate::EnqueueOps::foreign_enqueue`] it writes only where the
    /// connection reaches this store, returns one row whose first column is
    /// the offset, and on Postgres notifies. Its values are
    /// [`foreign_publish_params`], in that order.
    fn foreign_publish(&self, stream: &str, key: Option<&str>, payload: &str) -> Result<(String, Vec<SqlValue>)>;
    /// Events with `offset > after`, ascending, at most `limit`.
    fn read(&self, tx: Option<&mut dyn Tx>, stream: &str, after: i64, limit: usize) -> Result<Vec<Event>>;
    /// Stores `max(saved, offset)` for `consumer`.
    fn save_offset(&self, tx: Option<&mut dyn Tx>, stream: &str, consumer: &str, offset: i64) -> Result<()>;
    /// The saved offset, 0 when never saved.
    fn get_offset(&self, tx: Option<&mut dyn Tx>, stream: &str, consumer: &str) -> Result<i64>;
    /// Deletes events with `offset < before`; returns how many.
    fn trim_to(&self, stream: &str, before: i64) -> Result<i64>;
    /// Every stream's head (the last offset it handed out), by stream name:
    /// for operators.
    fn stream_heads(&self) -> Result<Vec<(String, i64)>>;
    /// Every saved consumer offset as `(stream, consumer, offset)`, by
    /// stream then consumer: for operators.
    fn stream_offsets(&self) -> Result<Vec<(String, String, i64)>>;
}

/// The values of a foreign publish, the same for every engine: `$1` the
/// store's identity, `$2` stream, `$3` key (or NULL), `$4` payload, `$5` the
/// handle's clock offset.
pub fn foreign_publish_params(
    store_id: &str,
    stream: &str,
    key: Option<&str>,
    payload: &str,
    offset: i64,
) -> Vec<SqlValue> {
    vec![
        SqlValue::Text(store_id.to_owned()),
        SqlValue::Text(stream.to_owned()),
        key.map_or(SqlValue::Null, |k| SqlValue::Text(k.to_owned())),
        SqlValue::Text(payload.to_owned()),
        SqlValue::Int(offset),
    ]
}
