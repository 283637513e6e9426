"""Stored text reaches a terminal only as text (issue 44, item 4).

Queue names, worker ids, schedule names, payloads and errors are anyone's who
can write to the store. Printed raw, an ESC or a BEL in them would drive the
operator's terminal: retitle it (OSC 0), erase or hide rows (CSI 2K, CSI 8m),
and a C1 control (U+009B is CSI by itself) or a bidi override (U+202E) would
do the same or reorder what is shown. Every command runs here in a real
``python -m alkstore`` subprocess, on both engines: a table shows each control
character as an escape (``\\x1b``, ``\\u202e``); ``--json`` keeps the exact text
for a program, with those characters written as JSON ``\\u`` escapes.
"""

from __future__ import annotations

import re
from pathlib import Path

from alkstore import Store
from tests.conftest import Target
from tests.test_cli import cli, json_out, store_args

#: What a terminal would act on: C0 but the newline that ends a line, DEL, C1,
#: the bidi controls, and the line and paragraph separators.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")

#: Retitle the terminal, ring it, erase the line, CSI as one C1 byte, reverse
#: the text that follows, DEL.
HOSTILE = "\x1b]0;owned\x07\x1b[2K\x9b8m\u202ecod.exe\x7f"
#: How a table shows it.
SHOWN = "\\x1b]0;owned\\x07\\x1b[2K\\x9b8m\\u202ecod.exe\\x7f"


def assert_inert(text: str, what: str) -> None:
    found = RAW.search(text)
    assert found is None, f"{what}: raw {found.group()!r} at {found.start()} in {text!r}"


def test_stats_shows_control_characters_in_queue_names_as_escapes(target: Target, store: Store) -> None:
    store.queue("q" + HOSTILE).enqueue({})
    table = cli("stats", *store_args(target))
    assert table.returncode == 0, table.stderr
    assert_inert(table.stdout, "stats")
    assert "q" + SHOWN in table.stdout
    [row] = json_out(cli("stats", *store_args(target), "--json"))
    assert row["queue"] == "q" + HOSTILE, "JSON keeps the exact name"


def test_jobs_shows_errors_workers_and_payloads_as_text(target: Target, store: Store) -> None:
    q = store.queue("emails", max_attempts=1)
    dead_id, live_id = q.enqueue_many([{"to": HOSTILE}, {"to": "b"}])
    first = q.claim("w" + HOSTILE)
    assert first is not None and first.id == dead_id
    assert first.fail("boom" + HOSTILE + "\r\nsecond line")
    second = q.claim("w" + HOSTILE)
    assert second is not None and second.id == live_id

    dead = cli("jobs", *store_args(target), "emails", "--dead")
    assert dead.returncode == 0, dead.stderr
    assert_inert(dead.stdout, "jobs --dead")
    assert "boom" + SHOWN[:40] in dead.stdout
    # A payload cell is JSON: its C0 characters are JSON's own escapes.
    assert '{"to":"\\u001b]0;owned\\u0007' in dead.stdout
    live = cli("jobs", *store_args(target), "emails")
    assert live.returncode == 0, live.stderr
    assert_inert(live.stdout, "jobs")
    assert "w" + SHOWN[:30] in live.stdout

    for args in (["--dead", "--json"], ["--json"]):
        out = cli("jobs", *store_args(target), "emails", *args)
        assert_inert(out.stdout, f"jobs {args}")
        [job] = json_out(out)
        if "--dead" in args:
            assert (job["last_error"], job["payload"]) == (
                "boom" + HOSTILE + "\r\nsecond line",
                {"to": HOSTILE},
            )
        else:
            assert job["worker_id"] == "w" + HOSTILE


def test_schedules_and_results_show_stored_text_as_text(target: Target, store: Store) -> None:
    store.schedule("s" + HOSTILE, "@every 1h", "q" + HOSTILE, payload=[HOSTILE])
    table = cli("schedules", *store_args(target))
    assert table.returncode == 0, table.stderr
    assert_inert(table.stdout, "schedules")
    assert "s" + SHOWN[:30] in table.stdout
    [row] = json_out(cli("schedules", *store_args(target), "--json"))
    assert (row["name"], row["queue"], row["payload"]) == ("s" + HOSTILE, "q" + HOSTILE, [HOSTILE])

    q = store.queue("emails", max_attempts=1)
    q.enqueue({})
    job = q.claim("w")
    assert job is not None and job.fail("died" + HOSTILE)
    line = cli("result", *store_args(target), str(job.id))
    assert line.returncode == 0, line.stderr
    assert_inert(line.stdout, "result")
    assert "died" + SHOWN in line.stdout
    assert json_out(cli("result", *store_args(target), str(job.id), "--json"))["error"] == "died" + HOSTILE


def test_the_lines_of_operations_and_errors_show_names_as_text(target: Target, store: Store) -> None:
    name = "q" + HOSTILE
    store.queue(name).enqueue({})
    for command in (["pause", name], ["resume", name], ["sweep", name], ["cancel", name, "--id", "999"]):
        r = cli(command[0], *store_args(target), *command[1:])
        assert r.returncode == 0, r.stderr
        assert_inert(r.stdout + r.stderr, command[0])
    # A queue never seen: the warning names it, and every queue the store has.
    r = cli("pause", *store_args(target), "new" + HOSTILE)
    assert r.returncode == 0 and "warning" in r.stderr
    assert_inert(r.stdout + r.stderr, "pause warning")


def test_an_error_line_shows_what_it_echoes_as_text(tmp_path: Path) -> None:
    missing = str(tmp_path / ("typo" + HOSTILE + ".db"))
    r = cli("stats", missing)
    assert r.returncode == 1
    assert_inert(r.stderr.removesuffix("\n"), "the error line")
    assert "no such file" in r.stderr and "typo" + SHOWN in r.stderr
