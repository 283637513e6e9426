//! Driver and pool errors to the one alkstore error enum (SPEC §12).
//!
//! Two rules live here. A lost connection — the client saw the socket close,
//! an I/O error, or the server said class `08` (connection exception) or
//! `57P` (operator intervention: shutdown, `pg_terminate_backend`) — becomes
//! `ConnectionLost`, so the caller can tell "retry later" from "your SQL is
//! wrong". And no message may carry the URL's password: every message leaving
//! the engine passes through the core's [`Redactor::scrub`] (tokio-postgres
//! does not echo passwords today, but a config error or a server message
//! could quote the input; scrubbing at the engine boundary makes the
//! guarantee independent of the driver).

use std::error::Error as StdError;

use alkstore_core::Error;
use deadpool_postgres::PoolError;

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
    fn connection_codes() {
        assert!(is_connection_code("57P01"));
        assert!(is_connection_code("08006"));
        assert!(!is_connection_code("57014"));
        assert!(!is_connection_code("42P01"));
    }
}
