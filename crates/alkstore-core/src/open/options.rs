//! The options `alkstore.open(target, **options)` accepts (SPEC §2).
//!
//! Core parses the options every engine shares ([`OpenOptions`]); each
//! engine crate parses its own through [`EngineOptions`] (SQLite's busy
//! timeout, Postgres's pool size, …), so core knows no engine's knobs. The
//! binding, which knows every engine, passes their keys to
//! [`parse_options`] so an option of the wrong engine is told apart from an
//! unknown one, and the messages list every option.

use crate::error::{Error, Result};
use crate::rules::duration;

/// The options every engine shares, after validation.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenOptions {
    /// Safety-net re-poll interval of waiters, seconds.
    pub poll_interval_s: f64,
    /// Largest accepted payload, bytes of UTF-8 JSON text.
    pub max_payload_bytes: usize,
    /// `_must_exist` (private; the command line's inspection commands): open
    /// only a store that already exists at this build's schema version, and
    /// write nothing while opening — no tables, no schema, no migration, no
    /// journal-mode switch. Anything else is a `DatabaseError` saying why.
    pub must_exist: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions { poll_interval_s: 1.0, max_payload_bytes: 1 << 20, must_exist: false }
    }
}

/// A raw option value as the binding passes it.
#[derive(Debug, Clone, PartialEq)]
pub enum OptValue {
    /// A bool.
    Bool(bool),
    /// An int.
    Int(i64),
    /// A float.
    Float(f64),
    /// A str.
    Str(String),
}

impl OptValue {
    /// The Python type name of the value, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            OptValue::Bool(_) => "bool",
            OptValue::Int(_) => "int",
            OptValue::Float(_) => "float",
            OptValue::Str(_) => "str",
        }
    }
}

/// The type an option's value has, so that a value written as text (in a
/// URL's query string, [`crate::open::url_options`]) can be read as it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptKind {
    /// `true` / `false` (also `1` / `0`, `yes` / `no`, `on` / `off`).
    Bool,
    /// A whole number.
    Int,
    /// A number.
    Float,
    /// Text, as it is.
    Str,
}

/// One engine's own open options, parsed by its crate.
pub trait EngineOptions: Default {
    /// The engine as messages name it (`"SQLite"`, `"Postgres"`).
    const ENGINE: &'static str;
    /// The keys only this engine accepts, in the order messages list them.
    const KEYS: &'static [&'static str];
    /// The shared options, set by [`parse_options`].
    fn common_mut(&mut self) -> &mut OpenOptions;
    /// Sets one of [`EngineOptions::KEYS`]: a value of the wrong type is a
    /// TypeError ([`wrong_type`]), one out of range a ValueError ([`int_in`]).
    fn set(&mut self, key: &str, value: &OptValue) -> Result<()>;
    /// The type of the value of `key` (one of [`EngineOptions::KEYS`]), for
    /// a value given as text in a URL; text unless the engine says otherwise.
    fn kind(_key: &str) -> OptKind {
        OptKind::Str
    }
}

