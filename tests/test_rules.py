"""Each rule has one source, the core: the Python package and the command line
refuse exactly what the binding's calls refuse, with the same message.

These tests pin that single source. They compare two surfaces with each other
(a `Worker` and a claim, the CLI and `alkstore.open`) rather than with
literals, so a rule changed in the core changes both or fails here.
"""

from __future__ import annotations

import inspect
import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

import alkstore
from alkstore import _core
from alkstore._cli import main
from alkstore._cli._target import queue_view
from tests.conftest import Target
from tests.test_validation import BAD_NAMES, GOOD_NAMES

# -- names (SPEC §3) ---------------------------------------------------------------


def refusal(call: Callable[..., object], *args: object) -> str:
    """The message of the `InvalidName` that `call(*args)` raises."""
    with pytest.raises(alkstore.InvalidName) as err:
        call(*args)
    return str(err.value)


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_worker_id_is_refused_by_worker_and_claim_alike(store: alkstore.Store, name: str) -> None:
    q = store.queue("q")
    job_id = q.enqueue({})
    at_construction = refusal(alkstore.Worker, store, 4, name)
    assert at_construction == refusal(q.claim, name) == refusal(q.claim_batch, name, 2)
    assert at_construction.startswith("invalid worker name: ")
    # The rule is one for every kind of name: only the kind differs.
    reason = at_construction.removeprefix("invalid worker name: ")
    assert refusal(store.queue, name) == f"invalid queue name: {reason}"
    assert refusal(_core._validate_name, "worker", name) == at_construction
    job = q.get_job(job_id)
    assert job is not None and job.attempts == 0


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_a_worker_id_accepted_by_worker_is_accepted_by_claim(store: alkstore.Store, name: str) -> None:
    q = store.queue("q")
    q.enqueue({})
    worker_id = alkstore.Worker(store, worker_id=name).worker_id
    handle = q.claim(worker_id)
    assert handle is not None and handle.worker_id == name


def test_the_default_worker_id_is_cut_to_the_core_name_length(
    store: alkstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "h" * 500)
    worker_id = alkstore.Worker(store).worker_id
    assert len(worker_id) == _core._MAX_NAME_CHARS
    assert worker_id.endswith(f"-{os.getpid()}")
    q = store.queue("q")
    q.enqueue({})
    handle = q.claim(worker_id)
    assert handle is not None and handle.worker_id == worker_id


# -- targets (SPEC §2) -------------------------------------------------------------

REFUSED_TARGETS = [
    "",
    ":memory:",
    "sqlite://",
    "sqlite:///",
    "sqlite:///:memory:",
    "mysql://localhost/db",
    "mysql://bob:s3cret@localhost/db",
    "http://example.com/app.db",
]


