//! The SQL enqueue function (SPEC §17, migration 0004): called from raw SQL
//! and from a trigger, in the caller's transaction, validated with core's
//! rules and messages, notifying like every other enqueue.

mod common;

use std::time::Duration;

use alkstore_core::{
    Error, JobState, NewJob, OpenOptions, QueueOpts, ReadyAt, StopToken, Store, WaitSpec, MAX_DURATION_S,
};
use common::{job, raw_client, TestDb, TestResult};
use tokio_postgres::Client;

/// Runs `sql` on `c` and returns the one bigint it selects.
fn one_id(c: &Client, sql: &str) -> Result<i64, Box<dyn std::error::Error>> {
    Ok(alkstore_postgres::block_on(c.query_one(sql, &[]))??.get(0))
}

/// The SQLSTATE and message of `sql`'s error, which it must raise.
fn refusal(c: &Client, sql: &str) -> Result<(String, String), Box<dyn std::error::Error>> {
    let e = alkstore_postgres::block_on(c.batch_execute(sql))?.err().ok_or_else(|| format!("accepted: {sql}"))?;
    let db = e.as_db_error().ok_or_else(|| format!("not a server error: {e}"))?;
    Ok((db.code().code().to_owned(), db.message().to_owned()))
}

/// The queue-option stamps of row `id`: visibility timeout, backoff base, dead retention.
fn stamps(c: &Client, schema: &str, id: i64) -> Result<(i64, f64, Option<i64>), Box<dyn std::error::Error>> {
    let sql = format!(
        r#"SELECT visibility_timeout_s::int8, backoff_base_s::float8, dead_retention_s::int8 FROM "{schema}".jobs WHERE id = $1"#
    );
    let row = alkstore_postgres::block_on(c.query_one(&sql, &[&id]))??;
    Ok((row.get(0), row.get(1), row.get(2)))
}

