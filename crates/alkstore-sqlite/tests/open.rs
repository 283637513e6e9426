//! Opening, migrating, refusing bad files, closing (SPEC §2, §13).

mod common;

use std::collections::HashSet;
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::thread;

use alkstore_core::{Engine, Error, Result};
use alkstore_sqlite::SqliteOptions;
use common::{job, opts, Fixture};

fn io(e: std::io::Error) -> Error {
    Error::database(None, e.to_string())
}

fn temp_path(name: &str) -> Result<(tempfile::TempDir, String)> {
    let dir = tempfile::tempdir().map_err(io)?;
    let path = dir.path().join(name).to_string_lossy().into_owned();
    Ok((dir, path))
}

/// Expects `Error::Database` whose message names the file and contains `needle`.
fn expect_db_error(r: Result<std::sync::Arc<dyn Engine>>, path: &str, needle: &str) -> Option<String> {
    match r {
        Err(Error::Database { code, message }) => {
            eprintln!("{code:?}: {message}");
            assert!(message.contains(path), "message should name the file: {message}");
            assert!(message.to_lowercase().contains(needle), "expected {needle:?} in: {message}");
            code
        }
        Err(other) => panic!("expected a Database error, got {other:?}"),
        Ok(_) => panic!("expected open of {path} to fail"),
    }
}

#[test]
fn creates_then_reopens_idempotently() -> Result<()> {
    let f = Fixture::new()?;
    let id = f.put("q", "1")?;
    let again = f.reopen()?;
    let third = f.reopen()?;
    assert_eq!(again.get_job(None, "q", id)?.map(|j| j.id), Some(id));
    assert_eq!(third.kind(), "sqlite");
    Ok(())
}

#[test]
fn sets_the_pragmas() -> Result<()> {
    let f = Fixture::new()?;
    let conn = rusqlite::Connection::open(&f.path).map_err(|e| Error::database(None, e.to_string()))?;
    let mode: String =
        conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).map_err(|e| Error::database(None, e.to_string()))?;
    assert_eq!(mode, "wal", "WAL is persistent in the file");
    let version: String = conn
        .query_row("SELECT value FROM __alkstore_meta WHERE key = 'schema_version'", [], |r| r.get(0))
        .map_err(|e| Error::database(None, e.to_string()))?;
    assert_eq!(version, alkstore_sqlite::SCHEMA_VERSION.to_string());
    Ok(())
}

