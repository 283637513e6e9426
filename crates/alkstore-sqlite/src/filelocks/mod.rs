//! SQLite file locks that hold when another SQLite library in this process
//! uses the same file (SPEC §16, ADR 0009).
//!
//! This crate bundles its own SQLite. An application that keeps its tables
//! in the store's file reaches it through Python's `sqlite3` (directly, or
//! through SQLAlchemy or Django): a second copy of SQLite in the same
//! process. SQLite's unix VFS locks with POSIX record locks, which belong to
//! the *process*: the two copies never exclude each other, and whenever one
//! copy closes a descriptor of the file the kernel drops every lock the
//! process holds on it, the other copy's included. Both lose committed data.
//!
//! The fix routes three of the bundled copy's system calls (SQLite's
//! `xSetSystemCall` hook, which exists for exactly this):
//! - `fcntl` lock requests become Linux open-file-description (OFD) locks,
//!   all taken through one description per file that this module opens
//!   itself. OFD locks conflict with POSIX locks even inside one process, and
//!   survive the other copy closing its descriptors. Since every connection
//!   of this copy locks through the same description, they share locks the
//!   way one process's POSIX locks are shared, which is what SQLite expects.
//! - `close` of a database or `-shm` descriptor keeps it open ("parked")
//!   instead: closing it would drop the *other* copy's POSIX locks. Parked
//!   descriptors are handed out again when SQLite reopens the same file, and
//!   really closed once no lock of this process's other copy can be lost by
//!   it (see `release.rs`).
//! - `open` records what was opened and hands out parked descriptors.
//!
//! Where this cannot hold (not Linux, another architecture, a kernel without
//! OFD locks), [`shared_file_protection`] says why and the binding warns at `open()`.

use std::sync::OnceLock;

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod release;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod table;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod vfs;

/// Set to `posix` to leave SQLite's own locking alone (only to measure what
/// the routing costs, and to test the warning); anything else is ignored.
pub const LOCKS_ENV: &str = "ALKSTORE_SQLITE_LOCKS";

static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// Routes the bundled SQLite's locking once per process, before its first
/// file is opened. Idempotent; the outcome is what [`shared_file_protection`] reports.
pub(crate) fn install() -> &'static Result<(), String> {
    INSTALLED.get_or_init(|| {
        if std::env::var(LOCKS_ENV).is_ok_and(|v| v == "posix") {
            return Err(format!(
                "{LOCKS_ENV}=posix is set, so alkstore uses SQLite's default POSIX locks, which another \
                 SQLite library in this process (Python's sqlite3, SQLAlchemy, Django) neither respects \
                 nor leaves in place"
            ));
        }
        route()
    })
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn route() -> Result<(), String> {
    vfs::route()
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
fn route() -> Result<(), String> {
    Err("alkstore keeps its SQLite locks apart from another SQLite library in the same process only on \
         Linux (x86_64, aarch64)"
        .to_owned())
}

/// `Ok` when this process's SQLite stores hold their locks against any other
/// SQLite library in the process; otherwise why not, in words for a warning.
/// Routes the calls first if no store was opened yet.
pub fn shared_file_protection() -> Result<(), String> {
    install().clone()
}
