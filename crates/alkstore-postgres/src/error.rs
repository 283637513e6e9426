//! Driver and pool errors to the one alkstore error enum (SPEC §12).
//!
//! Two rules live here. A lost connection — the client saw the socket close,
//! an I/O error, or the server said class `08` (connection exception) or
//! `57P` (operator intervention: shutdown, `pg_terminate_backend`) — becomes
//! `ConnectionLost`, so the caller can tell "retry later" from "your SQL is
//! wrong". And no message may carry the URL's password: every message leaving
//! the engine passes through [`Redactor::scrub`].

use std::error::Error as StdError;

use alkstore_core::Error;
use deadpool_postgres::PoolError;

/// Removes the connection password from messages.
///
/// tokio-postgres does not echo passwords today, but a config error or a
/// server message could quote the input; scrubbing every message at the
/// engine boundary makes the guarantee independent of the driver.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Redactor { .. }")
    }
}

impl Redactor {
    /// A redactor for `url`'s password, raw and percent-decoded.
    pub fn for_url(url: &str) -> Self {
        let mut secrets = Vec::new();
        if let Some(pw) = url_password(url) {
            if !pw.is_empty() {
                let decoded = percent_decode(pw);
                if decoded != pw && !decoded.is_empty() {
                    secrets.push(decoded);
                }
                secrets.push(pw.to_owned());
            }
        }
        // Longest first, so a secret containing another is removed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Redactor { secrets }
    }

    /// `text` with every occurrence of the password replaced by `***`.
    pub fn scrub_text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "***");
            }
        }
        out
    }

    /// `e` with its message scrubbed.
    pub fn scrub(&self, e: Error) -> Error {
        if self.secrets.is_empty() {
            return e;
        }
        match e {
            Error::Database { code, message } => Error::Database { code, message: self.scrub_text(&message) },
            Error::ConnectionLost { message } => Error::ConnectionLost { message: self.scrub_text(&message) },
            Error::Transaction(m) => Error::Transaction(self.scrub_text(&m)),
            other => other,
        }
    }
}

/// The password part of a `scheme://user:password@host/...` URL.
fn url_password(url: &str) -> Option<&str> {
    let after = &url[url.find("://")? + 3..];
    let authority = &after[..after.find(['/', '?', '#']).unwrap_or(after.len())];
    let userinfo = &authority[..authority.rfind('@')?];
    Some(&userinfo[userinfo.find(':')? + 1..])
}

fn percent_decode(s: &str) -> String {
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).map(|d| d as u8)
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a SQLSTATE means the session is gone rather than the statement refused.
fn is_connection_code(code: &str) -> bool {
    code.starts_with("08") || code.starts_with("57P")
}

/// Maps a tokio-postgres error.
pub fn pg_error(e: &tokio_postgres::Error) -> Error {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code().to_owned();
        let mut message = db.message().to_owned();
        if let Some(detail) = db.detail() {
            message.push_str(": ");
            message.push_str(detail);
        }
        if let Some(hint) = db.hint() {
            message.push_str(" (hint: ");
            message.push_str(hint);
            message.push(')');
        }
        if is_connection_code(&code) {
            return Error::ConnectionLost { message: format!("{message} (code {code})") };
        }
        return Error::database(Some(code), message);
    }
    let message = with_sources(e);
    let io = e.source().is_some_and(|s| s.is::<std::io::Error>());
    if e.is_closed() || io {
        return Error::ConnectionLost { message };
    }
    Error::database(None, message)
}

/// Maps a pool checkout error.
pub fn pool_error(e: &PoolError) -> Error {
    match e {
        PoolError::Backend(pg) => match pg_error(pg) {
            // Failing to *make* a connection is a lost server too.
            Error::Database { code: None, message } => Error::ConnectionLost { message },
            other => other,
        },
        PoolError::Closed => Error::StoreClosed,
        PoolError::Timeout(_) => Error::ConnectionLost { message: format!("timed out waiting for a connection: {e}") },
        other => Error::ConnectionLost { message: other.to_string() },
    }
}

/// `e`'s message followed by its causes, so "error connecting to server"
/// also says "Connection refused".
fn with_sources(e: &dyn StdError) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_and_scrubs_the_password() {
        let r = Redactor::for_url("postgresql://bob:s%40cret@h:5432/db");
        assert_eq!(r.scrub_text("a s@cret and s%40cret"), "a *** and ***");
        let r = Redactor::for_url("postgresql://bob@h/db");
        assert_eq!(r.scrub_text("nothing to hide"), "nothing to hide");
        assert_eq!(url_password("postgres://u:p@h"), Some("p"));
        assert_eq!(url_password("postgres://h/db"), None);
    }

    #[test]
    fn connection_codes() {
        assert!(is_connection_code("57P01"));
        assert!(is_connection_code("08006"));
        assert!(!is_connection_code("57014"));
        assert!(!is_connection_code("42P01"));
    }
}
