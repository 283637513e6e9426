//! What every engine statement runs with: a connection, the store's
//! statements and the clock offset; and the clock itself.

use alkstore_core::Result;
use deadpool_postgres::ClientWrapper;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};

use crate::error::pg_error;
use crate::ops::Statements;
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
pub struct Ctx<'a> {
    /// The connection the call runs on.
    pub client: &'a ClientWrapper,
    /// The store's statement text.
    pub sql: &'a Statements,
    /// The handle's clock offset (`$1` of every clocked statement).
    pub offset: i64,
}

impl Ctx<'_> {
    /// `text` prepared once per connection and cached: later calls skip
    /// the Parse round trip.
    async fn prepare(&self, text: &str) -> Result<Statement> {
        self.client.prepare_cached(text).await.map_err(|e| pg_error(&e))
    }

    /// Runs `text`, returning its rows.
    pub async fn query(&self, text: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let stmt = self.prepare(text).await?;
        self.client.query(&stmt, params).await.map_err(|e| pg_error(&e))
    }

    /// Runs `text`, returning the one row it must produce.
    pub async fn query_one(&self, text: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        let stmt = self.prepare(text).await?;
        self.client.query_one(&stmt, params).await.map_err(|e| pg_error(&e))
    }

    /// Runs `text`, returning the affected row count.
    pub async fn execute(&self, text: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let stmt = self.prepare(text).await?;
        self.client.execute(&stmt, params).await.map_err(|e| pg_error(&e))
    }
}

/// The database clock, offset included.
pub async fn now(cx: &Ctx<'_>) -> Result<i64> {
    let row = cx.query_one(CLOCK, &[&cx.offset]).await?;
    col(&row, 0)
}
