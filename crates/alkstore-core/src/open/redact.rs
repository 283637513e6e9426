//! Passwords out of everything alkstore shows (SPEC §12: "a message never
//! leaks a password from a URL").
//!
//! A connection URL carries a secret in two places: the userinfo
//! (`postgresql://user:pw@host/db`) and the query string (`?password=pw`,
//! `?sslpassword=pw`; libpq's keys, matched here case-insensitively so an
//! odd spelling that a driver refuses — and quotes in its error — is masked
//! too). [`secret_spans`] is the one place that knows where they are:
//! [`redact_url`] masks them for a URL shown in a message or a `repr`, and
//! [`Redactor`] removes their text (raw and percent-decoded) from any
//! message a driver or the server produces.

use std::ops::Range;

use crate::error::Error;

/// What a secret is replaced with.
const MASK: &str = "***";

/// Query-string keys whose value is a secret (lowercase).
const SECRET_KEYS: &[&str] = &["password", "sslpassword"];

/// The byte ranges of `url`'s secrets, in order: the userinfo password, then
/// the value of each secret query parameter. Empty when `url` has no `://`.
fn secret_spans(url: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let Some(scheme_end) = url.find("://") else { return spans };
    let start = scheme_end + 3;
    let after = &url[start..];
    let authority_end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let authority = &after[..authority_end];
    if let Some(at) = authority.rfind('@') {
        if let Some(colon) = authority[..at].find(':') {
            spans.push(start + colon + 1..start + at);
        }
    }
    let Some(q) = after.find('?') else { return spans };
    let query_start = start + q + 1;
    let query_end = url[query_start..].find('#').map_or(url.len(), |i| query_start + i);
    let mut pos = query_start;
    for pair in url[query_start..query_end].split('&') {
        if let Some(eq) = pair.find('=') {
            let key = percent_decode(&pair[..eq]).to_ascii_lowercase();
            if SECRET_KEYS.contains(&key.as_str()) {
                spans.push(pos + eq + 1..pos + pair.len());
            }
        }
        pos += pair.len() + 1;
    }
    spans
}

/// `url` with every password masked as `***`: the userinfo's and those of
/// the `password` / `sslpassword` query parameters (any case). A text that is
/// not a URL comes back unchanged.
pub fn redact_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut last = 0;
    for span in secret_spans(url) {
        out.push_str(&url[last..span.start]);
        out.push_str(MASK);
        last = span.end;
    }
    out.push_str(&url[last..]);
    out
}

/// Removes a URL's passwords from any text: a driver's or the server's
/// message may quote the input, in its raw or its percent-decoded form.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Longest first, so a secret containing another is removed whole.
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Redactor { .. }")
    }
}

impl Redactor {
    /// A redactor for every password [`redact_url`] masks in `url`.
    pub fn for_url(url: &str) -> Self {
        let mut secrets = Vec::new();
        for span in secret_spans(url) {
            let raw = &url[span];
            for s in [raw.to_owned(), percent_decode(raw)] {
                if !s.is_empty() && !secrets.contains(&s) {
                    secrets.push(s);
                }
            }
        }
        secrets.sort_by_key(|s: &String| std::cmp::Reverse(s.len()));
        Redactor { secrets }
    }

    /// `text` with every occurrence of a password replaced by `***`.
    pub fn scrub_text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), MASK);
            }
        }
        out
    }

    /// `e` with its message scrubbed.
    pub fn scrub(&self, e: Error) -> Error {
        if self.secrets.is_empty() {
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

/// `%XX` escapes decoded; anything else (a lone `%`, invalid UTF-8) kept as is.
fn percent_decode(s: &str) -> String {
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).map(|d| d as u8)
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_the_userinfo_password() {
        assert_eq!(redact_url("postgresql://bob:s3cret@h:5432/db"), "postgresql://bob:***@h:5432/db");
        assert_eq!(redact_url("postgresql://bob@h/db"), "postgresql://bob@h/db");
        assert_eq!(redact_url("postgresql://h/db"), "postgresql://h/db");
        assert_eq!(redact_url("app.db"), "app.db");
    }

    #[test]
    fn masks_secret_query_parameters_in_any_case() {
        assert_eq!(redact_url("postgresql://u@h/db?password=s3cret"), "postgresql://u@h/db?password=***");
        assert_eq!(
            redact_url("postgres://u@h/db?connect_timeout=2&PassWord=a&sslpassword=b&SSLPASSWORD=c#frag"),
            "postgres://u@h/db?connect_timeout=2&PassWord=***&sslpassword=***&SSLPASSWORD=***#frag"
        );
        assert_eq!(redact_url("postgres://u:x@h?%70assword=s3cret"), "postgres://u:***@h?%70assword=***");
        // Keys that merely contain the word, and a password-looking host, are not secrets.
        assert_eq!(redact_url("postgres://h/db?passwordless=1&user=p"), "postgres://h/db?passwordless=1&user=p");
    }

    #[test]
    fn the_redactor_scrubs_raw_and_decoded_forms() {
        let r = Redactor::for_url("postgresql://bob:s%40cret@h:5432/db?sslpassword=k%33y&password=pw");
        assert_eq!(r.scrub_text("a s@cret, s%40cret, k3y, k%33y and pw"), "a ***, ***, ***, *** and ***");
        let e = r.scrub(Error::database(None, "bad password pw"));
        assert_eq!(e, Error::database(None, "bad password ***"));
        let r = Redactor::for_url("postgresql://bob@h/db");
        assert_eq!(r.scrub_text("nothing to hide"), "nothing to hide");
    }

    #[test]
    fn percent_decoding_keeps_what_is_not_an_escape() {
        assert_eq!(percent_decode("a%40b"), "a@b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
