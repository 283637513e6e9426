//! Streams on the [`Store`] (SPEC §9): the checks every engine shares, and
//! the subscription step built on the waiting loop.
//!
//! The engines only store and fetch ([`crate::StreamOps`]); names, keys,
//! payload size, offset ranges and the transaction rules are decided here so
//! both engines refuse the same input the same way.

use std::fmt::Display;

use crate::engine::streams::Event;
use crate::error::{Error, Result};
use crate::rules::batch::count_in;
use crate::rules::names::validate_name;
use crate::rules::unique::check_key;
use crate::store::waiting::WaitSpec;
use crate::store::{Store, TxSession};

/// The most events one `read` (or one subscription fetch) returns.
pub const MAX_READ: usize = 1000;

/// A read size (`limit`, a subscription's `batch`): `n` when it lies in
/// `1..=MAX_READ`, else a ValueError naming `what`. Generic for the same
/// reason as [`crate::store::batch_size`].
pub fn read_limit<N: TryInto<usize> + Display + Copy>(what: &str, n: N) -> Result<usize> {
    count_in(what, n, MAX_READ)
}

/// One stream as operators see it (`store.streams()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamState {
    /// The stream's name.
    pub stream: String,
    /// The last offset it handed out (0: never published).
    pub head: i64,
    /// Its consumers with a saved offset, by name.
    pub consumers: Vec<ConsumerState>,
}

/// One consumer's position in a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerState {
    /// The consumer's name.
    pub consumer: String,
    /// Its saved offset.
    pub offset: i64,
    /// Events published after it: `head - offset`, never below 0.
    pub lag: i64,
}

impl Store {
    /// `store.streams()`: every stream with a head or a saved consumer
    /// offset, by name, with each consumer's lag. For operators and metrics:
    /// two scans of small tables (heads and offsets), never of the events.
    pub fn streams(&self) -> Result<Vec<StreamState>> {
        self.enter(None)?;
        let heads = self.engine().stream_heads()?;
        let offsets = self.engine().stream_offsets()?;
        Ok(merge_streams(heads, offsets))
    }

    /// `stream.publish`: appends one event; returns its offset.
    pub fn publish(&self, tx: Option<&mut TxSession>, stream: &str, key: Option<&str>, payload: &str) -> Result<i64> {
        self.check_event(stream, key, payload)?;
        self.in_tx(tx, |t| self.engine().publish(t, stream, key, payload))
    }

    /// Every rule an event meets, whichever connection writes it.
    pub(crate) fn check_event(&self, stream: &str, key: Option<&str>, payload: &str) -> Result<()> {
        validate_name("stream", stream)?;
        if let Some(k) = key {
            // The bound of every key-like text (a unique key, a group): 1-200
            // characters, no NUL (Postgres text cannot hold it).
            check_key("key", k)?;
        }
        self.check_json("payload", payload)
    }

    /// `stream.read`: events after offset `after`, ascending, at most `limit` (1..=1000).
    pub fn read(&self, tx: Option<&mut TxSession>, stream: &str, after: i64, limit: usize) -> Result<Vec<Event>> {
        check_read(stream, after, limit)?;
        self.in_tx(tx, |t| self.engine().read(t, stream, after, limit))
    }

    /// `stream.save_offset`: stores `max(saved, offset)` for `consumer`.
    pub fn save_offset(&self, tx: Option<&mut TxSession>, stream: &str, consumer: &str, offset: i64) -> Result<()> {
        validate_name("stream", stream)?;
        validate_name("consumer", consumer)?;
        check_offset("offset", offset)?;
        self.in_tx(tx, |t| self.engine().save_offset(t, stream, consumer, offset))
    }

    /// `stream.get_offset`: the saved offset of `consumer`, 0 when never saved.
    pub fn get_offset(&self, tx: Option<&mut TxSession>, stream: &str, consumer: &str) -> Result<i64> {
        validate_name("stream", stream)?;
        validate_name("consumer", consumer)?;
        self.in_tx(tx, |t| self.engine().get_offset(t, stream, consumer))
    }

