//! The store's schema: the baseline (ADR 0037) and the migrations after it,
//! each applied once under the write lock, with the highest applied number
//! recorded as `schema_version` in `__alkstore_meta`.

use alkstore_core::open::schema::{check_current, check_version, BASELINE};
use alkstore_core::{Error, Result};
use rusqlite::{Connection, OptionalExtension};

use crate::conn::{atomic, Scope};
use crate::error::DbResult;

/// The migrations this build knows, in order: the baseline, numbered
/// [`BASELINE`], then each later one, migration N being
/// `migrations/0N_*.sql`. Never edit a released one: add the next number.
const MIGRATIONS: &[(i64, &str)] = &[(BASELINE, include_str!("migrations/0100_baseline.sql"))];

/// The schema version this build writes: the last migration's number. A
/// store with a higher one was written by a newer alkstore, and one below
/// the baseline by a pre-release build: both are refused.
pub const SCHEMA_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].0;

const CREATE_META: &str = "CREATE TABLE IF NOT EXISTS __alkstore_meta (key TEXT PRIMARY KEY, value TEXT)";
const META_EXISTS: &str = "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = '__alkstore_meta'";
const READ_VERSION: &str = "SELECT value FROM __alkstore_meta WHERE key = 'schema_version'";
const WRITE_VERSION: &str = "INSERT INTO __alkstore_meta (key, value) VALUES ('schema_version', ?1) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value";

/// The store's identity: the id the baseline wrote and the file as SQLite
/// resolves its path (symlinks and `..` followed), so a copy of the file,
/// which keeps the id, is still another store. The foreign statements'
/// guard ([`crate::ops::enqueue::FOREIGN`]) computes the same expression on
/// the caller's connection.
const READ_STORE_ID: &str = concat!("SELECT ", store_identity!(), " FROM __alkstore_meta WHERE key = 'store_id'");

/// The store's identity (ADR 0015), read once at open.
pub(crate) fn store_id(conn: &Connection) -> Result<String> {
    let id: Option<String> = conn.query_row(READ_STORE_ID, [], |r| r.get(0)).optional().db()?;
    id.ok_or_else(|| Error::database(None, "__alkstore_meta has no store_id row".to_owned()))
}

/// Brings the file to [`SCHEMA_VERSION`], or refuses a newer one and a
/// pre-release one.
pub(crate) fn migrate(conn: &Connection) -> Result<()> {
    migrate_with(conn, MIGRATIONS)
}

/// [`migrate`] with the given list (a test adds a migration after the
/// baseline): the file ends at the list's last number.
fn migrate_with(conn: &Connection, migrations: &[(i64, &str)]) -> Result<()> {
    let known = migrations[migrations.len() - 1].0;
    // The common case (already current) needs no write lock, so opening a
    // busy store does not queue behind its writers.
    if let Some(v) = read_version(conn)? {
        refuse(v, known)?;
        if v == known {
            return Ok(());
        }
    }
    // BEGIN IMMEDIATE: two processes opening a fresh file at once migrate one
    // after the other; the second re-reads the version and finds nothing to do.
    atomic(conn, Scope::Own, |c| {
        c.execute_batch(CREATE_META).db()?;
        let current = read_version(c)?;
        if let Some(v) = current {
            refuse(v, known)?;
        }
        for (n, sql) in migrations {
            if current.is_none_or(|v| *n > v) {
                c.execute_batch(sql).db()?;
            }
        }
        c.execute(WRITE_VERSION, [known.to_string()]).db()?;
        Ok(())
    })
}

/// For `must_exist` opens: the file must already be a store of exactly this
/// build's schema version. Reads only, so a file that is not a store — or one
/// that a write would have to upgrade — is left as it was.
pub(crate) fn check_existing(conn: &Connection) -> Result<()> {
    let Some(v) = read_version(conn)? else {
        return Err(Error::database(
            None,
            "not an alkstore store: the file has no alkstore tables (nothing was written to it)",
        ));
    };
    check_current(v, SCHEMA_VERSION, STORE, FRESH)
}

/// Refuses, before anything is written (even the switch to WAL), a file
/// whose schema version this build does not open: a pre-release or a newer
/// store. A file without a version (new, or not a store yet) passes.
pub(crate) fn refuse_unopenable(conn: &Connection) -> Result<()> {
    match read_version(conn)? {
        Some(v) if v != SCHEMA_VERSION => refuse(v, SCHEMA_VERSION),
        _ => Ok(()),
    }
}