#[test]
fn named_arguments_and_defaults_stamp_the_job_like_the_front() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let c = raw_client()?;
    let s = &db.schema;
    let id = one_id(&c, &format!(r#"SELECT "{s}".enqueue(queue => 'emails', payload => '{{"to": "a@b"}}'::jsonb)"#))?;
    let j = db.engine.get_job(None, "emails", id)?.ok_or("the job")?;
    let d = QueueOpts::default();
    assert_eq!((j.state, j.priority, j.attempts, j.max_attempts), (JobState::Pending, 0, 0, d.max_attempts));
    assert_eq!((j.run_at, j.expires_at), (j.enqueued_at, None));
    assert_eq!(j.payload, r#"{"to": "a@b"}"#);
    assert_eq!(stamps(&c, s, id)?, (d.visibility_timeout_s, d.backoff_base_s, None));

    let later = one_id(
        &c,
        &format!(
            r#"SELECT "{s}".enqueue(queue => 'emails', payload => 'null', delay_s => 60, priority => 7,
               max_attempts => 9, expires_s => 3600, visibility_timeout_s => 30, backoff_base_s => 0.5)"#
        ),
    )?;
    let j = db.engine.get_job(None, "emails", later)?.ok_or("the delayed job")?;
    assert_eq!((j.priority, j.max_attempts), (7, 9));
    assert_eq!(stamps(&c, s, later)?, (30, 0.5, None));
    assert_eq!((j.run_at - j.enqueued_at, j.expires_at.map(|e| e - j.enqueued_at)), (60, Some(3600)));
    assert_eq!(j.payload, "null");

    // Claimable as any job: the ready one now, the delayed one after its delay.
    let store = Store::new(db.reopen()?, OpenOptions::default());
    assert_eq!(store.claim("emails", "w", 10)?.iter().map(|c| c.id).collect::<Vec<_>>(), [id]);
    store.advance_clock(61)?;
    assert_eq!(store.claim("emails", "w", 10)?.iter().map(|c| c.id).collect::<Vec<_>>(), [later]);
    Ok(())
}

#[test]
fn bad_arguments_raise_22023_with_the_front_s_message_and_write_nothing() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let c = raw_client()?;
    let s = &db.schema;
    let store = Store::new(db.reopen()?, OpenOptions::default());
    // The queue's name is checked where the binding makes a queue handle.
    let front = |queue: &str, opts: QueueOpts, j: NewJob| match alkstore_core::validate_name("queue", queue)
        .and_then(|()| store.enqueue(None, queue, &opts, &[j]))
    {
        Err(Error::Value(m) | Error::Payload(m)) => m,
        Err(e @ Error::InvalidName { .. }) => e.to_string(),
        other => format!("not refused: {other:?}"),
    };
    let d = QueueOpts::default;
    let too_long = MAX_DURATION_S + 1;
    // (the function's arguments, the front's message for the same input,
    // written with the SQL argument's name)
    let cases: Vec<(String, String)> = vec![
        ("queue => ''".into(), front("", d(), job("{}"))),
        (format!("queue => '{}'", "x".repeat(201)), front(&"x".repeat(201), d(), job("{}"))),
        ("queue => '__alkstore_x'".into(), front("__alkstore_x", d(), job("{}"))),
        ("queue => 'q', max_attempts => 0".into(), front("q", QueueOpts { max_attempts: 0, ..d() }, job("{}"))),
        (
            "queue => 'q', visibility_timeout_s => 0".into(),
            front("q", QueueOpts { visibility_timeout_s: 0, ..d() }, job("{}")),
        ),
        (
            format!("queue => 'q', visibility_timeout_s => {too_long}"),
            front("q", QueueOpts { visibility_timeout_s: too_long, ..d() }, job("{}")),
        ),
        ("queue => 'q', backoff_base_s => -1".into(), front("q", QueueOpts { backoff_base_s: -1.0, ..d() }, job("{}"))),
        (
            "queue => 'q', delay_s => -1".into(),
            front("q", d(), NewJob { ready: ReadyAt::Delay(-1), ..job("{}") }).replace("delay", "delay_s"),
        ),
        (
            format!("queue => 'q', delay_s => {too_long}"),
            front("q", d(), NewJob { ready: ReadyAt::Delay(too_long), ..job("{}") }).replace("delay", "delay_s"),
        ),
        (
            format!("queue => 'q', expires_s => {too_long}"),
            front("q", d(), NewJob { expires_s: Some(too_long), ..job("{}") }).replace("expires", "expires_s"),
        ),
        (
            format!("queue => 'q', payload => to_jsonb(repeat('x', {}))", 1 << 20),
            front("q", d(), job(&format!("\"{}\"", "x".repeat(1 << 20)))),
        ),
        (
            "queue => 'q', unique_key => ''".into(),
            front("q", d(), NewJob { unique_key: Some(String::new()), ..job("{}") }),
        ),
        (
            format!("queue => 'q', unique_key => '{}'", "k".repeat(201)),
            front("q", d(), NewJob { unique_key: Some("k".repeat(201)), ..job("{}") }),
        ),
    ];
    for (args, message) in &cases {
        assert!(!message.starts_with("not refused"), "{args}: the front accepted it: {message}");
        let args = if args.contains("payload") { args.clone() } else { format!("{args}, payload => '{{}}'") };
        let (code, got) = refusal(&c, &format!(r#"SELECT "{s}".enqueue({args})"#))?;
        assert_eq!((code.as_str(), got.as_str()), ("22023", message.as_str()), "{args}");
    }
    let (code, got) = refusal(&c, &format!(r#"SELECT "{s}".enqueue(queue => 'q', payload => NULL)"#))?;
    assert_eq!(code, "22023");
    assert!(got.starts_with("payload must not be NULL"), "{got}");
    assert!(db.engine.queue_names()?.is_empty(), "nothing was written");
    Ok(())
}

/// SPEC §18 through the function: a live key returns the live job's id; a
/// concurrent transaction holding the same key uncommitted is waited for.
#[test]
fn a_unique_key_returns_the_live_job() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let (a, b) = (raw_client()?, raw_client()?);
    let s = &db.schema;
    let call = |p: &str| format!(r#"SELECT "{s}".enqueue(queue => 'q', payload => '{p}', unique_key => 'inv-42')"#);
    alkstore_postgres::block_on(a.batch_execute("BEGIN"))??;
    let first = one_id(&a, &call("1"))?;
    // `b` blocks on `a`'s uncommitted row until `a` commits, then gets its id.
    let second = std::thread::scope(|scope| -> Result<i64, String> {
        let waiter = scope.spawn(|| one_id(&b, &call("2")).map_err(|e| e.to_string()));
        std::thread::sleep(Duration::from_millis(300));
        assert!(!waiter.is_finished(), "the second enqueue waits for the first transaction");
        alkstore_postgres::block_on(a.batch_execute("COMMIT"))
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        waiter.join().map_err(|_| "waiter panicked".to_string())?
    })?;
    assert_eq!(second, first);
    let j = db.engine.get_job(None, "q", first)?.ok_or("the job")?;
    assert_eq!((j.payload.as_str(), j.unique_key.as_deref()), ("1", Some("inv-42")));
    assert_eq!(db.engine.stats("q")?.pending, 1);
    Ok(())
}

#[test]
fn a_trigger_enqueues_in_the_business_transaction() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let c = raw_client()?;
    let s = &db.schema;
    alkstore_postgres::block_on(c.batch_execute(&format!(
        r#"CREATE TABLE "{s}".orders (id bigserial PRIMARY KEY, email text NOT NULL);
           CREATE FUNCTION "{s}".order_placed() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN
               PERFORM "{s}".enqueue(queue => 'emails', payload => jsonb_build_object('order', NEW.id, 'to', NEW.email));
               RETURN NEW;
           END $$;
           CREATE TRIGGER order_placed AFTER INSERT ON "{s}".orders FOR EACH ROW EXECUTE FUNCTION "{s}".order_placed();"#
    )))??;
    alkstore_postgres::block_on(
        c.batch_execute(&format!(r#"BEGIN; INSERT INTO "{s}".orders (email) VALUES ('gone@x'); ROLLBACK;"#)),
    )??;
    assert_eq!(db.engine.stats("emails")?.pending, 0, "rolled back with the order");
    alkstore_postgres::block_on(
        c.batch_execute(&format!(r#"BEGIN; INSERT INTO "{s}".orders (email) VALUES ('a@b'); COMMIT;"#)),
    )??;
    let got = db.take("emails", "w")?;
    let row = alkstore_postgres::block_on(c.query_one(
        &format!(r#"SELECT o.id, o.email FROM "{s}".orders o WHERE $1::text::jsonb = jsonb_build_object('order', o.id, 'to', o.email)"#),
        &[&got.payload],
    ))??;
    let (order, email): (i64, String) = (row.get(0), row.get(1));
    assert_eq!((order, email.as_str()), (2, "a@b"), "the job names the committed order; the rolled-back one used id 1");
    Ok(())
}

#[test]
fn a_listening_claimer_wakes_when_the_caller_commits() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let c = raw_client()?;
    let s = &db.schema;
    // A long safety-net poll, so only the notification can explain a quick claim.
    let store = Store::new(db.reopen()?, OpenOptions { poll_interval_s: 30.0, ..OpenOptions::default() });
    let never = || false;
    let stop = StopToken::new();
    let (claimed, id) = std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let spec = WaitSpec { timeout: Some(Duration::from_secs(20)), stops: &[&stop], interrupted: &never };
            store.claim_wait("emails", "w", 1, &spec)
        });
        std::thread::sleep(Duration::from_millis(500));
        let id = one_id(&c, &format!(r#"SELECT "{s}".enqueue(queue => 'emails', payload => '{{}}')"#));
        (waiter.join().map_err(|_| "waiter panicked"), id)
    });
    assert_eq!(claimed??.iter().map(|c| c.id).collect::<Vec<_>>(), [id?]);
    Ok(())
}

/// SPEC §25 through the function: `after`, `on_failure` and `keep_result_s`
/// (defaults keep every older call working); a never-issued parent raises
/// 22023 with the front's message and writes nothing.
#[test]
fn after_links_a_child_like_the_front() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let c = raw_client()?;
    let s = &db.schema;
    let store = Store::new(db.reopen()?, OpenOptions::default());
    let a = one_id(&c, &format!(r#"SELECT "{s}".enqueue(queue => 'p', payload => '1')"#))?;
    let child = one_id(
        &c,
        &format!(
            r#"SELECT "{s}".enqueue(queue => 'c', payload => '2', after => ARRAY[{a}, {a}]::bigint[],
               on_failure => 'run', keep_result_s => 60)"#
        ),
    )?;
    assert_eq!(db.engine.get_job(None, "c", child)?.map(|j| j.state), Some(JobState::Waiting));
    let h = store.claim("p", "w", 1)?.pop().ok_or("the parent")?;
    assert!(store.ack_result(None, &h, "\"A\"")?);
    let hc = store.claim("c", "w", 1)?.pop().ok_or("the released child")?;
    assert_eq!(hc.id, child);
    assert_eq!(store.parent_results(None, child)?[0].1.as_ref().and_then(|r| r.value.as_deref()), Some("\"A\""));
    assert!(store.ack_result(None, &hc, "3")?);
    assert_eq!(store.result(child)?.and_then(|r| r.value).as_deref(), Some("3"), "kept for keep_result_s");

    let never = child + 1000;
    let front = match store.enqueue(None, "c", &QueueOpts::default(), &[NewJob { after: vec![never], ..job("{}") }]) {
        Err(Error::Value(m)) => m,
        other => format!("not refused: {other:?}"),
    };
    let (code, got) = refusal(
        &c,
        &format!(r#"SELECT "{s}".enqueue(queue => 'c', payload => '{{}}', after => ARRAY[{never}]::bigint[])"#),
    )?;
    assert_eq!((code.as_str(), got.as_str()), ("22023", front.as_str()));
    let (code, _) =
        refusal(&c, &format!(r#"SELECT "{s}".enqueue(queue => 'c', payload => '{{}}', on_failure => 'x')"#))?;
    assert_eq!(code, "22023");
    assert_eq!(db.engine.stats("c")?, Default::default(), "nothing written");
    Ok(())
}

/// Issue 44: the function's payload limits are core's. Each text of the
/// corpus goes to the function, and what jsonb keeps of it (`::jsonb::text`,
/// the body the function stores and a Worker reads) goes through the
/// Store's check: both accept, or both refuse with the same message, the
/// function with 22023 and writing nothing. What jsonb itself refuses never
/// reaches the function.
#[test]
fn the_function_and_core_agree_on_payload_edge_cases() -> TestResult {
    use alkstore_core::rules::payload::{FLOAT_OVERFLOW, MAX_DEPTH, MAX_INT_DIGITS};
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let c = raw_client()?;
    let s = &db.schema;
    let store = Store::new(db.reopen()?, OpenOptions::default());
    let arrays = |n: usize, inner: &str| format!("{}{inner}{}", "[".repeat(n), "]".repeat(n));
    let objects = |n: usize| format!("{}1{}", "{\"k\": ".repeat(n), "}".repeat(n));
    let digits = |n: usize| format!("1{}", "0".repeat(n - 1));
    let below_overflow = format!("{}1.9", &FLOAT_OVERFLOW[..FLOAT_OVERFLOW.len() - 1]);
    let corpus: Vec<String> = vec![
        // Nesting: at, one past, far past the limit; arrays, objects, both.
        arrays(MAX_DEPTH - 1, "1"),
        arrays(MAX_DEPTH, ""),
        arrays(MAX_DEPTH, "1"),
        arrays(MAX_DEPTH, "{}"),
        arrays(MAX_DEPTH + 1, ""),
        arrays(3000, ""),
        objects(MAX_DEPTH),
        objects(MAX_DEPTH + 1),
        format!("{{\"a\": [{}]}}", objects(MAX_DEPTH - 2)),
        format!("{{\"a\": [{}]}}", objects(MAX_DEPTH - 1)),
        format!("[{}, {}]", arrays(MAX_DEPTH - 1, ""), arrays(MAX_DEPTH - 1, "")),
        format!("[\"{}\"]", "[{".repeat(2000)),
        // Integers: jsonb writes every number in plain notation.
        digits(MAX_INT_DIGITS),
        digits(MAX_INT_DIGITS + 1),
        format!("-{}", digits(MAX_INT_DIGITS)),
        format!("-{}", digits(MAX_INT_DIGITS + 1)),
        format!("1e{}", MAX_INT_DIGITS - 1),
        format!("1e{}", MAX_INT_DIGITS),
        "{\"args\": [1e5000]}".into(),
        "[-1e5000]".into(),
        format!("[1e{}, 1e{}]", MAX_INT_DIGITS + 100, MAX_INT_DIGITS + 200),
        format!("{{\"b\": 1e{}, \"a\": 1e{}}}", MAX_INT_DIGITS + 200, MAX_INT_DIGITS + 100),
        // Floats: a fraction makes a float; finite, or past the range.
        "1e308".into(),
        "1e309".into(),
        "1.5e308".into(),
        format!("{}.5", digits(309)),
        format!("{}.5", digits(310)),
        format!("-{}.5", digits(310)),
        format!("{FLOAT_OVERFLOW}.0"),
        below_overflow,
        "-0".into(),
        "-0.0".into(),
        "1e-400".into(),
        "-1.5e-400".into(),
        "123.456e-7".into(),
        // Both at once: nesting is named first.
        format!("[1e5000, {}]", arrays(MAX_DEPTH, "")),
        // Strings: escapes, and what only looks like a number or brackets.
        r#""\u00e9\ud83d\ude00""#.into(),
        "\"é😀\"".into(),
        r#""1e5000""#.into(),
        r#""\ud800""#.into(),
        r#""\u0000""#.into(),
        "1e200000".into(),
    ];
    let (mut accepted, mut jsonb_refused) = (0, Vec::new());
    for text in &corpus {
        let shown = if text.len() > 60 { format!("{}… ({} bytes)", &text[..40], text.len()) } else { text.clone() };
        let stored = match alkstore_postgres::block_on(c.query_one("SELECT $1::text::jsonb::text", &[text]))? {
            Ok(row) => row.get::<_, String>(0),
            Err(e) => {
                jsonb_refused.push((shown, e.code().map(|c| c.code().to_owned())));
                continue;
            }
        };
        let core = match store.enqueue(None, "core", &QueueOpts::default(), &[job(&stored)]) {
            Ok(_) => None,
            Err(Error::Payload(m)) => Some(m),
            Err(e) => return Err(format!("{shown}: {e}").into()),
        };
        let call = format!(r#"SELECT "{s}".enqueue(queue => 'sql', payload => $1::text::jsonb)"#);
        let function = match alkstore_postgres::block_on(c.query_one(&call, &[text]))? {
            Ok(_) => None,
            Err(e) => {
                let db = e.as_db_error().ok_or_else(|| format!("{shown}: not a server error: {e}"))?;
                assert_eq!(db.code().code(), "22023", "{shown}");
                Some(db.message().to_owned())
            }
        };
        assert_eq!(function, core, "{shown}");
        accepted += usize::from(core.is_none());
    }
    assert_eq!(db.engine.stats("sql")?.pending, i64::try_from(accepted)?, "a refusal writes nothing");
    assert_eq!(db.engine.stats("core")?.pending, i64::try_from(accepted)?);
    // jsonb's own refusals, before the function runs: a lone surrogate, NUL,
    // a number past numeric's range.
    let codes: Vec<Option<String>> = jsonb_refused.iter().map(|(_, c)| c.clone()).collect();
    assert_eq!(codes.len(), 3, "{jsonb_refused:?}");
    assert!(codes.iter().all(Option::is_some), "{jsonb_refused:?}");
    // Each limit refused something and let something through.
    assert!(accepted > 10 && accepted < corpus.len() - 3 - 10, "{accepted} of {}", corpus.len());
    Ok(())
}
