//! Creating and upgrading the engine-owned schema at open.
//!
//! The migrations are numbered like SQLite's (0001, …) and applied in one
//! transaction that first takes a transaction-scoped advisory lock keyed on
//! the schema name: two processes opening a fresh database at once queue on
//! the lock, and the second finds the work done. The `meta` table holding
//! `schema_version` is created by this bootstrap rather than by a migration,
//! because the version must be readable before any migration runs.

use alkstore_core::{Error, Result};
use deadpool_postgres::ClientWrapper;
use tokio_postgres::types::Type;

use alkstore_core::rules::payload::{self, Refusal};

use crate::error::pg_error;
use crate::ops::quote_ident;

/// The migrations this build knows, in order: migration N is
/// `migrations/000N_*.sql`, with the placeholders [`render`] fills in.
/// Never change what a released one leaves behind: add the next number
/// instead. (A SQL function's text lives in `functions/`, and every
/// migration that (re)defines it writes in its current text.)
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("migrations/0001_init.sql")),
    (2, include_str!("migrations/0002_locks_schedules_streams.sql")),
    (3, include_str!("migrations/0003_pending_holds_no_lease.sql")),
    (4, include_str!("migrations/0004_enqueue_function.sql")),
    (5, include_str!("migrations/0005_store_id.sql")),
    (6, include_str!("migrations/0006_unique_pause.sql")),
    (7, include_str!("migrations/0007_completions.sql")),
    (8, include_str!("migrations/0008_queues.sql")),
    (9, include_str!("migrations/0009_cron_schedules.sql")),
    (10, include_str!("migrations/0010_limits.sql")),
    (11, include_str!("migrations/0011_slots.sql")),
    (12, include_str!("migrations/0012_workflows.sql")),
    (13, include_str!("migrations/0013_linked_enqueue.sql")),
    (14, include_str!("migrations/0014_fan_in_ack.sql")),
    (15, include_str!("migrations/0015_fan_in_frames.sql")),
    (16, include_str!("migrations/0016_sole_child.sql")),
    (17, include_str!("migrations/0017_sole_acked_function.sql")),
    (18, include_str!("migrations/0018_live_index.sql")),
    (19, include_str!("migrations/0019_fan_in_run.sql")),
    (20, include_str!("migrations/0020_failure_cascade.sql")),
    (21, include_str!("migrations/0021_live_last_error.sql")),
    (22, include_str!("migrations/0022_payload_limits.sql")),
];

/// The current definition of `<schema>.enqueue(...)`, for `__ENQUEUE_FUNCTION__`.
const ENQUEUE_FUNCTION: &str = include_str!("functions/enqueue.sql");

/// A migration's text for `schema` (`quoted`: as an identifier): the schema,
/// the store's notification channel, and the bounds the SQL enqueue function
/// checks, taken from core so SQL producers meet the same rules as Python.
fn render(sql: &str, schema: &str, quoted: &str) -> String {
    sql.replace("__ENQUEUE_FUNCTION__", ENQUEUE_FUNCTION)
        .replace("__SCHEMA__", quoted)
        .replace("__CHANNEL__", &crate::wake::channel(schema))
        .replace("__MAX_NAME_CHARS__", &alkstore_core::rules::names::MAX_NAME_CHARS.to_string())
        .replace("__RESERVED_PREFIX__", alkstore_core::RESERVED_PREFIX)
        .replace("__MAX_DURATION_S__", &alkstore_core::MAX_DURATION_S.to_string())
        .replace("__MAX_UNIQUE_KEY_CHARS__", &alkstore_core::rules::unique::MAX_UNIQUE_KEY_CHARS.to_string())
        .replace("__MAX_PAYLOAD_BYTES__", &alkstore_core::OpenOptions::default().max_payload_bytes.to_string())
        .replace("__PAYLOAD_TOO_DEEP__", &payload_message(&Refusal::TooDeep))
        .replace("__PAYLOAD_FLOAT_OVERFLOW__", &payload_message(&Refusal::FloatOverflow))
        .replace("__PAYLOAD_LONG_INT__", &payload_message(&Refusal::LongInt { digits: DIGITS_MARK }))
        .replace("__MAX_PAYLOAD_DEPTH__", &payload::MAX_DEPTH.to_string())
        .replace("__MAX_INT_DIGITS__", &payload::MAX_INT_DIGITS.to_string())
        .replace("__FLOAT_OVERFLOW__", payload::FLOAT_OVERFLOW)
}

/// Stands for the digit count in [`payload_message`]'s text of a long integer.
const DIGITS_MARK: usize = 987_654_321;

/// The Store's refusal of a payload (`payload <why>`) as a `RAISE` format
/// literal: quotes doubled, `%` doubled, and the digit count of a long
/// integer left as the one `%` parameter.
fn payload_message(why: &Refusal) -> String {
    let text = format!("payload {why}").replace('%', "%%").replace(&DIGITS_MARK.to_string(), "%");
    format!("'{}'", text.replace('\'', "''"))
}

/// The schema version this build writes: the last migration's number. A
/// store with a higher one was written by a newer alkstore and is refused.
pub const SCHEMA_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// The store's identity as a SQL expression over the `meta` row whose key is
/// `store_id`: the random id of migration 0005 joined with the oid of the
/// database it is in, so a database created from this one as a `TEMPLATE`
/// (which keeps the id) is still another store (ADR 0015). The foreign
/// statements' guard computes the same on the caller's connection.
pub(crate) const STORE_IDENTITY: &str =
    "value || '@' || (SELECT oid::text FROM pg_catalog.pg_database WHERE datname = current_database())";