fn read_version(conn: &Connection) -> Result<Option<i64>> {
    let has_meta = conn.query_row(META_EXISTS, [], |_| Ok(())).optional().db()?.is_some();
    if !has_meta {
        return Ok(None);
    }
    let text: Option<Option<String>> = conn.query_row(READ_VERSION, [], |r| r.get(0)).optional().db()?;
    match text.flatten() {
        None => Ok(None),
        Some(t) => t.trim().parse::<i64>().map(Some).map_err(|_| {
            Error::database(None, format!("__alkstore_meta holds a schema_version that is not a number: {t:?}"))
        }),
    }
}

/// Core's rule for which versions open (newer and pre-release stores are
/// refused), with this engine's words for the store and what to open instead.
fn refuse(version: i64, known: i64) -> Result<()> {
    check_version(version, known, STORE, FRESH)
}

/// How the messages of [`check_version`] name a SQLite store, and what to
/// open instead of a pre-release one.
const STORE: &str = "the store file";
const FRESH: &str = "a new file (move this one aside)";

#[cfg(test)]
mod tests {
    use super::*;

    alkstore_enginetest::migration_files_are_numbered!(BASELINE, MIGRATIONS, SCHEMA_VERSION);

    /// The table a test's migration after the baseline adds.
    const ADDED: &str = "CREATE TABLE __alkstore_added_in_a_test (x INTEGER)";

    fn tables(conn: &Connection, name: &str) -> Result<i64> {
        conn.query_row("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1", [name], |r| r.get(0))
            .db()
    }

    /// A migration after the baseline: a store of the baseline gets it (and
    /// keeps its rows), a fresh file gets both, and a build without it then
    /// refuses the store as newer.
    #[test]
    fn a_migration_after_the_baseline_applies_from_it() -> Result<()> {
        let later: &[(i64, &str)] = &[MIGRATIONS[0], (BASELINE + 1, ADDED)];
        let conn = Connection::open_in_memory().db()?;
        migrate(&conn)?;
        conn.execute_batch(
            "INSERT INTO __alkstore_jobs (id, queue, state, payload, priority, attempts, max_attempts, claim_token, \
             visibility_timeout_s, backoff_base_s, enqueued_at, run_at) VALUES \
             (1, 'q', 'pending', '{}', 0, 0, 3, 0, 30, 5, 0, 0);",
        )
        .db()?;
        migrate_with(&conn, later)?;
        assert_eq!(read_version(&conn)?, Some(BASELINE + 1));
        assert_eq!(tables(&conn, "__alkstore_added_in_a_test")?, 1);
        let kept: i64 = conn.query_row("SELECT count(*) FROM __alkstore_jobs", [], |r| r.get(0)).db()?;
        assert_eq!(kept, 1);
        migrate_with(&conn, later)?;
        let fresh = Connection::open_in_memory().db()?;
        migrate_with(&fresh, later)?;
        assert_eq!((read_version(&fresh)?, tables(&fresh, "__alkstore_added_in_a_test")?), (Some(BASELINE + 1), 1));
        let err = migrate(&conn).unwrap_err().to_string();
        assert!(
            err.contains("written by a newer alkstore (schema version 101; this alkstore knows up to 100)"),
            "{err}"
        );
        Ok(())
    }

    /// A file a pre-release build made (any version below the baseline) is
    /// refused, saying so, and nothing is written to it.
    #[test]
    fn a_pre_release_file_is_refused_and_left_as_it_was() -> Result<()> {
        let conn = Connection::open_in_memory().db()?;
        conn.execute_batch(CREATE_META).db()?;
        conn.execute(WRITE_VERSION, ["22"]).db()?;
        conn.execute_batch("CREATE TABLE __alkstore_jobs (id INTEGER PRIMARY KEY)").db()?;
        let before: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0)).db()?;
        let err = migrate(&conn).unwrap_err().to_string();
        assert!(
            err.starts_with("the store file was made by a pre-release build of alkstore (schema version 22)"),
            "{err}"
        );
        let after: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0)).db()?;
        assert_eq!((before, read_version(&conn)?), (after, Some(22)));
        assert!(check_existing(&conn).is_err());
        Ok(())
    }

    #[test]
    fn migrating_twice_is_a_no_op() -> Result<()> {
        let conn = Connection::open_in_memory().db()?;
        migrate(&conn)?;
        migrate(&conn)?;
        assert_eq!(read_version(&conn)?, Some(SCHEMA_VERSION));
        Ok(())
    }
}
