//! What a stored error text (`last_error`, SPEC §4.3) may be, decided once
//! for every path that stores one: `job.fail`, a retry past its budget, and
//! so the Worker's exception text, a task's timeout and the outbox relay.
//!
//! A text holding NUL is refused (Postgres text cannot hold it). A long text
//! is cut, never refused: the call that records a failure is the one call a
//! failing handler must not fail, and a 50 MB exception message would
//! otherwise be stored whole, read back by every `dead_jobs` page and shown
//! by the dashboard. The cut keeps the start (an exception's type and
//! message) and the end (a traceback's last frame and its exception line),
//! with a marker between them that says how long the text was.
//!
//! A workflow child that dies with its parent stores `parent job N died: `
//! and the parent's (already cut) error, so a chain of such deaths grows by
//! that prefix per generation and stays bounded by the depth of the graph.

use std::borrow::Cow;

use crate::error::{Error, Result};

/// The most bytes of UTF-8 an error text is stored with (8 KiB): a deep
/// Python traceback fits whole; past it, a cut text says so.
pub const MAX_ERROR_BYTES: usize = 8 * 1024;

/// Refuses an error text holding NUL, on every engine alike, before
/// anything changes.
pub fn check_error_text(error: &str) -> Result<()> {
    if error.contains('\0') {
        return Err(Error::Value("error must not contain NUL characters".into()));
    }
    Ok(())
}

/// `error` as it is stored: itself when it fits [`MAX_ERROR_BYTES`], else its
/// first and last bytes (each cut at a character boundary) around a marker,
/// at most [`MAX_ERROR_BYTES`] in all.
pub fn cap_error(error: &str) -> Cow<'_, str> {
    if error.len() <= MAX_ERROR_BYTES {
        return Cow::Borrowed(error);
    }
    let marker = format!(" … [an error of {} bytes, cut to {MAX_ERROR_BYTES}] … ", error.len());
    let room = MAX_ERROR_BYTES.saturating_sub(marker.len());
    let head = floor_boundary(error, room / 2);
    let tail = ceil_boundary(error, error.len() - (room - head));
    Cow::Owned(format!("{}{marker}{}", &error[..head], &error[tail..]))
}

/// The largest character boundary of `s` at or below `i`.
fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest character boundary of `s` at or above `i`.
fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_text_is_stored_as_it_is() {
        assert!(matches!(cap_error("boom"), Cow::Borrowed("boom")));
        let exact = "x".repeat(MAX_ERROR_BYTES);
        assert_eq!(cap_error(&exact), exact.as_str());
    }

    #[test]
    fn a_long_text_keeps_its_start_and_end_within_the_bound() {
        let text = format!("ValueError: start{}the last line", "y".repeat(50_000_000));
        let cut = cap_error(&text);
        assert!(cut.len() <= MAX_ERROR_BYTES, "{}", cut.len());
        assert!(cut.len() > MAX_ERROR_BYTES - 8, "the room is used: {}", cut.len());
        assert!(cut.starts_with("ValueError: start") && cut.ends_with("the last line"));
        assert!(cut.contains(&format!("[an error of {} bytes, cut to 8192]", text.len())), "{cut:.200}");
    }

    #[test]
    fn the_cut_falls_on_character_boundaries() {
        for width in ["é", "€", "🦀"] {
            for pad in 0..4 {
                let text = format!("{}{}", "a".repeat(pad), width.repeat(10_000));
                let cut = cap_error(&text);
                assert!(cut.len() <= MAX_ERROR_BYTES);
                assert!(cut.ends_with(width) && cut.trim_start_matches('a').starts_with(width));
            }
        }
    }

    #[test]
    fn nul_is_refused() {
        assert!(check_error_text("fine").is_ok());
        assert!(matches!(check_error_text("a\0b"), Err(Error::Value(_))));
    }
}
