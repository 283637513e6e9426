"""Start/stop stress (SPEC §27): Workers, schedule runners and stream subscribers
started and stopped in a loop while jobs and events keep flowing. Nothing is
lost, nothing runs twice, every schedule boundary fires once, the subscriber
sees every event in order, and no thread is left behind.

Each round waits for progress the code reports (jobs handled in that round,
events seen), never for a time.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import alkstore
from alkstore import JobHandle, Store, Worker
from tests.scheduling import Runner, next_fire, wait_until

ROUNDS = 6


def _thread_names() -> Counter[str]:
    return Counter(t.name for t in threading.enumerate())


def test_workers_runners_and_subscribers_started_and_stopped_in_a_loop_lose_nothing(
    store_factory: Callable[..., Store],
) -> None:
    producer_store, store = store_factory(), store_factory()
    jobs, stream = producer_store.queue("jobs"), producer_store.stream("events")
    store.schedule("tick", "@every 1s", "tick")
    first_fire = next_fire(store, "tick")
    # Warm the store's own threads (wake watcher, LISTEN) and the process's one
    # heartbeat timetable (alkstore-heartbeat, parked while idle) first: those
    # belong to the process, not to a Worker, and stay.
    store.stream("events").get_offset("c")
    warm = Worker(store, concurrency=1, worker_id="warm")
    warm.handler("warm")(lambda _p, _job: warm.stop())
    store.queue("warm").enqueue(None)
    warm.run()
    wait_until(lambda: not [t for t in threading.enumerate() if t.name.startswith("alkstore-handler")])
    baseline = _thread_names()

    handled: Counter[int] = Counter()
    ticks: Counter[int] = Counter()
    lock = threading.Lock()
    progress = threading.Condition(lock)
    enqueued: list[int] = []
    published: list[int] = []
    producing = alkstore.StopToken()

    def produce() -> None:
        n = 0
        while not producing.stopped:
            n += 1
            with producer_store.transaction() as tx:
                ids = jobs.enqueue_many([{"n": n, "i": i} for i in range(3)], tx=tx)
                offset = stream.publish({"n": n}, tx=tx)
            with lock:
                enqueued.extend(ids)
                published.append(offset)
            producing.wait(0.005)  # a steady trickle, not a flood: the stop token, not a sleep

    producer = threading.Thread(target=produce, name="soak-test-producer")
    producer.start()

    seen: list[tuple[int, int]] = []  # (round, offset)
    try:
        for rnd in range(ROUNDS):
            workers = [Worker(store, concurrency=2, worker_id=f"r{rnd}-w{k}") for k in range(2)]

            def on_job(_payload: object, job: JobHandle) -> None:
                with progress:
                    handled[job.id] += 1
                    progress.notify_all()

            def on_tick(_payload: object, job: JobHandle) -> None:
                with progress:
                    ticks[job.id] += 1
                    progress.notify_all()

            for w in workers:
                w.handler("jobs")(on_job)
                w.handler("tick")(on_tick)
            stops = [alkstore.StopToken() for _ in workers]
            threads = [
                threading.Thread(target=w.run, args=(s,), name=f"soak-test-worker-{i}")
                for i, (w, s) in enumerate(zip(workers, stops, strict=True))
            ]
            runner = Runner(store).start()
            sub_stop = alkstore.StopToken()
            sub_seen = threading.Event()

            def subscribe(
                r: int = rnd, stop: alkstore.StopToken = sub_stop, got: threading.Event = sub_seen
            ) -> None:
                for ev in store.stream("events").subscribe("c", stop=stop):
                    with lock:
                        seen.append((r, ev.offset))
                    got.set()

            sub = threading.Thread(target=subscribe, name="soak-test-subscriber")
            for t in [*threads, sub]:
                t.start()
            with progress:
                jobs_before, ticks_before = sum(handled.values()), len(ticks)

                def moved(b: int = jobs_before, t: int = ticks_before) -> bool:
                    # Jobs handled and a schedule fire handled in this round.
                    return sum(handled.values()) >= b + 20 and len(ticks) > t

                assert progress.wait_for(moved, timeout=60)
            assert sub_seen.wait(60), "the subscriber saw an event this round"
            sub_stop.stop()
            for s in stops:
                s.stop()
            runner.finish()
            for t in [*threads, sub]:
                t.join(60)
                assert not t.is_alive(), f"{t.name} did not stop"
            for w in workers:
                # A job claimed as the stop came is released unrun; none may be lost.
                assert w.counts.lost == 0, w.counts
    finally:
        producing.stop()
        producer.join(60)

    # Drain what is left with one last worker and one last subscriber, then check.
    with lock:
        last_offset = max(published)
    sub_stop = alkstore.StopToken()

    def catch_up() -> None:
        for ev in store.stream("events").subscribe("c", stop=sub_stop):
            with lock:
                seen.append((ROUNDS, ev.offset))
            if ev.offset >= last_offset:
                sub_stop.stop()

    sub = threading.Thread(target=catch_up, name="soak-test-catch-up")
    sub.start()
    final = Worker(store, concurrency=4, worker_id="final")
    final.handler("jobs")(lambda _p, job: handled.update([job.id]))
    final.handler("tick")(lambda _p, job: ticks.update([job.id]))
    stop = alkstore.StopToken()
    t = threading.Thread(target=final.run, args=(stop,), name="soak-test-final")
    t.start()
    with lock:
        expected = set(enqueued)
    wait_until(lambda: set(handled) >= expected, timeout=60, what="every job handled")
    last_fire = next_fire(store, "tick")  # no runner now: no more fires
    wait_until(lambda: len(ticks) >= last_fire - first_fire, timeout=60, what="every fire handled")
    stop.stop()
    t.join(60)
    sub.join(60)
    assert not t.is_alive() and not sub.is_alive()

    assert set(handled) == expected, "nothing lost, nothing unexpected"
    assert max(handled.values()) == 1, "nothing handled twice"
    assert len(ticks) == last_fire - first_fire and max(ticks.values()) == 1, "one fire per boundary"
    offsets = [o for _, o in seen]
    assert sorted(set(offsets)) == sorted(published), "the subscriber saw every event"
    # A subscriber stopped through its token saved its last offset: the next one
    # resumes after it, so across all rounds every event came once, in order.
    assert offsets == sorted(published), "every event once, in order, across the restarts"
    assert store.stream("events").get_offset("c") == max(published)
    # A stopped Worker's pool threads end after their last item, without being waited for.
    wait_until(lambda: _thread_names() == baseline, timeout=30, what=f"no thread left behind ({baseline})")
