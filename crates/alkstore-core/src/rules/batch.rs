//! Batch and page sizes (`n`, `limit`, `batch`): one range rule, checked by
//! the Store; engines and the binding never restate it.

use std::fmt::Display;

use crate::error::{Error, Result};

/// The most jobs one `claim_batch` may take, and the most `dead_jobs` rows.
pub const MAX_BATCH: usize = 1000;

/// A batch or page size (`n`, `limit`, `batch`): `n` when it lies in
/// `1..=MAX_BATCH`, else a ValueError naming `what`.
///
/// Generic over the integer so a binding can hand over its own: a Python int
/// may be wider than any Rust one, and the message shows it as the caller wrote it.
pub fn batch_size<N: TryInto<usize> + Display + Copy>(what: &str, n: N) -> Result<usize> {
    count_in(what, n, MAX_BATCH)
}

/// `n` when it lies in `1..=max`, else a ValueError naming `what`.
pub(crate) fn count_in<N: TryInto<usize> + Display + Copy>(what: &str, n: N, max: usize) -> Result<usize> {
    match n.try_into() {
        Ok(v) if (1..=max).contains(&v) => Ok(v),
        _ => Err(Error::Value(format!("{what} must be between 1 and {max}, got {n}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A caller's integer no Rust integer holds, shown as written.
    #[derive(Clone, Copy)]
    struct Wide(&'static str);

    impl std::fmt::Display for Wide {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl TryFrom<Wide> for usize {
        type Error = ();

        fn try_from(_: Wide) -> std::result::Result<usize, ()> {
            Err(())
        }
    }

    #[test]
    fn batch_sizes_are_one_to_max_batch() -> Result<()> {
        assert_eq!(batch_size("n", 1_i64)?, 1);
        assert_eq!(batch_size("n", MAX_BATCH)?, MAX_BATCH);
        for bad in [0_i64, -1, MAX_BATCH as i64 + 1, i64::MIN, i64::MAX] {
            let e = batch_size("batch", bad).unwrap_err();
            assert_eq!(e, Error::Value(format!("batch must be between 1 and {MAX_BATCH}, got {bad}")));
        }
        let e = batch_size("limit", Wide("18446744073709551616")).unwrap_err();
        assert_eq!(e, Error::Value("limit must be between 1 and 1000, got 18446744073709551616".into()));
        Ok(())
    }
}
