//! The connection pool (ADR 0002): deadpool-postgres over tokio-postgres, no TLS.
//!
//! Connections are made lazily, up to `max_connections`, and an idle store
//! gives them back: a reaper closes every idle connection unused for
//! [`IDLE_AFTER`] but one, so a fleet of mostly idle processes holds one
//! connection each (plus LISTEN), not its peak. A connection whose socket
//! closed (the server restarted, `pg_terminate_backend`, a network cut) has
//! its connection task end and `Client::is_closed()` turn true; the pool's
//! `Fast` recycle check drops such a connection at the next checkout and
//! makes a new one, so the call after a lost connection works. `Verified`
//! would catch more (a half-open TCP socket) but costs a round trip per
//! checkout, which the per-op throughput goal cannot afford; TCP keepalives
//! (tokio-postgres' default) bound the half-open case instead.

use std::str::FromStr;
use std::time::Duration;

use alkstore_core::{Error, Result};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio::sync::watch;
use tokio_postgres::NoTls;

use crate::error::Exit;
use crate::passfile::{self, Source};

/// How long making one connection may take before the call fails, unless the
/// URL sets `connect_timeout` itself.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an idle pooled connection is kept beyond the first.
pub const IDLE_AFTER: Duration = Duration::from_secs(5);

/// How often the reaper looks.
const REAP_EVERY: Duration = Duration::from_secs(1);

/// Shown in `pg_stat_activity` unless the URL names another application.
const APPLICATION_NAME: &str = "alkstore";

/// Parses `url` into a driver config, with the password libpq would find
/// when the URL has none (`passfile.rs`), and says where that came from; a
/// parse error leaves through [`Exit::bad_url`].
pub fn pg_config(url: &str, exit: &Exit) -> Result<(tokio_postgres::Config, Source)> {
    let mut config = tokio_postgres::Config::from_str(url).map_err(|e| exit.bad_url(url, &e))?;
    let source = passfile::fill(&mut config);
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name(APPLICATION_NAME);
    }
    Ok((config, source))
}

/// A pool of at most `size` connections for `config`.
pub fn build(config: tokio_postgres::Config, size: usize) -> Result<Pool> {
    let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(manager)
        .max_size(size)
        // Timeouts (connect, wait) need a runtime handle; ours is tokio.
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|e| Error::database(None, format!("could not build the connection pool: {e}")))
}

/// Starts the reaper of `pool` on `runtime`, until `stop` turns true: every
/// [`REAP_EVERY`], the idle connections unused for [`IDLE_AFTER`] are
/// closed, all but one (the next call finds a connection ready).
pub fn start_reaper(runtime: &tokio::runtime::Runtime, pool: Pool, mut stop: watch::Receiver<bool>) {
    runtime.spawn(async move {
        loop {
            tokio::select! {
                () = tokio::time::sleep(REAP_EVERY) => {}
                _ = stop.changed() => {}
            }
            if *stop.borrow() {
                return;
            }
            reap(&pool);
        }
    });
}

/// One look of the reaper.
pub fn reap(pool: &Pool) {
    let mut kept = 0usize;
    let removed = pool.retain(|_, metrics| {
        let keep = kept == 0 || metrics.last_used() < IDLE_AFTER;
        kept += usize::from(keep);
        keep
    });
    // Dropping a client ends its session.
    drop(removed);
}
