"""Queue options and names are validated before anything is written (SPEC §3, §4, §13)."""

from __future__ import annotations

import math
from typing import Any

import pytest

import alkstore

BAD_NAMES = [
    pytest.param("", id="empty"),
    pytest.param("__alkstore", id="reserved-exact"),
    pytest.param("__alkstore_outbox:x", id="reserved-outbox"),
    pytest.param("__alkstore_scheduler", id="reserved-scheduler"),
    pytest.param("x" * 201, id="201-chars"),
    pytest.param("é" * 201, id="201-multibyte-chars"),
    pytest.param("a\x00b", id="nul"),
]
GOOD_NAMES = [
    pytest.param("x" * 200, id="200-chars"),
    pytest.param("é" * 200, id="200-multibyte-chars"),
    pytest.param("_alkstore", id="near-prefix"),
    pytest.param("emails.high-prio:v2 ☃", id="punctuation-unicode"),
    pytest.param("x__alkstore", id="prefix-not-at-start"),
    pytest.param('it\'s "quoted"; DROP TABLE x; --', id="sql-quotes"),
    pytest.param("%s $1 ? :name \\", id="placeholders"),
    pytest.param(" lead and trail ", id="spaces"),
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_queue_name(store: alkstore.Store, name: str) -> None:
    with pytest.raises(alkstore.InvalidName):
        store.queue(name).enqueue({"x": 1})


def test_invalid_name_is_value_error(store: alkstore.Store) -> None:
    with pytest.raises(ValueError):
        store.queue("").enqueue({})


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_good_queue_name(store: alkstore.Store, name: str) -> None:
    q = store.queue(name)
    job_id = q.enqueue({"x": 1})
    handle = q.claim("w")
    assert handle is not None and handle.id == job_id
    assert handle.queue == name
    job = q.get_job(job_id)
    assert job is not None and job.queue == name


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_worker_id(store: alkstore.Store, name: str) -> None:
    q = store.queue("q")
    job_id = q.enqueue({})
    with pytest.raises(alkstore.InvalidName):
        q.claim(name)
    with pytest.raises(alkstore.InvalidName):
        q.claim_batch(name, 5)
    job = q.get_job(job_id)
    assert job is not None and job.state == "pending" and job.attempts == 0


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_good_worker_id(store: alkstore.Store, name: str) -> None:
    q = store.queue("q")
    q.enqueue({})
    handle = q.claim(name)
    assert handle is not None and handle.worker_id == name
    assert handle.ack()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("visibility_timeout_s", 0),
        ("visibility_timeout_s", 0.5),
        ("visibility_timeout_s", -1),
        ("visibility_timeout_s", math.nan),
        ("visibility_timeout_s", math.inf),
        ("max_attempts", 0),
        ("max_attempts", -3),
        ("backoff_base_s", -1),
        ("backoff_base_s", -0.001),
        ("backoff_base_s", math.nan),
        ("backoff_base_s", math.inf),
        ("dead_letter_retention_s", -1),
        ("dead_letter_retention_s", math.nan),
        ("dead_letter_retention_s", math.inf),
    ],
)
def test_bad_queue_option(store: alkstore.Store, option: str, value: Any) -> None:
    with pytest.raises(ValueError, match=option):
        store.queue("q", **{option: value}).enqueue({})
    assert store.queue("q").stats().pending == 0


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("visibility_timeout_s", 1),
        ("visibility_timeout_s", 1.5),
        ("max_attempts", 1),
        ("backoff_base_s", 0),
        ("backoff_base_s", 0.25),
        ("dead_letter_retention_s", 0),
        ("dead_letter_retention_s", None),
    ],
)
def test_good_queue_option(store: alkstore.Store, option: str, value: Any) -> None:
    q = store.queue("q", **{option: value})
    q.enqueue({})
    assert q.claim("w") is not None


def test_options_are_stamped_per_job(store: alkstore.Store) -> None:
    """Two handles on one name with different options stamp different jobs (no registry)."""
    short = store.queue("q", visibility_timeout_s=7, max_attempts=1)
    long = store.queue("q", visibility_timeout_s=70, max_attempts=5)
    a = short.enqueue("a")
    b = long.enqueue("b")
    ha = long.claim("w")
    hb = short.claim("w")
    assert ha is not None and hb is not None
    assert (ha.id, hb.id) == (a, b)
    assert (ha.max_attempts, hb.max_attempts) == (1, 5)
    assert (ha.deadline - ha.claimed_at).total_seconds() == 7
    assert (hb.deadline - hb.claimed_at).total_seconds() == 70


def test_visibility_timeout_rounds_up(store: alkstore.Store) -> None:
    q = store.queue("q", visibility_timeout_s=1.5)
    q.enqueue({})
    handle = q.claim("w")
    assert handle is not None
    assert (handle.deadline - handle.claimed_at).total_seconds() == 2


@pytest.mark.parametrize(
    ("mine", "other"),
    [
        ("ab", "a%"),
        ("ab", "a_"),
        ("q", "Q"),
        ("q", "q "),
        ("é", "e\u0301"),
        ("x", "x\u200b"),
    ],
    ids=["percent", "underscore", "case", "trailing-space", "unicode-normal-form", "zero-width"],
)
def test_queue_names_compare_exactly(store: alkstore.Store, mine: str, other: str) -> None:
    """Names are exact strings: no wildcard, case, padding or Unicode folding between queues."""
    a, b = store.queue(mine), store.queue(other)
    job_id = a.enqueue({})
    assert b.claim("w") is None
    assert b.get_job(job_id) is None
    assert b.cancel(job_id) is False
    assert b.stats().pending == 0
    h = a.claim("w")
    assert h is not None and h.id == job_id and h.queue == mine
