//! `PgEngine`: the `Engine` trait over a pool, a statement set and a clock offset.
//!
//! The operations are implemented in `ops/`, one core trait per file; each
//! goes through [`PgEngine::run`], which picks its connection — the caller's
//! transaction's, or one checked out of the pool for this call — blocks on
//! the runtime the store was opened on while the op's single statement runs,
//! and lets any error out through the store's [`Exit`], which scrubs the
//! password.
//!
//! In a process forked after the store opened, every call is refused (the
//! runtime refuses), and `close` and drop leave the pool and the LISTEN task
//! alone: they belong to the parent (see `runtime.rs`).

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use alkstore_core::{redact_url, Engine, Error, Result, Tx, WakeHub};
use deadpool_postgres::{Object, Pool};
use tokio::sync::watch;

use crate::conn::{self, Ctx};
use crate::error::{pg_error, pool_error, Exit};
use crate::open::{self, Opened};
use crate::ops::Statements;
use crate::options::PgOptions;
use crate::prep::Prep;
use crate::runtime::Rt;
use crate::tx::PgTx;
use crate::wake;
use crate::{maintain, pool};

/// Tells stores apart, so a transaction begun on one is refused by another.
static NEXT_ENGINE_ID: AtomicU64 = AtomicU64::new(1);

/// One open Postgres store.
pub struct PgEngine {
    id: u64,
    /// The runtime of the process that opened the store.
    rt: Rt,
    /// Dropped only in that process (see `Drop`).
    pool: ManuallyDrop<Pool>,
    pub(crate) sql: Statements,
    /// `_advance_clock` total; tests only.
    pub(crate) offset: AtomicI64,
    /// Every error leaves through it (`error.rs`).
    exit: Exit,
    /// For messages and Debug: the URL with its password masked.
    url: String,
    /// For the LISTEN connection, which lives outside the pool: `None` when
    /// waiters poll only (`listen=False`, or behind a transaction pooler
    /// with no `listen_url`).
    listen: Option<tokio_postgres::Config>,
    /// The store's notification channel.
    channel: String,
    /// How statements are prepared (ADR 0030).
    prep: Prep,
    /// Whether the LISTEN task was started (once per engine).
    listening: AtomicBool,
    /// Turned true by `close` to end the LISTEN task. Dropped only in the
    /// process that opened the store (see `Drop`).
    stop: ManuallyDrop<watch::Sender<bool>>,
    /// The store's identity (ADR 0015).
    store_id: String,
    /// The engine schema's name, for messages.
    schema: String,
    /// Whether the vacuum task was started (once per engine, by a claim).
    pub(crate) maintaining: AtomicBool,
    /// Queues this engine lately found limited (SPEC §24), and when: their
    /// claims skip the one-statement claim, which would only answer
    /// "limited", for a while (`ops/claim.rs`).
    pub(crate) limited_seen: std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, bool)>>,
}

impl std::fmt::Debug for PgEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Hand-written: the pool's Debug would print the driver config.
        f.debug_struct("PgEngine").field("url", &self.url).field("id", &self.id).finish_non_exhaustive()
    }
}

impl PgEngine {
    /// Connects, migrates the schema and returns the engine.
    pub fn open(url: &str, options: &PgOptions) -> Result<Self> {
        let exit = Exit::for_url(url);
        let shown = redact_url(url);
        let Opened { rt, pool, listen, store_id } = open::open_pool(url, &shown, options, &exit)?;
        let stop = watch::Sender::new(false);
        if let Ok(runtime) = rt.runtime() {
            pool::start_reaper(runtime, pool.clone(), stop.subscribe());
        }
        Ok(PgEngine {
            id: NEXT_ENGINE_ID.fetch_add(1, Ordering::Relaxed),
            rt,
            pool: ManuallyDrop::new(pool),
            sql: Statements::new(&options.schema),
            offset: AtomicI64::new(0),
            exit,
            store_id,
            schema: options.schema.clone(),
            url: shown,
            listen,
            channel: wake::channel(&options.schema),
            prep: Prep::new(options.statements),
            listening: AtomicBool::new(false),
            stop: ManuallyDrop::new(stop),
            maintaining: AtomicBool::new(false),
            limited_seen: std::sync::Mutex::default(),
        })
    }

    /// Starts the vacuum task of `maintain.rs` on the first call: a store
    /// that claims is one whose `jobs` table churns (ADR 0024). Not in a
    /// forked child (the runtime refuses) nor after `close`.
    pub(crate) fn maintain(&self) {
        if self.maintaining.load(Ordering::Relaxed) || self.maintaining.swap(true, Ordering::SeqCst) {
            return;
        }
        if *self.stop.borrow() {
            return;
        }
        if let Ok(runtime) = self.rt.runtime() {
            let pool = (*self.pool).clone();
            maintain::start(runtime, pool, maintain::Sql::new(&self.schema), self.stop.subscribe());
        }
    }

    /// One look of the vacuum task, now; for tests.
    #[cfg(test)]
    pub(crate) fn maintain_once(&self) -> bool {
        let sql = maintain::Sql::new(&self.schema);
        matches!(self.rt.block_on(maintain::look(&self.pool, &sql)), Ok(Ok(())))
    }

