//! The rule every engine's migration list keeps, checked by each engine's
//! own unit test (the list is private to the engine).

use std::path::Path;

use crate::TestResult;

/// Migration N is `<dir>/0N_*.sql` (four digits): every file is listed, in
/// increasing order from `first` (the baseline) with no gap, and
/// `schema_version` is the last number.
pub fn numbered_from(dir: &Path, first: i64, migrations: &[(i64, &str)], schema_version: i64) -> TestResult {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        files.push(entry?.file_name().into_string().map_err(|n| format!("not UTF-8: {n:?}"))?);
    }
    files.sort();
    assert_eq!(files.len(), migrations.len(), "{files:?}");
    for ((file, (n, sql)), want) in files.iter().zip(migrations).zip(first..) {
        assert_eq!(*n, want, "{file}");
        assert!(file.starts_with(&format!("{want:04}_")) && file.ends_with(".sql"), "{file}");
        assert_eq!(std::fs::read_to_string(dir.join(file))?, *sql, "{file} is not migration {want}");
    }
    assert_eq!(schema_version, first + i64::try_from(migrations.len())? - 1);
    Ok(())
}

/// Expands, inside an engine's `migrate.rs` test module, to the `#[test]`
/// that checks its migration list with [`numbered_from`]: the files of its
/// `src/migrations` from `$first` (the baseline) to `$version`.
#[macro_export]
macro_rules! migration_files_are_numbered {
    ($first:expr, $migrations:expr, $version:expr) => {
        #[test]
        fn migration_files_are_numbered_from_the_baseline() -> $crate::TestResult {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/migrations");
            $crate::migrations::numbered_from(&dir, $first, $migrations, $version)
        }
    };
}
