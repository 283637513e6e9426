//! Real separate processes on one file: this test binary re-runs itself as
//! the child (`child_role`, ignored unless a parent asks for it).

mod common;

use std::collections::HashSet;
use std::process::{Command, Stdio};

use alkstore_core::{Error, NewJob, Result};
use alkstore_sqlite::SqliteOptions;
use common::{job, opts, Fixture};

const ROLE: &str = "ALKSTORE_TEST_CHILD_ROLE";
const PATH: &str = "ALKSTORE_TEST_CHILD_PATH";

fn io(e: std::io::Error) -> Error {
    Error::database(None, e.to_string())
}

/// Starts this binary as a child running `role` against `path`.
fn spawn(role: &str, path: &str) -> Result<std::process::Child> {
    Command::new(std::env::current_exe().map_err(io)?)
        .args(["child_role", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(PATH, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(io)
}

/// The child side. `drain`: claim + ack until empty, print each id.
/// `die-mid-tx`: enqueue inside a transaction, then abort the process.
/// `die-mid-job`: claim one job, then abort the process.
#[test]
#[ignore = "run by the multi-process tests as a child process"]
fn child_role() -> Result<()> {
    let (Ok(role), Ok(path)) = (std::env::var(ROLE), std::env::var(PATH)) else {
        return Ok(());
    };
    let engine = alkstore_sqlite::open(&path, &SqliteOptions::default())?;
    match role.as_str() {
        "drain" => {
            while let Some(j) = engine.claim("q", &format!("pid{}", std::process::id()), 1)?.pop() {
                if engine.ack(None, &[&j])? == 1 {
                    println!("ACKED {}", j.id);
                }
            }
        }
        "die-mid-tx" => {
            let mut tx = engine.begin()?;
            let jobs: Vec<NewJob> = (0..50).map(|i| job(&i.to_string())).collect();
            engine.enqueue(Some(tx.as_mut()), "q", &opts(), &jobs)?;
            tx.execute("CREATE TABLE side_effect (x)", &[])?;
            std::process::abort();
        }
        "die-mid-job" => {
            let j = engine.claim("q", "doomed", 1)?.pop();
            println!("CLAIMED {}", j.map_or(0, |j| j.id));
            std::process::abort();
        }
        other => panic!("unknown role {other}"),
    }
    Ok(())
}

#[test]
fn separate_processes_ack_each_job_exactly_once() -> Result<()> {
    let f = Fixture::new()?;
    let jobs: Vec<NewJob> = (0..2000).map(|i| job(&i.to_string())).collect();
    let ids: HashSet<i64> = f.engine.enqueue(None, "q", &opts(), &jobs)?.into_iter().collect();
    let children = (0..3).map(|_| spawn("drain", &f.path)).collect::<Result<Vec<_>>>()?;
    let mut acked = HashSet::new();
    let mut per_child = Vec::new();
    for child in children {
        let before = acked.len();
        let out = child.wait_with_output().map_err(io)?;
        assert!(out.status.success(), "child failed");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            // The harness may print "test child_role ... " on the same line.
            if let Some(id) = line.split("ACKED ").nth(1) {
                let id: i64 = id.trim().parse().map_err(|_| Error::database(None, "bad child output"))?;
                assert!(acked.insert(id), "job {id} acked by two processes");
            }
        }
        per_child.push(acked.len() - before);
    }
    eprintln!("acks per process: {per_child:?}");
    assert_eq!(acked, ids);
    assert_eq!(f.engine.stats("q")?, Default::default());
    Ok(())
}

#[test]
fn a_process_killed_mid_transaction_leaves_nothing() -> Result<()> {
    let f = Fixture::new()?;
    let status = spawn("die-mid-tx", &f.path)?.wait().map_err(io)?;
    assert!(!status.success(), "the child should have aborted");
    let fresh = f.reopen()?;
    assert_eq!(fresh.stats("q")?, Default::default());
    let mut tx = fresh.begin()?;
    assert!(tx.query("SELECT * FROM side_effect", &[]).is_err(), "no partial DDL either");
    tx.rollback()?;
    // And the writer lock died with the process.
    fresh.enqueue(None, "q", &opts(), &[job("after")])?;
    Ok(())
}

#[test]
fn a_job_of_a_killed_worker_is_reclaimed_with_the_attempt_counted() -> Result<()> {
    let f = Fixture::new()?;
    let id = f.put("q", "x")?;
    let out = spawn("die-mid-job", &f.path)?.wait_with_output().map_err(io)?;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("CLAIMED {id}")));
    assert!(f.one("q", "w")?.is_none(), "the lease is still running");
    f.engine.advance_clock(31);
    let j = f.one("q", "w")?.unwrap();
    assert_eq!((j.id, j.attempts, j.claim_token), (id, 2, 2));
    Ok(())
}
