//! `open()` options written in a Postgres URL's query string, so that every
//! tool that takes a URL — the command line, the dashboard, a framework
//! setting, an environment variable — can say them:
//! `postgresql://app@pooler:6432/db?statements=unnamed&schema=jobs`.
//!
//! The keys are the keyword names of `alkstore.open`, spelled the same
//! (`statements`, `schema`, `max_connections`, `listen`, `listen_url`,
//! `poll_interval_s`, `max_payload_bytes`, …); none is a libpq parameter, so
//! the rest of the query string (`sslmode`, `application_name`, …) still
//! goes to the driver as it was. Values are percent-decoded and read as the
//! option's type ([`OptKind`]). An option given both in the URL and as a
//! keyword must have the same value in both: which one was meant cannot be
//! known, so a difference is refused rather than one silently winning.
//! Private options (`_must_exist`) are not read from a URL.

use crate::error::{Error, Result};
use crate::open::options::{common_kind, parse_options, EngineKeys, EngineOptions, OptKind, OptValue, COMMON};
use crate::open::url::{percent_decode, UrlParts};

/// `url` without its `open()` options, and those options in URL order,
/// each value read as its key's type. Keys of any engine are taken out
/// (one of another engine is then refused by [`parse_options`], by name);
/// any other key is left for the driver.
pub fn split_url_options<E: EngineOptions>(
    url: &str,
    engines: EngineKeys<'_>,
) -> Result<(String, Vec<(String, OptValue)>)> {
    let Some(parts) = UrlParts::parse(url) else { return Ok((url.to_owned(), Vec::new())) };
    let Some(query) = parts.query.clone() else { return Ok((url.to_owned(), Vec::new())) };
    let is_option = |k: &str| COMMON.contains(&k) || engines.iter().any(|(_, keys)| keys.contains(&k));
    let mut options: Vec<(String, OptValue)> = Vec::new();
    let mut kept: Vec<&str> = Vec::new();
    for pair in parts.pairs(url) {
        if !is_option(&pair.key) {
            kept.push(&url[pair.pair]);
            continue;
        }
        let key = pair.key;
        if options.iter().any(|(k, _)| *k == key) {
            return Err(Error::Value(format!("URL option {key:?} is given more than once")));
        }
        let Some(value) = pair.value else {
            return Err(Error::Value(format!("URL option {key:?} has no value (write {key}=…)")));
        };
        let kind = if COMMON.contains(&key.as_str()) {
            common_kind(&key)
        } else if E::KEYS.contains(&key.as_str()) {
            E::kind(&key)
        } else {
            OptKind::Str
        };
        let value = read(&key, kind, &percent_decode(&url[value]))?;
        options.push((key, value));
    }
    let mut clean = url[..query.start - 1].to_owned();
    if !kept.is_empty() {
        clean.push('?');
        clean.push_str(&kept.join("&"));
    }
    Ok((clean, options))
}

/// `text` read as a value of `kind`. The message never quotes the text:
/// a value may be a URL with a password (`listen_url`).
fn read(key: &str, kind: OptKind, text: &str) -> Result<OptValue> {
    let bad = |what: &str| Error::Value(format!("URL option {key:?} must be {what}"));
    Ok(match kind {
        OptKind::Str => OptValue::Str(text.to_owned()),
        OptKind::Int => OptValue::Int(text.trim().parse().map_err(|_| bad("a whole number"))?),
        OptKind::Float => OptValue::Float(text.trim().parse().map_err(|_| bad("a number"))?),
        OptKind::Bool => match text.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => OptValue::Bool(true),
            "false" | "0" | "no" | "off" => OptValue::Bool(false),
            _ => return Err(bad("true or false")),
        },
    })
}

/// Whether two values of one option are the same (an int and a float of
/// the same number are).
fn same(a: &OptValue, b: &OptValue) -> bool {
    match (a, b) {
        (OptValue::Int(i), OptValue::Float(f)) | (OptValue::Float(f), OptValue::Int(i)) => *i as f64 == *f,
        _ => a == b,
    }
}

