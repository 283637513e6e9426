//! The Postgres engine's open options (SPEC §2, §26), parsed here rather than
//! in core: `open(url, schema=…, max_connections=…, listen=…, listen_url=…,
//! statements=…)`.

use alkstore_core::open::options::{int_in, wrong_type, EngineOptions, OpenOptions, OptKind, OptValue};
use alkstore_core::{Error, Result};

/// What `alkstore_postgres::open` takes: the shared options and Postgres's own.
#[derive(Debug, Clone, PartialEq)]
pub struct PgOptions {
    /// The options every engine shares.
    pub common: OpenOptions,
    /// The engine-owned schema.
    pub schema: String,
    /// The most pooled connections the store holds at once (`max_connections`,
    /// formerly `pool_size`); the LISTEN connection is not counted.
    pub max_connections: usize,
    /// Use LISTEN/NOTIFY wakes.
    pub listen: bool,
    /// Where the LISTEN session connects (a direct server URL when `url` is a
    /// transaction pooler); `None`: `url` itself, unless `statements` says
    /// the store is behind a pooler, where it polls instead.
    pub listen_url: Option<String>,
    /// How statements are prepared (ADR 0030).
    pub statements: StatementMode,
}

/// How the engine prepares its statements (ADR 0030).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementMode {
    /// Named statements, prepared once per connection and cached: one
    /// Bind/Execute round trip per op. Needs session state.
    Named,
    /// Unnamed statements, parsed with every call, nothing kept in the
    /// session: for a transaction pooler (PgBouncer `pool_mode=transaction`
    /// before 1.21, most managed poolers).
    Unnamed,
}

/// The default of `max_connections`: small, because every process of a
/// fleet opens its own pool (64 processes must fit a server's 100), and a
/// Worker's threads hold a connection only for the length of one statement.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4;

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            common: OpenOptions::default(),
            schema: "alkstore".into(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            listen: true,
            listen_url: None,
            statements: StatementMode::Named,
        }
    }
}

impl PgOptions {
    /// The URL the LISTEN session connects to, or `None` when the store
    /// polls only: `listen=False`, or a store behind a pooler (`statements=
    /// "unnamed"`) given no `listen_url`, where a LISTEN through the pooler
    /// would hear nothing once its transaction ends.
    pub fn listen_target<'a>(&'a self, url: &'a str) -> Option<&'a str> {
        if !self.listen {
            return None;
        }
        match (&self.listen_url, self.statements) {
            (Some(u), _) => Some(u),
            (None, StatementMode::Named) => Some(url),
            (None, StatementMode::Unnamed) => None,
        }
    }

    /// What a store opened with these options should say once in the log:
    /// that it polls because it is behind a pooler and has no `listen_url`.
    pub fn wake_note(&self) -> Option<String> {
        (self.listen && self.listen_url.is_none() && self.statements == StatementMode::Unnamed).then(|| {
            format!(
                "alkstore: statements=\"unnamed\" (a transaction pooler) and no listen_url: LISTEN needs a \
                 session, so waiters poll every {} s instead of waking at commit; pass listen_url= a direct \
                 server URL for wakes, or listen=False to silence this",
                self.common.poll_interval_s
            )
        })
    }
}

impl EngineOptions for PgOptions {
    const ENGINE: &'static str = "Postgres";
    const KEYS: &'static [&'static str] =
        &["schema", "max_connections", "pool_size", "listen", "listen_url", "statements"];

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
            ("listen_url", OptValue::Str(u)) => {
                if !(u.starts_with("postgresql://") || u.starts_with("postgres://")) {
                    return Err(Error::Value(
                        "listen_url must be a postgresql:// or postgres:// URL (a direct server session)".into(),
                    ));
                }
                self.listen_url = Some(u.clone());
            }
            ("listen_url", v) => return Err(wrong_type(key, "must be a str URL", v)),
            ("statements", OptValue::Str(m)) => {
                self.statements = match m.as_str() {
                    "named" => StatementMode::Named,
                    "unnamed" => StatementMode::Unnamed,
                    _ => {
                        return Err(Error::Value(format!(
                            "statements must be \"named\" (the default) or \"unnamed\" (behind a transaction pooler), got {m:?}"
                        )))
                    }
                };
            }
            ("statements", v) => return Err(wrong_type(key, "must be \"named\" or \"unnamed\"", v)),
            // `max_connections`, or its older name `pool_size`.
            (_, v) => self.max_connections = int_in(key, v, 1, 1000, "must be an int in 1..=1000")? as usize,
        }
        Ok(())
    }

    fn kind(key: &str) -> OptKind {
        match key {
            "listen" => OptKind::Bool,
            "max_connections" | "pool_size" => OptKind::Int,
            _ => OptKind::Str,
        }
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
    fn the_listen_target_follows_the_statement_mode() -> Result<()> {
        let url = "postgresql://h/db";
        let pooled = one("statements", OptValue::Str("unnamed".into()))?;
        assert_eq!(pooled.listen_target(url), None);
        assert!(pooled.wake_note().is_some_and(|m| m.contains("listen_url")));
        let direct = PgOptions { listen_url: Some("postgresql://d/db".into()), ..pooled };
        assert_eq!(direct.listen_target(url), Some("postgresql://d/db"));
        assert_eq!(direct.wake_note(), None);
        assert_eq!(PgOptions::default().listen_target(url), Some(url));
        assert_eq!(PgOptions { listen: false, ..PgOptions::default() }.listen_target(url), None);
        Ok(())
    }

    #[test]
    fn every_option_can_be_written_in_the_url() -> Result<()> {
        let url = "postgresql://u:p@h/db?sslmode=disable&statements=unnamed&listen=off&max_connections=2\
                   &listen_url=postgresql%3A%2F%2Fd%2Fdb&schema=jobs&poll_interval_s=0.25&max_payload_bytes=10";
        let (clean, o) = alkstore_core::parse_url_options::<PgOptions>(url, &[], ENGINES)?;
        assert_eq!(clean, "postgresql://u:p@h/db?sslmode=disable");
        assert_eq!(o.statements, StatementMode::Unnamed);
        assert!(!o.listen);
        assert_eq!((o.max_connections, o.schema.as_str()), (2, "jobs"));
        assert_eq!(o.listen_url.as_deref(), Some("postgresql://d/db"));
        assert_eq!((o.common.poll_interval_s, o.common.max_payload_bytes), (0.25, 10));
        let (_, o) = alkstore_core::parse_url_options::<PgOptions>("postgresql://h/db?pool_size=7", &[], ENGINES)?;
        assert_eq!(o.max_connections, 7);
        Ok(())
    }

    #[test]
    fn knobs_parse_in_range_and_refuse_the_rest() -> Result<()> {
        assert_eq!(one("schema", OptValue::Str("t1".into()))?.schema, "t1");
        assert!(!one("listen", OptValue::Bool(false))?.listen);
        assert_eq!(one("pool_size", OptValue::Int(1000))?.max_connections, 1000);
        assert_eq!(one("max_connections", OptValue::Int(2))?.max_connections, 2);
        assert_eq!(one("statements", OptValue::Str("unnamed".into()))?.statements, StatementMode::Unnamed);
        assert!(
            matches!(one("statements", OptValue::Str("none".into())), Err(Error::Value(m)) if m.contains("unnamed"))
        );
        assert!(
            matches!(one("listen_url", OptValue::Str("x.db".into())), Err(Error::Value(m)) if m.contains("listen_url"))
        );
        assert!(
            matches!(one("max_connections", OptValue::Int(0)), Err(Error::Value(m)) if m.contains("max_connections"))
        );
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
