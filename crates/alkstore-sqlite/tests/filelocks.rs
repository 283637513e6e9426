//! The store's locks against POSIX locks of the same process (SPEC §16,
//! ADR 0009). Python's sqlite3 is another SQLite copy in the process; here
//! the test plays that copy with raw `fcntl` calls on its own descriptors,
//! at the bytes SQLite locks, and a fresh OFD description plays another
//! process. The Python suite (`tests/test_shared_file.py`) runs the same
//! scenarios with the real `sqlite3` module.
#![cfg(target_os = "linux")]

mod common;

use std::ffi::CString;
use std::io;
use std::os::raw::c_int;

use alkstore_core::{Error, Result};
use alkstore_sqlite::SqliteOptions;
use common::{job, opts, Fixture};

/// The WAL write lock: byte 120 of the -shm file (SQLite's WAL_WRITE_LOCK).
const SHM_WRITE: i64 = 120;
/// SQLite's PENDING byte, just below the RESERVED byte and the SHARED range.
const PENDING_BYTE: i64 = 0x4000_0000;
/// A read lock over SQLite's SHARED range is what a reading connection holds on the database file.
const SHARED_FIRST: i64 = 0x4000_0002;
const SHARED_SIZE: i64 = 510;

/// A raw descriptor of the test's own, closed on drop.
struct Fd(c_int);

impl Fd {
    fn open(path: &str) -> io::Result<Fd> {
        let c = CString::new(path).map_err(io::Error::other)?;
        // SAFETY: a NUL-terminated path and plain flags.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Fd(fd))
    }

