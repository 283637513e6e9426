//! A connection URL read where the Postgres driver reads it.
//!
//! tokio-postgres, which every Postgres URL is given to, splits
//! `scheme://[user[:password]@]host[:port][,host[:port]…][/dbname][?key=value&…]`
//! by rules of its own, not a generic URL's: the credentials run to the
//! *first* `@` of the text, so a password may hold `/`, `?` or `#` unescaped;
//! the password is what follows the first `:` of the credentials; the host
//! list ends at `/` or `?`; the query string runs to the end of the text (a
//! `#` starts no fragment) and each value to the next `&`. libpq reads the
//! same credentials whenever it finds any (it looks for the `@` before the
//! first `/`). Redaction ([`crate::open::redact`]) and the alkstore options
//! of a URL's query string ([`crate::open::url_options`]) both use this one
//! reading, so what is masked and what is taken out is what the driver sees.

use std::ops::Range;

/// Where the parts of a `scheme://…` text lie, as byte ranges of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UrlParts {
    /// The password as the driver reads it (after the first `:` of the
    /// credentials, up to the first `@` of the text), if any.
    pub(crate) password: Option<Range<usize>>,
    /// The query string as the driver reads it: after the first `?` that
    /// follows the credentials, to the end of the text.
    pub(crate) query: Option<Range<usize>>,
    /// The query string as libpq reads it, when that differs: libpq takes
    /// credentials only from an `@` before the first `/`, so in
    /// `h/db?password=x@y` it reads a query string where the driver reads
    /// a user name. Both readings are masked.
    pub(crate) libpq_query: Option<Range<usize>>,
    /// Where the text after `://` begins.
    start: usize,
}

/// One `key=value` pair of a query string, split on `&` and then on the
/// first `=` (the standard reading; the driver differs only on a pair with
/// no `=`, which it refuses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueryPair {
    /// The whole pair, without its `&`.
    pub(crate) pair: Range<usize>,
    /// The key, percent-decoded.
    pub(crate) key: String,
    /// The raw value, when the pair has an `=`.
    pub(crate) value: Option<Range<usize>>,
}

impl UrlParts {
    /// The parts of `url`, or `None` when it has no `://`.
    pub(crate) fn parse(url: &str) -> Option<Self> {
        let start = url.find("://")? + 3;
        let rest = &url[start..];
        let at = rest.find('@').map(|i| start + i);
        let password = at.and_then(|at| url[start..at].find(':').map(|colon| start + colon + 1..at));
        let query_after = |from: usize| url[from..].find('?').map(|q| from + q + 1..url.len());
        let query = query_after(at.map_or(start, |at| at + 1));
        // libpq: credentials only when an `@` comes before the first `/`.
        let libpq_creds = match (at, rest.find('/')) {
            (Some(at), Some(slash)) if start + slash < at => None,
            (at, _) => at,
        };
        let libpq_query = query_after(libpq_creds.map_or(start, |at| at + 1)).filter(|q| Some(q) != query.as_ref());
        Some(UrlParts { password, query, libpq_query, start })
    }

    /// The pairs of the driver's query string, in order.
    pub(crate) fn pairs(&self, url: &str) -> Vec<QueryPair> {
        self.query.clone().map(|q| pairs_of(url, q)).unwrap_or_default()
    }

    /// The pairs of the query string in either reading (the driver's, then
    /// libpq's when it differs).
    pub(crate) fn all_pairs(&self, url: &str) -> Vec<QueryPair> {
        let mut pairs = self.pairs(url);
        if let Some(q) = self.libpq_query.clone() {
            pairs.extend(pairs_of(url, q));
        }
        pairs
    }

    /// The password span to mask: the driver's, widened to the last `@`
    /// before the first `=` of the text. A raw `@` in a password
    /// (`u:p@ss@host`) makes the driver read `p` as the password and the
    /// rest as hosts; the user meant `p@ss`, and a message must show neither
    /// part. Hosts, ports and paths hold no `=`, so that `@` ends what was
    /// meant as credentials (or an `@` in the path masks more than needed).
    pub(crate) fn masked_password(&self, url: &str) -> Option<Range<usize>> {
        let password = self.password.clone()?;
        let before_eq = &url[self.start..url.find('=').unwrap_or(url.len()).max(self.start)];
        Some(match before_eq.rfind('@').map(|i| self.start + i) {
            Some(at) if at > password.end => password.start..at,
            _ => password,
        })
    }
}

