//! The one path from `rusqlite::Error` to [`alkstore_core::Error`]: every
//! SQLite failure becomes `Error::Database` carrying the extended result code
//! by name (e.g. `SQLITE_CONSTRAINT_UNIQUE`), so the binding can raise
//! `DatabaseError` with a `.code` a user can match on.

use std::os::raw::c_int;

use alkstore_core::{Error, Result};
use rusqlite::ffi;

/// Converts a driver result into an alkstore result.
pub(crate) trait DbResult<T> {
    /// Maps the error, if any, with [`db_error`].
    fn db(self) -> Result<T>;
}

impl<T> DbResult<T> for rusqlite::Result<T> {
    #[inline]
    fn db(self) -> Result<T> {
        self.map_err(db_error)
    }
}

/// Maps one driver error. SQLite failures keep their extended code; driver-side
/// misuse (wrong parameter count, several statements in one call, …) has none.
pub(crate) fn db_error(e: rusqlite::Error) -> Error {
    match e {
        rusqlite::Error::SqliteFailure(err, msg) => {
            let base = msg.unwrap_or_else(|| ffi::code_to_str(err.extended_code).to_owned());
            Error::database(Some(code_name(err.extended_code)), explain(err.extended_code, base))
        }
        rusqlite::Error::SqlInputError { error, msg, offset, .. } => {
            Error::database(Some(code_name(error.extended_code)), format!("{msg} (at byte {offset} of the statement)"))
        }
        other => Error::database(None, other.to_string()),
    }
}

/// Puts the why first for the codes a user meets at open or under
/// contention, keeping SQLite's own words after it.
fn explain(extended: c_int, message: String) -> String {
    let why = match extended & 0xff {
        ffi::SQLITE_BUSY => {
            "the database is busy: another connection held its write lock for longer than busy_timeout_ms"
        }
        ffi::SQLITE_NOTADB => "the file is not a SQLite database",
        ffi::SQLITE_CORRUPT => "the database file is corrupt",
        ffi::SQLITE_READONLY => "the database file or its directory is read-only",
        ffi::SQLITE_CANTOPEN => {
            "the file cannot be opened: check that its directory exists and that the file, \
             the directory and the -wal/-shm files beside it are writable"
        }
        _ => return message,
    };
    format!("{why} (SQLite: {message})")
}

/// Prefixes an error raised while opening `path`, so the message says which
/// file could not be opened.
pub(crate) fn at_open(path: &str, e: Error) -> Error {
    match e {
        Error::Database { code, message } => {
            Error::Database { code, message: format!("cannot open the alkstore SQLite store {path:?}: {message}") }
        }
        other => other,
    }
}

/// The symbolic name of an extended result code, falling back to its primary
/// code's name and then to the number itself.
pub(crate) fn code_name(extended: c_int) -> String {
    let lookup = |c: c_int| CODES.iter().find(|(n, _)| *n == c).map(|(_, name)| *name);
    match lookup(extended).or_else(|| lookup(extended & 0xff)) {
        Some(name) => name.to_owned(),
        None => extended.to_string(),
    }
}

