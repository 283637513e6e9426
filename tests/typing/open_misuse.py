"""Checked by mypy in tests/test_open_typing.py, never run: each line marked
`# expect:` is a misuse mypy must report (every `alkstore.open` option is a
typed keyword of the SQLite or the Postgres overload); every other line must
type-check clean."""

from pathlib import Path

import alkstore

PG = "postgresql://app@pooler:6432/app"
PRIMARY = "postgresql://app@primary/app"

store: alkstore.Store = alkstore.open("a.db", busy_timeout_ms=5)
alkstore.open(Path("a.db"), watch_interval_ms=1, poll_interval_s=0.5, max_payload_bytes=4096)
alkstore.open("sqlite:///a.db", poll_interval_s=2)
with alkstore.open(PG, statements="unnamed", max_connections=4, listen_url=PRIMARY) as s:
    s.queue("emails")
alkstore.open(PG, schema="jobs", listen=False, poll_interval_s=1.5, max_payload_bytes=1 << 20)
alkstore.open(PG, pool_size=2, statements="named")

alkstore.open("a.db", busy_timeot_ms=5)  # expect: call-overload
alkstore.open("a.db", busy_timeout_ms="5")  # expect: call-overload
alkstore.open(PG, statements="unamed")  # expect: call-overload
alkstore.open(PG, max_connections=2.5)  # expect: call-overload
alkstore.open(PG, listen="no")  # expect: call-overload
alkstore.open(PG, schema="jobs", busy_timeout_ms=5)  # expect: call-overload
alkstore.open(Path("a.db"), schema="jobs")  # expect: call-overload
alkstore.open("a.db", bogus=1)  # expect: call-overload