/// The identity of the store in `schema` (migration 0005, ADR 0015), read once at open.
pub async fn store_id(client: &ClientWrapper, schema: &str) -> Result<String> {
    let sql = format!("SELECT {STORE_IDENTITY} FROM {}.meta WHERE key = 'store_id'", quote_ident(schema));
    // Unnamed, as every statement outside a transaction that a transaction
    // pooler may run (ADR 0030).
    let row = client.query_typed_opt(&sql, &[]).await.map_err(|e| pg_error(&e))?;
    let row =
        row.ok_or_else(|| Error::database(None, format!("schema {schema} has no store_id row in its meta table")))?;
    row.try_get(0).map_err(|e| pg_error(&e))
}

/// Brings `schema` to [`SCHEMA_VERSION`], or refuses a newer one.
pub async fn migrate(client: &mut ClientWrapper, schema: &str) -> Result<()> {
    let pg = |e: tokio_postgres::Error| pg_error(&e);
    let quoted = quote_ident(schema);
    let tx = client.transaction().await.map_err(pg)?;
    // hashtextextended gives a bigint key; the prefix keeps us clear of
    // advisory locks the application may take on its own numbers.
    // Every statement here is unnamed, in both statement modes: a named one,
    // even closed before COMMIT, can meet another client's name in a
    // pooler's server session (ADR 0030).
    tx.execute_typed(
        "SELECT pg_advisory_xact_lock(hashtextextended('alkstore.migrate:' || $1::text, 0))",
        &[(&schema, Type::TEXT)],
    )
    .await
    .map_err(pg)?;

    // Check before creating: CREATE SCHEMA IF NOT EXISTS still demands the
    // CREATE privilege on the database, which a deployed role may lack once
    // the schema exists.
    let exists: bool = tx
        .query_typed_one(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1::text)",
            &[(&schema, Type::TEXT)],
        )
        .await
        .map_err(pg)?
        .get(0);
    if !exists {
        tx.batch_execute(&format!("CREATE SCHEMA {quoted}")).await.map_err(pg)?;
    }
    let meta = format!("{quoted}.meta");
    let has_meta: bool = tx
        .query_typed_one("SELECT to_regclass($1::text) IS NOT NULL", &[(&meta, Type::TEXT)])
        .await
        .map_err(pg)?
        .get(0);
    if !has_meta {
        tx.batch_execute(&format!("CREATE TABLE {meta} (key text PRIMARY KEY, value text NOT NULL)"))
            .await
            .map_err(pg)?;
    }

    let row =
        tx.query_typed_opt(&format!("SELECT value FROM {meta} WHERE key = 'schema_version'"), &[]).await.map_err(pg)?;
    let current = match row {
        None => 0,
        Some(r) => {
            let text: String = r.get(0);
            text.parse::<i64>().map_err(|_| {
                Error::database(
                    None,
                    format!("schema {quoted} has an unreadable schema_version {text:?} in its meta table"),
                )
            })?
        }
    };
    if current > SCHEMA_VERSION {
        return Err(Error::database(
            None,
            format!(
                "schema {quoted} was written by a newer alkstore (schema version {current}; this build knows up to \
                 {SCHEMA_VERSION}); refusing to open it — upgrade alkstore"
            ),
        ));
    }
    if current == SCHEMA_VERSION {
        // Nothing to change; the transaction (and the lock) end here.
        return tx.commit().await.map_err(pg);
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        tx.batch_execute(&render(sql, schema, &quoted)).await.map_err(|e| {
            let mut err = pg_error(&e);
            if let Error::Database { message, .. } = &mut err {
                *message = format!("migration {version:04} failed: {message}");
            }
            err
        })?;
    }
    tx.execute_typed(
        &format!(
            "INSERT INTO {meta} (key, value) VALUES ('schema_version', $1::text) \
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
        ),
        &[(&SCHEMA_VERSION.to_string(), Type::TEXT)],
    )
    .await
    .map_err(pg)?;
    tx.commit().await.map_err(pg)
}

/// For `must_exist` opens: `schema` must already hold a store of exactly
/// this build's schema version. Reads only — no schema, table or migration
/// is made — so a database without the store is left as it was.
pub async fn check_existing(client: &ClientWrapper, schema: &str) -> Result<()> {
    let pg = |e: tokio_postgres::Error| pg_error(&e);
    let quoted = quote_ident(schema);
    let meta = format!("{quoted}.meta");
    // to_regclass is NULL for a missing schema as for a missing table.
    let has_meta: bool = client
        .query_typed_one("SELECT to_regclass($1::text) IS NOT NULL", &[(&meta, Type::TEXT)])
        .await
        .map_err(pg)?
        .get(0);
    let row = if has_meta {
        client
            .query_typed_opt(&format!("SELECT value FROM {meta} WHERE key = 'schema_version'"), &[])
            .await
            .map_err(pg)?
    } else {
        None
    };
    let Some(row) = row else {
        return Err(Error::database(
            None,
            format!("not an alkstore store: schema {quoted} holds no alkstore tables (nothing was created)"),
        ));
    };
    let text: String = row.get(0);
    let version = text.parse::<i64>().map_err(|_| {
        Error::database(None, format!("schema {quoted} has an unreadable schema_version {text:?} in its meta table"))
    })?;
    if version != SCHEMA_VERSION {
        let what = if version > SCHEMA_VERSION {
            "upgrade alkstore to read it"
        } else {
            "open it once with alkstore.open() (a worker does) to upgrade it"
        };
        return Err(Error::database(
            None,
            format!(
                "schema {quoted} has schema version {version} and this alkstore writes {SCHEMA_VERSION}: {what}; \
                 this command writes nothing"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_files_are_numbered_one_to_n() -> alkstore_enginetest::TestResult {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/migrations");
        alkstore_enginetest::migrations::numbered_one_to_n(&dir, MIGRATIONS, SCHEMA_VERSION)
    }
}
