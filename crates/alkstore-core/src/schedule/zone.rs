//! Time zones for cron schedules (SPEC §23, ADR 0027): IANA names looked up
//! in the database jiff bundles into the library (so a machine without
//! `/usr/share/zoneinfo` works the same), and the two conversions the cron
//! walk needs between instants and wall-clock times.
//!
//! A wall-clock time carries PEP 495's `fold`, as Python's datetimes do:
//! where a wall time is ambiguous (a fall-back repeats it) `fold = false` is
//! its first occurrence and `true` its second; where it is skipped (a
//! spring-forward gap) `false` reads it with the offset before the gap and
//! `true` with the offset after. That is what lets the walk reproduce
//! cronie's fires exactly, as Python's `cronsim` computes them.

use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::Timestamp;

use crate::error::{Error, Result};

/// A time zone, by its IANA name.
#[derive(Debug, Clone)]
pub struct Zone {
    name: String,
    tz: TimeZone,
}

impl PartialEq for Zone {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Zone {
    /// The zone `name` names (`"UTC"`, `"Europe/Berlin"`, …); a `ValueError`
    /// naming `tz` for anything the bundled database does not hold.
    pub fn named(name: &str) -> Result<Zone> {
        if name == "UTC" {
            return Ok(Zone { name: name.to_owned(), tz: TimeZone::UTC });
        }
        let known = !name.is_empty() && name.len() <= 64 && !name.contains(['\0', ' ']);
        let tz = known.then(|| jiff::tz::db().get(name).ok()).flatten().ok_or_else(|| {
            Error::Value(format!("tz must be an IANA time zone name such as 'Europe/Berlin' or 'UTC', got {name:?}"))
        })?;
        Ok(Zone { name: name.to_owned(), tz })
    }

    /// The IANA name, as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The instant (Unix seconds) of the wall time `dt` with `fold`.
    pub fn instant(&self, dt: DateTime, fold: bool) -> Option<i64> {
        let offset = match self.tz.to_ambiguous_timestamp(dt).offset() {
            AmbiguousOffset::Unambiguous { offset } => offset,
            AmbiguousOffset::Gap { before, after } | AmbiguousOffset::Fold { before, after } => {
                if fold {
                    after
                } else {
                    before
                }
            }
        };
        offset.to_timestamp(dt).ok().map(Timestamp::as_second)
    }

    /// The wall time and fold of the instant `t` (Unix seconds).
    pub fn wall(&self, t: i64) -> Option<(DateTime, bool)> {
        let ts = Timestamp::from_second(t).ok()?;
        let dt = self.tz.to_datetime(ts);
        let fold = match self.tz.to_ambiguous_timestamp(dt).offset() {
            AmbiguousOffset::Fold { before, after } => before != after && self.tz.to_offset(ts) == after,
            _ => false,
        };
        Some((dt, fold))
    }

    /// `t` as an RFC 3339 local time with its offset, for people
    /// (`2026-03-29T03:00:00+02:00`).
    pub fn show(&self, t: i64) -> String {
        match Timestamp::from_second(t) {
            Ok(ts) => {
                let z = ts.to_zoned_datetime(self.tz.clone());
                let off = z.offset().seconds();
                let (sign, off) = if off < 0 { ('-', -off) } else { ('+', off) };
                format!("{}{sign}{:02}:{:02}", z.datetime(), off / 3600, off % 3600 / 60)
            }
            Err(_) => "never".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    #[test]
    fn folds_and_gaps_read_as_pep_495_does() {
        let berlin = Zone::named("Europe/Berlin").unwrap();
        // 2026-10-25 02:30 happens twice: at 00:30Z (CEST) and 01:30Z (CET).
        let twice = date(2026, 10, 25).at(2, 30, 0, 0);
        let first = berlin.instant(twice, false).unwrap();
        let second = berlin.instant(twice, true).unwrap();
        assert_eq!(second - first, 3600);
        assert_eq!(berlin.wall(first), Some((twice, false)));
        assert_eq!(berlin.wall(second), Some((twice, true)));
        // 2026-03-29 02:30 never happens: fold 0 reads it with CET (01:30Z = 03:30 CEST).
        let skipped = date(2026, 3, 29).at(2, 30, 0, 0);
        let t = berlin.instant(skipped, false).unwrap();
        assert_eq!(berlin.wall(t), Some((date(2026, 3, 29).at(3, 30, 0, 0), false)));
        assert_eq!(berlin.instant(skipped, true).unwrap(), t - 3600);
        assert_eq!(berlin.show(t), "2026-03-29T03:30:00+02:00");
    }

    #[test]
    fn unknown_names_are_a_value_error_naming_tz() {
        for bad in ["Mars/Olympus", "", "europe berlin", "Europe/Berlin\0"] {
            assert!(matches!(Zone::named(bad), Err(Error::Value(m)) if m.starts_with("tz must be")), "{bad:?}");
        }
        assert_eq!(Zone::named("UTC").unwrap().name(), "UTC");
    }
}
