//! The next fire of a cron spec after an instant, in a time zone (SPEC §23).
//!
//! The walk follows cronie as Python's `cronsim` implements it, step for step,
//! so the two agree on every fire, daylight-saving days included (the test
//! suite compares them over thousands of random specs, zones and starts):
//!
//! - A spec whose minute and hour are both restricted names wall-clock times
//!   (`30 2 * * *`): the walk runs on the zone's wall clock, ignoring its
//!   offsets, and each fire is read in the zone. A time a spring-forward skips
//!   fires once, at the first minute after the gap that exists (03:00); a time
//!   a fall-back repeats fires once, at its first occurrence.
//! - Any other spec (`*/10 * * * *`, `0 * * * *`) follows real time: a step
//!   moves the instant, then reads the wall clock, so a repeated hour fires
//!   in both passes and a skipped one not at all.
//!
//! From the current time the walk rolls the month forward until it matches,
//! then the day, hour, minute and second, starting over from the month each
//! time a roll crosses into the next larger unit. It gives up after 50 years
//! without a fire (a parsed spec always fires within eight).

use jiff::civil::{Date, DateTime, Time};
use jiff::SignedDuration;

use crate::schedule::cron::Cron;
use crate::schedule::zone::Zone;

/// Where the walk is: a wall time in the zone, with PEP 495's fold; on the
/// wall clock alone (`naive`) the fold is unused and steps ignore offsets.
struct Cursor<'a> {
    zone: &'a Zone,
    naive: bool,
    dt: DateTime,
    fold: bool,
}

impl Cursor<'_> {
    /// Moves `s` seconds: on the wall clock, or in real time.
    fn tick(&mut self, s: i64) -> Option<()> {
        if self.naive {
            self.dt = self.dt.checked_add(SignedDuration::from_secs(s)).ok()?;
        } else {
            let t = self.zone.instant(self.dt, self.fold)?.checked_add(s)?;
            (self.dt, self.fold) = self.zone.wall(t)?;
        }
        Some(())
    }

    /// Sets the wall time's fields, keeping the fold (Python's `replace`).
    fn set_time(&mut self, minute: i8, second: i8) -> Option<()> {
        let minute = if minute < 0 { self.dt.minute() } else { minute };
        self.dt = self.dt.with().minute(minute).second(second).build().ok()?;
        Some(())
    }

    /// Midnight of `date`, fold 0 (Python's `datetime.combine`).
    fn midnight(&mut self, date: Date) {
        self.dt = date.to_datetime(Time::midnight());
        self.fold = false;
    }
}

/// The first fire of `cron` in `zone` after the instant `after` (Unix
/// seconds) as cronie computes it; None past year 9999 or when none comes
/// within 50 years. It can precede `after` by up to an hour when `after` is
/// in the second pass of a repeated hour (the caller skips such a fire).
pub fn next_fire(cron: &Cron, zone: &Zone, after: i64) -> Option<i64> {
    let (dt, fold) = zone.wall(after)?;
    let mut c = Cursor { zone, naive: cron.wall_clock, dt, fold };
    c.tick(1)?;
    advance(cron, &mut c)?;
    if !c.naive {
        return zone.instant(c.dt, c.fold);
    }
    // On the wall clock: read the time in the zone; a skipped one moves on a
    // minute at a time to the first that exists.
    loop {
        let t = zone.instant(c.dt, false)?;
        if zone.wall(t)?.0 == c.dt {
            return Some(t);
        }
        c.dt = c.dt.checked_add(SignedDuration::from_mins(1)).ok()?;
    }
}

fn advance(cron: &Cron, c: &mut Cursor<'_>) -> Option<()> {
    let start_year = c.dt.year();
    loop {
        advance_month(cron, c)?;
        if c.dt.year() > start_year + 50 {
            return None;
        }
        if advance_day(cron, c)? || advance_hour(cron, c)? || advance_minute(cron, c)? || advance_second(c)? {
            continue;
        }
        return Some(());
    }
}

fn advance_month(cron: &Cron, c: &mut Cursor<'_>) -> Option<()> {
    let has = |m: i8| cron.months & (1 << m) != 0;
    if has(c.dt.month()) {
        return Some(());
    }
    let mut needle = c.dt.date();
    while !has(needle.month()) {
        needle = needle.last_of_month().tomorrow().ok()?;
    }
    c.midnight(needle);
    Some(())
}