/// The `&`-separated pairs of the query string at `query`.
fn pairs_of(url: &str, query: Range<usize>) -> Vec<QueryPair> {
    let mut pairs = Vec::new();
    let mut pos = query.start;
    for text in url[query].split('&') {
        let pair = pos..pos + text.len();
        let (key, value) = match text.find('=') {
            Some(eq) => (&text[..eq], Some(pos + eq + 1..pair.end)),
            None => (text, None),
        };
        pairs.push(QueryPair { pair, key: percent_decode(key), value });
        pos += text.len() + 1;
    }
    pairs
}

/// `%XX` escapes decoded; anything else (a lone `%`, invalid UTF-8) kept as is.
pub(crate) fn percent_decode(s: &str) -> String {
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

    fn password(url: &str) -> Option<&str> {
        UrlParts::parse(url)?.password.map(|r| &url[r])
    }

    #[test]
    fn the_credentials_run_to_the_first_at_sign() {
        assert_eq!(password("postgresql://u:pw#x@h/db"), Some("pw#x"));
        assert_eq!(password("postgresql://u:p/w?x@h/db"), Some("p/w?x"));
        assert_eq!(password("postgresql://u:a:b@h/db"), Some("a:b"));
        assert_eq!(password("postgresql://u:@h/db"), Some(""));
        assert_eq!(password("postgresql://u@h/db"), None);
        assert_eq!(password("postgresql://h/db"), None);
        assert_eq!(password("app.db"), None);
        // The driver's reading, odd as it is: an `@` in the query string ends credentials.
        assert_eq!(password("postgresql://h:5432/db?application_name=a@b"), Some("5432/db?application_name=a"));
    }

    #[test]
    fn a_raw_at_sign_widens_the_mask_to_the_last_before_the_query() {
        let url = "postgresql://u:p@s/s@w@h:5432/db?x=a@b";
        let parts = UrlParts::parse(url).unwrap();
        assert_eq!(&url[parts.password.clone().unwrap()], "p");
        assert_eq!(&url[parts.masked_password(url).unwrap()], "p@s/s@w");
        let url = "postgresql://u:pw@h/db?application_name=a@b";
        let parts = UrlParts::parse(url).unwrap();
        assert_eq!(&url[parts.masked_password(url).unwrap()], "pw");
    }

    #[test]
    fn libpq_reads_a_query_where_the_driver_reads_a_user() {
        let url = "postgresql://h/db?password=x@y";
        let parts = UrlParts::parse(url).unwrap();
        assert_eq!(parts.password, None);
        assert_eq!(parts.query, None);
        let keys: Vec<String> = parts.all_pairs(url).into_iter().map(|p| p.key).collect();
        assert_eq!(keys, ["password"]);
        let url = "postgresql://u:pw@h/db?a=1";
        assert_eq!(UrlParts::parse(url).unwrap().libpq_query, None);
    }

    #[test]
    fn the_query_runs_to_the_end_and_splits_on_ampersands() {
        let url = "postgresql://u:p?w@h/db?a=1&PassWord=x#y&%6Ben=v&flag&=z";
        let parts = UrlParts::parse(url).unwrap();
        let pairs = parts.pairs(url);
        let shown: Vec<(&str, Option<&str>)> =
            pairs.iter().map(|p| (p.key.as_str(), p.value.clone().map(|v| &url[v]))).collect();
        assert_eq!(
            shown,
            [("a", Some("1")), ("PassWord", Some("x#y")), ("ken", Some("v")), ("flag", None), ("", Some("z"))]
        );
        assert!(UrlParts::parse("postgresql://h/db").unwrap().pairs("postgresql://h/db").is_empty());
    }

    #[test]
    fn percent_decoding_keeps_what_is_not_an_escape() {
        assert_eq!(percent_decode("a%40b"), "a@b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("%41"), "A");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(percent_decode("%E2%98%83"), "☃");
    }
}
