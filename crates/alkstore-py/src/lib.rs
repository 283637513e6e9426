//! The alkstore Python binding (being written).
