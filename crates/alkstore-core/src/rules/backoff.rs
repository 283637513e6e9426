//! The retry curve (SPEC §4.5): equal-jitter exponential, capped at one hour.
//! Implemented once here so both engines compute exactly the same range.

use rand::Rng;

use crate::error::{Error, Result};
use crate::rules::duration;

/// The cap on the curve's upper bound, in seconds. A contract constant, no knob.
pub const BACKOFF_CAP_S: i64 = 3600;

/// The inclusive range `(lo, hi)` of retry delays for attempt `attempt` (>= 1)
/// with base `base_s`: `hi = min(base * 2^(a-1), 3600)`, `lo = ceil(hi / 2)`,
/// both 0 when `hi < 1`.
pub fn backoff_range(attempt: i64, base_s: f64) -> (i64, i64) {
    let a = attempt.max(1);
    // 2^(a-1) overflows nothing here: past 2^12 the cap always wins.
    let exp = (a - 1).min(62) as i32;
    let raw = base_s.max(0.0) * 2f64.powi(exp);
    let hi = raw.min(BACKOFF_CAP_S as f64);
    if hi < 1.0 {
        return (0, 0);
    }
    let lo = (hi / 2.0).ceil() as i64;
    (lo, hi.floor() as i64)
}

/// [`backoff_range`] for arguments from a caller (`alkstore.backoff_range`):
/// `attempt >= 1` and a base under the duration rule of `backoff_base_s`.
pub fn checked_backoff_range(attempt: i64, base_s: f64) -> Result<(i64, i64)> {
    if attempt < 1 {
        return Err(Error::Value(format!("attempt must be >= 1, got {attempt}")));
    }
    let base_s = duration::fractional_seconds("base_s", base_s)?;
    Ok(backoff_range(attempt, base_s))
}

/// A uniform integer delay drawn from [`backoff_range`].
pub fn backoff_delay(attempt: i64, base_s: f64) -> i64 {
    let (lo, hi) = backoff_range(attempt, base_s);
    if hi <= lo {
        return lo;
    }
    rand::thread_rng().gen_range(lo..=hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_then_caps() {
        assert_eq!(backoff_range(1, 5.0), (3, 5));
        assert_eq!(backoff_range(2, 5.0), (5, 10));
        assert_eq!(backoff_range(3, 5.0), (10, 20));
        assert_eq!(backoff_range(20, 5.0), (1800, 3600));
        assert_eq!(backoff_range(1000, 5.0), (1800, 3600));
    }

    #[test]
    fn tiny_base_is_zero() {
        assert_eq!(backoff_range(1, 0.0), (0, 0));
        assert_eq!(backoff_range(1, 0.5), (0, 0));
        assert_eq!(backoff_range(2, 0.5), (1, 1));
    }

    #[test]
    fn checked_refuses_what_the_curve_would_quietly_clamp() -> Result<()> {
        assert_eq!(checked_backoff_range(3, 5.0)?, (10, 20));
        assert!(matches!(checked_backoff_range(0, 5.0), Err(Error::Value(m)) if m.contains("attempt")));
        for bad in [-1.0, f64::NAN, f64::INFINITY, 1e300] {
            assert!(matches!(checked_backoff_range(1, bad), Err(Error::Value(m)) if m.contains("base_s")));
        }
        Ok(())
    }

    #[test]
    fn draws_stay_in_range() {
        for a in 1..15 {
            let (lo, hi) = backoff_range(a, 7.0);
            for _ in 0..200 {
                let d = backoff_delay(a, 7.0);
                assert!(lo <= d && d <= hi, "attempt {a}: {d} outside {lo}..={hi}");
            }
        }
    }
}
