//! Sleeping until a database's `-wal` file is written: inotify on Linux, on
//! the file's directory (the WAL file comes and goes with the last
//! connection, and a watch on a deleted file would go quiet). Elsewhere,
//! [`WalWatch::new`] gives None and the wake watcher polls.

#[cfg(target_os = "linux")]
mod imp {
    use std::ffi::OsString;
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::time::Duration;

    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    use rustix::io::Errno;

    /// An inotify watch on the directory of one database file.
    pub(crate) struct WalWatch {
        fd: OwnedFd,
        wal: OsString,
    }

    impl WalWatch {
        /// A watch for `db_path`'s WAL file, or None when inotify cannot
        /// have one (no such directory, no inotify instances left, …).
        pub(crate) fn new(db_path: &str) -> Option<Self> {
            let path = Path::new(db_path);
            let name = path.file_name()?;
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            let mut wal = name.to_os_string();
            wal.push("-wal");
            let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
            let events = WatchFlags::MODIFY | WatchFlags::CREATE | WatchFlags::MOVED_TO;
            inotify::add_watch(&fd, dir, events).ok()?;
            Some(WalWatch { fd, wal })
        }

        /// Sleeps until the WAL file is written or `timeout` passes; true
        /// when it was (or when the kernel lost events and it may have been).
        pub(crate) fn wait(&self, timeout: Duration) -> bool {
            let ts = Timespec {
                tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: i64::from(timeout.subsec_nanos()),
            };
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
            match poll(&mut fds, Some(&ts)) {
                Ok(0) => false,
                Ok(_) => self.drain(),
                // Interrupted: look at the database once, as if written.
                Err(_) => true,
            }
        }

        /// Reads every queued event; whether one was about the WAL file.
        fn drain(&self) -> bool {
            let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
            let mut events = inotify::Reader::new(&self.fd, &mut buf);
            let mut hit = false;
            loop {
                match events.next() {
                    Ok(e) => {
                        hit |= e.events().contains(ReadFlags::QUEUE_OVERFLOW)
                            || e.file_name().is_some_and(|n| n.to_bytes() == self.wal.as_bytes());
                    }
                    Err(Errno::WOULDBLOCK | Errno::INTR) => return hit,
                    Err(_) => return true,
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::time::Duration;

    /// No file-change notification here: the wake watcher polls.
    pub(crate) enum WalWatch {}

    impl WalWatch {
        pub(crate) fn new(_db_path: &str) -> Option<Self> {
            None
        }

        pub(crate) fn wait(&self, _timeout: Duration) -> bool {
            match *self {}
        }
    }
}

pub(crate) use imp::WalWatch;

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io::Write;
    use std::time::Duration;

    use super::WalWatch;

    const SHORT: Duration = Duration::from_millis(50);

    #[test]
    fn wakes_for_its_wal_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("app.db");
        let w = WalWatch::new(db.to_str().unwrap()).expect("inotify on a temp dir");
        assert!(!w.wait(SHORT), "nothing written yet");
        std::fs::write(dir.path().join("other.db-wal"), b"x").unwrap();
        assert!(!w.wait(SHORT), "another database's WAL");
        std::fs::write(dir.path().join("app.db-wal"), b"x").unwrap();
        assert!(w.wait(SHORT), "created");
        assert!(!w.wait(SHORT), "each event is read once");
        let mut f = std::fs::OpenOptions::new().append(true).open(dir.path().join("app.db-wal")).unwrap();
        f.write_all(b"frame").unwrap();
        assert!(w.wait(SHORT), "written");
    }

    #[test]
    fn a_missing_directory_gives_no_watch() {
        assert!(WalWatch::new("/nonexistent-alkstore-dir/app.db").is_none());
    }
}
