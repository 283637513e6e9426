//! The rule every engine's migration list keeps, checked by each engine's
//! own unit test (the list is private to the engine).

use std::path::Path;

use crate::TestResult;

/// Migration N is `<dir>/000N_*.sql`: every file is listed, in increasing
/// order from 1 with no gap, and `schema_version` is the last number.
pub fn numbered_one_to_n(dir: &Path, migrations: &[(i64, &str)], schema_version: i64) -> TestResult {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        files.push(entry?.file_name().into_string().map_err(|n| format!("not UTF-8: {n:?}"))?);
    }
    files.sort();
    assert_eq!(files.len(), migrations.len(), "{files:?}");
    for ((file, (n, sql)), want) in files.iter().zip(migrations).zip(1..) {
        assert_eq!(*n, want, "{file}");
        assert!(file.starts_with(&format!("{want:04}_")) && file.ends_with(".sql"), "{file}");
        assert_eq!(std::fs::read_to_string(dir.join(file))?, *sql, "{file} is not migration {want}");
    }
    assert_eq!(schema_version, i64::try_from(migrations.len())?);
    Ok(())
}