    /// `stream.trim_to`: deletes events with an offset below `before`; returns how many.
    pub fn trim_to(&self, stream: &str, before: i64) -> Result<i64> {
        validate_name("stream", stream)?;
        check_offset("offset", before)?;
        self.enter(None)?;
        self.engine().trim_to(stream, before)
    }

    /// One subscription step: the events after `after` (at most `limit`),
    /// waiting for a commit when there are none yet. Streams have no
    /// deadlines, so only commits, the safety-net poll, `stop` and the
    /// timeout end the wait. Empty when `stop` is set or the timeout passes.
    pub fn next_events(&self, stream: &str, after: i64, limit: usize, spec: &WaitSpec<'_>) -> Result<Vec<Event>> {
        check_read(stream, after, limit)?;
        self.enter(None)?;
        let got = self.wait_for(None, spec, || {
            let events = self.engine().read(None, stream, after, limit)?;
            Ok((!events.is_empty()).then_some(events))
        })?;
        Ok(got.unwrap_or_default())
    }
}

/// Heads and offsets, each sorted by stream (then consumer), into one entry
/// per stream.
fn merge_streams(heads: Vec<(String, i64)>, offsets: Vec<(String, String, i64)>) -> Vec<StreamState> {
    let mut by_name: std::collections::BTreeMap<String, StreamState> = heads
        .into_iter()
        .map(|(stream, head)| (stream.clone(), StreamState { stream, head, consumers: Vec::new() }))
        .collect();
    for (stream, consumer, offset) in offsets {
        let s = by_name.entry(stream.clone()).or_insert(StreamState { stream, head: 0, consumers: Vec::new() });
        let lag = (s.head - offset).max(0);
        s.consumers.push(ConsumerState { consumer, offset, lag });
    }
    by_name.into_values().collect()
}

fn check_read(stream: &str, after: i64, limit: usize) -> Result<()> {
    validate_name("stream", stream)?;
    check_offset("after", after)?;
    read_limit("limit", limit)?;
    Ok(())
}

/// Offsets start at 1; 0 means "before the first event".
fn check_offset(what: &str, offset: i64) -> Result<()> {
    if offset < 0 {
        return Err(Error::Value(format!("{what} must be >= 0, got {offset}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_merge_heads_and_offsets() {
        let heads = vec![("a".to_owned(), 10), ("b".to_owned(), 3)];
        let offsets = vec![
            ("a".to_owned(), "x".to_owned(), 4),
            ("a".to_owned(), "y".to_owned(), 10),
            ("c".to_owned(), "z".to_owned(), 2),
        ];
        let got = merge_streams(heads, offsets);
        let lags: Vec<(&str, i64, Vec<i64>)> =
            got.iter().map(|s| (s.stream.as_str(), s.head, s.consumers.iter().map(|c| c.lag).collect())).collect();
        assert_eq!(lags, [("a", 10, vec![6, 0]), ("b", 3, vec![]), ("c", 0, vec![0])]);
    }

    #[test]
    fn argument_rules() {
        assert!(check_read("s", 0, 1).is_ok());
        assert!(check_read("s", 5, MAX_READ).is_ok());
        assert!(matches!(check_read("s", 0, 0), Err(Error::Value(_))));
        assert!(matches!(check_read("s", 0, MAX_READ + 1), Err(Error::Value(_))));
        assert!(matches!(check_read("s", -1, 10), Err(Error::Value(_))));
        assert!(matches!(check_read("__alkstore_x", 0, 10), Err(Error::InvalidName { .. })));
        assert!(check_offset("offset", 0).is_ok());
        assert!(check_offset("offset", -1).is_err());
    }

    #[test]
    fn read_limits_are_one_to_max_read() -> Result<()> {
        assert_eq!(read_limit("limit", MAX_READ as i64)?, MAX_READ);
        let e = read_limit("batch", 0_i64).unwrap_err();
        assert_eq!(e, Error::Value(format!("batch must be between 1 and {MAX_READ}, got 0")));
        Ok(())
    }
}
