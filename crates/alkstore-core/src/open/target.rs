//! Which engine `alkstore.open(target, ...)` selects (SPEC §2).

use crate::error::{Error, Result};
use crate::open::redact::redact_url;

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
}
