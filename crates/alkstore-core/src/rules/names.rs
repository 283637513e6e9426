//! Name validation (SPEC §3), one rule for every kind of name.

use crate::error::{Error, Result};

/// Names starting with this are reserved for the engine's own surfaces
/// (outbox backing queues, the scheduler lock).
pub const RESERVED_PREFIX: &str = "__alkstore";

/// The longest allowed name, in characters.
pub const MAX_NAME_CHARS: usize = 200;

/// Checks a user-given name; `what` names its kind in the error ("queue", ...).
pub fn validate_name(what: &str, name: &str) -> Result<()> {
    let bad = |reason: &str| Err(Error::InvalidName { what: what.to_owned(), reason: reason.to_owned() });
    if name.is_empty() {
        return bad("must not be empty");
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return bad("must be at most 200 characters");
    }
    if name.contains('\0') {
        return bad("must not contain NUL");
    }
    if name.starts_with(RESERVED_PREFIX) {
        return bad("the prefix '__alkstore' is reserved");
    }
    Ok(())
}

/// The backing queue of an outbox: reachable only through the outbox surface.
pub fn outbox_queue(outbox: &str) -> String {
    format!("{RESERVED_PREFIX}_outbox:{outbox}")
}

/// The outbox whose backing queue is `queue`, or None for any other queue:
/// the inverse of [`outbox_queue`], for surfaces that list queues by name.
pub fn outbox_of(queue: &str) -> Option<&str> {
    queue.strip_prefix(outbox_queue("").as_str())
}

/// The leadership lock of the schedule runner.
pub const SCHEDULER_LOCK: &str = "__alkstore_scheduler";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert!(validate_name("queue", "emails").is_ok());
        assert!(validate_name("queue", &"x".repeat(200)).is_ok());
        assert!(validate_name("queue", &"x".repeat(201)).is_err());
        assert!(validate_name("queue", "").is_err());
        assert!(validate_name("queue", "a\0b").is_err());
        assert!(validate_name("queue", "__alkstore_x").is_err());
        assert!(validate_name("queue", &outbox_queue("hooks")).is_err());
        assert!(validate_name("queue", SCHEDULER_LOCK).is_err());
    }

    #[test]
    fn outbox_of_inverts_outbox_queue() {
        assert_eq!(outbox_of(&outbox_queue("hooks")), Some("hooks"));
        assert_eq!(outbox_of(&outbox_queue("")), Some(""));
        assert_eq!(outbox_of("hooks"), None);
        assert_eq!(outbox_of(SCHEDULER_LOCK), None);
        assert_eq!(outbox_of("x__alkstore_outbox:hooks"), None);
    }
}
