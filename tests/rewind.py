"""Turning a store opened now back into one an older alkstore left: the schema
later migrations added is taken away again and the version row set back.

For upgrade tests of versions no fixture file holds (tests/fixtures has the
store of the previous main). The store must be closed.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from tests.conftest import Target, pg_admin_connect

#: The columns migration 0012 (workflows) added to the live and dead tables.
_WORKFLOW_COLUMNS = ("parents_left", "on_failure", "keep_result_s", "has_children")
_WORKFLOW_TRIGGERS = (
    "jobs_parent_acked",
    "jobs_parent_failed",
    "dead_parent_left",
    "jobs_child_left",
    "dead_child_left",
)

_SQLITE_MIGRATIONS = Path(__file__).parent.parent / "crates" / "alkstore-sqlite" / "src" / "migrations"


def _trigger_before(name: str, version: int) -> str:
    """SQLite trigger `name` as the last migration before `version` defined it."""
    for path in sorted(_SQLITE_MIGRATIONS.glob("*.sql"), reverse=True):
        if int(path.name[:4]) >= version:
            continue
        found = re.search(rf"CREATE TRIGGER (IF NOT EXISTS )?{name} .*?\nEND;", path.read_text(), re.S)
        if found:
            return found.group(0)
    raise LookupError(f"no migration before {version} defines {name}")


#: The SQLite triggers migration 0019 redefined to name the run columns.
_RUN_TRIGGERS = (
    "__alkstore_jobs_link",
    "__alkstore_sole_acked_settle",
    "__alkstore_job_left_failed",
)

#: The SQLite triggers migration 0020 redefined around the set-wise failure rule.
_CASCADE_TRIGGERS = (
    "__alkstore_job_failed_settle",
    "__alkstore_job_left_failed",
    "__alkstore_dead_parent_left",
)

#: Per migration, per engine, what undoes it (`__alkstore_` names a table of the
#: store: the prefix on SQLite, the schema on Postgres). 0003 only fixed rows.
UNDO: dict[int, dict[str, list[str]]] = {
    # 0021 gave live rows their last failure (issue 43).
    21: {
        "sqlite": ["ALTER TABLE __alkstore_jobs DROP COLUMN last_error"],
        "postgres": ["ALTER TABLE __alkstore_jobs DROP COLUMN last_error"],
    },
    # 0020 settled a death set-wise: SQLite's failure rule and its two entries
    # come back as 0019, 0014 and 0012 left them (the view with one column);
    # Postgres's settle_children and ack_flow are replaced again when the
    # store migrates, and its burial function goes.
    20: {
        "sqlite": [
            *(f"DROP TRIGGER {t}" for t in _CASCADE_TRIGGERS),
            "DROP VIEW __alkstore_job_failed",
            "DROP TABLE __alkstore_doomed",
            "CREATE VIEW __alkstore_job_failed (id) AS SELECT NULL WHERE 0",
            *(_trigger_before(t, 20) for t in _CASCADE_TRIGGERS),
        ],
        "postgres": ["DROP FUNCTION __alkstore_bury_exhausted"],
    },
    # 0019 gave SQLite children the run of their parents' ids: the triggers
    # naming it go before the columns (SQLite refuses to drop a column a
    # trigger names) and come back as 0016 and 0014 left them, so the undos
    # below find what they drop.
    19: {
        "sqlite": [
            *(f"DROP TRIGGER {t}" for t in _RUN_TRIGGERS),
            "DROP TRIGGER __alkstore_jobs_sole_lost",
            "DROP VIEW __alkstore_parent_counted",
            "ALTER TABLE __alkstore_jobs DROP COLUMN parents_lo",
            "ALTER TABLE __alkstore_jobs DROP COLUMN parents_hi",
            *(_trigger_before(t, 19) for t in _RUN_TRIGGERS),
        ],
        "postgres": [],
    },
    # 0018 put SQLite's ready, leased and waiting rows in one index; the
    # three partial indexes come back (0012's undo drops the waiting one).
    18: {
        "sqlite": [
            "DROP INDEX __alkstore_jobs_ready",
            "CREATE INDEX __alkstore_jobs_ready ON __alkstore_jobs (queue, priority DESC, run_at, id)"
            " WHERE state = 'pending'",
            "CREATE INDEX __alkstore_jobs_leased ON __alkstore_jobs (queue, deadline)"
            " WHERE state = 'processing'",
            "CREATE INDEX __alkstore_jobs_waiting ON __alkstore_jobs (queue) WHERE state = 'waiting'",
        ],
        "postgres": [],
    },
    17: {"sqlite": [], "postgres": ["DROP FUNCTION __alkstore_sole_acked"]},
    # 0016 gave Postgres the sole child and the dead row's trigger; its
    # functions (link, parent_left, ack_flow) are replaced again when the
    # store migrates, and 0012's undo drops them.
    16: {
        # The triggers naming sole_child go before it (SQLite refuses to drop
        # a column a trigger names); 0013's link and 0014's dispatch come
        # back when the store migrates again.
        "sqlite": [
            "DROP TRIGGER __alkstore_dead_parent_died",
            "DROP TRIGGER __alkstore_jobs_sole_acked",
            "DROP VIEW __alkstore_sole_acked",
            "DROP TRIGGER __alkstore_jobs_link",
            "DROP TRIGGER __alkstore_jobs_left",
            "ALTER TABLE __alkstore_jobs DROP COLUMN sole_child",
        ],
        "postgres": [
            "DROP TRIGGER dead_parent_died ON __alkstore_dead",
            "DROP FUNCTION __alkstore_parent_died()",
            "DROP TRIGGER jobs_parent_left ON __alkstore_jobs",
            "ALTER TABLE __alkstore_jobs DROP COLUMN sole_child",
            "CREATE TRIGGER jobs_parent_left AFTER DELETE ON __alkstore_jobs FOR EACH ROW"
            " WHEN (OLD.has_children) EXECUTE FUNCTION __alkstore_parent_left()",
            "DROP FUNCTION __alkstore_settle_children",
        ],
    },
    # 0015 moved the bodies of 0014's SQLite triggers a level down (the
    # triggers keep their names; a rewind to 14 leaves them out until the
    # store is migrated again).
    15: {
        "sqlite": [
            "DROP TRIGGER __alkstore_job_left_acked",
            "DROP TRIGGER __alkstore_job_left_child",
            "DROP TRIGGER __alkstore_job_acked_many_settle",
            "DROP TRIGGER __alkstore_jobs_child_released",
            "DROP VIEW __alkstore_parent_acked",
            "DROP VIEW __alkstore_child_left",
            "DROP VIEW __alkstore_fan_out",
            "DROP VIEW __alkstore_child_released",
        ],
        "postgres": [],
    },
    # 0014 replaced three of 0012's SQLite triggers (dropped here, so a rewind
    # to 12 or 13 leaves a store without them: rewind below 12) and redefined
    # a Postgres function that 0012's undo drops.
    14: {
        "sqlite": [
            "DROP TRIGGER IF EXISTS __alkstore_jobs_left",
            "DROP TRIGGER IF EXISTS __alkstore_jobs_child_released",
            "DROP VIEW __alkstore_job_left",
            "DROP VIEW __alkstore_job_failed",
            "DROP VIEW __alkstore_job_acked_many",
        ],
        "postgres": [],
    },
    13: {
        "sqlite": ["DROP TRIGGER IF EXISTS __alkstore_jobs_link", "DROP VIEW __alkstore_jobs_linked"],
        "postgres": [],
    },
    12: {
        "sqlite": [
            *(f"DROP TRIGGER IF EXISTS __alkstore_{t}" for t in _WORKFLOW_TRIGGERS),
            "DROP INDEX __alkstore_jobs_waiting",
            "DROP TABLE __alkstore_edges",
            "DROP TABLE __alkstore_results",
            *(
                f"ALTER TABLE __alkstore_{t} DROP COLUMN {c}"
                for t in ("jobs", "dead")
                for c in _WORKFLOW_COLUMNS
            ),
        ],
        "postgres": [
            # CASCADE takes the triggers that call them; enqueue is 0004's (its 0012 form).
            "DROP FUNCTION __alkstore_parent_left() CASCADE",
            "DROP FUNCTION __alkstore_child_left() CASCADE",
            "DROP FUNCTION __alkstore_link",
            "DROP FUNCTION __alkstore_link_all",
            "DROP FUNCTION __alkstore_ack_flow",
            "DROP INDEX __alkstore_jobs_waiting",
            "DROP TABLE __alkstore_edges",
            "DROP TABLE __alkstore_results",
            *(
                f"ALTER TABLE __alkstore_{t} DROP COLUMN {c}"
                for t in ("jobs", "dead")
                for c in _WORKFLOW_COLUMNS
            ),
        ],
    },
    11: {"sqlite": [], "postgres": ["ALTER TABLE __alkstore_jobs DROP COLUMN slot"]},
    10: {
        engine: [
            "DROP INDEX __alkstore_jobs_group_running",
            "ALTER TABLE __alkstore_jobs DROP COLUMN group_key",
            "ALTER TABLE __alkstore_dead DROP COLUMN group_key",
            "DROP TABLE __alkstore_limits",
            "DROP TABLE __alkstore_rate_log",
        ]
        for engine in ("sqlite", "postgres")
    },
    9: {
        "sqlite": [
            "ALTER TABLE __alkstore_scheduler_tasks DROP COLUMN tz",
            "ALTER TABLE __alkstore_scheduler_tasks DROP COLUMN spec_key",
        ],
        "postgres": [
            "ALTER TABLE __alkstore_schedules DROP COLUMN tz",
            "ALTER TABLE __alkstore_schedules DROP COLUMN spec_key",
        ],
    },
    8: {
        "sqlite": ["DROP TRIGGER __alkstore_jobs_queue_seen", "DROP TABLE __alkstore_queues"],
        "postgres": ["DROP TABLE __alkstore_queues"],
    },
    7: {engine: ["DROP TABLE __alkstore_completions"] for engine in ("sqlite", "postgres")},
    6: {
        engine: [
            "DROP INDEX __alkstore_jobs_unique",
            "ALTER TABLE __alkstore_jobs DROP COLUMN unique_key",
            "ALTER TABLE __alkstore_dead DROP COLUMN unique_key",
            "DROP TABLE __alkstore_paused",
        ]
        for engine in ("sqlite", "postgres")
    },
    5: {
        "sqlite": ["DROP TRIGGER __alkstore_stream_head_follows"],
        "postgres": ["DELETE FROM __alkstore_meta WHERE key = 'store_id'"],
    },
    4: {
        "sqlite": ["DELETE FROM __alkstore_meta WHERE key = 'store_id'"],
        "postgres": ["DROP FUNCTION __alkstore_enqueue"],
    },
}


def raw(target: Target, statements: Sequence[str]) -> None:
    """Runs SQL on the store's database outside alkstore (the store is closed)."""
    if target.engine == "sqlite":
        with sqlite3.connect(target.location) as conn:
            for sql in statements:
                conn.execute(sql)
        conn.close()
        return
    with pg_admin_connect() as pg:
        for sql in statements:
            pg.execute(sql.replace("__alkstore_", f'"{target.schema}".'))


def rewind(target: Target, version: int, *, then: Sequence[str] = ()) -> None:
    """Undoes every migration after `version`, runs `then`, and writes `version` as the store's."""
    undo = [sql for n in sorted(UNDO, reverse=True) if n > version for sql in UNDO[n][target.engine]]
    raw(
        target, [*undo, *then, f"UPDATE __alkstore_meta SET value = '{version}' WHERE key = 'schema_version'"]
    )


def version(target: Target) -> str:
    if target.engine == "sqlite":
        with sqlite3.connect(target.location) as conn:
            row = conn.execute("SELECT value FROM __alkstore_meta WHERE key = 'schema_version'").fetchone()
        conn.close()
    else:
        with pg_admin_connect() as pg:
            row = pg.execute(
                f"SELECT value FROM \"{target.schema}\".meta WHERE key = 'schema_version'"
            ).fetchone()
    assert row is not None
    return str(row[0])
