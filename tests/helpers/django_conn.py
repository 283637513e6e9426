"""`enqueue(conn=django.db.connection)` inside Django's own transactions (SPEC §17).

usage: django_conn.py sqlite PATH | django_conn.py postgres URL SCHEMA

Configures Django on the store's database, creates a table through Django's
connection and, inside `transaction.atomic()`, writes an order row and enqueues
its job on Django's connection: once rolled back by an exception, once
committed; then once in autocommit. On SQLite it also tries an alias on
another file. Prints JSON: what the queue holds, and that refusal.
"""

from __future__ import annotations

import json
import sys
from urllib.parse import urlparse

import django
from django.conf import settings

import alkstore

ENGINE = sys.argv[1]
if ENGINE == "sqlite":
    PATH = sys.argv[2]
    database = {"ENGINE": "django.db.backends.sqlite3", "NAME": PATH, "OPTIONS": {"timeout": 30}}
    TABLE = "orders"
else:
    URL, SCHEMA = sys.argv[2], sys.argv[3]
    u = urlparse(URL)
    database = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": u.path.lstrip("/"),
        "USER": u.username or "",
        "PASSWORD": u.password or "",
        "HOST": u.hostname or "",
        "PORT": str(u.port or ""),
    }
    TABLE = f'"{SCHEMA}".orders'
databases = {"default": database}
if ENGINE == "sqlite":
    # Another file: enqueueing through it is a mismatch.
    databases["other"] = {"ENGINE": "django.db.backends.sqlite3", "NAME": PATH + ".other"}
settings.configure(DATABASES=databases, INSTALLED_APPS=[], USE_TZ=True)
django.setup()

from django.db import connection, connections, transaction  # noqa: E402  (needs the settings above)


def main() -> None:
    store = alkstore.open(PATH) if ENGINE == "sqlite" else alkstore.open(URL, schema=SCHEMA)
    q = store.queue("emails")
    with connection.cursor() as cur:
        cur.execute(f"CREATE TABLE {TABLE} (email TEXT NOT NULL)")
    gone = None
    try:
        with transaction.atomic():
            with connection.cursor() as cur:
                cur.execute(f"INSERT INTO {TABLE} (email) VALUES (%s)", ["gone@x"])
            gone = q.enqueue({"to": "gone@x"}, conn=connection)
            raise RuntimeError("the view failed")
    except RuntimeError:
        pass
    after_rollback = q.get_job(gone) is not None if gone is not None else None
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute(f"INSERT INTO {TABLE} (email) VALUES (%s)", ["a@b"])
        kept = q.enqueue({"to": "a@b"}, conn=connections["default"])
        seen_inside = q.get_job(kept) is not None
    autocommitted = q.enqueue({"to": "now"}, conn=connection)
    claimed = [j.payload["to"] for j in q.claim_batch("w", 10)]
    mismatch = None
    if ENGINE == "sqlite":
        try:
            q.enqueue({"to": "elsewhere"}, conn=connections["other"])
            mismatch = "accepted"
        except alkstore.TransactionError as e:
            mismatch = str(e)
    print(
        json.dumps(
            {
                "after_rollback": after_rollback,
                "seen_inside": seen_inside,
                "claimed": claimed,
                "ids_ascend": kept < autocommitted,
                "mismatch": mismatch,
            }
        )
    )
    store.close()


main()
