//! What a payload's JSON text may hold, beyond its size: the limits that
//! keep every stored payload readable (docs/adr/0003-json-payloads.md,
//! "Revision: limits every reader decodes").
//!
//! The reader is CPython's `json.loads`, in a Worker's thread: it recurses
//! once per nested array or object and gives up near 1,000 (the recursion
//! limit, less the frames below it); it reads an integer literal with
//! `int()`, which refuses more than 4,300 digits by default (CPython's
//! guard against quadratic conversions); and it reads any other number
//! with `float()`, which turns a magnitude past `f64::MAX` into `inf`. A
//! payload past one of these cannot come back as the value it was, so
//! every path that writes one refuses it, with the same rule:
//!
//! - the binding's encoder, for Python values (`q.enqueue`, `conn=`, tasks,
//!   the outbox, stream events, schedules, `ack(result=)`): it stops at
//!   [`MAX_DEPTH`] as it walks (its guard against cycles), and the Store
//!   checks the text it wrote with [`check`];
//! - the Store, for every text it is handed ([`check`], after the byte bound);
//! - the Postgres SQL function `<schema>.enqueue`, which renders
//!   [`MAX_DEPTH`], [`MAX_INT_DIGITS`] and [`FLOAT_OVERFLOW`] into its own
//!   jsonpath test of the same rule (an engine test compares the two verdicts
//!   on a corpus of edge cases).
//!
//! One pass over the bytes, no allocation: strings are skipped, brackets
//! counted, and a number is parsed only when its magnitude is within a
//! power of ten of the float limit.

use std::fmt;

/// The most arrays and objects nested inside one another: `[[1]]` nests 2.
/// CPython's decoder fails near 1,000 less the caller's stack, so 500 leaves
/// a handler's frames room; serde_json's default of 128 is not involved (no
/// payload is ever parsed into a serde tree).
pub const MAX_DEPTH: usize = 500;

/// The most digits of an integer literal (a number without `.`, `e` or
/// `E`; the sign does not count): CPython's default
/// `sys.int_info.default_max_str_digits`, the longest `int()` reads
/// unless the process raised it.
pub const MAX_INT_DIGITS: usize = 4300;

/// The least magnitude that reads as infinity as a double: 2^1024 − 2^970,
/// halfway between `f64::MAX` and 2^1024, which rounds (to even) up. A
/// number with a fraction or an exponent at or past it would come back as
/// `inf`; one below reads as a finite float.
pub const FLOAT_OVERFLOW: &str = "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792";

/// Why a payload's text is refused: the first limit it breaks, nesting
/// before numbers (the order the SQL function checks them in too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Arrays and objects nested more than [`MAX_DEPTH`] deep.
    TooDeep,
    /// An integer literal of more than [`MAX_INT_DIGITS`] digits (the first one).
    LongInt {
        /// How many digits it has.
        digits: usize,
    },
    /// A number with a fraction or exponent whose magnitude reaches
    /// [`FLOAT_OVERFLOW`]: it would read as infinity.
    FloatOverflow,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::TooDeep => write!(f, "nests arrays and objects deeper than the limit of {MAX_DEPTH}"),
            Refusal::LongInt { digits } => write!(
                f,
                "has an integer of {digits} digits, over the limit of {MAX_INT_DIGITS} (the most Python's int() reads)"
            ),
            Refusal::FloatOverflow => {
                f.write_str("has a number past the float range (about 1.8e308), which would read as infinity")
            }
        }
    }
}

/// Checks JSON `text` against the limits: the first [`Refusal`], or Ok.
///
/// Text that is not JSON is not this rule's business (the encoder never
/// writes it, and the SQL function takes `jsonb`): what it cannot make
/// sense of it passes over.
pub fn check(text: &str) -> Result<(), Refusal> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut number: Option<Refusal> = None;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = string_end(b, i + 1),
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(Refusal::TooDeep);
                }
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let (end, refused) = scan_number(b, i);
                if number.is_none() {
                    number = refused;
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    number.map_or(Ok(()), Err)
}

