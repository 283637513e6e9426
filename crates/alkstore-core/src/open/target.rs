//! Which engine `alkstore.open(target, ...)` selects (SPEC §2), and the
//! targets refused because they would silently mean something else: a libpq
//! key-value string (`host=… password=…`), which would become a SQLite file
//! named after the password, and a SQLite URI filename (`file:…?mode=ro`),
//! which SQLite would read as a URI while alkstore keeps its lock and WAL
//! files beside the literal name.

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

/// libpq's connection keywords: `keyword=value` words make a key-value
/// connection string, not a file name.
const LIBPQ_KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "require_auth",
    "channel_binding",
    "connect_timeout",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "replication",
    "gssencmode",
    "sslmode",
    "sslnegotiation",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslcertmode",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "requirepeer",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "service",
    "target_session_attrs",
    "load_balance_hosts",
];

/// The libpq keywords `target` sets, in order, when it reads as a key-value
/// connection string: a word that starts with a keyword followed by `=`
/// (spaces allowed around it, as libpq allows). Empty for anything else.
fn libpq_keywords(target: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    let mut rest = target;
    while let Some(start) = rest.find(|c: char| !c.is_whitespace()) {
        let word = &rest[start..];
        let ident_len = word.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(word.len());
        let after = word[ident_len..].trim_start();
        if after.starts_with('=') {
            if let Some(k) = LIBPQ_KEYWORDS.iter().find(|k| **k == &word[..ident_len]) {
                found.push(*k);
            }
        }
        let word_len = word.find(char::is_whitespace).unwrap_or(word.len());
        rest = &word[word_len..];
    }
    found
}

/// Refuses a SQLite target that SQLite itself would read as a URI.
fn refuse_sqlite_uri(path: &str) -> Result<()> {
    if path.starts_with("file:") {
        return Err(Error::Value(
            "SQLite URI filenames ('file:…') are not accepted: SQLite would read the URI (mode=ro, an \
             in-memory database, another VFS) while alkstore keeps its lock and WAL files beside the \
             literal name; pass the database file's path (a file whose name starts with 'file:' is \
             './file:…')"
                .into(),
        ));
    }
    Ok(())
}

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
        refuse_sqlite_uri(rest)?;
        return Ok(Target::Sqlite(rest.to_owned()));
    }
    if target.contains("://") {
        return Err(Error::Value(format!("unsupported target {}; expected {ACCEPTED}", redact_url(target))));
    }
    let keywords = libpq_keywords(target);
    if !keywords.is_empty() {
        // Named by its keywords only: the values may hold a password.
        return Err(Error::Value(format!(
            "target looks like a libpq key=value connection string ({}); alkstore takes a URL: \
             postgresql://user@host:5432/dbname (a file whose name starts so is './name')",
            keywords.iter().map(|k| format!("{k}=…")).collect::<Vec<_>>().join(" ")
        )));
    }
    refuse_sqlite_uri(target)?;
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
        for t in [
            "mysql://bob:s3cret@h/db",
            "mysql://bob@h/db?password=s3cret",
            "host=h password=s3cret",
            "password = s3cret",
        ] {
            let e = parse_target(t).unwrap_err().to_string();
            assert!(!e.contains("s3cret"), "{e}");
        }
    }

    #[test]
    fn a_libpq_key_value_string_is_no_file_name() {
        for (t, keys) in [
            ("host=h dbname=d user=u password=p", "host=… dbname=… user=… password=…"),
            ("  dbname = d\tsslmode=require", "dbname=… sslmode=…"),
            ("service=prod", "service=…"),
            ("x=1 port=5432", "port=…"),
        ] {
            let e = parse_target(t).unwrap_err().to_string();
            assert!(e.contains(&format!("({keys})")) && e.contains("postgresql://"), "{t}: {e}");
        }
        for t in ["run=1.db", "data/host=1.db", "./host=1.db", "my hostname=x.db", "hosts.db"] {
            assert_eq!(parse_target(t).unwrap(), Target::Sqlite(t.into()), "{t}");
        }
    }

    #[test]
    fn a_sqlite_uri_filename_is_refused() {
        for t in ["file:app.db", "file:app.db?mode=ro", "file::memory:", "sqlite:///file:app.db"] {
            let e = parse_target(t).unwrap_err().to_string();
            assert!(e.contains("'file:") && e.contains("path"), "{t}: {e}");
        }
        for t in ["./file:app.db", "/tmp/file:x/app.db", "files.db", "sqlite:///./file:app.db"] {
            assert!(matches!(parse_target(t), Ok(Target::Sqlite(_))), "{t}");
        }
    }
}
