//! Values crossing the transaction seam (`tx.execute` / `tx.query`).

/// A parameter or a result cell of the caller's own SQL.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    /// SQL NULL.
    Null,
    /// A boolean (an integer 0/1 on SQLite).
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A double.
    Float(f64),
    /// Text.
    Text(String),
    /// A blob / bytea.
    Bytes(Vec<u8>),
}

/// One result row: column names with their values, in select order.
pub type SqlRow = Vec<(String, SqlValue)>;
