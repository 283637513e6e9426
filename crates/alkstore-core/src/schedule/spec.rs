//! The scheduler's pure parts (SPEC §8, §23): the spec grammars (`@every`
//! and cron), a schedule's timetable in its zone, and how a tick catches up.
//! Storage and the runner loop build on these.

use crate::error::{Error, Result};
use crate::schedule::cron::Cron;
use crate::schedule::walk::next_fire;
use crate::schedule::zone::Zone;

/// The most missed boundaries one schedule replays per tick (a contract constant).
pub const MAX_CATCH_UP: usize = 64;

/// The longest allowed interval: 366 days.
pub const MAX_INTERVAL_S: i64 = 366 * 86_400;

/// The most boundaries a tick walks to count what the catch-up cap skipped:
/// past it the count is a lower bound (a minutely cron down for a year).
pub const MAX_SKIP_COUNT: i64 = 100_000;

/// What `@every` text may look like, for messages.
const EVERY_GRAMMAR: &str = "expected '@every <n><s|m|h|d>' (e.g. '@every 30s', at most 366 days)";

/// Parses `@every <n><s|m|h|d>` into whole seconds.
pub fn parse_spec(spec: &str) -> Result<i64> {
    let bad = || Error::InvalidSpec { spec: spec.to_owned(), reason: EVERY_GRAMMAR.to_owned() };
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

/// A parsed spec: an interval (`@every`) or a cron spec (§23).
#[derive(Debug, Clone, PartialEq)]
pub enum Spec {
    /// `@every <n><unit>`, in seconds: boundaries on the Unix epoch, in UTC.
    Every(i64),
    /// Five cron fields (or a macro), read in a zone.
    Cron(Cron),
}

impl Spec {
    /// Parses either grammar; `InvalidSpec` says what is wrong, naming the
    /// cron field at fault.
    pub fn parse(text: &str) -> Result<Spec> {
        if text.starts_with("@every") {
            return parse_spec(text).map(Spec::Every);
        }
        Cron::parse(text).map(Spec::Cron)
    }
}

/// A schedule's fires: its spec read in its zone (`@every` ignores the zone).
#[derive(Debug, Clone, PartialEq)]
pub struct Timetable {
    /// The parsed spec.
    pub spec: Spec,
    /// The zone a cron spec is read in.
    pub zone: Zone,
}

impl Timetable {
    /// Parses `spec` and looks up `tz` (an IANA name).
    pub fn new(spec: &str, tz: &str) -> Result<Timetable> {
        let spec = Spec::parse(spec)?;
        Ok(Timetable { spec, zone: Zone::named(tz)? })
    }

    /// What tells two registrations apart: equal keys fire alike, so
    /// re-registering keeps the stored next fire (SPEC §8, §23). An interval
    /// in any unit; a cron spec's values (`1-5` = `MON-FRI`) and its zone.
    pub fn key(&self) -> String {
        match &self.spec {
            Spec::Every(s) => format!("every:{s}"),
            Spec::Cron(c) => format!("{}@{}", c.key(), self.zone.name()),
        }
    }

    /// The first fire strictly after the instant `t` (Unix seconds);
    /// `i64::MAX` when there is none (past year 9999).
    pub fn next_after(&self, t: i64) -> i64 {
        match &self.spec {
            Spec::Every(interval) => next_boundary_after(t, *interval),
            Spec::Cron(cron) => {
                let mut at = t;
                loop {
                    match next_fire(cron, &self.zone, at) {
                        // A repeated hour's second pass can yield its first
                        // pass (cronie's wall-clock rule): not after `t`.
                        Some(f) if f <= t => at = at.max(f) + 1,
                        Some(f) => return f,
                        None => return i64::MAX,
                    }
                }
            }
        }
    }

    /// Plans a tick at `now` for a schedule whose next fire is `next_fire_at`
    /// (see [`plan_tick`]).
    pub fn plan(&self, next_fire_at: i64, now: i64) -> Catchup {
        match &self.spec {
            Spec::Every(interval) => plan_tick(next_fire_at, *interval, now),
            Spec::Cron(_) => plan_walk(next_fire_at, now, |t| self.next_after(t)),
        }
    }
}

/// The most fires one [`next_fires`] call lists.
pub const MAX_NEXT_FIRES: usize = 1000;

/// `alkstore.next_fires(spec, tz=, after=, n=)`: the first `n` (1..=1000)
/// fire instants of `spec` in `tz` strictly after the instant `after`
/// (Unix seconds); fewer when the spec stops firing (past year 9999).
pub fn next_fires(spec: &str, tz: &str, after: i64, n: usize) -> Result<Vec<i64>> {
    if !(1..=MAX_NEXT_FIRES).contains(&n) {
        return Err(Error::Value(format!("n must be between 1 and {MAX_NEXT_FIRES}, got {n}")));
    }
    let table = Timetable::new(spec, tz)?;
    let mut fires = Vec::with_capacity(n);
    let mut at = after;
    while fires.len() < n {
        at = table.next_after(at);
        if at == i64::MAX {
            break;
        }
        fires.push(at);
    }
    Ok(fires)
}

/// [`plan_tick`] for a timetable known only by its next-fire function.
fn plan_walk(next_fire_at: i64, now: i64, next: impl Fn(i64) -> i64) -> Catchup {
    let mut fire = Vec::new();
    let mut at = next_fire_at;
    while at <= now && fire.len() < MAX_CATCH_UP {
        fire.push(at);
        at = next(at);
    }
    let mut skipped = 0;
    while at <= now && skipped < MAX_SKIP_COUNT {
        skipped += 1;
        at = next(at);
    }
    if at <= now {
        at = next(now);
    }
    Catchup { fire, next_fire_at: at, skipped }
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
    fn both_grammars_and_their_keys() {
        let every = Timetable::new("@every 60s", "Europe/Berlin").unwrap();
        assert_eq!(every.key(), Timetable::new("@every 1m", "UTC").unwrap().key(), "@every ignores the zone");
        assert_eq!(every.next_after(59), 60);
        let a = Timetable::new("0 9 * * 1-5", "Europe/Berlin").unwrap();
        assert_eq!(a.key(), Timetable::new("0 9 * * mon-FRI", "Europe/Berlin").unwrap().key());
        assert_ne!(a.key(), Timetable::new("0 9 * * 1-5", "UTC").unwrap().key(), "another zone");
        assert!(matches!(Spec::parse("@every 5x"), Err(Error::InvalidSpec { .. })));
        assert!(matches!(Timetable::new("* * * * *", "Nowhere/Land"), Err(Error::Value(_))));
    }

    #[test]
    fn a_cron_tick_catches_up_to_the_cap_and_jumps_past_now() {
        let t = Timetable::new("* * * * *", "UTC").unwrap();
        let p = t.plan(600, 600 + 59);
        assert_eq!((p.fire, p.next_fire_at, p.skipped), (vec![600], 660, 0));
        let big = t.plan(600, 600 + 60 * 200 + 30);
        assert_eq!(big.fire.len(), MAX_CATCH_UP);
        assert_eq!((big.skipped, big.next_fire_at), (201 - 64, 600 + 60 * 201));
    }

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
