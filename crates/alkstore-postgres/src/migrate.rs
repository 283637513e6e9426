//! Creating and upgrading the engine-owned schema at open: the baseline
//! (ADR 0037) and the migrations after it.
//!
//! The migrations are applied in one transaction that first takes a
//! transaction-scoped advisory lock keyed on the schema name: two processes
//! opening a fresh database at once queue on the lock, and the second finds
//! the work done. The `meta` table holding `schema_version` is created by
//! this bootstrap rather than by a migration, because the version must be
//! readable before any migration runs.

use alkstore_core::open::schema::{check_current, check_version, BASELINE};
use alkstore_core::{Error, Result};
use deadpool_postgres::ClientWrapper;
use tokio_postgres::types::Type;

use alkstore_core::rules::payload::{self, Refusal};

use crate::error::pg_error;
use crate::ops::quote_ident;

/// The migrations this build knows, in order: the baseline, numbered
/// [`BASELINE`], then each later one, migration N being
/// `migrations/0N_*.sql`, with the placeholders [`render`] fills in. Never
/// change what a released one leaves behind: add the next number instead.
/// (A SQL function's text lives in `functions/`, and every migration that
/// (re)defines it writes in its current text.)
const MIGRATIONS: &[(i64, &str)] = &[(BASELINE, include_str!("migrations/0100_baseline.sql"))];

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
/// store with a higher one was written by a newer alkstore, and one below
/// the baseline by a pre-release build: both are refused.
pub const SCHEMA_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// The store's identity as a SQL expression over the `meta` row whose key is
/// `store_id`: the random id the baseline wrote joined with the oid of the
/// database it is in, so a database created from this one as a `TEMPLATE`
/// (which keeps the id) is still another store (ADR 0015). The foreign
/// statements' guard computes the same on the caller's connection.
pub(crate) const STORE_IDENTITY: &str =
    "value || '@' || (SELECT oid::text FROM pg_catalog.pg_database WHERE datname = current_database())";

/// The identity of the store in `schema` (ADR 0015), read once at open.
pub async fn store_id(client: &ClientWrapper, schema: &str) -> Result<String> {
    let sql = format!("SELECT {STORE_IDENTITY} FROM {}.meta WHERE key = 'store_id'", quote_ident(schema));
    // Unnamed, as every statement outside a transaction that a transaction
    // pooler may run (ADR 0030).
    let row = client.query_typed_opt(&sql, &[]).await.map_err(|e| pg_error(&e))?;
    let row =
        row.ok_or_else(|| Error::database(None, format!("schema {schema} has no store_id row in its meta table")))?;
    row.try_get(0).map_err(|e| pg_error(&e))
}

/// Brings `schema` to [`SCHEMA_VERSION`], or refuses a newer one and a
/// pre-release one.
pub async fn migrate(client: &mut ClientWrapper, schema: &str) -> Result<()> {
    migrate_with(client, schema, MIGRATIONS).await
}

/// [`migrate`] with the given list (a test adds a migration after the
/// baseline): the schema ends at the list's last number.
async fn migrate_with(client: &mut ClientWrapper, schema: &str, migrations: &[(i64, &str)]) -> Result<()> {
    let known = migrations[migrations.len() - 1].0;
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
        None => None,
        Some(r) => {
            let text: String = r.get(0);
            Some(text.parse::<i64>().map_err(|_| {
                Error::database(
                    None,
                    format!("schema {quoted} has an unreadable schema_version {text:?} in its meta table"),
                )
            })?)
        }
    };
    if let Some(v) = current {
        // Refused before anything is written: the transaction rolls back.
        refuse(v, known, &quoted)?;
        if v == known {
            // Nothing to change; the transaction (and the lock) end here.
            return tx.commit().await.map_err(pg);
        }
    }
    for (version, sql) in migrations.iter().filter(|(v, _)| current.is_none_or(|c| *v > c)) {
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
        &[(&known.to_string(), Type::TEXT)],
    )
    .await
    .map_err(pg)?;
    tx.commit().await.map_err(pg)
}

/// Core's rule for which versions open (newer and pre-release stores are
/// refused), with this engine's words for the store and what to open instead.
fn refuse(version: i64, known: i64, quoted: &str) -> Result<()> {
    check_version(version, known, &format!("schema {quoted}"), FRESH)
}

