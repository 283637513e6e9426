//! The one rule for every duration and absolute time a caller passes (ADR 0011).
//!
//! A duration — a lease, a delay, an expiry, a retention, a heartbeat, a lock
//! TTL, a wait — is at most [`MAX_DURATION_S`] (100 years); an absolute time
//! (`run_at`) is at most [`MAX_INSTANT_S`] (the last second of year 9999).
//! Beyond that the call is refused with `Error::Value` naming the argument:
//! never a silent clamp, never a panic. The bound is what keeps every
//! timestamp an engine computes (`now + d`) a valid Python `datetime`, far
//! inside a 64-bit integer on both engines alike, and every wait inside what
//! `std::time::Instant` and Python's `threading` can add.

use std::time::Duration;

use crate::error::{Error, Result};

/// The longest duration any argument takes: 100 years of 365.25 days.
pub const MAX_DURATION_S: i64 = 36_525 * 86_400;

/// The latest absolute time a caller may give: 9999-12-31T23:59:59Z, the last
/// whole second a Python `datetime` can show.
pub const MAX_INSTANT_S: i64 = 253_402_300_799;

// What the bound leaves room for, checked at compile time: `now + d` for any
// `now` before 2200, with a test clock shifted by as much again, stays a
// Python datetime; and a third of the longest lease (a Worker's heartbeat
// period) stays under Python's `threading.TIMEOUT_MAX` (about 9.2e9 s on Linux).
const YEAR_2200_S: i64 = 7_258_118_400;
const _: () = assert!(YEAR_2200_S + 2 * MAX_DURATION_S < MAX_INSTANT_S);
const _: () = assert!(MAX_DURATION_S < 9_223_372_036);

/// The longest duration an engine is ever handed, about 34,000 years. The
/// Store refuses any argument over [`MAX_DURATION_S`], so this clamp only
/// bites on a value the Store did not take from a caller: a lease stamped on
/// a row written before that bound existed, reused by `heartbeat`. It keeps
/// `now + d` inside 64-bit integers on both engines (on SQLite an overflow
/// silently turns the column into a REAL and the row becomes unreadable; on
/// Postgres it is an error on every later statement that adds to it).
pub const MAX_SPAN_S: i64 = 1 << 40;

/// A duration in seconds, clamped to what `now + d` can hold.
#[inline]
pub fn span(seconds: i64) -> i64 {
    seconds.clamp(-MAX_SPAN_S, MAX_SPAN_S)
}

fn too_long(what: &str, secs: impl std::fmt::Display) -> Error {
    Error::Value(format!("{what} must be at most {MAX_DURATION_S} seconds (100 years), got {secs}"))
}

fn not_a_duration(what: &str, secs: f64) -> Error {
    Error::Value(format!("{what} must be a finite number of seconds >= 0, got {secs}"))
}

/// A duration given as a number of seconds, rounded up to whole seconds
/// (SPEC §4.7): finite, `>= 0`, at most [`MAX_DURATION_S`] once rounded.
pub fn seconds(what: &str, secs: f64) -> Result<i64> {
    if !secs.is_finite() || secs < 0.0 {
        return Err(not_a_duration(what, secs));
    }
    let whole = secs.ceil();
    if whole > MAX_DURATION_S as f64 {
        return Err(too_long(what, secs));
    }
    // In range, so the cast is exact.
    Ok(whole as i64)
}

/// The same rule for a duration already in whole seconds.
pub fn check_seconds(what: &str, secs: i64) -> Result<i64> {
    if secs < 0 {
        return Err(Error::Value(format!("{what} must be >= 0 seconds, got {secs}")));
    }
    if secs > MAX_DURATION_S {
        return Err(too_long(what, secs));
    }
    Ok(secs)
}

/// A duration kept fractional (the retry curve's base): finite, `>= 0`, at
/// most [`MAX_DURATION_S`].
pub fn fractional_seconds(what: &str, secs: f64) -> Result<f64> {
    if !secs.is_finite() || secs < 0.0 {
        return Err(not_a_duration(what, secs));
    }
    if secs > MAX_DURATION_S as f64 {
        return Err(too_long(what, secs));
    }
    Ok(secs)
}

