//! The rule every engine's migration list keeps, checked by each engine's
//! own unit test (the list is private to the engine).

use std::path::Path;

use crate::TestResult;

/// Migration numbers taken by a branch not merged yet (see [`numbered_one_to_n`]).
pub const GAPS: &[i64] = &[11];

/// Migration N is `<dir>/000N_*.sql`: every file is listed, in increasing
/// order, and `schema_version` is the last number. A number may be missing
/// while two branches each add one (workflows took 0012 while flow
/// control's 0011 was still on its branch); once merged the list is 1..=N
/// again, and [`GAPS`] is empty.
pub fn numbered_one_to_n(dir: &Path, migrations: &[(i64, &str)], schema_version: i64) -> TestResult {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        files.push(entry?.file_name().into_string().map_err(|n| format!("not UTF-8: {n:?}"))?);
    }
    files.sort();
    assert_eq!(files.len(), migrations.len(), "{files:?}");
    let wanted = (1..).filter(|n| !GAPS.contains(n));
    for ((file, (n, sql)), want) in files.iter().zip(migrations).zip(wanted) {
        assert_eq!(*n, want, "{file}");
        assert!(file.starts_with(&format!("{want:04}_")) && file.ends_with(".sql"), "{file}");
        assert_eq!(std::fs::read_to_string(dir.join(file))?, *sql, "{file} is not migration {want}");
    }
    assert_eq!(schema_version, i64::try_from(migrations.len() + GAPS.len())?);
    Ok(())
}
