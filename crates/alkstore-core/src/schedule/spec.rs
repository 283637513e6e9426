//! The scheduler's pure parts (SPEC §8): the `@every` grammar and boundary
//! arithmetic. Storage and the runner loop build on these.

use crate::error::{Error, Result};

/// The most missed boundaries one schedule replays per tick (a contract constant).
pub const MAX_CATCH_UP: usize = 64;

/// The longest allowed interval: 366 days.
pub const MAX_INTERVAL_S: i64 = 366 * 86_400;

/// Parses `@every <n><s|m|h|d>` into whole seconds.
pub fn parse_spec(spec: &str) -> Result<i64> {
    let bad = || Error::InvalidSpec { spec: spec.to_owned() };
    let rest = spec.strip_prefix("@every ").ok_or_else(bad)?;
    let (digits, unit) = rest.split_at(rest.len().saturating_sub(1));
    let unit_s = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    let leading_ok = digits.starts_with(|c: char| ('1'..='9').contains(&c));
    if !leading_ok || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 12 {
        return Err(bad());
    }
    let n: i64 = digits.parse().map_err(|_| bad())?;
    let secs = n.checked_mul(unit_s).ok_or_else(bad)?;
    if secs > MAX_INTERVAL_S {
        return Err(bad());
    }
    Ok(secs)
}

/// The first epoch-aligned boundary strictly after `t`.
pub fn next_boundary_after(t: i64, interval: i64) -> i64 {
    (t.div_euclid(interval) + 1) * interval
}

/// What one tick does to one schedule whose next fire is `next_fire_at`, at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catchup {
    /// The boundaries to fire now, oldest first (at most [`MAX_CATCH_UP`]).
    pub fire: Vec<i64>,
    /// The schedule's next fire after this tick.
    pub next_fire_at: i64,
    /// Boundaries skipped beyond the cap (the documented loss mode).
    pub skipped: i64,
}

/// Plans a tick: every due boundary (`<= now`) fires, oldest first, up to the
/// cap; beyond it the rest are skipped and the next fire jumps past `now`.
pub fn plan_tick(next_fire_at: i64, interval: i64, now: i64) -> Catchup {
    if next_fire_at > now {
        return Catchup { fire: Vec::new(), next_fire_at, skipped: 0 };
    }
    let due = (now - next_fire_at) / interval + 1;
    let n = due.min(MAX_CATCH_UP as i64);
    let fire: Vec<i64> = (0..n).map(|i| next_fire_at + i * interval).collect();
    if due > n {
        Catchup { fire, next_fire_at: next_boundary_after(now, interval), skipped: due - n }
    } else {
        Catchup { fire, next_fire_at: next_fire_at + due * interval, skipped: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar() {
        assert_eq!(parse_spec("@every 30s").unwrap(), 30);
        assert_eq!(parse_spec("@every 1m").unwrap(), 60);
        assert_eq!(parse_spec("@every 2h").unwrap(), 7200);
        assert_eq!(parse_spec("@every 366d").unwrap(), MAX_INTERVAL_S);
        for bad in [
            "@every 367d",
            "@every 0s",
            "@every 5x",
            "@every -1m",
            "*/5 * * * *",
            "@every 05s",
            "@every  5s",
            "@every 5",
            "@every s",
            "every 5s",
            "@every 5s ",
            "@hourly",
            "",
        ] {
            assert!(matches!(parse_spec(bad), Err(Error::InvalidSpec { .. })), "{bad:?}");
        }
    }

    #[test]
    fn boundaries() {
        assert_eq!(next_boundary_after(0, 60), 60);
        assert_eq!(next_boundary_after(59, 60), 60);
        assert_eq!(next_boundary_after(60, 60), 120);
    }

    #[test]
    fn tick_plans() {
        assert_eq!(plan_tick(120, 60, 100), Catchup { fire: vec![], next_fire_at: 120, skipped: 0 });
        assert_eq!(plan_tick(120, 60, 120), Catchup { fire: vec![120], next_fire_at: 180, skipped: 0 });
        assert_eq!(plan_tick(120, 60, 250), Catchup { fire: vec![120, 180, 240], next_fire_at: 300, skipped: 0 });
        let big = plan_tick(60, 60, 60 * 200);
        assert_eq!(big.fire.len(), MAX_CATCH_UP);
        assert_eq!(big.next_fire_at, 60 * 201);
        assert_eq!(big.skipped, 200 - 64);
    }
}
