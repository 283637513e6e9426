"""Every value the binding hands out has a repr in Python's syntax, on both engines.

A repr is read by people in a REPL, a log line or a pytest failure: a string
shows as Python quotes it (``'it\\'s'``, never Rust's ``"it's"``), an absent
value as ``None`` (never ``Some("boom")``), a flag as ``True``. Names and
texts here carry both quote characters and non-ASCII, where Rust's ``Debug``
and Python's ``repr`` differ; each repr is compared with the one built from
the object's own attributes by Python's ``repr``.
"""

from __future__ import annotations

import alkstore
from alkstore import Store
from tests.conftest import Target

NAME = 'o\'reilly "q" — é'  # both quotes, and characters Rust's Debug escapes differently
ERROR = 'boom: it\'s "bad" — é\n'


def test_job_handle_result_and_queue_reprs(store: Store) -> None:
    q = store.queue(NAME, max_attempts=1)
    assert repr(q) == f"<alkstore.Queue {NAME!r}>"
    done_id = q.enqueue({"n": 1}, keep_result=3600)
    dead_id = q.enqueue({"n": 2})
    job = q.get_job(done_id)
    assert job is not None
    assert repr(job) == f"Job(id={done_id}, queue={NAME!r}, state='pending')"

    h = q.claim("w")
    assert h is not None and h.id == done_id
    assert repr(h) == f"<alkstore.JobHandle id={done_id} queue={NAME!r} attempts=1>"
    assert h.ack(result={"rows": [1, True, None], "text": NAME})
    dead = q.claim("w")
    assert dead is not None and dead.fail(ERROR)

    done = store.result(done_id)
    assert done is not None
    assert repr(done) == (
        f"Result(state='done', value={done.value!r}, error=None, finished_at={done.finished_at!r})"
    )
    failed = store.result(dead_id)
    assert failed is not None and failed.error == ERROR
    assert repr(failed) == (
        f"Result(state='dead', value=None, error={ERROR!r}, finished_at={failed.finished_at!r})"
    ), "no Rust Some(...) around the error"

    [count] = store.completions()
    assert repr(count) == f"CompletionCount(queue={NAME!r}, count=1)"
    stats = q.stats()
    assert repr(stats) == (
        f"QueueStats(pending=0, scheduled=0, processing=0, dead=1, oldest_ready_age_s=None, "
        f"paused=False, limits={stats.limits!r}, waiting=0)"
    )
    assert repr(q.sweep_expired()) == "Swept(expired=0, purged=0)"
    with q.jobs(NAME) as it:
        assert repr(it) == f"<alkstore.JobIterator queue={NAME!r} worker_id={NAME!r}>"


def test_limits_reprs(store: Store) -> None:
    q = store.queue("limited")
    q.set_limits(concurrency=2, rate=(3, 0.5))
    limits = q.limits()
    assert repr(limits) == (
        "QueueLimits(concurrency=2, rate_count=3, rate_period_s=0.5, group_concurrency=None)"
    )
    assert repr(alkstore.QueueLimits(rate_count=1, rate_period_s=2)) == (
        "QueueLimits(concurrency=None, rate_count=1, rate_period_s=2.0, group_concurrency=None)"
    )
    assert repr(q.stats()).endswith(f"paused=False, limits={limits!r}, waiting=0)")
    q.pause()
    assert ", paused=True, " in repr(q.stats())


def test_stream_reprs(store: Store) -> None:
    s = store.stream(NAME)
    assert repr(s) == f"<alkstore.Stream {NAME!r}>"
    s.publish({"ok": True, "none": None, "text": NAME}, key=NAME)
    s.publish([1.5, False])
    keyed, plain = s.read()
    assert repr(keyed) == f"Event(offset={keyed.offset}, key={NAME!r}, payload={keyed.payload!r})"
    assert repr(plain) == f"Event(offset={plain.offset}, key=None, payload=[1.5, False])"
    s.save_offset(NAME, keyed.offset)
    [info] = store.streams()
    assert repr(info) == f"StreamInfo(name={NAME!r}, head={plain.offset}, consumers=1)"
    [consumer] = info.consumers
    assert repr(consumer) == f"ConsumerInfo(name={NAME!r}, offset={keyed.offset}, lag=1)"
    stop = alkstore.StopToken()
    sub = s.subscribe(NAME, stop=stop)
    assert repr(sub) == f"<alkstore.Subscription stream={NAME!r} consumer={NAME!r}>"
    assert repr(stop) == "<alkstore.StopToken stopped=False>"
    stop.stop()
    assert repr(stop) == "<alkstore.StopToken stopped=True>"


def test_lock_schedule_and_store_reprs(store: Store, target: Target) -> None:
    with store.lock(NAME, ttl_s=60, owner=NAME) as lock:
        assert repr(lock) == f"<alkstore.Lock name={NAME!r} owner={NAME!r} ttl_s=60>"
        [info] = store.locks()
        assert repr(info) == f"LockInfo(name={NAME!r}, owner={NAME!r})"
    store.schedule(NAME, "0 9 * * MON-FRI", NAME, tz="Europe/Berlin")
    [sched] = store.schedules()
    assert repr(sched) == (
        f"Schedule(name={NAME!r}, spec='0 9 * * MON-FRI', tz='Europe/Berlin', queue={NAME!r}, "
        f"next_fire_at={sched.next_fire_at.isoformat()})"
    )
    assert repr(store).startswith(f"<alkstore.Store engine={target.engine!r} target='")
    other = target.open()
    other.close()
    assert repr(other).endswith("' closed>")