/// A wait (a claim's timeout, the poll interval) under the same bound; no
/// rounding, as it never reaches storage.
pub fn wait(what: &str, secs: f64) -> Result<Duration> {
    fractional_seconds(what, secs).map(Duration::from_secs_f64)
}

/// The same rule for a wait already given as a `Duration`.
pub fn check_wait(what: &str, d: Duration) -> Result<Duration> {
    if d > Duration::from_secs(MAX_DURATION_S as u64) {
        return Err(too_long(what, d.as_secs_f64()));
    }
    Ok(d)
}

/// An absolute time as Unix seconds, rounded up to whole seconds: from the
/// epoch to [`MAX_INSTANT_S`].
pub fn instant(what: &str, secs: f64) -> Result<i64> {
    if !secs.is_finite() {
        return Err(Error::Value(format!("{what} must be a finite number of Unix seconds, got {secs}")));
    }
    let whole = secs.ceil();
    if secs < 0.0 || whole > MAX_INSTANT_S as f64 {
        return Err(out_of_time(what, secs));
    }
    Ok(whole as i64)
}

/// The same rule for an absolute time already in whole Unix seconds.
pub fn check_instant(what: &str, secs: i64) -> Result<i64> {
    if !(0..=MAX_INSTANT_S).contains(&secs) {
        return Err(out_of_time(what, secs));
    }
    Ok(secs)
}

fn out_of_time(what: &str, secs: impl std::fmt::Display) -> Error {
    Error::Value(format!(
        "{what} must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z \
         (0 to {MAX_INSTANT_S} Unix seconds), got {secs}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_up_within_the_bound() -> Result<()> {
        assert_eq!(seconds("d", 0.0)?, 0);
        assert_eq!(seconds("d", 0.2)?, 1);
        assert_eq!(seconds("d", MAX_DURATION_S as f64)?, MAX_DURATION_S);
        assert_eq!(seconds("d", MAX_DURATION_S as f64 - 0.5)?, MAX_DURATION_S);
        assert_eq!(check_seconds("d", MAX_DURATION_S)?, MAX_DURATION_S);
        Ok(())
    }

    #[test]
    fn beyond_the_bound_names_the_argument() {
        for bad in [MAX_DURATION_S as f64 + 0.5, 1e12, 9.3e18, 1e19, 1e300, f64::INFINITY, f64::NAN, -0.5] {
            match seconds("delay", bad) {
                Err(Error::Value(m)) => assert!(m.starts_with("delay "), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
            assert!(matches!(wait("timeout", bad), Err(Error::Value(m)) if m.starts_with("timeout ")));
        }
        for bad in [MAX_INSTANT_S as f64 + 0.5, 1e12, 9.3e18, 1e300, f64::INFINITY, f64::NAN, -0.5, -1e300] {
            assert!(matches!(instant("run_at", bad), Err(Error::Value(m)) if m.starts_with("run_at ")));
        }
        for bad in [MAX_DURATION_S + 1, i64::MAX, -1, i64::MIN] {
            assert!(matches!(check_seconds("extend", bad), Err(Error::Value(m)) if m.starts_with("extend ")));
        }
        assert!(check_wait("timeout", Duration::MAX).is_err());
    }

    #[test]
    fn spans_are_clamped_not_wrapped() {
        assert_eq!(span(5), 5);
        assert_eq!(span(MAX_DURATION_S), MAX_DURATION_S);
        assert_eq!(span(i64::MAX), MAX_SPAN_S);
        assert_eq!(span(i64::MIN), -MAX_SPAN_S);
    }

    #[test]
    fn instants_stop_at_year_9999() -> Result<()> {
        assert_eq!(instant("run_at", MAX_INSTANT_S as f64)?, MAX_INSTANT_S);
        assert_eq!(instant("run_at", 0.0)?, 0);
        assert!(instant("run_at", MAX_INSTANT_S as f64 + 0.5).is_err());
        assert!(instant("run_at", -1.0).is_err());
        assert!(check_instant("run_at", MAX_INSTANT_S + 1).is_err());
        Ok(())
    }
}