#[test]
fn garbage_file_is_a_clear_database_error() -> Result<()> {
    let (_dir, path) = temp_path("garbage.db")?;
    let bytes: Vec<u8> = (0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(&path, bytes).map_err(io)?;
    let code = expect_db_error(alkstore_sqlite::open(&path, &SqliteOptions::default()), &path, "not a");
    assert_eq!(code.as_deref(), Some("SQLITE_NOTADB"));
    Ok(())
}

#[test]
fn text_file_is_a_clear_database_error() -> Result<()> {
    let (_dir, path) = temp_path("notes.txt")?;
    std::fs::write(&path, "hello, this is not a database\n".repeat(200)).map_err(io)?;
    expect_db_error(alkstore_sqlite::open(&path, &SqliteOptions::default()), &path, "not a");
    Ok(())
}

#[test]
fn corrupt_file_is_a_clear_database_error() -> Result<()> {
    let f = Fixture::new()?;
    for i in 0..50 {
        f.put("q", &i.to_string())?;
    }
    f.engine.close();
    let path = f.path.clone();
    // Keep the 100-byte header (so it still looks like SQLite) and scribble
    // over the rest of page 1, which holds the schema.
    let mut bytes = std::fs::read(&path).map_err(io)?;
    for b in bytes.iter_mut().take(4096).skip(100) {
        *b = 0xA5;
    }
    std::fs::write(&path, bytes).map_err(io)?;
    let code = expect_db_error(alkstore_sqlite::open(&path, &SqliteOptions::default()), &path, "malformed");
    assert_eq!(code.as_deref(), Some("SQLITE_CORRUPT"));
    Ok(())
}

#[test]
fn missing_directory_is_a_clear_database_error() -> Result<()> {
    let (_dir, base) = temp_path("nope")?;
    let path = format!("{base}/deeper/store.db");
    let code = expect_db_error(alkstore_sqlite::open(&path, &SqliteOptions::default()), &path, "unable to open");
    assert_eq!(code.as_deref(), Some("SQLITE_CANTOPEN"));
    Ok(())
}

/// `chattr +i` makes a file unwritable even for root (a plain chmod 0444 does
/// not stop root). Skipped where chattr is unavailable or not permitted.
struct Immutable(String);

impl Immutable {
    fn set(path: &str) -> Option<Self> {
        let ok = Command::new("chattr").args(["+i", path]).status().map(|s| s.success()).unwrap_or(false);
        ok.then(|| Immutable(path.to_owned()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").args(["-i", &self.0]).status();
    }
}

#[test]
fn read_only_file_is_a_clear_database_error() -> Result<()> {
    let f = Fixture::new()?;
    f.put("q", "1")?;
    f.engine.close();
    let Some(_guard) = Immutable::set(&f.path) else {
        eprintln!("skipped: chattr +i is not available here");
        return Ok(());
    };
    let code = expect_db_error(alkstore_sqlite::open(&f.path, &SqliteOptions::default()), &f.path, "read-only");
    assert_eq!(code.as_deref(), Some("SQLITE_READONLY"));
    Ok(())
}

#[test]
fn chmod_read_only_file_as_root_or_not() -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new()?;
    f.engine.close();
    std::fs::set_permissions(&f.path, std::fs::Permissions::from_mode(0o444)).map_err(io)?;
    // As root the permission bits do not stop writes and the open succeeds;
    // as anyone else it must be the clear read-only error. Never a panic.
    match alkstore_sqlite::open(&f.path, &SqliteOptions::default()) {
        Ok(e) => {
            e.enqueue(None, "q", &opts(), &[job("1")])?;
        }
        Err(Error::Database { message, .. }) => assert!(message.contains("read-only"), "{message}"),
        Err(other) => panic!("unexpected {other:?}"),
    }
    Ok(())
}

#[test]
fn read_only_directory_is_a_clear_database_error() -> Result<()> {
    // A fresh file in a directory nobody may write to (immutable, so root too).
    let (dir, path) = temp_path("store.db")?;
    let dir_path = dir.path().to_string_lossy().into_owned();
    let Some(_guard) = Immutable::set(&dir_path) else {
        eprintln!("skipped: chattr +i is not available here");
        return Ok(());
    };
    match alkstore_sqlite::open(&path, &SqliteOptions::default()) {
        Err(Error::Database { code, message }) => {
            eprintln!("{code:?}: {message}");
            assert!(message.contains(&path), "{message}");
        }
        Err(other) => panic!("unexpected {other:?}"),
        Ok(_) => panic!("opened a store in an immutable directory"),
    }
    Ok(())
}

#[test]
fn newer_schema_version_is_refused() -> Result<()> {
    let f = Fixture::new()?;
    f.engine.close();
    let conn = rusqlite::Connection::open(&f.path).map_err(|e| Error::database(None, e.to_string()))?;
    conn.execute("UPDATE __alkstore_meta SET value = '999' WHERE key = 'schema_version'", [])
        .map_err(|e| Error::database(None, e.to_string()))?;
    drop(conn);
    expect_db_error(f.reopen(), &f.path, "newer alkstore");
    Ok(())
}

#[test]
fn close_is_idempotent_and_refuses_later_calls() -> Result<()> {
    let f = Fixture::new()?;
    let id = f.put("q", "1")?;
    let j = f.one("q", "w")?.unwrap();
    f.engine.close();
    f.engine.close();
    assert_eq!(common::claim(&*f.engine, "q", "w", 1), Err(Error::StoreClosed));
    assert_eq!(f.engine.ack(None, &[&j]), Err(Error::StoreClosed));
    assert_eq!(f.engine.get_job(None, "q", id), Err(Error::StoreClosed));
    assert_eq!(f.engine.stats("q"), Err(Error::StoreClosed));
    assert_eq!(f.engine.now(), Err(Error::StoreClosed));
    assert!(matches!(f.engine.begin(), Err(Error::StoreClosed)));
    // The file is intact for the next handle.
    assert!(f.reopen()?.get_job(None, "q", id)?.is_some());
    Ok(())
}

#[test]
fn close_while_a_transaction_is_open_does_not_hang() -> Result<()> {
    let f = Fixture::new()?;
    let mut tx = f.engine.begin()?;
    f.engine.enqueue(Some(tx.as_mut()), "q", &opts(), &[job("1")])?;
    f.engine.close();
    // The transaction still ends cleanly; its end drops the writer.
    tx.rollback()?;
    assert_eq!(f.engine.stats("q"), Err(Error::StoreClosed));
    assert_eq!(f.reopen()?.stats("q")?.pending, 0);
    Ok(())
}

#[test]
fn busy_writer_times_out_with_a_busy_database_error() -> Result<()> {
    let f = Fixture::new()?;
    let other = alkstore_sqlite::open(&f.path, &SqliteOptions { busy_timeout_ms: 50, ..SqliteOptions::default() })?;
    // A caller transaction on one handle holds the file's write lock.
    let tx = f.engine.begin()?;
    match other.enqueue(None, "q", &opts(), &[job("1")]) {
        Err(Error::Database { code, message }) => {
            assert_eq!(code.as_deref(), Some("SQLITE_BUSY"), "{message}");
            assert!(message.contains("busy_timeout"), "{message}");
        }
        r => panic!("expected SQLITE_BUSY, got {r:?}"),
    }
    tx.rollback()?;
    other.enqueue(None, "q", &opts(), &[job("1")])?;
    Ok(())
}

/// Handles racing to create one fresh file.
const OPENERS: usize = 4;

#[test]
fn concurrent_opens_of_a_fresh_file_all_succeed() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::database(None, e.to_string()))?;
    let path = dir.path().join("fresh.db").to_string_lossy().into_owned();
    let barrier = Arc::new(Barrier::new(OPENERS));
    let handles: Vec<_> = (0..OPENERS)
        .map(|i| {
            let path = path.clone();
            let barrier = barrier.clone();
            thread::spawn(move || -> Result<i64> {
                barrier.wait();
                let engine = alkstore_sqlite::open(&path, &SqliteOptions::default())?;
                Ok(engine.enqueue(None, "q", &opts(), &[job(&i.to_string())])?[0])
            })
        })
        .collect();
    let mut ids = HashSet::new();
    for h in handles {
        ids.insert(h.join().map_err(|_| Error::database(None, "thread panicked"))??);
    }
    assert_eq!(ids.len(), OPENERS);
    Ok(())
}