/// What the messages of [`check_version`] say to open instead of a
/// pre-release schema.
const FRESH: &str = "a new schema (another name; or drop this one with its tables once its jobs are done)";

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
    check_current(version, SCHEMA_VERSION, &format!("schema {quoted}"), FRESH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{admin_url, TestResult};

    alkstore_enginetest::migration_files_are_numbered!(BASELINE, MIGRATIONS, SCHEMA_VERSION);

    /// Runs `f` on a pooled client of the test server with a fresh schema
    /// name, then drops that schema; Ok(()) without a server (unless one is
    /// required).
    fn with_schema(f: impl AsyncFnOnce(&mut ClientWrapper, &str) -> TestResult) -> TestResult {
        let Some(url) = admin_url()? else { return Ok(()) };
        let schema = format!("t_migrate_{:08x}", rand::random::<u32>());
        let config: tokio_postgres::Config = url.parse()?;
        let pool = crate::pool::build(config, 1)?;
        let result = crate::runtime::block_on(async {
            let mut client = pool.get().await?;
            let r = f(&mut client, &schema).await;
            client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")).await?;
            r
        })?;
        pool.close();
        result
    }

    async fn version(client: &ClientWrapper, schema: &str) -> std::result::Result<String, tokio_postgres::Error> {
        let sql = format!("SELECT value FROM \"{schema}\".meta WHERE key = 'schema_version'");
        Ok(client.query_one(&sql, &[]).await?.get(0))
    }

    /// A migration after the baseline: a store of the baseline gets it (and
    /// keeps its rows), and a build without it then refuses the store as newer.
    #[test]
    fn a_migration_after_the_baseline_applies_from_it() -> TestResult {
        with_schema(async |client, schema| {
            let later: &[(i64, &str)] =
                &[MIGRATIONS[0], (BASELINE + 1, "CREATE TABLE __SCHEMA__.added_in_a_test (x bigint)")];
            migrate(client, schema).await?;
            assert_eq!(version(client, schema).await?, BASELINE.to_string());
            client
                .batch_execute(&format!(
                    "INSERT INTO \"{schema}\".jobs (queue, state, payload, priority, attempts, max_attempts, \
                     claim_token, visibility_timeout_s, backoff_base_s, enqueued_at, run_at) \
                     VALUES ('q', 'pending', '{{}}', 0, 0, 3, 0, 30, 5, 0, 0)"
                ))
                .await?;
            migrate_with(client, schema, later).await?;
            migrate_with(client, schema, later).await?;
            assert_eq!(version(client, schema).await?, (BASELINE + 1).to_string());
            let row = client
                .query_one(&format!("SELECT count(*) FROM \"{schema}\".jobs, \"{schema}\".added_in_a_test"), &[])
                .await;
            assert!(row.is_ok(), "the added table exists: {row:?}");
            let kept: i64 = client.query_one(&format!("SELECT count(*) FROM \"{schema}\".jobs"), &[]).await?.get(0);
            assert_eq!(kept, 1);
            let err = migrate(client, schema).await.err().ok_or("a newer schema must be refused")?.to_string();
            assert!(
                err.contains("written by a newer alkstore (schema version 101; this alkstore knows up to 100)"),
                "{err}"
            );
            Ok(())
        })
    }

    /// A schema a pre-release build made is refused, saying so, and nothing
    /// is written to it.
    #[test]
    fn a_pre_release_schema_is_refused_and_left_as_it_was() -> TestResult {
        with_schema(async |client, schema| {
            client
                .batch_execute(&format!(
                    "CREATE SCHEMA \"{schema}\"; \
                     CREATE TABLE \"{schema}\".meta (key text PRIMARY KEY, value text NOT NULL); \
                     INSERT INTO \"{schema}\".meta VALUES ('schema_version', '22'); \
                     CREATE TABLE \"{schema}\".jobs (id bigint PRIMARY KEY)"
                ))
                .await?;
            let err = migrate(client, schema).await.err().ok_or("a pre-release schema must be refused")?.to_string();
            assert!(err.contains("was made by a pre-release build of alkstore (schema version 22)"), "{err}");
            assert_eq!(version(client, schema).await?, "22");
            let tables: i64 = client
                .query_one("SELECT count(*) FROM pg_tables WHERE schemaname = $1::text", &[&schema])
                .await?
                .get(0);
            assert_eq!(tables, 2, "nothing created");
            assert!(check_existing(client, schema).await.is_err());
            Ok(())
        })
    }
}
