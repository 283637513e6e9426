"""Rows written behind alkstore's back (issue 44): a job whose payload no
enqueue path accepts, put in the store's jobs table by a raw ``INSERT`` —
the application's own ``sqlite3`` on the store's file, psycopg on Postgres —
as an older version, another tool or a hand in ``psql`` could."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from tests.conftest import Target, pg_admin_connect

__all__ = ["BIG_INT", "DEEP", "plant", "raw"]

#: A task's payload whose arguments nest 3,000 deep: past CPython's decoder.
DEEP = '{"task": "tasks_app.shout", "args": [' + "[" * 3000 + "]" * 3000 + "]}"
#: ``{"args": [1e5000]}`` as Postgres's jsonb writes it back: an integer of
#: 5,001 digits, past what ``int()`` reads.
BIG_INT = '{"task": "tasks_app.shout", "args": [1' + "0" * 5000 + "]}"


def plant(target: Target, queue: str, text: str) -> int:
    """Inserts a pending job whose payload is ``text`` into ``queue``, every
    other column copied from the newest job of ``queue`` (enqueue one first)
    but its priority, one higher, so it is claimed before that job. Returns
    its id."""
    if target.engine == "sqlite":
        conn = sqlite3.connect(target.location, timeout=5)
        try:
            names = [r[1] for r in conn.execute("PRAGMA table_info(__alkstore_jobs)") if r[1] != "id"]
            row_id = _insert(conn, "__alkstore_jobs", names, "?", queue, text)
            conn.commit()
        finally:
            conn.close()
        return row_id
    with pg_admin_connect() as pg:
        names = [
            str(r[0])
            for r in pg.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = %s AND table_name = 'jobs' AND column_name <> 'id' "
                "ORDER BY ordinal_position",
                (target.schema,),
            )
        ]
        return _insert(pg, f'"{target.schema}".jobs', names, "%s", queue, text)


def _insert(conn: object, table: str, names: list[str], ph: str, queue: str, text: str) -> int:
    picked = [ph if n == "payload" else "priority + 1" if n == "priority" else n for n in names]
    sql = (
        f"INSERT INTO {table} ({', '.join(names)}) SELECT {', '.join(picked)} FROM {table} "
        f"WHERE id = (SELECT max(id) FROM {table} WHERE queue = {ph}) RETURNING id"
    )
    row = conn.execute(sql, (text, queue)).fetchone()  # type: ignore[attr-defined]
    assert row is not None, f"no job of {queue!r} to copy: enqueue one first"
    return int(row[0])


def raw(target: Target, statements: Sequence[str]) -> None:
    """Runs SQL on the store's database outside alkstore (``__alkstore_`` names
    a table of the store: the prefix on SQLite, the schema on Postgres)."""
    if target.engine == "sqlite":
        with sqlite3.connect(target.location) as conn:
            for sql in statements:
                conn.execute(sql)
        conn.close()
        return
    with pg_admin_connect() as pg:
        for sql in statements:
            pg.execute(sql.replace("__alkstore_", f'"{target.schema}".').encode())
