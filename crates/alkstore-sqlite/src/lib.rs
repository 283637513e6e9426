//! The alkstore SQLite engine (being written).
use std::sync::Arc;

use alkstore_core::{Engine, Error, OpenOptions, Result};

/// Opens (creating or migrating) the SQLite store at `path`.
pub fn open(path: &str, options: &OpenOptions) -> Result<Arc<dyn Engine>> {
    let _ = (path, options);
    Err(Error::database(None, "the SQLite engine is not built yet".to_string()))
}
