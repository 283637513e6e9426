//! Passwords out of everything alkstore shows (SPEC §12: "a message never
//! leaks a password from a URL").
//!
//! A connection URL carries a secret in three places: the credentials
//! (`postgresql://user:pw@host/db`), the query string (`?password=pw`,
//! `?sslpassword=pw`; libpq's keys, matched here case-insensitively so an
//! odd spelling that a driver refuses — and quotes in its error — is masked
//! too), and the password of a `listen_url` given in the query string.
//! Where each lies is read as the driver reads it ([`crate::open::url`]):
//! `postgresql://u:pw#x@h/db` has the password `pw#x`, though a generic URL
//! reader would end the host part at the `#`. [`redact_url`] masks those
//! fields for a URL shown in a message or a `repr`; [`Redactor`] puts the
//! masked URL in place of the URL wherever a message quotes it, and touches
//! nothing else: replacing the password's *text* anywhere in a message
//! would spell a short password out around the masks.

use std::ops::Range;

use crate::error::Error;
use crate::open::url::{percent_decode, UrlParts};

/// What a secret is replaced with.
const MASK: &str = "***";

/// Query-string keys whose value is a secret (lowercase).
const SECRET_KEYS: &[&str] = &["password", "sslpassword"];

/// The query-string key whose value is a URL of its own (alkstore's option).
const NESTED_URL_KEY: &str = "listen_url";

/// The edits that mask `url`'s secrets: byte ranges and what replaces each,
/// in order, not overlapping.
fn edits(url: &str) -> Vec<(Range<usize>, String)> {
    let Some(parts) = UrlParts::parse(url) else { return Vec::new() };
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    if let Some(password) = parts.masked_password(url) {
        edits.push((password, MASK.to_owned()));
    }
    for pair in parts.all_pairs(url) {
        let Some(value) = pair.value else { continue };
        let key = pair.key.to_ascii_lowercase();
        if SECRET_KEYS.contains(&key.as_str()) {
            edits.push((value, MASK.to_owned()));
        } else if key == NESTED_URL_KEY {
            let inner = percent_decode(&url[value.clone()]);
            let shown = redact_url(&inner);
            if shown != inner {
                // Escaped so the outer query string still splits as it did.
                edits.push((value, shown.replace('%', "%25").replace('&', "%26")));
            }
        }
    }
    edits.sort_by_key(|(range, _)| (range.start, std::cmp::Reverse(range.end)));
    // An edit inside an earlier one (a query string read within the
    // masked credentials) is covered by it.
    let mut kept: Vec<(Range<usize>, String)> = Vec::with_capacity(edits.len());
    for (range, text) in edits {
        match kept.last_mut() {
            Some((last, _)) if range.start < last.end => last.end = last.end.max(range.end),
            _ => kept.push((range, text)),
        }
    }
    kept
}

/// `url` with every password masked as `***`: the credentials' (as the
/// driver reads them), those of the `password` / `sslpassword` query
/// parameters (any case), and that of a `listen_url` query parameter. A
/// text that is not a URL comes back unchanged.
pub fn redact_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut last = 0;
    for (range, text) in edits(url) {
        out.push_str(&url[last..range.start]);
        out.push_str(&text);
        last = range.end;
    }
    out.push_str(&url[last..]);
    out
}

/// Keeps a URL's passwords out of any message: wherever a driver's or the
/// server's message quotes the URL, the masked URL stands in its place.
#[derive(Clone, Default)]
pub struct Redactor {
    /// The URL as given, when it has a secret to mask.
    url: Option<String>,
    /// The same, masked.
    shown: String,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Redactor { .. }")
    }
}

impl Redactor {
    /// A redactor for the URL `url`.
    pub fn for_url(url: &str) -> Self {
        let shown = redact_url(url);
        Redactor { url: (shown != url).then(|| url.to_owned()), shown }
    }

    /// `text` with every quotation of the URL replaced by its masked form.
    pub fn scrub_text(&self, text: &str) -> String {
        match &self.url {
            Some(url) if text.contains(url.as_str()) => text.replace(url.as_str(), &self.shown),
            _ => text.to_owned(),
        }
    }

