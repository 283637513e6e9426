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
//! `Unnamed` keeps nothing in the session: every call sends Parse (of the
//! unnamed statement), Bind, Describe, Execute and Sync in one message
//! (tokio-postgres' `query_typed`), still one round trip, but the server
//! parses and plans the text every time. `query_typed` needs each
//! parameter's type, which a text states only through the server's
//! inference; so the store learns them once per text — a named prepare that
//! is made and closed inside one transaction, on one server session — and
//! keeps them here, shared by every connection of the store.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio_postgres::types::Type;

use crate::options::StatementMode;

/// The store's preparation mode and, in `Unnamed` mode, the parameter
/// types learned per statement text.
#[derive(Debug)]
pub(crate) struct Prep {
    /// How statements are prepared.
    pub(crate) mode: StatementMode,
    /// Parameter types by statement text (`Unnamed` only).
    types: Mutex<HashMap<String, Arc<[Type]>>>,
}

impl Prep {
    /// An empty cache for `mode`.
    pub(crate) fn new(mode: StatementMode) -> Self {
        Prep { mode, types: Mutex::new(HashMap::new()) }
    }

    /// Whether statements are unnamed.
    pub(crate) fn unnamed(&self) -> bool {
        self.mode == StatementMode::Unnamed
    }

    /// The parameter types learned for `text`, if any.
    pub(crate) fn types(&self, text: &str) -> Option<Arc<[Type]>> {
        self.types.lock().get(text).cloned()
    }

    /// Records the parameter types of `text`.
    pub(crate) fn learn(&self, text: &str, types: Arc<[Type]>) {
        self.types.lock().insert(text.to_owned(), types);
    }
}
