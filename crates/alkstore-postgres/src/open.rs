//! Opening a store: the URL, the pool, the runtime and the schema
//! migration, each failure an error naming the URL with its password masked.

use alkstore_core::Result;
use deadpool_postgres::Pool;

use crate::error::{at_open, pool_error, Exit};
use crate::options::PgOptions;
use crate::runtime::Rt;
use crate::{migrate, pool};

/// What an open store runs on.
pub(crate) struct Opened {
    /// The runtime of the process that opened the store.
    pub(crate) rt: Rt,
    /// The store's connections.
    pub(crate) pool: Pool,
    /// For the LISTEN connection, which lives outside the pool; `None`:
    /// the store polls only ([`PgOptions::listen_target`]).
    pub(crate) listen: Option<tokio_postgres::Config>,
    /// The store's identity (ADR 0015).
    pub(crate) store_id: String,
}

/// Connects to `url` (`shown`: the same with its password masked) and brings
/// the schema `options.schema` to this build's version; with `must_exist`,
/// only checks that it is there, at that version.
pub(crate) fn open_pool(url: &str, shown: &str, options: &PgOptions, exit: &Exit) -> Result<Opened> {
    let (config, password) = pool::pg_config(url, exit)?;
    let listen = match options.listen_target(url) {
        Some(u) if u == url => Some(config.clone()),
        Some(u) => Some(pool::pg_config(u, &Exit::for_url(u))?.0),
        None => None,
    };
    let pool = pool::build(config, options.max_connections)?;
    let schema = &options.schema;
    let rt = Rt::current()?;
    let migrated = exit.block_on(rt, async {
        let r = async {
            let mut conn = pool.get().await.map_err(|e| pool_error(&e))?;
            if options.common.must_exist {
                migrate::check_existing(&conn, schema).await?;
            } else {
                migrate::migrate(&mut conn, schema).await?;
            }
            migrate::store_id(&conn, schema).await
        };
        r.await.map_err(|e| at_open(shown, password.annotate(e)))
    });
    let store_id = match migrated {
        Ok(id) => id,
        Err(e) => {
            pool.close();
            return Err(e);
        }
    };
    Ok(Opened { rt, pool, listen, store_id })
}