/// Every engine's (name, keys), in the order messages list them; the
/// binding knows them all.
pub type EngineKeys<'a> = &'a [(&'static str, &'static [&'static str])];

/// The shared keys, listed after the engines'.
pub(crate) const COMMON: &[&str] = &["poll_interval_s", "max_payload_bytes"];

/// The type of a shared key's value (one of [`COMMON`]).
pub(crate) fn common_kind(key: &str) -> OptKind {
    if key == "poll_interval_s" {
        OptKind::Float
    } else {
        OptKind::Int
    }
}
/// Accepted on every engine but not offered in messages: not part of the API.
const PRIVATE: &[&str] = &["_must_exist"];

/// Validates `options` for engine `E`, key by key in the caller's order: an
/// unknown key is a TypeError listing every option, a key of another engine
/// in `engines` a ValueError naming both, a bad value as the key's parser says.
pub fn parse_options<E: EngineOptions>(options: &[(String, OptValue)], engines: EngineKeys<'_>) -> Result<E> {
    let mut o = E::default();
    for (key, value) in options {
        let k = key.as_str();
        if COMMON.contains(&k) || PRIVATE.contains(&k) {
            set_common(o.common_mut(), k, value)?;
        } else if E::KEYS.contains(&k) {
            o.set(k, value)?;
        } else if let Some((other, _)) = engines.iter().find(|(_, keys)| keys.contains(&k)) {
            return Err(Error::Value(format!("option {k:?} applies to {other} only, not {}", E::ENGINE)));
        } else {
            let all: Vec<&str> = engines.iter().flat_map(|(_, keys)| keys.iter()).chain(COMMON).copied().collect();
            return Err(Error::Type(format!("open() got an unexpected option {k:?}; accepted: {}", all.join(", "))));
        }
    }
    Ok(o)
}

fn set_common(o: &mut OpenOptions, k: &str, value: &OptValue) -> Result<()> {
    match (k, value) {
        ("_must_exist", OptValue::Bool(b)) => o.must_exist = *b,
        ("_must_exist", v) => return Err(wrong_type(k, "must be a bool", v)),
        ("poll_interval_s", OptValue::Int(_) | OptValue::Float(_)) => {
            let v = match value {
                OptValue::Int(i) => *i as f64,
                OptValue::Float(f) => *f,
                _ => f64::NAN,
            };
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::Value(format!("poll_interval_s must be a finite number > 0, got {v}")));
            }
            o.poll_interval_s = duration::wait("poll_interval_s", v)?.as_secs_f64();
        }
        ("poll_interval_s", v) => return Err(wrong_type(k, "must be a number of seconds (int or float)", v)),
        (_, v) => {
            let n = int_in(k, v, 1, i64::MAX, "must be an int >= 1")?;
            o.max_payload_bytes = usize::try_from(n).unwrap_or(usize::MAX);
        }
    }
    Ok(())
}

/// The TypeError for option `k` given a value of the wrong type; `expect`
/// says what it takes ("must be a bool").
pub fn wrong_type(k: &str, expect: &str, v: &OptValue) -> Error {
    Error::Type(format!("option {k:?} {expect}, got {}", v.type_name()))
}

/// An int option in `lo..=hi`: a TypeError when `v` is no int, a ValueError
/// when it is out of range; `expect` says both ("must be an int in 1..=1000").
pub fn int_in(k: &str, v: &OptValue, lo: i64, hi: i64, expect: &str) -> Result<i64> {
    match v {
        OptValue::Int(n) if (lo..=hi).contains(n) => Ok(*n),
        OptValue::Int(n) => Err(Error::Value(format!("option {k:?} {expect}, got {n}"))),
        v => Err(wrong_type(k, expect, v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine with one knob, to exercise the shared parse.
    #[derive(Default)]
    struct Knob {
        common: OpenOptions,
        size: i64,
    }

    impl EngineOptions for Knob {
        const ENGINE: &'static str = "Knob";
        const KEYS: &'static [&'static str] = &["size"];
        fn common_mut(&mut self) -> &mut OpenOptions {
            &mut self.common
        }
        fn set(&mut self, key: &str, value: &OptValue) -> Result<()> {
            self.size = int_in(key, value, 1, 10, "must be an int in 1..=10")?;
            Ok(())
        }
    }

    const ENGINES: EngineKeys<'static> = &[("Knob", &["size"]), ("Other", &["depth"])];

    fn one(k: &str, v: OptValue) -> Result<Knob> {
        parse_options::<Knob>(&[(k.into(), v)], ENGINES)
    }

    #[test]
    fn keys_are_shared_own_other_or_unknown() -> Result<()> {
        assert_eq!(one("size", OptValue::Int(4))?.size, 4);
        assert_eq!(
            one("depth", OptValue::Int(1)).err(),
            Some(Error::Value("option \"depth\" applies to Other only, not Knob".into()))
        );
        assert_eq!(
            one("bogus", OptValue::Int(1)).err(),
            Some(Error::Type(
                "open() got an unexpected option \"bogus\"; accepted: size, depth, poll_interval_s, max_payload_bytes"
                    .into()
            ))
        );
        assert!(one("_must_exist", OptValue::Bool(true))?.common.must_exist);
        assert!(!parse_options::<Knob>(&[], ENGINES)?.common.must_exist);
        Ok(())
    }

    #[test]
    fn wrong_types_are_type_errors_and_ranges_value_errors() -> Result<()> {
        for k in ["size", "max_payload_bytes"] {
            assert!(matches!(one(k, OptValue::Bool(true)), Err(Error::Type(m)) if m.contains(k)), "{k}");
            assert!(matches!(one(k, OptValue::Float(5.0)), Err(Error::Type(m)) if m.contains(k)), "{k}");
            assert!(matches!(one(k, OptValue::Int(-1)), Err(Error::Value(m)) if m.contains(k)), "{k}");
        }
        assert!(matches!(one("_must_exist", OptValue::Int(1)), Err(Error::Type(_))));
        assert!(matches!(one("poll_interval_s", OptValue::Bool(true)), Err(Error::Type(_))));
        for bad in [0.0, -1.0, 1e20, f64::NAN, (duration::MAX_DURATION_S + 1) as f64] {
            let r = one("poll_interval_s", OptValue::Float(bad));
            assert!(matches!(r, Err(Error::Value(m)) if m.contains("poll_interval_s")), "{bad}");
        }
        let max = one("poll_interval_s", OptValue::Int(duration::MAX_DURATION_S))?;
        assert_eq!(max.common.poll_interval_s, 3_155_760_000.0);
        Ok(())
    }
}
