//! The SQLite engine's open options (SPEC §2), parsed here rather than in
//! core: `open(path, busy_timeout_ms=…, watch_interval_ms=…)`.

use alkstore_core::open::options::{int_in, EngineOptions, OpenOptions, OptValue};
use alkstore_core::Result;

/// What `alkstore_sqlite::open` takes: the shared options and SQLite's own.
#[derive(Debug, Clone, PartialEq)]
pub struct SqliteOptions {
    /// The options every engine shares.
    pub common: OpenOptions,
    /// `PRAGMA data_version` watch interval, milliseconds.
    pub watch_interval_ms: u64,
    /// Busy timeout, milliseconds.
    pub busy_timeout_ms: u64,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions { common: OpenOptions::default(), watch_interval_ms: 1, busy_timeout_ms: 5000 }
    }
}

impl EngineOptions for SqliteOptions {
    const ENGINE: &'static str = "SQLite";
    const KEYS: &'static [&'static str] = &["watch_interval_ms", "busy_timeout_ms"];

    fn common_mut(&mut self) -> &mut OpenOptions {
        &mut self.common
    }

    fn set(&mut self, key: &str, value: &OptValue) -> Result<()> {
        if key == "watch_interval_ms" {
            self.watch_interval_ms = int_in(key, value, 1, 60_000, "must be an int in 1..=60000")? as u64;
        } else {
            self.busy_timeout_ms = int_in(key, value, 0, 3_600_000, "must be an int in 0..=3600000")? as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use alkstore_core::{parse_options, Error};

    use super::*;

    const ENGINES: alkstore_core::open::options::EngineKeys<'static> =
        &[("Postgres", &["schema", "pool_size", "listen"]), (SqliteOptions::ENGINE, SqliteOptions::KEYS)];

    fn one(k: &str, v: OptValue) -> Result<SqliteOptions> {
        parse_options::<SqliteOptions>(&[(k.into(), v)], ENGINES)
    }

    #[test]
    fn knobs_parse_in_range_and_refuse_the_rest() -> Result<()> {
        assert_eq!(one("busy_timeout_ms", OptValue::Int(0))?.busy_timeout_ms, 0);
        assert_eq!(one("watch_interval_ms", OptValue::Int(60_000))?.watch_interval_ms, 60_000);
        for k in ["busy_timeout_ms", "watch_interval_ms"] {
            assert!(matches!(one(k, OptValue::Bool(true)), Err(Error::Type(m)) if m.contains(k)), "{k}");
            assert!(matches!(one(k, OptValue::Float(5.0)), Err(Error::Type(m)) if m.contains(k)), "{k}");
            assert!(matches!(one(k, OptValue::Int(-1)), Err(Error::Value(m)) if m.contains(k)), "{k}");
        }
        assert_eq!(
            one("schema", OptValue::Str("a".into())).err(),
            Some(Error::Value("option \"schema\" applies to Postgres only, not SQLite".into()))
        );
        Ok(())
    }
}
