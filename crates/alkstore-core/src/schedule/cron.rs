//! The five-field cron grammar (SPEC §23): `minute hour day-of-month month
//! day-of-week`, each `*`, a number, a range `a-b`, a step (`*/n`, `a-b/n`,
//! `a/n` = from `a` to the field's end), or a list of those; month names
//! `JAN`–`DEC` and day names `SUN`–`SAT` in any case; `7` is Sunday; and the
//! macros `@hourly` … `@annually`. Parsed into one bit set per field.
//!
//! The day rule is cronie's (as Python's `cronsim` implements it): when the
//! day-of-month or the day-of-week field starts with `*`, a day must match
//! both; when both are restricted, either.

use crate::error::{Error, Result};

/// The fields, in spec order: their names (for messages) and value ranges.
const FIELDS: [(&str, u32, u32); 5] =
    [("minute", 0, 59), ("hour", 0, 23), ("day-of-month", 1, 31), ("month", 1, 12), ("day-of-week", 0, 7)];
const MONTHS: [&str; 12] = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];
/// The most days each month can have (February's leap day included).
const MONTH_DAYS: [u32; 13] = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/// A parsed cron spec: one bit per allowed value of each field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cron {
    /// Bits 0–59.
    pub minutes: u64,
    /// Bits 0–23.
    pub hours: u32,
    /// Bits 1–31.
    pub days: u32,
    /// Bits 1–12.
    pub months: u16,
    /// Bits 0–6, Sunday = 0 (a `7` is folded onto 0).
    pub weekdays: u8,
    /// A day must match both day fields (one of them starts with `*`);
    /// else either.
    pub day_and: bool,
    /// The minute and hour fields are both restricted (neither starts with
    /// `*`): such a spec names wall-clock times, fired once a day even when
    /// daylight saving skips or repeats them (see `walk`).
    pub wall_clock: bool,
}