/// The index just past the string whose first character is at `i`: the
/// next quote or backslash found by `memchr` (a word at a time), so a
/// payload's text, mostly strings, costs little more than a `memchr` of it.
fn string_end(b: &[u8], mut i: usize) -> usize {
    while let Some(at) = b.get(i..).and_then(|rest| memchr::memchr2(b'"', b'\\', rest)) {
        if b[i + at] == b'"' {
            return i + at + 1;
        }
        // An escape is ASCII: skipping one byte steps over `\"` and `\\`.
        i += at + 2;
    }
    b.len()
}

/// The number token starting at `start`: where it ends, and its refusal if any.
fn scan_number(b: &[u8], start: usize) -> (usize, Option<Refusal>) {
    let digits = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let int_start = if b[start] == b'-' { start + 1 } else { start };
    let int_end = digits(int_start);
    let mut end = int_end;
    let mut frac = None;
    if end < b.len() && b[end] == b'.' {
        let f_end = digits(end + 1);
        frac = Some((end + 1, f_end));
        end = f_end;
    }
    let mut exp: Option<(usize, usize)> = None;
    if end < b.len() && (b[end] == b'e' || b[end] == b'E') {
        let mut e = end + 1;
        if e < b.len() && (b[e] == b'+' || b[e] == b'-') {
            e += 1;
        }
        let e_end = digits(e);
        exp = Some((end + 1, e_end));
        end = e_end;
    }
    if frac.is_none() && exp.is_none() {
        let n = int_end - int_start;
        return (end, (n > MAX_INT_DIGITS).then_some(Refusal::LongInt { digits: n }));
    }
    // The decimal exponent of the leading nonzero digit tells all but the
    // numbers within a power of ten of the limit, which are parsed.
    let int_digits = &b[int_start..int_end];
    let lead = if let Some(p) = int_digits.iter().position(|&d| d != b'0') {
        to_i64(int_digits.len() - p) - 1
    } else {
        let Some((fs, fe)) = frac else { return (end, None) };
        match b[fs..fe].iter().position(|&d| d != b'0') {
            Some(p) => -to_i64(p) - 1,
            None => return (end, None), // zero, whatever its exponent
        }
    };
    let scale = exp.map_or(0, |(s, e)| exponent(&b[s..e]));
    let magnitude = lead.saturating_add(scale);
    let over = match magnitude {
        m if m < 308 => false,
        m if m > 308 => true,
        _ => std::str::from_utf8(&b[start..end]).ok().and_then(|t| t.parse::<f64>().ok()).is_some_and(f64::is_infinite),
    };
    (end, over.then_some(Refusal::FloatOverflow))
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// An exponent's value (`+12`, `-3`), saturating: `1e99999999999999999999`
/// is as infinite as `1e400`.
fn exponent(t: &[u8]) -> i64 {
    let (neg, digits) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let v = digits.iter().fold(0i64, |acc, d| acc.saturating_mul(10).saturating_add(i64::from(d - b'0')));
    if neg {
        -v
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize, inner: &str) -> String {
        format!("{}{inner}{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn nesting_is_counted_in_arrays_and_objects_outside_strings() {
        assert_eq!(check(&nested(MAX_DEPTH, "1")), Ok(()));
        assert_eq!(check(&nested(MAX_DEPTH, "")), Ok(()));
        assert_eq!(check(&nested(MAX_DEPTH + 1, "")), Err(Refusal::TooDeep));
        assert_eq!(check(&nested(3000, "1")), Err(Refusal::TooDeep));
        let objects = format!("{}1{}", "{\"a\":".repeat(MAX_DEPTH), "}".repeat(MAX_DEPTH));
        assert_eq!(check(&objects), Ok(()));
        assert_eq!(check(&format!("[{objects}]")), Err(Refusal::TooDeep));
        // Brackets and quotes inside strings are text.
        let text = format!("[\"{}\\\"{}\"]", "[".repeat(2000), "{".repeat(2000));
        assert_eq!(check(&text), Ok(()));
        // Siblings do not add up.
        assert_eq!(check(&format!("[{}]", vec![nested(MAX_DEPTH - 1, ""); 3].join(","))), Ok(()));
    }

    #[test]
    fn integers_beyond_python_s_digit_limit_are_refused() {
        let int = |n: usize| format!("[{}]", "9".repeat(n));
        assert_eq!(check(&int(MAX_INT_DIGITS)), Ok(()));
        assert_eq!(check(&format!("-{}", "9".repeat(MAX_INT_DIGITS))), Ok(()), "the sign is not a digit");
        assert_eq!(check(&int(MAX_INT_DIGITS + 1)), Err(Refusal::LongInt { digits: MAX_INT_DIGITS + 1 }));
        assert_eq!(check(&format!("{{\"n\":-1{}}}", "0".repeat(5000))), Err(Refusal::LongInt { digits: 5001 }));
        // The first one is named.
        assert_eq!(
            check(&format!("[{},{}]", "1".repeat(4400), "1".repeat(4500))),
            Err(Refusal::LongInt { digits: 4400 })
        );
        assert_eq!(check(&format!("\"{}\"", "1".repeat(9000))), Ok(()), "digits in a string");
    }

    #[test]
    fn floats_must_stay_finite() {
        for ok in [
            "1e308",
            "-1e308",
            "1.7976931348623157e308",
            "0e99999",
            "0.0e400",
            "1e-400",
            "-0",
            "-0.0",
            "123.456e-7",
            "0.001e310",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        for inf in ["1e309", "-1e309", "1e5000", "1.8e308", "10e308", "1e99999999999999999999999", "0.1e310"] {
            assert_eq!(check(&format!("{{\"args\":[{inf}]}}")), Err(Refusal::FloatOverflow), "{inf}");
        }
        // Exactly at the limit (the halfway point, rounded to even: up) and just below.
        assert_eq!(check(&format!("{FLOAT_OVERFLOW}.0")), Err(Refusal::FloatOverflow));
        let below = format!("{}1.9", &FLOAT_OVERFLOW[..FLOAT_OVERFLOW.len() - 1]);
        assert_eq!(check(&below), Ok(()));
        assert_eq!(below.parse::<f64>().ok(), Some(f64::MAX));
        // A plain integer that large is an int, read exactly.
        assert_eq!(check(&format!("1{}", "0".repeat(400))), Ok(()));
    }

    #[test]
    fn the_float_limit_is_where_doubles_overflow() {
        assert_eq!(FLOAT_OVERFLOW.len(), 309);
        assert!(FLOAT_OVERFLOW.parse::<f64>().is_ok_and(f64::is_infinite));
        assert_eq!(format!("{:.0}", f64::MAX).len(), FLOAT_OVERFLOW.len());
        assert!(format!("{:.0}", f64::MAX).as_str() < FLOAT_OVERFLOW);
    }

    #[test]
    fn nesting_is_named_before_numbers() {
        assert_eq!(check(&format!("[1e999,{}]", nested(MAX_DEPTH, ""))), Err(Refusal::TooDeep));
    }

    #[test]
    fn escapes_and_unicode_pass() {
        for ok in [r#""\ud800""#, r#""\u00e9\ud83d\ude00""#, "\"é😀\"", r#"{"\\":"\"]"}"#, r#""\u0000""#] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        // Not JSON: passed over, never a panic.
        for odd in ["\"abc\\", "\"abc", "[\"\\", "-", "1e", "1.e+", "]]]", "\u{0}"] {
            assert_eq!(check(odd), Ok(()), "{odd:?}");
        }
        assert_eq!(check(&format!("[\"{}\\\"\", 1e999]", "x".repeat(100))), Err(Refusal::FloatOverflow));
    }
}