/// The options of a store opened at the Postgres URL `url` with the keyword
/// options `keywords`: the URL without its options (what the driver gets),
/// and the engine's options parsed from both. An option in both places must
/// have the same value in both.
pub fn parse_url_options<E: EngineOptions>(
    url: &str,
    keywords: &[(String, OptValue)],
    engines: EngineKeys<'_>,
) -> Result<(String, E)> {
    let (clean, from_url) = split_url_options::<E>(url, engines)?;
    let mut all = Vec::with_capacity(from_url.len() + keywords.len());
    for (key, value) in from_url {
        match keywords.iter().find(|(k, _)| *k == key) {
            Some((_, kw)) if same(kw, &value) => {}
            Some(_) => {
                return Err(Error::Value(format!(
                    "option {key:?} is given both in the URL and as an open() argument, with different values; \
                     give it once"
                )))
            }
            None => all.push((key, value)),
        }
    }
    all.extend(keywords.iter().cloned());
    Ok((clean, parse_options::<E>(&all, engines)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::open::options::{int_in, OpenOptions};

    /// An engine with a knob of each kind.
    #[derive(Default, Debug)]
    struct Knobs {
        common: OpenOptions,
        size: i64,
        on: bool,
        name: String,
    }

    impl EngineOptions for Knobs {
        const ENGINE: &'static str = "Knobs";
        const KEYS: &'static [&'static str] = &["size", "on", "name"];
        fn common_mut(&mut self) -> &mut OpenOptions {
            &mut self.common
        }
        fn set(&mut self, key: &str, value: &OptValue) -> Result<()> {
            match (key, value) {
                ("size", v) => self.size = int_in(key, v, 1, 10, "must be an int in 1..=10")?,
                ("on", OptValue::Bool(b)) => self.on = *b,
                ("name", OptValue::Str(s)) => self.name = s.clone(),
                _ => return Err(Error::Type(format!("bad {key}"))),
            }
            Ok(())
        }
        fn kind(key: &str) -> OptKind {
            match key {
                "size" => OptKind::Int,
                "on" => OptKind::Bool,
                _ => OptKind::Str,
            }
        }
    }

    const ENGINES: EngineKeys<'static> = &[("Knobs", &["size", "on", "name"]), ("Other", &["depth"])];

    fn parse(url: &str, kw: &[(&str, OptValue)]) -> Result<(String, Knobs)> {
        let kw: Vec<(String, OptValue)> = kw.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
        parse_url_options::<Knobs>(url, &kw, ENGINES)
    }

    #[test]
    fn options_leave_the_url_and_the_rest_stays() -> Result<()> {
        let (url, o) =
            parse("postgresql://u:p?w@h/db?sslmode=disable&size=4&on=yes&name=a%26b&poll_interval_s=2", &[])?;
        assert_eq!(url, "postgresql://u:p?w@h/db?sslmode=disable");
        assert_eq!((o.size, o.on, o.name.as_str(), o.common.poll_interval_s), (4, true, "a&b", 2.0));
        let (url, _) = parse("postgresql://h/db?size=4", &[])?;
        assert_eq!(url, "postgresql://h/db");
        let (url, _) = parse("postgresql://h/db?application_name=x", &[])?;
        assert_eq!(url, "postgresql://h/db?application_name=x");
        let (url, o) = parse("postgresql://h/db", &[("size", OptValue::Int(3))])?;
        assert_eq!((url.as_str(), o.size), ("postgresql://h/db", 3));
        Ok(())
    }

    #[test]
    fn both_places_must_agree() -> Result<()> {
        assert_eq!(parse("postgresql://h/db?size=4", &[("size", OptValue::Int(4))])?.1.size, 4);
        let (_, o) = parse("postgresql://h/db?poll_interval_s=2", &[("poll_interval_s", OptValue::Int(2))])?;
        assert_eq!(o.common.poll_interval_s, 2.0);
        let e = parse("postgresql://h/db?size=4", &[("size", OptValue::Int(5))]).unwrap_err();
        assert!(matches!(&e, Error::Value(m) if m.contains("\"size\"") && m.contains("URL")), "{e:?}");
        Ok(())
    }

    #[test]
    fn bad_values_are_refused_without_quoting_them() {
        for (url, fragment) in [
            ("postgresql://h/db?size=big", "\"size\" must be a whole number"),
            ("postgresql://h/db?size=11", "size"),
            ("postgresql://h/db?on=maybe", "\"on\" must be true or false"),
            ("postgresql://h/db?poll_interval_s=x", "\"poll_interval_s\" must be a number"),
            ("postgresql://h/db?size=1&size=2", "more than once"),
            ("postgresql://h/db?size", "has no value"),
            ("postgresql://h/db?depth=3", "applies to Other only"),
        ] {
            let e = parse(url, &[]).unwrap_err().to_string();
            assert!(e.contains(fragment), "{url}: {e}");
        }
        let e = parse("postgresql://h/db?name=s3cret&name=x", &[]).unwrap_err().to_string();
        assert!(!e.contains("s3cret"), "{e}");
        // Private options are not options in a URL: they stay for the driver (which refuses them).
        let (url, _) = parse("postgresql://h/db?_must_exist=true", &[]).unwrap();
        assert_eq!(url, "postgresql://h/db?_must_exist=true");
    }
}