/// Every result code SQLite documents as an error (primary and extended).
const CODES: &[(c_int, &str)] = &[
    (ffi::SQLITE_ERROR, "SQLITE_ERROR"),
    (ffi::SQLITE_INTERNAL, "SQLITE_INTERNAL"),
    (ffi::SQLITE_PERM, "SQLITE_PERM"),
    (ffi::SQLITE_ABORT, "SQLITE_ABORT"),
    (ffi::SQLITE_BUSY, "SQLITE_BUSY"),
    (ffi::SQLITE_LOCKED, "SQLITE_LOCKED"),
    (ffi::SQLITE_NOMEM, "SQLITE_NOMEM"),
    (ffi::SQLITE_READONLY, "SQLITE_READONLY"),
    (ffi::SQLITE_INTERRUPT, "SQLITE_INTERRUPT"),
    (ffi::SQLITE_IOERR, "SQLITE_IOERR"),
    (ffi::SQLITE_CORRUPT, "SQLITE_CORRUPT"),
    (ffi::SQLITE_NOTFOUND, "SQLITE_NOTFOUND"),
    (ffi::SQLITE_FULL, "SQLITE_FULL"),
    (ffi::SQLITE_CANTOPEN, "SQLITE_CANTOPEN"),
    (ffi::SQLITE_PROTOCOL, "SQLITE_PROTOCOL"),
    (ffi::SQLITE_EMPTY, "SQLITE_EMPTY"),
    (ffi::SQLITE_SCHEMA, "SQLITE_SCHEMA"),
    (ffi::SQLITE_TOOBIG, "SQLITE_TOOBIG"),
    (ffi::SQLITE_CONSTRAINT, "SQLITE_CONSTRAINT"),
    (ffi::SQLITE_MISMATCH, "SQLITE_MISMATCH"),
    (ffi::SQLITE_MISUSE, "SQLITE_MISUSE"),
    (ffi::SQLITE_NOLFS, "SQLITE_NOLFS"),
    (ffi::SQLITE_AUTH, "SQLITE_AUTH"),
    (ffi::SQLITE_FORMAT, "SQLITE_FORMAT"),
    (ffi::SQLITE_RANGE, "SQLITE_RANGE"),
    (ffi::SQLITE_NOTADB, "SQLITE_NOTADB"),
    (ffi::SQLITE_NOTICE, "SQLITE_NOTICE"),
    (ffi::SQLITE_WARNING, "SQLITE_WARNING"),
    (ffi::SQLITE_ERROR_MISSING_COLLSEQ, "SQLITE_ERROR_MISSING_COLLSEQ"),
    (ffi::SQLITE_ERROR_RETRY, "SQLITE_ERROR_RETRY"),
    (ffi::SQLITE_ERROR_SNAPSHOT, "SQLITE_ERROR_SNAPSHOT"),
    (ffi::SQLITE_ERROR_RESERVESIZE, "SQLITE_ERROR_RESERVESIZE"),
    (ffi::SQLITE_ERROR_KEY, "SQLITE_ERROR_KEY"),
    (ffi::SQLITE_ERROR_UNABLE, "SQLITE_ERROR_UNABLE"),
    (ffi::SQLITE_IOERR_READ, "SQLITE_IOERR_READ"),
    (ffi::SQLITE_IOERR_SHORT_READ, "SQLITE_IOERR_SHORT_READ"),
    (ffi::SQLITE_IOERR_WRITE, "SQLITE_IOERR_WRITE"),
    (ffi::SQLITE_IOERR_FSYNC, "SQLITE_IOERR_FSYNC"),
    (ffi::SQLITE_IOERR_DIR_FSYNC, "SQLITE_IOERR_DIR_FSYNC"),
    (ffi::SQLITE_IOERR_TRUNCATE, "SQLITE_IOERR_TRUNCATE"),
    (ffi::SQLITE_IOERR_FSTAT, "SQLITE_IOERR_FSTAT"),
    (ffi::SQLITE_IOERR_UNLOCK, "SQLITE_IOERR_UNLOCK"),
    (ffi::SQLITE_IOERR_RDLOCK, "SQLITE_IOERR_RDLOCK"),
    (ffi::SQLITE_IOERR_DELETE, "SQLITE_IOERR_DELETE"),
    (ffi::SQLITE_IOERR_BLOCKED, "SQLITE_IOERR_BLOCKED"),
    (ffi::SQLITE_IOERR_NOMEM, "SQLITE_IOERR_NOMEM"),
    (ffi::SQLITE_IOERR_ACCESS, "SQLITE_IOERR_ACCESS"),
    (ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, "SQLITE_IOERR_CHECKRESERVEDLOCK"),
    (ffi::SQLITE_IOERR_LOCK, "SQLITE_IOERR_LOCK"),
    (ffi::SQLITE_IOERR_CLOSE, "SQLITE_IOERR_CLOSE"),
    (ffi::SQLITE_IOERR_DIR_CLOSE, "SQLITE_IOERR_DIR_CLOSE"),
    (ffi::SQLITE_IOERR_SHMOPEN, "SQLITE_IOERR_SHMOPEN"),
    (ffi::SQLITE_IOERR_SHMSIZE, "SQLITE_IOERR_SHMSIZE"),
    (ffi::SQLITE_IOERR_SHMLOCK, "SQLITE_IOERR_SHMLOCK"),
    (ffi::SQLITE_IOERR_SHMMAP, "SQLITE_IOERR_SHMMAP"),
    (ffi::SQLITE_IOERR_SEEK, "SQLITE_IOERR_SEEK"),
    (ffi::SQLITE_IOERR_DELETE_NOENT, "SQLITE_IOERR_DELETE_NOENT"),
    (ffi::SQLITE_IOERR_MMAP, "SQLITE_IOERR_MMAP"),
    (ffi::SQLITE_IOERR_GETTEMPPATH, "SQLITE_IOERR_GETTEMPPATH"),
    (ffi::SQLITE_IOERR_CONVPATH, "SQLITE_IOERR_CONVPATH"),
    (ffi::SQLITE_IOERR_VNODE, "SQLITE_IOERR_VNODE"),
    (ffi::SQLITE_IOERR_AUTH, "SQLITE_IOERR_AUTH"),
    (ffi::SQLITE_IOERR_BEGIN_ATOMIC, "SQLITE_IOERR_BEGIN_ATOMIC"),
    (ffi::SQLITE_IOERR_COMMIT_ATOMIC, "SQLITE_IOERR_COMMIT_ATOMIC"),
    (ffi::SQLITE_IOERR_ROLLBACK_ATOMIC, "SQLITE_IOERR_ROLLBACK_ATOMIC"),
    (ffi::SQLITE_IOERR_DATA, "SQLITE_IOERR_DATA"),
    (ffi::SQLITE_IOERR_CORRUPTFS, "SQLITE_IOERR_CORRUPTFS"),
    (ffi::SQLITE_IOERR_IN_PAGE, "SQLITE_IOERR_IN_PAGE"),
    (ffi::SQLITE_IOERR_BADKEY, "SQLITE_IOERR_BADKEY"),
    (ffi::SQLITE_IOERR_CODEC, "SQLITE_IOERR_CODEC"),
    (ffi::SQLITE_LOCKED_SHAREDCACHE, "SQLITE_LOCKED_SHAREDCACHE"),
    (ffi::SQLITE_LOCKED_VTAB, "SQLITE_LOCKED_VTAB"),
    (ffi::SQLITE_BUSY_RECOVERY, "SQLITE_BUSY_RECOVERY"),
    (ffi::SQLITE_BUSY_SNAPSHOT, "SQLITE_BUSY_SNAPSHOT"),
    (ffi::SQLITE_BUSY_TIMEOUT, "SQLITE_BUSY_TIMEOUT"),
    (ffi::SQLITE_CANTOPEN_NOTEMPDIR, "SQLITE_CANTOPEN_NOTEMPDIR"),
    (ffi::SQLITE_CANTOPEN_ISDIR, "SQLITE_CANTOPEN_ISDIR"),
    (ffi::SQLITE_CANTOPEN_FULLPATH, "SQLITE_CANTOPEN_FULLPATH"),
    (ffi::SQLITE_CANTOPEN_CONVPATH, "SQLITE_CANTOPEN_CONVPATH"),
    (ffi::SQLITE_CANTOPEN_DIRTYWAL, "SQLITE_CANTOPEN_DIRTYWAL"),
    (ffi::SQLITE_CANTOPEN_SYMLINK, "SQLITE_CANTOPEN_SYMLINK"),
    (ffi::SQLITE_CORRUPT_VTAB, "SQLITE_CORRUPT_VTAB"),
    (ffi::SQLITE_CORRUPT_SEQUENCE, "SQLITE_CORRUPT_SEQUENCE"),
    (ffi::SQLITE_CORRUPT_INDEX, "SQLITE_CORRUPT_INDEX"),
    (ffi::SQLITE_READONLY_RECOVERY, "SQLITE_READONLY_RECOVERY"),
    (ffi::SQLITE_READONLY_CANTLOCK, "SQLITE_READONLY_CANTLOCK"),
    (ffi::SQLITE_READONLY_ROLLBACK, "SQLITE_READONLY_ROLLBACK"),
    (ffi::SQLITE_READONLY_DBMOVED, "SQLITE_READONLY_DBMOVED"),
    (ffi::SQLITE_READONLY_CANTINIT, "SQLITE_READONLY_CANTINIT"),
    (ffi::SQLITE_READONLY_DIRECTORY, "SQLITE_READONLY_DIRECTORY"),
    (ffi::SQLITE_ABORT_ROLLBACK, "SQLITE_ABORT_ROLLBACK"),
    (ffi::SQLITE_CONSTRAINT_CHECK, "SQLITE_CONSTRAINT_CHECK"),
    (ffi::SQLITE_CONSTRAINT_COMMITHOOK, "SQLITE_CONSTRAINT_COMMITHOOK"),
    (ffi::SQLITE_CONSTRAINT_FOREIGNKEY, "SQLITE_CONSTRAINT_FOREIGNKEY"),
    (ffi::SQLITE_CONSTRAINT_FUNCTION, "SQLITE_CONSTRAINT_FUNCTION"),
    (ffi::SQLITE_CONSTRAINT_NOTNULL, "SQLITE_CONSTRAINT_NOTNULL"),
    (ffi::SQLITE_CONSTRAINT_PRIMARYKEY, "SQLITE_CONSTRAINT_PRIMARYKEY"),
    (ffi::SQLITE_CONSTRAINT_TRIGGER, "SQLITE_CONSTRAINT_TRIGGER"),
    (ffi::SQLITE_CONSTRAINT_UNIQUE, "SQLITE_CONSTRAINT_UNIQUE"),
    (ffi::SQLITE_CONSTRAINT_VTAB, "SQLITE_CONSTRAINT_VTAB"),
    (ffi::SQLITE_CONSTRAINT_ROWID, "SQLITE_CONSTRAINT_ROWID"),
    (ffi::SQLITE_CONSTRAINT_PINNED, "SQLITE_CONSTRAINT_PINNED"),
    (ffi::SQLITE_CONSTRAINT_DATATYPE, "SQLITE_CONSTRAINT_DATATYPE"),
    (ffi::SQLITE_NOTICE_RECOVER_WAL, "SQLITE_NOTICE_RECOVER_WAL"),
    (ffi::SQLITE_NOTICE_RECOVER_ROLLBACK, "SQLITE_NOTICE_RECOVER_ROLLBACK"),
    (ffi::SQLITE_NOTICE_RBU, "SQLITE_NOTICE_RBU"),
    (ffi::SQLITE_WARNING_AUTOINDEX, "SQLITE_WARNING_AUTOINDEX"),
    (ffi::SQLITE_AUTH_USER, "SQLITE_AUTH_USER"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_extended_then_primary_then_number() {
        assert_eq!(code_name(ffi::SQLITE_CONSTRAINT_UNIQUE), "SQLITE_CONSTRAINT_UNIQUE");
        assert_eq!(code_name(ffi::SQLITE_BUSY), "SQLITE_BUSY");
        // An extended code this table does not know falls back to its primary.
        assert_eq!(code_name((99 << 8) | ffi::SQLITE_IOERR), "SQLITE_IOERR");
        assert_eq!(code_name(77), "77");
    }

    #[test]
    fn busy_is_a_database_error_that_says_so() {
        let e = db_error(rusqlite::Error::SqliteFailure(
            ffi::Error::new(ffi::SQLITE_BUSY),
            Some("database is locked".into()),
        ));
        match e {
            Error::Database { code, message } => {
                assert_eq!(code.as_deref(), Some("SQLITE_BUSY"));
                assert!(message.contains("busy_timeout"), "{message}");
            }
            other => panic!("expected Database, got {other:?}"),
        }
    }
}