def cli_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one stderr line of a failed command, after its `alkstore: error: ` prefix."""
    status = main(list(argv))
    lines = capsys.readouterr().err.strip().splitlines()
    assert status != 0 and len(lines) == 1, lines
    assert lines[0].startswith("alkstore: error: "), lines[0]
    return lines[0].removeprefix("alkstore: error: ")


@pytest.mark.parametrize("text", REFUSED_TARGETS)
def test_the_cli_refuses_the_targets_open_refuses_with_its_message(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError) as err:
        alkstore.open(text)
    message = " ".join(str(err.value).split())
    assert cli_error(capsys, "stats", text) == message
    assert cli_error(capsys, "jobs", text, "q") == message
    assert "s3cret" not in message


def test_the_cli_finds_the_file_open_would_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    forms = {"a.db": "a.db", "sqlite:///b.db": "b.db", f"sqlite:///{tmp_path}/c.db": f"{tmp_path}/c.db"}
    for text, path in forms.items():
        assert _core._parse_target(text) == ("sqlite", path)
        # Before the store exists, the command line names the file open would create ...
        assert cli_error(capsys, "stats", text) == f"no such file: {path}"
        assert not os.path.exists(path)
        with alkstore.open(text) as store:
            assert store.engine == "sqlite"
            store.queue("q").enqueue({})
        assert os.path.exists(path)
        # ... and, once it does, reads that file.
        assert main(["stats", text, "--json"]) == 0
        assert '"queue": "q"' in capsys.readouterr().out


def test_the_cli_and_open_pick_the_same_engine(target: Target) -> None:
    engine, location = _core._parse_target(target.location)
    with target.open() as store:
        assert (engine, location) == (store.engine, target.location)


def test_both_postgres_url_schemes_select_postgres() -> None:
    for url in ("postgresql://u:pw@h/db", "postgres://u@h:5432/db?sslmode=disable"):
        assert _core._parse_target(url) == ("postgres", url)


# -- batch and page sizes (SPEC §13) -------------------------------------------------


def value_error(call: Callable[..., object], *args: object, **kwargs: object) -> str:
    """The message of the `ValueError` that `call(*args, **kwargs)` raises."""
    with pytest.raises(ValueError) as err:
        call(*args, **kwargs)
    return str(err.value)


@pytest.mark.parametrize("n", [0, -1, _core._MAX_BATCH + 1, 2**64, -(2**100)])
def test_every_batch_argument_refuses_what_the_core_refuses(store: alkstore.Store, n: int) -> None:
    q = store.queue("q")
    job_id = q.enqueue({})
    assert value_error(q.claim_batch, "w", n) == value_error(_core._batch_size, "n", n)
    assert value_error(q.jobs, "w", batch=n) == value_error(_core._batch_size, "batch", n)
    for read in (q.live_jobs, q.dead_jobs):
        assert value_error(read, limit=n) == value_error(_core._batch_size, "limit", n)
    assert str(n) in value_error(_core._batch_size, "n", n), "the int is shown as written"
    job = q.get_job(job_id)
    assert job is not None and job.attempts == 0


def test_the_largest_batch_is_accepted(store: alkstore.Store) -> None:
    q = store.queue("q")
    q.enqueue_many([{}] * 3)
    assert _core._batch_size("n", _core._MAX_BATCH) == _core._MAX_BATCH
    assert len(q.live_jobs(limit=_core._MAX_BATCH)) == 3
    assert len(q.claim_batch("w", _core._MAX_BATCH)) == 3


@pytest.mark.parametrize("n", [0, -1, _core._MAX_BATCH + 1, 2**64])
def test_the_cli_limit_refuses_what_live_jobs_refuses(
    store: alkstore.Store, n: int, capsys: pytest.CaptureFixture[str]
) -> None:
    message = value_error(store.queue("q").live_jobs, limit=n)
    with pytest.raises(SystemExit) as exit_:
        main(["jobs", "unused.db", "q", "--limit", str(n)])
    assert exit_.value.code == 2
    assert f"argument --limit: {message}" in capsys.readouterr().err


def test_the_cli_limit_accepts_the_largest_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "s.db")
    with alkstore.open(path) as store:
        store.queue("q").enqueue({})
    assert main(["jobs", path, "q", "--limit", str(_core._MAX_BATCH), "--json"]) == 0
    assert '"queue": "q"' in capsys.readouterr().out


def test_stream_reads_are_bounded_by_the_core_read_limit(store: alkstore.Store) -> None:
    s = store.stream("e")
    s.publish({})
    default = inspect.signature(alkstore.Stream.read).parameters["limit"].default
    assert default == _core._MAX_READ, "the text signature's default must follow the core"
    assert len(s.read(limit=_core._MAX_READ)) == 1
    too_many = _core._MAX_READ + 1
    expected = f"must be between 1 and {_core._MAX_READ}, got {too_many}"
    assert value_error(s.read, limit=too_many) == f"limit {expected}"
    assert value_error(s.subscribe, "c", batch=too_many) == f"batch {expected}"


# -- outbox backing queues (SPEC §7) -----------------------------------------------


def test_outbox_backing_queues_are_recognised_by_the_core(store: alkstore.Store) -> None:
    store.outbox("hooks").enqueue({"n": 1})
    store.queue("plain").enqueue({"n": 2})
    names = store.queues()
    backing = [n for n in names if n != "plain"]
    assert len(backing) == 1
    assert _core._outbox_of(backing[0]) == "hooks"
    assert _core._outbox_of("plain") is None
    assert _core._outbox_of(f"x{backing[0]}") is None
    with pytest.raises(alkstore.InvalidName):
        store.queue(backing[0])
    # The command line reads each listed queue, the backing one through its outbox.
    assert [queue_view(store, n).stats().pending for n in names] == [1, 1]
    view = queue_view(store, backing[0])
    assert view.name == backing[0]
    assert [j.payload for j in view.live_jobs()] == [{"n": 1}]
