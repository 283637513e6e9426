"""TTL locks (SPEC §10): `with store.lock(name, ttl_s, owner=None) as lock:`.

A lease is judged by the database clock plus each handle's offset, so a
second handle with `_advance_clock` plays a process that arrives after the
lease lapsed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

import pytest

import alkstore

# Also through PgBouncer in transaction mode (SPEC §26).
pytestmark = pytest.mark.pgbouncer


def test_acquire_and_lock_held(store: alkstore.Store) -> None:
    with store.lock("backup", 60) as lock:
        assert lock.name == "backup" and lock.ttl_s == 60
        with pytest.raises(alkstore.LockHeld, match="backup"), store.lock("backup", 60):
            pass
        with store.lock("other", 60):
            pass  # names are independent
    # released on exit: the next owner gets it at once
    with store.lock("backup", 60):
        pass


def test_held_across_handles(store: alkstore.Store, store_factory: Callable[..., alkstore.Store]) -> None:
    other = store_factory()
    with store.lock("backup", 60), pytest.raises(alkstore.LockHeld), other.lock("backup", 60):
        pass


def test_same_owner_shares_one_lease(store: alkstore.Store) -> None:
    a = store.lock("backup", 60, owner="host-1")
    b = store.lock("backup", 60, owner="host-1")
    with a:
        with b:  # the same owner re-acquires
            assert b.renew()
        # releasing either releases the one lease they share
        assert not a.renew()
        with store.lock("backup", 60):
            pass


def test_owner_none_is_fresh_per_lock_object(store: alkstore.Store) -> None:
    a = store.lock("backup", 60)
    b = store.lock("backup", 60)
    assert a.owner != b.owner
    assert re.fullmatch(r"[0-9a-f]{32}", a.owner)
    with a, pytest.raises(alkstore.LockHeld), b:
        pass


def test_renew_is_false_once_lost(
    store: alkstore.Store, store_factory: Callable[..., alkstore.Store]
) -> None:
    late = store_factory()
    late._advance_clock(11)  # past a 10 s lease on this handle's clock
    with store.lock("job", 10) as mine:
        assert mine.renew()
        with late.lock("job", 10) as theirs:
            assert not mine.renew()
            assert theirs.renew()
        assert not mine.renew()  # released by its new owner, still not ours


def test_renew_extends_the_lease(store: alkstore.Store, store_factory: Callable[..., alkstore.Store]) -> None:
    later = store_factory()
    later._advance_clock(12)  # past the first lease (10 s), inside the renewed one (15 s)
    with store.lock("job", 10) as mine:
        store._advance_clock(5)
        assert mine.renew()  # now expires 15 s from the original now
        with pytest.raises(alkstore.LockHeld), later.lock("job", 10):
            pass


def test_exception_inside_releases_and_propagates(store: alkstore.Store) -> None:
    with pytest.raises(RuntimeError, match="boom"), store.lock("job", 60):
        raise RuntimeError("boom")
    with store.lock("job", 60):
        pass


def test_timedelta_ttl_rounds_up(store: alkstore.Store) -> None:
    assert store.lock("a", timedelta(seconds=1.5)).ttl_s == 2
    assert store.lock("a", 0.2).ttl_s == 1


@pytest.mark.parametrize("name", ["", "__alkstore_scheduler", "__alkstore_x", "x" * 201, "a\0b"])
def test_bad_names_are_refused(store: alkstore.Store, name: str) -> None:
    with pytest.raises(alkstore.InvalidName):
        store.lock(name, 60)
    with pytest.raises(alkstore.InvalidName):
        store.lock("ok", 60, owner=name)


def test_bad_ttl(store: alkstore.Store) -> None:
    with pytest.raises(ValueError):
        store.lock("a", 0)
    with pytest.raises(ValueError):
        store.lock("a", -5)
    with pytest.raises(ValueError):
        store.lock("a", float("inf"))
    with pytest.raises(TypeError):
        store.lock("a", True)
    with pytest.raises(TypeError):
        store.lock("a", "60")  # type: ignore[arg-type]


def test_refused_from_a_transaction_thread(store: alkstore.Store) -> None:
    lock = store.lock("a", 60)
    with store.transaction(), pytest.raises(alkstore.TransactionError), lock:
        pass
    with lock:
        pass


def test_closed_store(store: alkstore.Store) -> None:
    lock = store.lock("a", 60)
    store.close()
    with pytest.raises(alkstore.StoreClosed), lock:
        pass
    with pytest.raises(alkstore.StoreClosed):
        lock.renew()
