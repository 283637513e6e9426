//! The alkstore Postgres engine (being written).
