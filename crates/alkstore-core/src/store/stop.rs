//! `StopToken`: a cloneable, thread-safe "please stop" flag that blocking
//! calls also wait on.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// Set once, observed by every clone. `wait` blocks until set or timeout.
#[derive(Debug, Clone, Default)]
pub struct StopToken {
    inner: Arc<(Mutex<bool>, Condvar)>,
}

impl StopToken {
    /// A fresh, unset token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the token and wakes every waiter. Idempotent.
    pub fn stop(&self) {
        let (lock, cv) = &*self.inner;
        *lock.lock() = true;
        cv.notify_all();
    }

    /// Whether `stop` has been called.
    pub fn stopped(&self) -> bool {
        *self.inner.0.lock()
    }

    /// Waits until stopped or `timeout` passes (`None` waits forever);
    /// returns whether the token is set.
    pub fn wait(&self, timeout: Option<Duration>) -> bool {
        let (lock, cv) = &*self.inner;
        let mut set = lock.lock();
        match timeout {
            None => {
                while !*set {
                    cv.wait(&mut set);
                }
            }
            Some(t) => {
                let until = std::time::Instant::now() + t;
                while !*set {
                    if cv.wait_until(&mut set, until).timed_out() {
                        break;
                    }
                }
            }
        }
        *set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_wakes_waiter() {
        let t = StopToken::new();
        let t2 = t.clone();
        let h = std::thread::spawn(move || t2.wait(Some(Duration::from_secs(5))));
        std::thread::sleep(Duration::from_millis(20));
        t.stop();
        assert!(h.join().unwrap());
        assert!(t.stopped());
        assert!(!StopToken::new().wait(Some(Duration::from_millis(5))));
    }
}
