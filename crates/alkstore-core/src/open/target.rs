//! What `alkstore.open(target, **options)` accepts (SPEC §2).

use crate::error::{Error, Result};
use crate::open::redact::redact_url;
use crate::rules::duration;

/// Which engine a target string selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A SQLite file path.
    Sqlite(String),
    /// A Postgres connection URL.
    Postgres(String),
}

const ACCEPTED: &str = "a file path, 'sqlite:///relative.db', 'sqlite:////absolute/path.db', \
                        'postgresql://…' or 'postgres://…'";

/// Chooses the engine for a target string.
pub fn parse_target(target: &str) -> Result<Target> {
    if target.is_empty() {
        return Err(Error::Value(format!("target must not be empty; expected {ACCEPTED}")));
    }
    if target == ":memory:" || target == "sqlite://" || target == "sqlite:///:memory:" {
        return Err(Error::Value(
            "':memory:' is not supported: other processes and connections cannot see an in-memory \
             database; pass a file path"
                .into(),
        ));
    }
    if target.starts_with("postgresql://") || target.starts_with("postgres://") {
        return Ok(Target::Postgres(target.to_owned()));
    }
    if let Some(rest) = target.strip_prefix("sqlite:///") {
        // SQLAlchemy's convention: three slashes then a relative path, four for absolute.
        if rest.is_empty() {
            return Err(Error::Value(format!("sqlite URL has no path; expected {ACCEPTED}")));
        }
        return Ok(Target::Sqlite(rest.to_owned()));
    }
    if target.contains("://") {
        return Err(Error::Value(format!("unsupported target {}; expected {ACCEPTED}", redact_url(target))));
    }
    Ok(Target::Sqlite(target.to_owned()))
}

/// Open options after validation (SPEC §2). Engine-specific ones are `None`
/// when not given.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenOptions {
    /// pg: engine-owned schema.
    pub schema: String,
    /// pg: connection pool size.
    pub pool_size: usize,
    /// pg: use LISTEN/NOTIFY wakes.
    pub listen: bool,
    /// Safety-net re-poll interval of waiters, seconds.
    pub poll_interval_s: f64,
    /// SQLite: `PRAGMA data_version` watch interval, milliseconds.
    pub watch_interval_ms: u64,
    /// SQLite: busy timeout, milliseconds.
    pub busy_timeout_ms: u64,
    /// Largest accepted payload, bytes of UTF-8 JSON text.
    pub max_payload_bytes: usize,
    /// `_must_exist` (private; the command line's inspection commands): open
    /// only a store that already exists at this build's schema version, and
    /// write nothing while opening — no tables, no schema, no migration, no
    /// journal-mode switch. Anything else is a `DatabaseError` saying why.
    pub must_exist: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            schema: "alkstore".into(),
            pool_size: 10,
            listen: true,
            poll_interval_s: 1.0,
            watch_interval_ms: 1,
            busy_timeout_ms: 5000,
            max_payload_bytes: 1 << 20,
            must_exist: false,
        }
    }
}

/// A raw option value as the binding passes it.
#[derive(Debug, Clone, PartialEq)]
pub enum OptValue {
    /// A bool.
    Bool(bool),
    /// An int.
    Int(i64),
    /// A float.
    Float(f64),
    /// A str.
    Str(String),
}

const PG_ONLY: &[&str] = &["schema", "pool_size", "listen"];
const SQLITE_ONLY: &[&str] = &["watch_interval_ms", "busy_timeout_ms"];
const COMMON: &[&str] = &["poll_interval_s", "max_payload_bytes"];
/// Accepted on both engines but not offered in messages: not part of the API.
const PRIVATE: &[&str] = &["_must_exist"];

impl OpenOptions {
    /// Validates `options` for `target`'s engine.
    pub fn parse(target: &Target, options: &[(String, OptValue)]) -> Result<Self> {
        let mut o = OpenOptions::default();
        let pg = matches!(target, Target::Postgres(_));
        for (key, value) in options {
            let k = key.as_str();
            if !(PG_ONLY.contains(&k) || SQLITE_ONLY.contains(&k) || COMMON.contains(&k) || PRIVATE.contains(&k)) {
                let all: Vec<&str> = PG_ONLY.iter().chain(SQLITE_ONLY).chain(COMMON).copied().collect();
                return Err(Error::Type(format!(
                    "open() got an unexpected option {k:?}; accepted: {}",
                    all.join(", ")
                )));
            }
            if pg && SQLITE_ONLY.contains(&k) {
                return Err(Error::Value(format!("option {k:?} applies to SQLite only, not Postgres")));
            }
            if !pg && PG_ONLY.contains(&k) {
                return Err(Error::Value(format!("option {k:?} applies to Postgres only, not SQLite")));
            }
            match (k, value) {
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
                    o.schema = s.clone();
                }
                ("listen", OptValue::Bool(b)) => o.listen = *b,
                ("_must_exist", OptValue::Bool(b)) => o.must_exist = *b,
                ("poll_interval_s", OptValue::Int(_) | OptValue::Float(_)) => {
                    let v = num(value);
                    if !(v.is_finite() && v > 0.0) {
                        return Err(Error::Value(format!("poll_interval_s must be a finite number > 0, got {v}")));
                    }
                    o.poll_interval_s = duration::wait("poll_interval_s", v)?.as_secs_f64();
                }
                ("pool_size", OptValue::Int(n)) => o.pool_size = in_range(k, *n, 1, 1000)? as usize,
                ("watch_interval_ms", OptValue::Int(n)) => o.watch_interval_ms = in_range(k, *n, 1, 60_000)? as u64,
                ("busy_timeout_ms", OptValue::Int(n)) => o.busy_timeout_ms = in_range(k, *n, 0, 3_600_000)? as u64,
                ("max_payload_bytes", OptValue::Int(n)) => {
                    let n = in_range(k, *n, 1, i64::MAX)?;
                    o.max_payload_bytes = usize::try_from(n).unwrap_or(usize::MAX);
                }
                // The key is known (checked above), so the value's type is wrong.
                (k, v) => {
                    return Err(Error::Type(format!("option {k:?} {}, got {}", expect(k), v.type_name())));
                }
            }
        }
        Ok(o)
    }
}