    /// A non-blocking lock request; `ofd` picks an OFD lock over a POSIX one.
    fn lock(&self, ofd: bool, kind: c_int, start: i64, len: i64) -> io::Result<()> {
        let cmd = if ofd { libc::F_OFD_SETLK } else { libc::F_SETLK };
        let mut fl = flock(kind, start, len);
        // SAFETY: a valid descriptor and flock.
        if unsafe { libc::fcntl(self.0, cmd, &mut fl) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The pid of a lock that would block a write lock here (OFD query), if any.
    fn blocker(&self, start: i64, len: i64) -> io::Result<Option<i32>> {
        let mut fl = flock(libc::F_WRLCK, start, len);
        // SAFETY: a valid descriptor and flock.
        if unsafe { libc::fcntl(self.0, libc::F_OFD_GETLK, &mut fl) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((fl.l_type != libc::F_UNLCK as libc::c_short).then_some(fl.l_pid))
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(self.0) };
    }
}

fn flock(kind: c_int, start: i64, len: i64) -> libc::flock {
    // SAFETY: zeroed is a valid flock (l_pid = 0, as OFD requests need).
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start;
    fl.l_len = len;
    fl
}

fn io(e: io::Error) -> Error {
    Error::database(None, e.to_string())
}

fn busy(kind: io::ErrorKind) -> bool {
    kind == io::ErrorKind::WouldBlock || kind == io::ErrorKind::PermissionDenied
}

/// How many descriptors of this process point at `path`.
fn descriptors_on(path: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else { return 0 };
    entries.flatten().filter(|e| std::fs::read_link(e.path()).is_ok_and(|t| t.as_os_str() == path)).count()
}

/// The count once the wake watchers of closed handles have let go.
fn settled_descriptors_on(path: &str) -> usize {
    let mut last = descriptors_on(path);
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let now = descriptors_on(path);
        if now == last {
            return now;
        }
        last = now;
    }
    last
}

fn quick_busy() -> SqliteOptions {
    SqliteOptions { busy_timeout_ms: 50, ..SqliteOptions::default() }
}

#[test]
fn the_routing_is_active_on_linux() {
    assert_eq!(alkstore_sqlite::shared_file_protection(), Ok(()));
}

#[test]
fn a_posix_write_lock_of_this_process_makes_a_write_busy() -> Result<()> {
    let f = Fixture::new()?;
    let store = alkstore_sqlite::open(&f.path, &quick_busy())?;
    let shm = Fd::open(&format!("{}-shm", f.path)).map_err(io)?;
    shm.lock(false, libc::F_WRLCK, SHM_WRITE, 1).map_err(io)?;
    match store.enqueue(None, "q", &opts(), &[job("1")]) {
        Err(Error::Database { code: Some(code), .. }) => assert!(code.starts_with("SQLITE_BUSY"), "{code}"),
        other => panic!("expected SQLITE_BUSY while another copy holds the write lock, got {other:?}"),
    }
    shm.lock(false, libc::F_UNLCK, SHM_WRITE, 1).map_err(io)?;
    store.enqueue(None, "q", &opts(), &[job("2")])?;
    assert_eq!(store.stats("q")?.pending, 1, "the refused enqueue wrote nothing");
    Ok(())
}

#[test]
fn a_store_transaction_excludes_posix_and_other_process_writers() -> Result<()> {
    let f = Fixture::new()?;
    let shm_path = format!("{}-shm", f.path);
    let app = Fd::open(&shm_path).map_err(io)?;
    let other_process = Fd::open(&shm_path).map_err(io)?;
    let tx = f.engine.begin()?;
    let err = app.lock(false, libc::F_WRLCK, SHM_WRITE, 1).expect_err("a POSIX writer got in under the store");
    assert!(busy(err.kind()), "{err}");
    let err = other_process.lock(true, libc::F_WRLCK, SHM_WRITE, 1).expect_err("another writer got in");
    assert!(busy(err.kind()), "{err}");
    drop(tx);
    app.lock(false, libc::F_WRLCK, SHM_WRITE, 1).map_err(io)?;
    app.lock(false, libc::F_UNLCK, SHM_WRITE, 1).map_err(io)?;
    Ok(())
}

#[test]
fn store_locks_survive_this_process_closing_other_descriptors_of_the_files() -> Result<()> {
    let f = Fixture::new()?;
    let shm_path = format!("{}-shm", f.path);
    let other_process = Fd::open(&shm_path).map_err(io)?;
    let db_probe = Fd::open(&f.path).map_err(io)?;
    let tx = f.engine.begin()?;
    for path in [&f.path, &shm_path] {
        drop(Fd::open(path).map_err(io)?); // close() drops every POSIX lock of the process on the file
    }
    let err = other_process.lock(true, libc::F_WRLCK, SHM_WRITE, 1).expect_err("the store's write lock was lost");
    assert!(busy(err.kind()), "{err}");
    // The store's read lock on the database (held while it is open in WAL
    // mode) is still there too: an OFD lock, which the kernel shows as pid -1.
    assert_eq!(db_probe.blocker(SHARED_FIRST, SHARED_SIZE).map_err(io)?, Some(-1));
    drop(tx);
    Ok(())
}

#[test]
fn posix_locks_survive_the_store_closing_its_connections() -> Result<()> {
    let f = Fixture::new()?;
    f.engine.close();
    let app = Fd::open(&f.path).map_err(io)?;
    let probe = Fd::open(&f.path).map_err(io)?;
    app.lock(false, libc::F_RDLCK, SHARED_FIRST, SHARED_SIZE).map_err(io)?;
    for _ in 0..3 {
        let store = alkstore_sqlite::open(&f.path, &SqliteOptions::default())?;
        store.enqueue(None, "q", &opts(), &[job("1")])?;
        store.close();
    }
    settled_descriptors_on(&f.path);
    let me = i32::try_from(std::process::id()).map_err(|e| Error::database(None, e.to_string()))?;
    assert_eq!(probe.blocker(SHARED_FIRST, SHARED_SIZE).map_err(io)?, Some(me), "the POSIX read lock was dropped");
    // And the closed stores left no lock of theirs behind: none below the
    // SHARED range of the database, none anywhere on the -shm (SQLite
    // relies on close() to drop its DMS lock there). The PENDING byte is
    // left out: a release attempt for this file, run by another thread's
    // open or close, may hold it for a moment as its guard.
    assert_eq!(probe.blocker(0, PENDING_BYTE).map_err(io)?, None);
    assert_eq!(probe.blocker(PENDING_BYTE + 1, SHARED_FIRST - PENDING_BYTE - 1).map_err(io)?, None);
    let shm_probe = Fd::open(&format!("{}-shm", f.path)).map_err(io)?;
    assert_eq!(shm_probe.blocker(0, 0).map_err(io)?, None);
    Ok(())
}

#[test]
fn kept_descriptors_are_reused_then_released_once_no_posix_lock_is_left() -> Result<()> {
    let f = Fixture::new()?;
    f.engine.close();
    assert_eq!(settled_descriptors_on(&f.path), 0);
    let app = Fd::open(&f.path).map_err(io)?;
    app.lock(false, libc::F_RDLCK, SHARED_FIRST, SHARED_SIZE).map_err(io)?;
    let mut counts = Vec::new();
    for _ in 0..10 {
        alkstore_sqlite::open(&f.path, &SqliteOptions::default())?.close();
        counts.push(settled_descriptors_on(&f.path));
    }
    // The test's own descriptor plus the store's kept ones: the same every round.
    assert!(counts.iter().all(|&c| c == counts[0] && c > 1), "{counts:?}");
    drop(app); // the other copy lets go of the file
    alkstore_sqlite::open(&f.path, &SqliteOptions::default())?.close();
    assert_eq!(settled_descriptors_on(&f.path), 0, "the store kept descriptors nobody needs");
    Ok(())
}

#[test]
fn posix_locks_survive_store_churn_while_other_threads_lock_other_files() -> Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let f = Fixture::new()?;
    f.engine.close();
    let app = Fd::open(&f.path).map_err(io)?;
    let probe = Fd::open(&f.path).map_err(io)?;
    app.lock(false, libc::F_RDLCK, SHARED_FIRST, SHARED_SIZE).map_err(io)?;
    let me = i32::try_from(std::process::id()).map_err(|e| Error::database(None, e.to_string()))?;
    // Other threads lock, unlock, open and close other files all the while,
    // so the process's lock table changes under every release check.
    let stop = Arc::new(AtomicBool::new(false));
    let churners: Vec<_> = (0..3)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || -> Result<()> {
                let g = Fixture::new()?;
                while !stop.load(Ordering::Relaxed) {
                    g.put("q", "1")?;
                    if let Some(job) = g.one("q", "w")? {
                        g.engine.ack(None, &[&job])?;
                    }
                    g.reopen()?.close();
                }
                Ok(())
            })
        })
        .collect();
    let mut lost = 0;
    for _ in 0..100 {
        alkstore_sqlite::open(&f.path, &SqliteOptions::default())?.close();
        if probe.blocker(SHARED_FIRST, SHARED_SIZE).map_err(io)? != Some(me) {
            lost += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for churner in churners {
        churner.join().map_err(|_| Error::database(None, "a churn thread panicked".to_owned()))??;
    }
    assert_eq!(lost, 0, "the POSIX read lock was dropped by a store's close");
    Ok(())
}
