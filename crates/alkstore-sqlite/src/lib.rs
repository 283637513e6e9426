//! The alkstore SQLite engine (being written).
