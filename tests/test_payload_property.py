"""Generated payloads round-trip exactly as `json.loads(json.dumps(p))` (SPEC §4.1, ADR 0003).

One store per engine serves every example (a fresh queue name each time), so
the property runs against the real storage without reopening per example.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import alkstore

# Lone surrogates are left out: tests/test_enqueue.py covers them on their own.
text = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.tuples(inner, inner) | st.dictionaries(text, inner, max_size=5)
    ),
    max_leaves=25,
)


def as_text(v: Any) -> str:
    """A canonical text that tells apart 1/1.0/True and dict key orders."""
    return json.dumps(v)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(payload=json_values)
def test_generated_payloads_round_trip(store: alkstore.Store, payload: Any) -> None:
    q = store.queue(uuid.uuid4().hex)
    expected = json.loads(json.dumps(payload))
    job_id = q.enqueue(payload)
    job = q.get_job(job_id)
    assert job is not None
    assert as_text(job.payload) == as_text(expected)
    h = q.claim("w")
    assert h is not None and as_text(h.payload) == as_text(expected)
    assert h.ack()


@pytest.mark.parametrize(
    "payload",
    ["é" * 10, {"k": "☃"}, [1, 2.5, None], {"a": {"b": [True]}}],
    ids=["str", "dict", "list", "nested"],
)
def test_size_limit_is_utf8_json_text(store_factory: Any, payload: Any) -> None:
    """The limit counts UTF-8 bytes of the JSON text, not characters and not ASCII escapes.

    SPEC §2 does not fix the separators, so either json.dumps' default
    (", ", ": ") or the compact form is accepted as "the JSON text".
    """
    spaced = len(json.dumps(payload, ensure_ascii=False).encode("utf-8"))
    compact = len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    fits = store_factory(max_payload_bytes=spaced).queue("q")
    assert fits.enqueue(payload) > 0
    short = store_factory(max_payload_bytes=compact - 1).queue("q")
    with pytest.raises(ValueError, match="max_payload_bytes"):
        short.enqueue(payload)
    assert fits.stats().pending == 1
