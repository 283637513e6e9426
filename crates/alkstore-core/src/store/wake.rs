//! `WakeHub`: the coalesced, bounded wake signal every waiter of a store
//! shares (SPEC §5).
//!
//! It is a generation counter, not a queue: any number of commits between two
//! looks collapse into one "something changed", so a slow waiter can never
//! fall behind a backlog of stale wakes. A waiter reads the generation
//! *before* it reads the database (subscribe-before-read), then waits for the
//! generation to move; a commit landing between the read and the wait has
//! already moved it, so no wake is lost.

use std::time::Instant;

use parking_lot::{Condvar, Mutex};

/// One store's wake signal.
#[derive(Debug, Default)]
pub struct WakeHub {
    generation: Mutex<u64>,
    changed: Condvar,
}

impl WakeHub {
    /// A fresh hub.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current generation; read it before reading the database.
    pub fn generation(&self) -> u64 {
        *self.generation.lock()
    }

    /// Something committed (or the store closed): wake every waiter.
    pub fn bump(&self) {
        *self.generation.lock() += 1;
        self.changed.notify_all();
    }

    /// Waits until the generation differs from `seen` or `until` passes;
    /// returns whether it changed.
    pub fn wait(&self, seen: u64, until: Instant) -> bool {
        let mut g = self.generation.lock();
        while *g == seen {
            if self.changed.wait_until(&mut g, until).timed_out() {
                return *g != seen;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn bump_wakes_and_coalesces() {
        let hub = Arc::new(WakeHub::new());
        let seen = hub.generation();
        hub.bump();
        hub.bump();
        // Already moved: returns at once, however many bumps happened.
        assert!(hub.wait(seen, Instant::now() + Duration::from_secs(5)));
        let seen = hub.generation();
        let h2 = hub.clone();
        let t = std::thread::spawn(move || h2.wait(seen, Instant::now() + Duration::from_secs(5)));
        std::thread::sleep(Duration::from_millis(20));
        hub.bump();
        assert!(t.join().unwrap());
        let seen = hub.generation();
        assert!(!hub.wait(seen, Instant::now() + Duration::from_millis(10)));
    }
}