impl OptValue {
    /// The Python type name of the value, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            OptValue::Bool(_) => "bool",
            OptValue::Int(_) => "int",
            OptValue::Float(_) => "float",
            OptValue::Str(_) => "str",
        }
    }
}

/// `n` when it lies in `lo..=hi`, else a ValueError naming option `k`.
fn in_range(k: &str, n: i64, lo: i64, hi: i64) -> Result<i64> {
    if !(lo..=hi).contains(&n) {
        return Err(Error::Value(format!("option {k:?} {}, got {n}", expect(k))));
    }
    Ok(n)
}

fn num(v: &OptValue) -> f64 {
    match v {
        OptValue::Int(i) => *i as f64,
        OptValue::Float(f) => *f,
        _ => f64::NAN,
    }
}

fn expect(k: &str) -> &'static str {
    match k {
        "schema" => "must be a str",
        "pool_size" => "must be an int in 1..=1000",
        "listen" | "_must_exist" => "must be a bool",
        "watch_interval_ms" => "must be an int in 1..=60000",
        "busy_timeout_ms" => "must be an int in 0..=3600000",
        "max_payload_bytes" => "must be an int >= 1",
        _ => "must be a number of seconds (int or float)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(parse_target("app.db").unwrap(), Target::Sqlite("app.db".into()));
        assert_eq!(parse_target("sqlite:///rel.db").unwrap(), Target::Sqlite("rel.db".into()));
        assert_eq!(parse_target("sqlite:////abs/x.db").unwrap(), Target::Sqlite("/abs/x.db".into()));
        assert!(matches!(parse_target("postgres://u@h/db").unwrap(), Target::Postgres(_)));
        assert!(parse_target(":memory:").is_err());
        assert!(parse_target("mysql://x").is_err());
    }

    #[test]
    fn a_refused_target_never_shows_its_password() {
        for t in ["mysql://bob:s3cret@h/db", "mysql://bob@h/db?password=s3cret"] {
            let e = parse_target(t).unwrap_err().to_string();
            assert!(!e.contains("s3cret"), "{e}");
        }
    }

    #[test]
    fn options() {
        let sq = Target::Sqlite("x".into());
        let pg = Target::Postgres("postgres://x".into());
        assert!(matches!(OpenOptions::parse(&sq, &[("bogus".into(), OptValue::Int(1))]), Err(Error::Type(_))));
        assert!(matches!(
            OpenOptions::parse(&sq, &[("schema".into(), OptValue::Str("a".into()))]),
            Err(Error::Value(_))
        ));
        assert!(matches!(
            OpenOptions::parse(&pg, &[("busy_timeout_ms".into(), OptValue::Int(1))]),
            Err(Error::Value(_))
        ));
        let o = OpenOptions::parse(&pg, &[("schema".into(), OptValue::Str("t1".into()))]).unwrap();
        assert_eq!(o.schema, "t1");
        for t in [&sq, &pg] {
            assert!(OpenOptions::parse(t, &[("_must_exist".into(), OptValue::Bool(true))]).unwrap().must_exist);
            assert!(!OpenOptions::parse(t, &[]).unwrap().must_exist);
        }
        let listed = OpenOptions::parse(&sq, &[("bogus".into(), OptValue::Int(1))]).unwrap_err().to_string();
        assert!(!listed.contains("_must_exist"), "{listed}");
    }

    #[test]
    fn wrong_types_are_type_errors_and_ranges_value_errors() -> Result<()> {
        let sq = Target::Sqlite("x".into());
        let pg = Target::Postgres("postgres://x".into());
        let one = |t: &Target, k: &str, v: OptValue| OpenOptions::parse(t, &[(k.into(), v)]);
        for (t, k) in
            [(&sq, "busy_timeout_ms"), (&sq, "watch_interval_ms"), (&pg, "pool_size"), (&sq, "max_payload_bytes")]
        {
            assert!(matches!(one(t, k, OptValue::Bool(true)), Err(Error::Type(m)) if m.contains(k)), "{k}");
            assert!(matches!(one(t, k, OptValue::Float(5.0)), Err(Error::Type(m)) if m.contains(k)), "{k}");
            assert!(matches!(one(t, k, OptValue::Int(-1)), Err(Error::Value(m)) if m.contains(k)), "{k}");
        }
        assert!(matches!(one(&pg, "listen", OptValue::Int(1)), Err(Error::Type(_))));
        assert!(matches!(one(&pg, "schema", OptValue::Int(1)), Err(Error::Type(_))));
        assert!(matches!(one(&sq, "poll_interval_s", OptValue::Bool(true)), Err(Error::Type(_))));
        for bad in [0.0, -1.0, 1e20, f64::NAN, (crate::rules::duration::MAX_DURATION_S + 1) as f64] {
            let r = one(&sq, "poll_interval_s", OptValue::Float(bad));
            assert!(matches!(r, Err(Error::Value(m)) if m.contains("poll_interval_s")), "{bad}");
        }
        assert_eq!(
            one(&sq, "poll_interval_s", OptValue::Int(crate::rules::duration::MAX_DURATION_S))?.poll_interval_s,
            3_155_760_000.0
        );
        Ok(())
    }
}
