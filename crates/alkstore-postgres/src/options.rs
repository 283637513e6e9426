//! The Postgres engine's open options (SPEC §2), parsed here rather than in
//! core: `open(url, schema=…, pool_size=…, listen=…)`.

use alkstore_core::open::options::{int_in, wrong_type, EngineOptions, OpenOptions, OptValue};
use alkstore_core::{Error, Result};

/// What `alkstore_postgres::open` takes: the shared options and Postgres's own.
#[derive(Debug, Clone, PartialEq)]
pub struct PgOptions {
    /// The options every engine shares.
    pub common: OpenOptions,
    /// The engine-owned schema.
    pub schema: String,
    /// Connection pool size.
    pub pool_size: usize,
    /// Use LISTEN/NOTIFY wakes.
    pub listen: bool,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions { common: OpenOptions::default(), schema: "alkstore".into(), pool_size: 10, listen: true }
    }
}

impl EngineOptions for PgOptions {
    const ENGINE: &'static str = "Postgres";
    const KEYS: &'static [&'static str] = &["schema", "pool_size", "listen"];

    fn common_mut(&mut self) -> &mut OpenOptions {
        &mut self.common
    }

    fn set(&mut self, key: &str, value: &OptValue) -> Result<()> {
        match (key, value) {
            ("schema", OptValue::Str(s)) => {
                let ok = !s.is_empty()
                    && s.len() <= 63
                    && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !s.starts_with(|c: char| c.is_ascii_digit());
                if !ok {
                    return Err(Error::Value(format!(
                        "schema must be 1-63 ASCII letters, digits or '_' not starting with a digit, got {s:?}"
                    )));
                }
                self.schema = s.clone();
            }
            ("schema", v) => return Err(wrong_type(key, "must be a str", v)),
            ("listen", OptValue::Bool(b)) => self.listen = *b,
            ("listen", v) => return Err(wrong_type(key, "must be a bool", v)),
            (_, v) => self.pool_size = int_in(key, v, 1, 1000, "must be an int in 1..=1000")? as usize,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use alkstore_core::parse_options;

    use super::*;

    const ENGINES: alkstore_core::open::options::EngineKeys<'static> =
        &[(PgOptions::ENGINE, PgOptions::KEYS), ("SQLite", &["watch_interval_ms", "busy_timeout_ms"])];

    fn one(k: &str, v: OptValue) -> Result<PgOptions> {
        parse_options::<PgOptions>(&[(k.into(), v)], ENGINES)
    }

    #[test]
    fn knobs_parse_in_range_and_refuse_the_rest() -> Result<()> {
        assert_eq!(one("schema", OptValue::Str("t1".into()))?.schema, "t1");
        assert!(!one("listen", OptValue::Bool(false))?.listen);
        assert_eq!(one("pool_size", OptValue::Int(1000))?.pool_size, 1000);
        assert!(matches!(one("schema", OptValue::Str("1x".into())), Err(Error::Value(_))));
        assert!(matches!(one("schema", OptValue::Int(1)), Err(Error::Type(_))));
        assert!(matches!(one("listen", OptValue::Int(1)), Err(Error::Type(_))));
        assert!(matches!(one("pool_size", OptValue::Bool(true)), Err(Error::Type(m)) if m.contains("pool_size")));
        assert!(matches!(one("pool_size", OptValue::Float(5.0)), Err(Error::Type(m)) if m.contains("pool_size")));
        assert!(matches!(one("pool_size", OptValue::Int(0)), Err(Error::Value(m)) if m.contains("pool_size")));
        assert_eq!(
            one("busy_timeout_ms", OptValue::Int(1)).err(),
            Some(Error::Value("option \"busy_timeout_ms\" applies to SQLite only, not Postgres".into()))
        );
        Ok(())
    }
}
