//! One error enum for every engine; the binding maps each variant to one
//! Python exception class (SPEC §12), so the variant names follow them.

use std::fmt;

/// Everything an alkstore operation can fail with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A queue/stream/schedule/... name broke the naming rule (SPEC §3).
    InvalidName {
        /// What kind of name it was ("queue", "schedule", ...).
        what: String,
        /// Why it was refused.
        reason: String,
    },
    /// A schedule spec outside the `@every` and cron grammars.
    InvalidSpec {
        /// The refused spec text.
        spec: String,
        /// What is wrong with it (for cron, naming the field).
        reason: String,
    },
    /// A plain argument error: maps to Python `ValueError`.
    Value(String),
    /// A wrong argument type: maps to Python `TypeError`.
    Type(String),
    /// A payload (or a result, or an event's payload) outside the limits
    /// every reader decodes: its size, its nesting, its numbers
    /// (`rules::payload`). Maps to Python `PayloadError`, a `ValueError`.
    Payload(String),
    /// The scheduler lost its leadership lease before a tick.
    LeadershipLost,
    /// Another owner holds an unexpired lease on the lock.
    LockHeld {
        /// The lock name.
        name: String,
    },
    /// The store was closed.
    StoreClosed,
    /// Misuse of the transaction seam (nested tx, call from a tx thread, doomed tx).
    Transaction(String),
    /// A transaction used after its block ended.
    TransactionClosed,
    /// The database refused a statement. `code` is the SQLSTATE (pg) or the
    /// SQLite extended result code, when there is one.
    Database {
        /// SQLSTATE or SQLite code.
        code: Option<String>,
        /// The driver's message (never contains a password).
        message: String,
    },
    /// A blocking wait was abandoned because the binding saw a signal
    /// (Ctrl-C); the binding raises the signal's own exception instead.
    Interrupted,
    /// The connection to the server was lost mid-call.
    ConnectionLost {
        /// What happened.
        message: String,
    },
}

/// The result type of every alkstore operation.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A `Database` error with a code.
    pub fn database(code: impl Into<Option<String>>, message: impl Into<String>) -> Self {
        Error::Database { code: code.into(), message: message.into() }
    }

    /// Whether the same call may succeed if simply tried again: the
    /// connection was lost, or the database refused for contention — a
    /// SQLite file whose write lock another connection held past
    /// `busy_timeout_ms` (`SQLITE_BUSY*`, `SQLITE_LOCKED*`), a Postgres
    /// serialization failure or deadlock (`40001`, `40P01`), a lock not
    /// available (`55P03`), a server shutting down or out of connections
    /// (`57P01`–`57P03`, `53300`), or a connection exception (class `08`).
    /// A Worker retries a job's ack, retry or fail on these while its lease
    /// holds, so a succeeded job is not run again for a busy moment.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::ConnectionLost { .. } => true,
            Error::Database { code: Some(code), .. } => is_transient_code(code),
            _ => false,
        }
    }

    /// The refusal of a caller statement that ended the caller's transaction
    /// itself (`COMMIT`, `ROLLBACK`, `END`, …), the same on every engine: the
    /// transaction seam owns the ending, and what follows such a statement
    /// would no longer be atomic with what preceded it.
    pub fn ended_by_statement() -> Self {
        Error::Transaction(
            "the statement ended the transaction; commit or roll back by leaving the transaction block".into(),
        )
    }
}

/// [`Error::is_transient`] for one code: a SQLite result code name or a SQLSTATE.
pub fn is_transient_code(code: &str) -> bool {
    code.starts_with("SQLITE_BUSY")
        || code.starts_with("SQLITE_LOCKED")
        || code.starts_with("08")
        || matches!(code, "40001" | "40P01" | "55P03" | "57P01" | "57P02" | "57P03" | "53300")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidName { what, reason } => write!(f, "invalid {what} name: {reason}"),
            Error::InvalidSpec { spec, reason } => write!(f, "invalid schedule spec {spec:?}: {reason}"),
            Error::Value(m) | Error::Type(m) | Error::Payload(m) | Error::Transaction(m) => f.write_str(m),
            Error::LeadershipLost => f.write_str("scheduler leadership lease was lost"),
            Error::LockHeld { name } => write!(f, "lock {name:?} is held by another owner"),
            Error::StoreClosed => f.write_str("the store is closed"),
            Error::Interrupted => f.write_str("interrupted"),
            Error::TransactionClosed => f.write_str("the transaction has already ended"),
            Error::Database { code: Some(c), message } => write!(f, "{message} (code {c})"),
            Error::Database { code: None, message } => f.write_str(message),
            Error::ConnectionLost { message } => write!(f, "connection lost: {message}"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contention_and_lost_connections_are_transient_and_nothing_else_is() {
        let db = |code: &str| Error::database(Some(code.to_owned()), "x");
        for code in
            ["SQLITE_BUSY", "SQLITE_BUSY_SNAPSHOT", "SQLITE_LOCKED", "40001", "40P01", "08006", "57P01", "53300"]
        {
            assert!(db(code).is_transient(), "{code}");
        }
        for code in ["SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CORRUPT", "SQLITE_READONLY", "23505", "42P01", "22023"] {
            assert!(!db(code).is_transient(), "{code}");
        }
        assert!(Error::ConnectionLost { message: "gone".into() }.is_transient());
        assert!(!Error::database(None, "no code").is_transient());
        assert!(!Error::StoreClosed.is_transient());
    }
}
