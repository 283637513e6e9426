//! The password of a URL that gives none, found where libpq finds it:
//! `PGPASSWORD`, else the password file that `PGPASSFILE` names, else
//! `~/.pgpass` (tokio-postgres reads no environment). So a process's
//! command line — which every local user can read in `/proc/PID/cmdline` —
//! need not hold the password.
//!
//! The file's rules are libpq's ("The Password File" in the PostgreSQL docs):
//! - each line is `hostname:port:database:username:password`; a line
//!   starting with `#` is a comment;
//! - a field of `*` alone matches anything; `\:` and `\\` stand for `:` and
//!   `\` in every field;
//! - the first line whose four fields match gives the password;
//! - the host is the URL's host name as written (`localhost` for a Unix
//!   socket in the default directory), the port 5432 unless given, the user
//!   the OS user unless given, the database the user unless given;
//! - a file that is not a plain file, or that its group or others may read
//!   or write (anything wider than 0600), is ignored.
//!
//! With several hosts, libpq looks a password up per host; the driver takes
//! one password for all, so the first host with a matching line gives it.
//! A URL with a password (not empty) uses it, as libpq does.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use alkstore_core::Error;
use tokio_postgres::config::Host;
use tokio_postgres::Config;

/// Socket directories libpq builds in as its default (upstream's, Debian's):
/// a host naming one matches `localhost` lines.
const DEFAULT_SOCKET_DIRS: &[&str] = &["/tmp", "/var/run/postgresql", "/run/postgresql"];

/// Where a URL's password came from, for the message of a failed open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// The URL (or nowhere: no password was found).
    Url,
    /// `PGPASSWORD`.
    Env,
    /// This password file.
    File(PathBuf),
    /// No password was found, and the password file was skipped for this reason.
    Ignored(String),
}

impl Source {
    /// `e`, a failed open's error, with [`Source::note`] appended.
    pub(crate) fn annotate(&self, e: Error) -> Error {
        match e {
            Error::Database { code, message } => match self.note(code.as_deref()) {
                Some(note) => Error::Database { code, message: format!("{message} ({note})") },
                None => Error::Database { code, message },
            },
            Error::ConnectionLost { message } => match self.note(None) {
                Some(note) => Error::ConnectionLost { message: format!("{message} ({note})") },
                None => Error::ConnectionLost { message },
            },
            other => other,
        }
    }

    /// What a failed open adds to its message, following libpq's words.
    fn note(&self, code: Option<&str>) -> Option<String> {
        match self {
            // Class 28: invalid authorization (a wrong password among them).
            Source::File(path) if code.is_some_and(|c| c.starts_with("28")) => {
                Some(format!("password retrieved from file \"{}\"", path.display()))
            }
            Source::Ignored(why) => Some(why.clone()),
            _ => None,
        }
    }
}

/// Gives `config` the password libpq would use when its URL has none (or
/// an empty one), and says where it came from.
pub(crate) fn fill(config: &mut Config) -> Source {
    if config.get_password().is_some_and(|p| !p.is_empty()) {
        return Source::Url;
    }
    if let Some(pw) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
        config.password(pw.into_encoded_bytes());
        return Source::Env;
    }
    let Some(path) = passfile_path() else { return Source::Url };
    let text = match read_private(&path) {
        Ok(Some(text)) => text,
        Ok(None) => return Source::Url,
        Err(why) => return Source::Ignored(why),
    };
    let user = match config.get_user() {
        Some(u) => u.to_owned(),
        None => match whoami::username() {
            Ok(u) => u,
            Err(_) => return Source::Url,
        },
    };
    let dbname = config.get_dbname().unwrap_or(&user).to_owned();
    for (host, port) in hosts(config) {
        if let Some(pw) = lookup(&text, &host, &port, &dbname, &user) {
            config.password(pw);
            return Source::File(path);
        }
    }
    Source::Url
}

/// `PGPASSFILE`, else `~/.pgpass` (`$HOME`), else none.
fn passfile_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PGPASSFILE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let home: OsString = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(Path::new(&home).join(".pgpass"))
}

/// The file's bytes; `None` when it does not exist; `Err` with libpq's
/// warning when it is no plain file or is open to group or others.
fn read_private(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let Ok(meta) = std::fs::metadata(path) else { return Ok(None) };
    if !meta.is_file() {
        return Err(format!("password file \"{}\" is not a plain file", path.display()));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "password file \"{}\" has group or world access; permissions should be u=rw (0600) or less",
            path.display()
        ));
    }
    Ok(std::fs::read(path).ok())
}

