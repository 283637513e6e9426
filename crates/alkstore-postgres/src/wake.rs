//! The wake feed (SPEC §5): one LISTEN connection per store, fanned out
//! through the store's `WakeHub`.
//!
//! Statements that make work claimable (enqueue, retry, release) call
//! `pg_notify(channel, queue)`, so the notification fires at commit — never
//! for a rolled-back transaction — and Postgres folds repeats of the same
//! (channel, queue) within one transaction into one. The listener runs as a
//! task on the store's runtime, outside the pool (a pooled connection would
//! be handed to other calls). A lost LISTEN connection is re-made with
//! backoff, and every (re)connect bumps the hub once: notifications sent
//! while nobody listened are lost, so every waiter must re-read.

use std::sync::Arc;
use std::time::Duration;

use alkstore_core::WakeHub;
use tokio::sync::watch;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::ops::quote_ident;
use crate::runtime::Rt;

/// The longest `start` waits for the first LISTEN before returning and
/// leaving the retries to the background (waiters poll meanwhile).
const FIRST_LISTEN_WAIT: Duration = Duration::from_secs(10);

/// Reconnect backoff bounds.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// A LISTEN connection that sits idle for hours must still notice a dead
/// peer; the driver's default keepalive idle is two hours.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);

/// Postgres truncates identifiers to 63 bytes; `pg_notify` refuses longer
/// channel names outright.
const MAX_CHANNEL: usize = 63;

/// The notification channel of the store in `schema`. Two schemas whose
/// names agree on their first 54 bytes share a channel: a spurious wake,
/// which waiters tolerate by re-reading, never a lost one.
pub fn channel(schema: &str) -> String {
    let mut c = format!("alkstore_{schema}");
    // Schema names are ASCII (validated at open), so any byte is a boundary.
    c.truncate(MAX_CHANNEL);
    c
}

/// Starts the listener for `channel`, feeding `hub` until `stop` turns true
/// (or its sender is dropped). Returns once the first LISTEN is active, so
/// a waiter that subscribes after this cannot miss a commit. If the first
/// attempt fails, or takes longer than [`FIRST_LISTEN_WAIT`], it returns
/// anyway and the task keeps retrying with backoff.
pub fn start(
    rt: Rt,
    mut config: tokio_postgres::Config,
    channel: String,
    hub: Arc<WakeHub>,
    stop: watch::Receiver<bool>,
) {
    config.keepalives_idle(KEEPALIVE_IDLE);
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
    let Ok(runtime) = rt.runtime() else { return };
    runtime.spawn(run(config, channel, hub, stop, ready_tx));
    let _ = rt.block_on(async { tokio::time::timeout(FIRST_LISTEN_WAIT, ready_rx).await });
}

async fn run(
    config: tokio_postgres::Config,
    channel: String,
    hub: Arc<WakeHub>,
    mut stop: watch::Receiver<bool>,
    ready: tokio::sync::oneshot::Sender<()>,
) {
    let mut ready = Some(ready);
    let mut backoff = BACKOFF_MIN;
    loop {
        if *stop.borrow() {
            return;
        }
        if let Some((client, mut driver)) = listen_once(&config, &channel, &hub).await {
            backoff = BACKOFF_MIN;
            // Anything committed while we were not listening is unknown.
            hub.bump();
            if let Some(r) = ready.take() {
                let _ = r.send(());
            }
            tokio::select! {
                _ = &mut driver => {}
                _ = stop.changed() => {
                    // Ends the session: the driver owns the socket, the client the session.
                    driver.abort();
                    return;
                }
            }
            drop(client);
            // The connection is gone: wake everyone to re-read, then reconnect.
            hub.bump();
        } else {
            // The server is not answering: let `start` return now (waiters
            // poll meanwhile, and their own calls report the outage).
            ready.take();
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stop.changed() => return,
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Connects and LISTENs. Returns the client (dropping it ends the session)
/// and the task that drives the connection, bumping the hub per
/// notification and ending when the connection does.
async fn listen_once(
    config: &tokio_postgres::Config,
    channel: &str,
    hub: &Arc<WakeHub>,
) -> Option<(tokio_postgres::Client, tokio::task::JoinHandle<()>)> {
    let (client, mut connection) = config.connect(NoTls).await.ok()?;
    let hub = hub.clone();
    let driver = tokio::spawn(async move {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(_))) => hub.bump(),
                // Notices and parameter changes: nothing to wake for.
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return,
            }
        }
    });
    if client.batch_execute(&format!("LISTEN {}", quote_ident(channel))).await.is_err() {
        driver.abort();
        return None;
    }
    Some((client, driver))
}