impl Cron {
    /// Parses `text` (five fields, or a macro); `InvalidSpec` naming the field.
    pub fn parse(text: &str) -> Result<Cron> {
        let expanded = match text.trim().to_ascii_lowercase().as_str() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            m if m.starts_with('@') => {
                return Err(refuse(
                    text,
                    format!(
                        "unknown macro {:?}: expected '@every <n><s|m|h|d>' (e.g. '@every 30s', at most 366 \
                         days) or one of @hourly @daily @midnight @weekly @monthly @yearly @annually",
                        text.trim()
                    ),
                ))
            }
            _ => text,
        };
        let upper = expanded.to_ascii_uppercase();
        let parts: Vec<&str> = upper.split_whitespace().collect();
        if parts.len() != 5 {
            return Err(refuse(
                text,
                format!(
                    "expected five cron fields (minute hour day-of-month month day-of-week), a macro such as \
                     @daily, or '@every <n><s|m|h|d>'; got {} field(s)",
                    parts.len()
                ),
            ));
        }
        let mut sets = [0u64; 5];
        for (i, part) in parts.iter().enumerate() {
            sets[i] = field(i, part).map_err(|why| {
                let (name, ..) = FIELDS[i];
                refuse(text, format!("bad {name} field {part:?}: {why}"))
            })?;
        }
        let weekdays = (sets[4] & 0x7f) | ((sets[4] >> 7) & 1);
        let cron = Cron {
            minutes: sets[0],
            hours: sets[1] as u32,
            days: sets[2] as u32,
            months: sets[3] as u16,
            weekdays: weekdays as u8,
            day_and: parts[2].starts_with('*') || parts[4].starts_with('*'),
            wall_clock: !parts[0].starts_with('*') && !parts[1].starts_with('*'),
        };
        if cron.day_and {
            // Both day fields must match: some month must be long enough for
            // the smallest day asked for, or the spec can never fire.
            let first_day = cron.days.trailing_zeros();
            let longest = (1..=12).filter(|m| cron.months & (1 << m) != 0).map(|m| MONTH_DAYS[m]).max().unwrap_or(0);
            if first_day > longest {
                return Err(refuse(
                    text,
                    format!(
                        "bad day-of-month field {:?}: no month it allows has that day, so it never fires",
                        parts[2]
                    ),
                ));
            }
        }
        Ok(cron)
    }

    /// Whether `(month, day, weekday)` is a day this spec fires on.
    pub fn matches_day(&self, day: u32, weekday: u32) -> bool {
        let dom = self.days & (1 << day) != 0;
        let dow = self.weekdays & (1 << weekday) != 0;
        if self.day_and {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// A canonical text of the sets: two specs with equal keys fire alike.
    pub fn key(&self) -> String {
        format!(
            "cron:{:x}/{:x}/{:x}/{:x}/{:x}/{}{}",
            self.minutes,
            self.hours,
            self.days,
            self.months,
            self.weekdays,
            u8::from(self.day_and),
            u8::from(self.wall_clock)
        )
    }
}

fn refuse(spec: &str, reason: String) -> Error {
    Error::InvalidSpec { spec: spec.to_owned(), reason }
}

/// The bit set of field `i` from its text (upper case).
fn field(i: usize, text: &str) -> std::result::Result<u64, String> {
    let mut set = 0u64;
    for term in text.split(',') {
        set |= term_set(i, term)?;
    }
    Ok(set)
}

fn term_set(i: usize, term: &str) -> std::result::Result<u64, String> {
    let (_, lo, hi) = FIELDS[i];
    let range = |a: u32, b: u32| -> u64 { (a..=b).fold(0u64, |s, v| s | (1 << v)) };
    if term == "*" {
        return Ok(range(lo, hi));
    }
    if let Some((base, step)) = term.split_once('/') {
        let step =
            number(step).filter(|n| *n > 0).ok_or_else(|| format!("the step {step:?} is not a whole number > 0"))?;
        // `a/n` runs from a to the field's end; `*/n` and `a-b/n` step through
        // the values the base names, in order.
        let values: Vec<u32> = if base != "*" && !base.contains('-') {
            let start = value(i, base)?;
            (start..=hi).collect()
        } else {
            let set = term_set(i, base)?;
            (lo..=hi).filter(|v| set & (1 << v) != 0).collect()
        };
        return Ok(values.iter().step_by(step as usize).fold(0u64, |s, v| s | (1 << v)));
    }
    if let Some((a, b)) = term.split_once('-') {
        let (a, b) = (value(i, a)?, value(i, b)?);
        if b < a {
            return Err(format!("the range {term:?} runs backwards"));
        }
        return Ok(range(a, b));
    }
    Ok(1 << value(i, term)?)
}

/// One value of field `i`: a number in its range, or a month or day name.
fn value(i: usize, text: &str) -> std::result::Result<u32, String> {
    let (name, lo, hi) = FIELDS[i];
    let named = match i {
        3 => MONTHS.iter().position(|m| *m == text).map(|p| p as u32 + 1),
        4 => DAYS.iter().position(|d| *d == text).map(|p| p as u32),
        _ => None,
    };
    if let Some(v) = named {
        return Ok(v);
    }
    match number(text) {
        Some(v) if (lo..=hi).contains(&v) => Ok(v),
        Some(v) => Err(format!("{v} is outside {lo}-{hi} for the {name}")),
        None => Err(format!("{text:?} is not a number{}", if i >= 3 { " or a name" } else { "" })),
    }
}

fn number(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > 9 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(set: u64) -> Vec<u32> {
        (0..64).filter(|v| set & (1 << v) != 0).collect()
    }

    #[test]
    fn fields_ranges_steps_lists_and_names() {
        let c = Cron::parse("*/15 9-17 1,15 JAN-mar MON-fri").unwrap();
        assert_eq!(bits(c.minutes), [0, 15, 30, 45]);
        assert_eq!(bits(u64::from(c.hours)), (9..=17).collect::<Vec<_>>());
        assert_eq!(bits(u64::from(c.days)), [1, 15]);
        assert_eq!(bits(u64::from(c.months)), [1, 2, 3]);
        assert_eq!(bits(u64::from(c.weekdays)), [1, 2, 3, 4, 5]);
        assert!(!c.day_and && !c.wall_clock, "the minute field starts with *");
        assert!(Cron::parse("0 9 * * *").unwrap().wall_clock);
        assert_eq!(bits(Cron::parse("5/20 * * * *").unwrap().minutes), [5, 25, 45]);
        assert_eq!(bits(Cron::parse("10-30/10 * * * *").unwrap().minutes), [10, 20, 30]);
        assert_eq!(bits(u64::from(Cron::parse("0 0 * * 7").unwrap().weekdays)), [0], "7 is Sunday");
        assert_eq!(bits(u64::from(Cron::parse("0 0 * * 5-7").unwrap().weekdays)), [0, 5, 6]);
        assert_eq!(Cron::parse("@weekly").unwrap(), Cron::parse("0 0 * * SUN").unwrap());
        assert_eq!(Cron::parse("@annually").unwrap().key(), Cron::parse("0 0 1 JAN *").unwrap().key());
        assert!(Cron::parse("* * * * *").unwrap().day_and);
        assert!(!Cron::parse("* 1 * * *").unwrap().wall_clock);
    }

    #[test]
    fn refusals_name_the_field() {
        let reason = |spec: &str| match Cron::parse(spec) {
            Err(Error::InvalidSpec { reason, .. }) => reason,
            other => panic!("{spec:?} gave {other:?}"),
        };
        assert!(reason("60 * * * *").starts_with("bad minute field \"60\""));
        assert!(reason("* 24 * * *").starts_with("bad hour field"));
        assert!(reason("* * 0 * *").starts_with("bad day-of-month field"));
        assert!(reason("* * * 13 *").starts_with("bad month field"));
        assert!(reason("* * * * 8").starts_with("bad day-of-week field"));
        assert!(reason("* * * * L").starts_with("bad day-of-week field"));
        assert!(reason("*/0 * * * *").contains("step"));
        assert!(reason("5-1 * * * *").contains("backwards"));
        assert!(reason("* * * *").starts_with("expected five cron fields"));
        assert!(reason("0 0 30 2 *").contains("never fires"));
        assert!(reason("0 0 31 4,6,9,11 *").contains("never fires"));
        assert!(reason("@often").contains("unknown macro"));
        assert!(Cron::parse("0 0 29 2 *").is_ok(), "leap years");
        assert!(Cron::parse("0 0 30 2 MON").is_ok(), "either day field: Mondays in February");
    }

    #[test]
    fn no_input_panics() {
        // A small deterministic fuzz over the grammar's alphabet.
        let alphabet = b"0123456789*/-, LJANMONSUNFRI@hourly7";
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 24) as usize;
            let text: String =
                (0..len).map(|k| alphabet[((x >> (k % 8 * 8)) as usize + k) % alphabet.len()] as char).collect();
            let _ = Cron::parse(&text);
        }
    }
}
