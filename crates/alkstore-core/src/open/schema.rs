//! Which schema versions a build opens (ADR 0037): the same rule, and the
//! same words, on every engine.
//!
//! A store records the version of its schema. alkstore 1.0 begins a new
//! history: each engine's whole schema is one migration, the baseline,
//! numbered [`BASELINE`]; later migrations follow it. A store of a version
//! below the baseline was made by a pre-release build: it is refused, never
//! upgraded (nothing was released that needs it, and upgrading through the
//! pre-release history would keep that history alive in every build). A
//! store of a version above what the build knows was made by a newer build.

use crate::{Error, Result};

/// The schema version of the baseline: 1–99 are the pre-release builds'
/// (a pre-release build refuses this one as newer, so neither history can
/// open the other's stores by mistake).
pub const BASELINE: i64 = 100;

/// Whether a store of schema `version` may be opened by a build that writes
/// `known`: `Ok` for the baseline and after, up to `known` (the engine then
/// applies the migrations after `version`). `store` names the store in the
/// message ("the file …", "schema …") and `fresh` says what to open instead
/// of a pre-release store ("a new file", "a new schema").
pub fn check_version(version: i64, known: i64, store: &str, fresh: &str) -> Result<()> {
    if version > known {
        return Err(Error::database(
            None,
            format!(
                "{store} was written by a newer alkstore (schema version {version}; this alkstore knows up to \
                 {known}): upgrade alkstore to open it"
            ),
        ));
    }
    if version < BASELINE {
        return Err(Error::database(
            None,
            format!(
                "{store} was made by a pre-release build of alkstore (schema version {version}); alkstore 1.0 \
                 starts from a new schema and does not upgrade pre-release stores: finish or move its jobs with \
                 the build that made it, then open {fresh}. Nothing was written to it."
            ),
        ));
    }
    Ok(())
}

/// For a store that must already be current (a read-only command's open):
/// [`check_version`], and a store of an older version after the baseline
/// is refused too, told how to upgrade it (a read never migrates).
pub fn check_current(version: i64, known: i64, store: &str, fresh: &str) -> Result<()> {
    check_version(version, known, store, fresh)?;
    if version < known {
        return Err(Error::database(
            None,
            format!(
                "{store} has schema version {version} and this alkstore writes {known}: open it once with \
                 alkstore.open() (a worker does) to upgrade it; this command writes nothing"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_and_later_open_and_the_rest_is_refused_naming_why() {
        assert_eq!(check_version(BASELINE, BASELINE + 1, "s", "f"), Ok(()));
        assert_eq!(check_version(BASELINE + 1, BASELINE + 1, "s", "f"), Ok(()));
        let newer = check_version(BASELINE + 2, BASELINE + 1, "the file x.db", "a new file").unwrap_err();
        assert!(newer.to_string().contains("the file x.db was written by a newer alkstore"), "{newer}");
        for old in [1, 22, BASELINE - 1] {
            let msg = check_version(old, BASELINE, "schema \"app\"", "a new schema").unwrap_err().to_string();
            assert!(msg.starts_with("schema \"app\" was made by a pre-release build"), "{msg}");
            assert!(msg.contains(&format!("(schema version {old})")) && msg.contains("open a new schema"), "{msg}");
        }
        let older = check_current(BASELINE, BASELINE + 1, "the file x.db", "f").unwrap_err().to_string();
        assert!(older.contains("has schema version 100 and this alkstore writes 101: open it once"), "{older}");
        assert_eq!(check_current(BASELINE + 1, BASELINE + 1, "s", "f"), Ok(()));
    }
}
