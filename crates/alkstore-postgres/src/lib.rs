//! The alkstore Postgres engine (being written).
use std::sync::Arc;

use alkstore_core::{Engine, Error, OpenOptions, Result};

/// Opens (creating or migrating) the Postgres store at `url`.
pub fn open(url: &str, options: &OpenOptions) -> Result<Arc<dyn Engine>> {
    let _ = (url, options);
    Err(Error::database(None, "the Postgres engine is not built yet".to_string()))
}