fn advance_day(cron: &Cron, c: &mut Cursor<'_>) -> Option<bool> {
    let matches = |d: Date| cron.matches_day(d.day() as u32, u32::from(d.weekday().to_sunday_zero_offset() as u8));
    let mut needle = c.dt.date();
    if matches(needle) {
        return Some(false);
    }
    loop {
        needle = needle.tomorrow().ok()?;
        // A new month: back to the month check.
        if matches(needle) || needle.day() == 1 {
            break;
        }
    }
    c.midnight(needle);
    Some(true)
}

fn advance_hour(cron: &Cron, c: &mut Cursor<'_>) -> Option<bool> {
    let has = |h: i8| cron.hours & (1 << h) != 0;
    if has(c.dt.hour()) {
        return Some(false);
    }
    c.set_time(0, 0)?;
    while !has(c.dt.hour()) {
        c.tick(3600)?;
        if c.dt.hour() == 0 {
            break; // a new day: back to the day check
        }
    }
    Some(true)
}

fn advance_minute(cron: &Cron, c: &mut Cursor<'_>) -> Option<bool> {
    let has = |m: i8| cron.minutes & (1 << m) != 0;
    if has(c.dt.minute()) {
        return Some(false);
    }
    c.set_time(-1, 0)?;
    if cron.minutes.count_ones() == 1 {
        // One minute allowed: jump straight to it.
        let target = cron.minutes.trailing_zeros() as i64;
        c.tick((target - i64::from(c.dt.minute())).rem_euclid(60) * 60)?;
    }
    while !has(c.dt.minute()) {
        c.tick(60)?;
        if c.dt.minute() == 0 {
            break; // a new hour: back to the hour check
        }
    }
    Some(true)
}

/// Seconds are always `0` (five-field specs).
fn advance_second(c: &mut Cursor<'_>) -> Option<bool> {
    if c.dt.second() == 0 {
        return Some(false);
    }
    c.tick((60 - i64::from(c.dt.second())).rem_euclid(60))?;
    while c.dt.second() != 0 {
        c.tick(1)?;
    }
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    fn fires(spec: &str, tz: &str, from: DateTime, n: usize) -> Vec<String> {
        let (cron, zone) = (Cron::parse(spec).unwrap(), Zone::named(tz).unwrap());
        let mut t = zone.instant(from, false).unwrap();
        let mut out = Vec::new();
        while out.len() < n {
            let f = next_fire(&cron, &zone, t).unwrap();
            if f > t {
                out.push(zone.show(f));
            }
            t = f.max(t);
        }
        out
    }

    #[test]
    fn weekdays_at_nine_in_berlin() {
        let got = fires("0 9 * * MON-FRI", "Europe/Berlin", date(2026, 12, 4).at(10, 0, 0, 0), 3);
        assert_eq!(got, ["2026-12-07T09:00:00+01:00", "2026-12-08T09:00:00+01:00", "2026-12-09T09:00:00+01:00"]);
    }

    #[test]
    fn a_skipped_wall_time_fires_once_after_the_gap_and_a_repeated_one_once() {
        let spring = fires("30 2 * * *", "Europe/Berlin", date(2026, 3, 28).at(12, 0, 0, 0), 2);
        assert_eq!(spring, ["2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]);
        let fall = fires("30 2 * * *", "Europe/Berlin", date(2026, 10, 24).at(12, 0, 0, 0), 2);
        assert_eq!(fall, ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]);
    }

    #[test]
    fn a_spec_on_every_hour_follows_real_time() {
        // 02:30 twice on the fall-back night; none on the spring-forward one.
        let fall = fires("30 * * * *", "Europe/Berlin", date(2026, 10, 25).at(1, 0, 0, 0), 3);
        assert_eq!(fall, ["2026-10-25T01:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00"]);
        let spring = fires("30 * * * *", "Europe/Berlin", date(2026, 3, 29).at(1, 0, 0, 0), 2);
        assert_eq!(spring, ["2026-03-29T01:30:00+01:00", "2026-03-29T03:30:00+02:00"]);
    }

    #[test]
    fn day_rules() {
        // Both day fields restricted: either (the 13th, or any Friday).
        let either = fires("0 0 13 * FRI", "UTC", date(2026, 2, 1).at(0, 0, 0, 0), 3);
        assert_eq!(either, ["2026-02-06T00:00:00+00:00", "2026-02-13T00:00:00+00:00", "2026-02-20T00:00:00+00:00"]);
        let leap = fires("0 0 29 2 *", "UTC", date(2026, 1, 1).at(0, 0, 0, 0), 1);
        assert_eq!(leap, ["2028-02-29T00:00:00+00:00"]);
    }
}
