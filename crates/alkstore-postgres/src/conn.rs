//! What every engine statement runs with: a connection, the store's
//! statements and the clock offset; and the clock itself.

use alkstore_core::Result;
use deadpool_postgres::ClientWrapper;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Row, Statement};

use crate::error::pg_error;
use crate::ops::Statements;
use crate::prep::{Arg, Prep};
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
    pub(crate) prep: Prep,
}

impl Ctx<'_> {
    /// Makes `text` ready so that running it sends at once, with no reply
    /// awaited first: a statement pipelined behind `BEGIN` and ahead of
    /// `COMMIT` must be made ready before either is sent. Named: prepared
    /// (or found in the connection's cache). Unnamed: always ready, its
    /// parameters declare their own types.
    pub async fn ready(&self, text: &str) -> Result<()> {
        if self.prep.unnamed() {
            return Ok(());
        }
        self.named(text).await.map(drop)
    }

    /// `text` prepared once per connection and cached; later calls skip the
    /// Parse round trip.
    async fn named(&self, text: &str) -> Result<Statement> {
        self.client.prepare_cached(text).await.map_err(|e| pg_error(&e))
    }

    /// `params` paired with the types they are sent as, for an unnamed statement.
    fn typed<'p>(params: &[&'p dyn Arg]) -> Vec<(&'p (dyn ToSql + Sync), Type)> {
        params.iter().map(|p| (p.sql(), p.declared())).collect()
    }

    /// `params` as the driver takes them for a named statement.
    fn plain<'p>(params: &[&'p dyn Arg]) -> Vec<&'p (dyn ToSql + Sync)> {
        params.iter().map(|p| p.sql()).collect()
    }

    /// Runs `text`, returning its rows.
    pub async fn query(&self, text: &str, params: &[&dyn Arg]) -> Result<Vec<Row>> {
        let r = if self.prep.unnamed() {
            self.client.query_typed(text, &Self::typed(params)).await
        } else {
            let stmt = self.named(text).await?;
            self.client.query(&stmt, &Self::plain(params)).await
        };
        r.map_err(|e| pg_error(&e))
    }

    /// Runs `text`, returning the one row it must produce.
    pub async fn query_one(&self, text: &str, params: &[&dyn Arg]) -> Result<Row> {
        let r = if self.prep.unnamed() {
            self.client.query_typed_one(text, &Self::typed(params)).await
        } else {
            let stmt = self.named(text).await?;
            self.client.query_one(&stmt, &Self::plain(params)).await
        };
        r.map_err(|e| pg_error(&e))
    }

    /// Runs `text`, returning the affected row count.
    pub async fn execute(&self, text: &str, params: &[&dyn Arg]) -> Result<u64> {
        let r = if self.prep.unnamed() {
            self.client.execute_typed(text, &Self::typed(params)).await
        } else {
            let stmt = self.named(text).await?;
            self.client.execute(&stmt, &Self::plain(params)).await
        };
        r.map_err(|e| pg_error(&e))
    }
}

/// The database clock, offset included.
pub async fn now(cx: &Ctx<'_>) -> Result<i64> {
    let row = cx.query_one(CLOCK, &[&cx.offset]).await?;
    col(&row, 0)
}
