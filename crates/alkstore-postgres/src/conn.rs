//! What every engine statement runs with: a connection, the store's
//! statements and the clock offset; and the clock itself.

use std::sync::Arc;

use alkstore_core::{Error, Result};
use deadpool_postgres::ClientWrapper;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Row, Statement};

use crate::error::pg_error;
use crate::ops::Statements;
use crate::prep::Prep;
use crate::rows::col;

/// The database clock in whole Unix seconds plus the offset parameter `$p`,
/// as the CTE `n(t)`.
macro_rules! now_cte {
    ($p:literal) => {
        concat!(
            "WITH n AS MATERIALIZED (SELECT floor(extract(epoch FROM clock_timestamp()))::bigint + ",
            $p,
            "::bigint AS t)"
        )
    };
}
pub(crate) use now_cte;

/// The clock CTE with the offset in `$1`, as most statements take it.
pub(crate) const NOW: &str = now_cte!("$1");

/// The clock on its own: `Engine::now` and the schedule ops.
const CLOCK: &str = "SELECT floor(extract(epoch FROM clock_timestamp()))::bigint + $1::bigint";

/// One call's view of the engine, on a pooled or a transaction's connection.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// The connection the call runs on.
    pub client: &'a ClientWrapper,
    /// The store's statement text.
    pub sql: &'a Statements,
    /// The handle's clock offset (`$1` of every clocked statement).
    pub offset: i64,
    /// How statements are prepared (`prep.rs`).
    pub(crate) prep: &'a Prep,
    /// Whether `client` is inside a transaction (the caller's or the op's own).
    pub(crate) in_tx: bool,
}

/// A statement ready to run: a cached named one, or the parameter types of
/// an unnamed one.
enum Ready {
    Named(Statement),
    Unnamed(Arc<[Type]>),
}

impl Ctx<'_> {
    /// Makes `text` ready so that running it sends at once, with no reply
    /// awaited first: a statement pipelined behind `BEGIN` and ahead of
    /// `COMMIT` must be made ready before either is sent.
    pub async fn ready(&self, text: &str) -> Result<()> {
        self.prepare(text).await.map(drop)
    }

    /// Named: `text` prepared once per connection and cached; later calls
    /// skip the Parse round trip. Unnamed: its parameter types, learned once
    /// per store.
    async fn prepare(&self, text: &str) -> Result<Ready> {
        if !self.prep.unnamed() {
            return self.client.prepare_cached(text).await.map(Ready::Named).map_err(|e| pg_error(&e));
        }
        if let Some(types) = self.prep.types(text) {
            return Ok(Ready::Unnamed(types));
        }
        let types = self.describe(text).await?;
        self.prep.learn(text, types.clone());
        Ok(Ready::Unnamed(types))
    }

    /// The parameter types the server infers for `text`, by a named prepare
    /// made and closed inside one transaction: behind a transaction pooler
    /// that is one server session, which keeps nothing afterwards.
    async fn describe(&self, text: &str) -> Result<Arc<[Type]>> {
        let pg = |e: tokio_postgres::Error| pg_error(&e);
        if self.in_tx {
            // Dropping the statement sends its Close ahead of whatever the
            // transaction sends next, COMMIT included.
            return Ok(self.client.prepare(text).await.map_err(pg)?.params().into());
        }
        self.client.batch_execute("BEGIN").await.map_err(pg)?;
        let types = self.client.prepare(text).await.map(|s| Arc::<[Type]>::from(s.params()));
        let end = self.client.batch_execute(if types.is_ok() { "COMMIT" } else { "ROLLBACK" }).await;
        let types = types.map_err(pg)?;
        end.map_err(pg)?;
        Ok(types)
    }

    /// `params` paired with the types of an unnamed statement.
    fn typed<'p>(types: &[Type], params: &[&'p (dyn ToSql + Sync)]) -> Result<Vec<(&'p (dyn ToSql + Sync), Type)>> {
        if types.len() != params.len() {
            return Err(Error::database(
                None,
                format!("the statement has {} parameter(s) but {} were given", types.len(), params.len()),
            ));
        }
        Ok(params.iter().zip(types).map(|(p, t)| (*p, t.clone())).collect())
    }

    /// Runs `text`, returning its rows.
    pub async fn query(&self, text: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let r = match self.prepare(text).await? {
            Ready::Named(stmt) => self.client.query(&stmt, params).await,
            Ready::Unnamed(types) => self.client.query_typed(text, &Self::typed(&types, params)?).await,
        };
        r.map_err(|e| pg_error(&e))
    }

    /// Runs `text`, returning the one row it must produce.
    pub async fn query_one(&self, text: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        let r = match self.prepare(text).await? {
            Ready::Named(stmt) => self.client.query_one(&stmt, params).await,
            Ready::Unnamed(types) => self.client.query_typed_one(text, &Self::typed(&types, params)?).await,
        };
        r.map_err(|e| pg_error(&e))
    }

    /// Runs `text`, returning the affected row count.
    pub async fn execute(&self, text: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let r = match self.prepare(text).await? {
            Ready::Named(stmt) => self.client.execute(&stmt, params).await,
            Ready::Unnamed(types) => self.client.execute_typed(text, &Self::typed(&types, params)?).await,
        };
        r.map_err(|e| pg_error(&e))
    }
}

/// The database clock, offset included.
pub async fn now(cx: &Ctx<'_>) -> Result<i64> {
    let row = cx.query_one(CLOCK, &[&cx.offset]).await?;
    col(&row, 0)
}
