//! Driver and pool errors to the one alkstore error enum (SPEC §12).
//!
//! Two rules live here. A lost connection — the client saw the socket close,
//! an I/O error, or the server said class `08` (connection exception) or
//! `57P` (operator intervention: shutdown, `pg_terminate_backend`) — becomes
//! `ConnectionLost`, so the caller can tell "retry later" from "your SQL is
//! wrong". And no message may carry the URL's password: every error leaving
//! the engine passes through [`Exit`], the only user of the core's
//! [`Redactor`] here (tokio-postgres does not echo passwords today, but a
//! config error or a server message could quote the URL; scrubbing at the
//! engine boundary makes the guarantee independent of the driver). Every
//! call of the engine, of a transaction and of open blocks on the runtime
//! through [`Exit::block_on`], so no path out can skip it.

use std::error::Error as StdError;
use std::future::Future;

use alkstore_core::{redact_url, Error, Redactor, Result};
use deadpool_postgres::PoolError;

use crate::runtime::Rt;

/// The one way out for a store's errors: the URL's passwords leave every
/// message. One per store, shared with its transactions.
#[derive(Clone, Debug)]
pub(crate) struct Exit {
    redactor: Redactor,
}

impl Exit {
    /// The exit of the store opened at `url`.
    pub(crate) fn for_url(url: &str) -> Self {
        Exit { redactor: Redactor::for_url(url) }
    }

    /// `r` as it may leave the engine: its message without a password.
    pub(crate) fn leave<T>(&self, r: Result<T>) -> Result<T> {
        r.map_err(|e| self.redactor.scrub(e))
    }

    /// Runs `fut` on `rt`, blocking this thread, and lets its outcome out
    /// through [`Exit::leave`]. The runtime's own refusal (a forked process,
    /// `runtime.rs`) quotes nothing and passes as it is.
    pub(crate) fn block_on<T>(&self, rt: Rt, fut: impl Future<Output = Result<T>>) -> Result<T> {
        self.leave(rt.block_on(fut)?)
    }

    /// A URL the driver cannot parse. Its words are not passed through
    /// verbatim: they may quote the input, password included.
    pub(crate) fn bad_url(&self, url: &str, e: &tokio_postgres::Error) -> Error {
        let source = e.source().map(|s| s.to_string()).unwrap_or_default();
        let detail = self.redactor.scrub_text(&format!("{e}: {source}"));
        Error::database(None, format!("invalid Postgres URL {}: {detail}", redact_url(url)))
    }
}

/// Prefixes an error raised while opening the store at `url` (shown with its
/// password masked), so the message says which store could not be opened.
pub(crate) fn at_open(url: &str, e: Error) -> Error {
    match e {
        Error::ConnectionLost { message } => {
            Error::ConnectionLost { message: format!("could not open Postgres store at {url}: {message}") }
        }
        Error::Database { code, message } => {
            Error::Database { code, message: format!("could not open Postgres store at {url}: {message}") }
        }
        other => other,
    }
}

/// Whether a SQLSTATE means the session is gone rather than the statement refused.
fn is_connection_code(code: &str) -> bool {
    code.starts_with("08") || code.starts_with("57P")
}

/// An unnamed statement given more or fewer parameters than it has: the
/// server calls the Bind a protocol violation (08P01), yet only the
/// statement failed and the session goes on (for a named statement the
/// driver counts before sending).
fn is_parameter_count(code: &str, message: &str) -> bool {
    code == "08P01" && message.starts_with("bind message supplies")
}

/// What a named prepared statement meets behind a transaction pooler: the
/// name unknown on the session the pooler picked (26000), or taken there by
/// another client's statement (42P05). Only a hint: the same names can also
/// meet a statement of the same shape and run it with no error at all,
/// which is why the mode is chosen at open, never switched on an error
/// (ADR 0030).
fn is_pooler_symptom(code: &str, message: &str) -> bool {
    (code == "26000" || code == "42P05") && message.contains("prepared statement")
}

/// Appended to the message of such an error.
const POOLER_HINT: &str = " (behind a transaction pooler such as PgBouncer in pool_mode=transaction? \
     open the store with statements=\"unnamed\" — in a URL, as the command line takes it: \
     ?statements=unnamed; see docs/scaling.md)";

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
        if is_connection_code(&code) && !is_parameter_count(&code, &message) {
            return Error::ConnectionLost { message: format!("{message} (code {code})") };
        }
        if is_pooler_symptom(&code, &message) {
            message.push_str(POOLER_HINT);
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

    /// An open failure names the store, and nothing that leaves quotes the
    /// password: a message quoting the URL gets the masked URL.
    #[test]
    fn the_exit_scrubs_and_open_errors_name_the_store() {
        let url = "postgresql://bob:s3cret@h/db";
        let exit = Exit::for_url(url);
        let lost = Error::ConnectionLost { message: format!("{url} refused") };
        assert_eq!(
            exit.leave::<()>(Err(at_open(&redact_url(url), lost))),
            Err(Error::ConnectionLost {
                message: "could not open Postgres store at postgresql://bob:***@h/db: postgresql://bob:***@h/db \
                          refused"
                    .into()
            })
        );
        let bad = "postgresql://bob:s3cret@h:notaport/db";
        let parsed = <tokio_postgres::Config as std::str::FromStr>::from_str(bad);
        let Err(driver) = parsed else { panic!("{bad} must not parse") };
        match Exit::for_url(bad).bad_url(bad, &driver) {
            Error::Database { code: None, message } => {
                assert!(message.starts_with("invalid Postgres URL postgresql://bob:***@h:notaport/db: "), "{message}");
                assert!(!message.contains("s3cret"), "{message}");
            }
            other => panic!("expected Database, got {other:?}"),
        }
    }

    #[test]
    fn connection_codes() {
        assert!(is_parameter_count(
            "08P01",
            "bind message supplies 1 parameters, but prepared statement \"\" requires 2"
        ));
        assert!(!is_parameter_count("08P01", "invalid frontend message type 0"));
        assert!(is_connection_code("57P01"));
        assert!(is_connection_code("08006"));
        assert!(!is_connection_code("57014"));
        assert!(!is_connection_code("42P01"));
    }
}