    /// Runs `op` on the caller's transaction when given, else on a pooled
    /// connection held for just this call.
    pub(crate) fn run<T>(&self, tx: Option<&mut dyn Tx>, op: impl AsyncFnOnce(&Ctx<'_>) -> Result<T>) -> Result<T> {
        let offset = self.offset.load(Ordering::SeqCst);
        match tx {
            Some(t) => {
                let t = self.own_tx(t)?;
                let cx = Ctx { client: t.client()?, sql: &self.sql, offset, prep: self.prep };
                // A failure here dooms the caller's transaction: the Store's
                // session records that, not the engine.
                self.exit.block_on(self.rt, op(&cx))
            }
            None => self.exit.block_on(self.rt, async {
                let conn = self.pool.get().await.map_err(|e| pool_error(&e))?;
                let r = op(&Ctx { client: &conn, sql: &self.sql, offset, prep: self.prep }).await;
                if matches!(r, Err(Error::ConnectionLost { .. })) {
                    // Never back into the pool: its task may not have seen the
                    // socket close yet, and the pool's `is_closed` check would
                    // hand it to the next call.
                    drop(Object::take(conn));
                }
                r
            }),
        }
    }

    /// [`Self::run`] for an op of several statements: inside the caller's
    /// transaction when given, else in a transaction of its own (BEGIN …
    /// COMMIT on one pooled connection; ROLLBACK when `op` fails).
    pub(crate) fn run_atomic<T>(
        &self,
        tx: Option<&mut dyn Tx>,
        op: impl AsyncFnOnce(&Ctx<'_>) -> Result<T>,
    ) -> Result<T> {
        if tx.is_some() {
            return self.run(tx, op);
        }
        self.run(None, async |cx| {
            cx.client.batch_execute("BEGIN").await.map_err(|e| pg_error(&e))?;
            match op(cx).await {
                Ok(v) => {
                    cx.client.batch_execute("COMMIT").await.map_err(|e| pg_error(&e))?;
                    Ok(v)
                }
                Err(e) => {
                    // The op's error is what the caller needs; a failed
                    // ROLLBACK leaves a connection the pool discards.
                    let _ = cx.client.batch_execute("ROLLBACK").await;
                    Err(e)
                }
            }
        })
    }

    /// `t` as this engine's own transaction type.
    fn own_tx<'t>(&self, t: &'t mut dyn Tx) -> Result<&'t mut PgTx> {
        match t.as_any_mut().downcast_mut::<PgTx>() {
            Some(pt) if pt.engine_id() == self.id => Ok(pt),
            _ => Err(Error::Transaction("the transaction belongs to another store".into())),
        }
    }
}

impl Engine for PgEngine {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn begin(&self) -> Result<Box<dyn Tx>> {
        let marker = PgTx::next_marker();
        let conn = self.exit.block_on(self.rt, async {
            let conn = self.pool.get().await.map_err(|e| pool_error(&e))?;
            match conn.batch_execute(&PgTx::begin_sql(&marker)).await {
                Ok(()) => Ok(conn),
                Err(e) => {
                    let e = pg_error(&e);
                    if matches!(e, Error::ConnectionLost { .. }) {
                        drop(Object::take(conn));
                    }
                    Err(e)
                }
            }
        })?;
        Ok(Box::new(PgTx::new(conn, self.id, self.rt, self.exit.clone(), marker, self.prep.unnamed())))
    }

    fn start_wakes(&self, hub: Arc<WakeHub>) -> Result<()> {
        self.rt.runtime()?;
        let Some(config) = &self.listen else { return Ok(()) };
        if self.listening.swap(true, Ordering::SeqCst) || *self.stop.borrow() {
            return Ok(());
        }
        wake::start(self.rt, config.clone(), self.channel.clone(), hub, self.stop.subscribe());
        Ok(())
    }

    fn store_id(&self) -> &str {
        &self.store_id
    }

    fn location(&self) -> String {
        format!("schema {:?} at {}", self.schema, self.url)
    }

    fn advance_clock(&self, seconds: i64) {
        self.offset.fetch_add(seconds, Ordering::SeqCst);
    }

    fn now(&self) -> Result<i64> {
        self.run(None, async |cx| conn::now(cx).await)
    }

    fn close(&self) {
        // In a forked child the connections and the LISTEN task are the
        // parent's: closing them would send on the parent's sockets and wake
        // tasks of a runtime that has no threads here. The store still reads
        // as closed (the core refuses later calls).
        if !self.rt.is_ours() {
            return;
        }
        // Idle connections close now; checked-out ones (an open caller
        // transaction) close when returned. Later calls get StoreClosed.
        self.pool.close();
        self.stop.send_replace(true);
    }
}

impl Drop for PgEngine {
    fn drop(&mut self) {
        if self.rt.is_ours() {
            // SAFETY: dropped once, here, and never used again.
            unsafe {
                ManuallyDrop::drop(&mut self.pool);
                ManuallyDrop::drop(&mut self.stop);
            }
        }
        // Else a forked child: dropping them would run the parent's
        // connection teardown here (see `close`); they are left as they are.
    }
}