    /// `e` with its message scrubbed.
    pub fn scrub(&self, e: Error) -> Error {
        if self.url.is_none() {
            return e;
        }
        match e {
            Error::Database { code, message } => Error::Database { code, message: self.scrub_text(&message) },
            Error::ConnectionLost { message } => Error::ConnectionLost { message: self.scrub_text(&message) },
            Error::Transaction(m) => Error::Transaction(self.scrub_text(&m)),
            Error::Value(m) => Error::Value(self.scrub_text(&m)),
            Error::Type(m) => Error::Type(self.scrub_text(&m)),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_the_password_the_driver_reads() {
        for (url, shown) in [
            ("postgresql://bob:s3cret@h:5432/db", "postgresql://bob:***@h:5432/db"),
            ("postgresql://u:pw#x@host/db", "postgresql://u:***@host/db"),
            ("postgresql://u:p/w@host/db", "postgresql://u:***@host/db"),
            ("postgresql://u:p?w@host/db?sslmode=disable", "postgresql://u:***@host/db?sslmode=disable"),
            ("postgresql://u:#/?@host/db", "postgresql://u:***@host/db"),
            ("postgresql://u:p%40ss%2F@host/db", "postgresql://u:***@host/db"),
            ("postgresql://u:p@ss@host/db", "postgresql://u:***@host/db"),
            ("postgresql://u:p@s/s@host/db", "postgresql://u:***@host/db"),
            ("postgresql://u:p@ss?w@host/db", "postgresql://u:***@host/db"),
            // The driver's reading, odd as it is: the first `@` ends the credentials.
            ("postgresql://h:5432/db?application_name=a@b", "postgresql://h:***@b"),
            ("postgresql://u:a:b@host/db", "postgresql://u:***@host/db"),
            ("postgresql://u:s3cret@h1:5432,h2:5433/db", "postgresql://u:***@h1:5432,h2:5433/db"),
            ("postgresql://u:s3cret@[::1]:5432/db", "postgresql://u:***@[::1]:5432/db"),
            ("postgresql://u:s3cret@[2001:db8::1],[::1]:5433/db", "postgresql://u:***@[2001:db8::1],[::1]:5433/db"),
            ("postgres://u:%E2%98%83@h", "postgres://u:***@h"),
            ("postgresql://u:@h/db", "postgresql://u:***@h/db"),
            ("postgresql://bob@h/db", "postgresql://bob@h/db"),
            ("postgresql://h/db", "postgresql://h/db"),
            ("mysql://bob:s3cret@h/db", "mysql://bob:***@h/db"),
            ("app.db", "app.db"),
            ("", ""),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    #[test]
    fn masks_secret_query_parameters_to_the_next_ampersand() {
        for (url, shown) in [
            ("postgresql://u@h/db?password=s3cret", "postgresql://u@h/db?password=***"),
            ("postgresql://u@h/db?password=pw#x", "postgresql://u@h/db?password=***"),
            ("postgresql://u@h/db?password=a=b&x=1", "postgresql://u@h/db?password=***&x=1"),
            ("postgresql://u@h/db?sslmode&password=x", "postgresql://u@h/db?sslmode&password=***"),
            (
                "postgres://u@h/db?connect_timeout=2&PassWord=a&sslpassword=b&SSLPASSWORD=c#frag",
                "postgres://u@h/db?connect_timeout=2&PassWord=***&sslpassword=***&SSLPASSWORD=***",
            ),
            ("postgres://u:x@h?%70assword=s3cret", "postgres://u:***@h?%70assword=***"),
            ("postgresql://u:p?password=x@h/db", "postgresql://u:***@h/db"),
            // libpq reads a query string here, the driver a user name: masked either way.
            ("postgresql://h/db?password=x@y", "postgresql://h/db?password=***"),
            // Keys that merely contain the word, and a password-looking host, are not secrets.
            ("postgres://h/db?passwordless=1&user=p", "postgres://h/db?passwordless=1&user=p"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    #[test]
    fn masks_the_password_of_a_listen_url_in_the_query() {
        for (url, shown) in [
            (
                "postgresql://u@p/db?listen_url=postgresql://u:s3cret@d/db&statements=unnamed",
                "postgresql://u@p/db?listen_url=postgresql://u:***@d/db&statements=unnamed",
            ),
            (
                "postgresql://u@p/db?listen_url=postgresql%3A%2F%2Fu%3As%2533cret%40d%2Fdb%3Fx%3D1%26y%3D2",
                "postgresql://u@p/db?listen_url=postgresql://u:***@d/db?x=1%26y=2",
            ),
            ("postgresql://u@p/db?listen_url=postgresql://d/db", "postgresql://u@p/db?listen_url=postgresql://d/db"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    #[test]
    fn the_redactor_replaces_the_url_and_nothing_else() {
        // A one-letter password: masking every `t` would spell it out around the masks.
        let url = "postgresql://u:t@h:1/db";
        let r = Redactor::for_url(url);
        assert_eq!(
            r.scrub_text(&format!("could not connect to {url}: timeout; {url}")),
            "could not connect to postgresql://u:***@h:1/db: timeout; postgresql://u:***@h:1/db"
        );
        assert_eq!(r.scrub_text("the text t stays"), "the text t stays");
        let e = r.scrub(Error::database(None, format!("bad {url}")));
        assert_eq!(e, Error::database(None, "bad postgresql://u:***@h:1/db"));
        let r = Redactor::for_url("postgresql://bob@h/db");
        assert_eq!(r.scrub_text("nothing to hide"), "nothing to hide");
    }
}
