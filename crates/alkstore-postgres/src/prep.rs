//! Statement preparation (ADR 0030): named and cached per connection, or
//! unnamed for a transaction pooler.
//!
//! `Named` is the default: `prepare_cached` parses a text once per pooled
//! connection, and each call is one Bind/Execute round trip. That keeps a
//! statement in the server session, which a transaction pooler hands to
//! another client at the end of every transaction: the next Bind meets
//! another session, where the name is unknown (SQLSTATE 26000), already
//! taken (42P05) — or, worst, names another client's statement.
//!
//! `Unnamed` uses no named statement at all, not even for a moment: every
//! call sends Parse (of the unnamed statement), Bind, Describe, Execute and
//! Sync in one message (tokio-postgres' `query_typed`), still one round
//! trip, but the server parses and plans the text every time. A name made
//! and closed inside one transaction is not safe either: the driver numbers
//! names `s0`, `s1`, … from a per-process counter, and a pooler's server
//! session may still hold another client's `s0` (a named-mode process's,
//! the command line's before it could say otherwise), so the Parse fails
//! with 42P05. `query_typed` declares each parameter's type in the Parse;
//! an engine statement's parameters are Rust values whose type is the one
//! the server would infer (`ToSql` accepts nothing else), so each value
//! states it ([`Arg`]) and nothing is asked of the server.

use tokio_postgres::types::{ToSql, Type};

use crate::options::StatementMode;

/// The store's preparation mode.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prep {
    /// How statements are prepared.
    pub(crate) mode: StatementMode,
}

impl Prep {
    /// Statements prepared as `mode` says.
    pub(crate) fn new(mode: StatementMode) -> Self {
        Prep { mode }
    }

    /// Whether statements are unnamed.
    pub(crate) fn unnamed(self) -> bool {
        self.mode == StatementMode::Unnamed
    }
}

/// A parameter of an engine statement: a value the driver can send, which
/// knows the Postgres type it is sent as — the type an unnamed statement
/// declares for it. It is the type the server infers for the statement's
/// parameter, since `ToSql` refuses a value of any other type (an `i64`
/// meets only `int8`); the `unnamed` conformance run checks every statement.
pub trait Arg: ToSql + Sync {
    /// The type the value is sent as.
    fn declared(&self) -> Type;
    /// The value, for the driver.
    fn sql(&self) -> &(dyn ToSql + Sync);
}

/// A Rust type and the one Postgres type it is sent as.
pub trait Declared {
    /// The Postgres type.
    const TYPE: Type;
}

impl<T: Declared + ToSql + Sync> Arg for T {
    fn declared(&self) -> Type {
        T::TYPE
    }

    fn sql(&self) -> &(dyn ToSql + Sync) {
        self
    }
}

macro_rules! declared {
    ($($rust:ty => $pg:ident),* $(,)?) => {
        $(impl Declared for $rust {
            const TYPE: Type = Type::$pg;
        })*
    };
}

declared! {
    bool => BOOL,
    i32 => INT4,
    i64 => INT8,
    f64 => FLOAT8,
    String => TEXT,
    Vec<i32> => INT4_ARRAY,
    Vec<i64> => INT8_ARRAY,
    Vec<Option<i64>> => INT8_ARRAY,
    Vec<&str> => TEXT_ARRAY,
    Vec<Option<&str>> => TEXT_ARRAY,
    Vec<String> => TEXT_ARRAY,
}

impl<T: Declared> Declared for Option<T> {
    const TYPE: Type = T::TYPE;
}

impl<T: Declared + ?Sized> Declared for &T {
    const TYPE: Type = T::TYPE;
}

impl Declared for str {
    const TYPE: Type = Type::TEXT;
}

impl Declared for [i64] {
    const TYPE: Type = Type::INT8_ARRAY;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the driver sends a `T` as the type `T` declares (it refuses
    /// any type its `ToSql` does not accept).
    fn sent_as_declared<T: Declared + ToSql>() -> bool {
        T::accepts(&T::TYPE)
    }

    #[test]
    fn every_value_is_sent_as_the_type_it_declares() {
        assert!(sent_as_declared::<bool>());
        assert!(sent_as_declared::<i32>());
        assert!(sent_as_declared::<i64>());
        assert!(sent_as_declared::<f64>());
        assert!(sent_as_declared::<String>());
        assert!(sent_as_declared::<&str>());
        assert!(sent_as_declared::<Option<&str>>());
        assert!(sent_as_declared::<&[i64]>());
        assert!(sent_as_declared::<Vec<i32>>());
        assert!(sent_as_declared::<Vec<i64>>());
        assert!(sent_as_declared::<Vec<Option<i64>>>());
        assert!(sent_as_declared::<Vec<&str>>());
        assert!(sent_as_declared::<Vec<Option<&str>>>());
        assert!(sent_as_declared::<Vec<String>>());
        assert!(!<i64 as ToSql>::accepts(&Type::INT4), "an i64 meets int8 only");
    }
}