/// Each host of `config` as a password file names it, with its port.
fn hosts(config: &Config) -> Vec<(String, String)> {
    let ports = config.get_ports();
    let port = |i: usize| match ports {
        [] => 5432,
        [one] => *one,
        many => many.get(i).copied().unwrap_or(5432),
    };
    let hosts = config.get_hosts();
    if hosts.is_empty() {
        return vec![("localhost".to_owned(), port(0).to_string())];
    }
    hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let name = match h {
                Host::Tcp(name) => name.clone(),
                Host::Unix(dir) if DEFAULT_SOCKET_DIRS.iter().any(|d| Path::new(d) == dir) => "localhost".to_owned(),
                Host::Unix(dir) => dir.display().to_string(),
            };
            (name, port(i).to_string())
        })
        .collect()
}

/// The password of the first line of `text` matching the four fields.
fn lookup(text: &[u8], host: &str, port: &str, dbname: &str, user: &str) -> Option<Vec<u8>> {
    for line in text.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let mut rest = line;
        let mut matched = true;
        for token in [host, port, dbname, user] {
            match field(rest, token.as_bytes()) {
                Some(after) => rest = after,
                None => {
                    matched = false;
                    break;
                }
            }
        }
        if matched {
            return Some(password(rest));
        }
    }
    None
}

/// When the field at the start of `line` matches `token` (a `*` alone, or
/// the token with `\` escapes), the text after its `:`.
fn field<'a>(line: &'a [u8], token: &[u8]) -> Option<&'a [u8]> {
    if line.starts_with(b"*:") {
        return Some(&line[2..]);
    }
    let (mut i, mut t) = (0, 0);
    while i < line.len() {
        let mut c = line[i];
        let escaped = c == b'\\';
        if escaped {
            i += 1;
            c = *line.get(i)?;
        }
        if c == b':' && !escaped && t == token.len() {
            return Some(&line[i + 1..]);
        }
        if token.get(t) != Some(&c) {
            return None;
        }
        i += 1;
        t += 1;
    }
    None
}

/// The password field: up to an unescaped `:` or the end, `\` escapes removed.
fn password(rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rest.len());
    let mut i = 0;
    while i < rest.len() && rest[i] != b':' {
        if rest[i] == b'\\' && i + 1 < rest.len() {
            i += 1;
        }
        out.push(rest[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(text: &str) -> Option<String> {
        lookup(text.as_bytes(), "db.example", "5432", "app", "bob").map(|p| String::from_utf8(p).unwrap())
    }

    #[test]
    fn the_first_matching_line_gives_the_password() {
        let text = "# db.example:5432:app:bob:comment\n\
                    \n\
                    db.example:5433:app:bob:other-port\n\
                    db.example:5432:other:bob:other-db\n\
                    db.example:5432:app:alice:other-user\n\
                    db.example:5432:app:bob:right\r\n\
                    *:*:*:*:too-late\n";
        assert_eq!(find(text).as_deref(), Some("right"));
        assert_eq!(find("other:5432:app:bob:x\n"), None);
        assert_eq!(find(""), None);
    }

    #[test]
    fn a_star_matches_any_field_and_only_alone() {
        assert_eq!(find("*:*:*:*:any").as_deref(), Some("any"));
        assert_eq!(find("db.example:*:app:*:p").as_deref(), Some("p"));
        assert_eq!(find("db.*:5432:app:bob:p"), None);
        assert_eq!(lookup(b"\\*:5432:app:bob:p", "*", "5432", "app", "bob"), Some(b"p".to_vec()));
    }

    #[test]
    fn backslash_escapes_colons_and_backslashes() {
        assert_eq!(find("db.example:5432:app:bob:pa\\:ss\\\\wo#rd").as_deref(), Some("pa:ss\\wo#rd"));
        assert_eq!(find("db.example:5432:app:bob:a:ignored").as_deref(), Some("a"));
        assert_eq!(lookup(b"h\\:1:5432:app:bob:p", "h:1", "5432", "app", "bob"), Some(b"p".to_vec()));
        assert_eq!(lookup(b"h\\\\:5432:app:bob:p", "h\\", "5432", "app", "bob"), Some(b"p".to_vec()));
        // A field cut short, or a trailing backslash, matches nothing.
        assert_eq!(find("db.example:5432:app:bob"), None);
        assert_eq!(find("db.example\\"), None);
        assert_eq!(find("db.example:5432:app:bob:").as_deref(), Some(""));
    }

    #[test]
    fn hosts_are_named_as_written_with_their_ports() {
        let config: Config = "postgresql://u@h1,h2:6000,[::1]:6001/db".parse().unwrap();
        assert_eq!(
            hosts(&config),
            [("h1".into(), "5432".into()), ("h2".into(), "6000".into()), ("::1".into(), "6001".into())]
        );
        let config: Config = "host=/var/run/postgresql port=5433 user=u".parse().unwrap();
        assert_eq!(hosts(&config), [("localhost".into(), "5433".into())]);
        let config: Config = "host=/srv/pg user=u".parse().unwrap();
        assert_eq!(hosts(&config), [("/srv/pg".into(), "5432".into())]);
    }
}
