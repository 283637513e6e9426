"""The ``alkstore`` command line (also ``python -m alkstore``), SPEC §11.

Every problem a user can cause — a bad URL, a missing file, a bad
``module:attr``, an error from the database — is reported as one line on
stderr with a non-zero exit status, never as a traceback.

What a command prints may quote stored text, which anyone who can write to
the store chose: every line goes out through :func:`_tables.visible` (or
:func:`_tables.json_safe` for ``--json``), so no control character reaches
the terminal as itself.

Every command that takes a store's URL takes it from ``ALKSTORE_URL`` when the
command line gives none, so that a password need not be in the process's
argv, which every local user can read (``ps``, ``/proc/PID/cmdline``). A URL on
the command line wins over the variable.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn, cast

from alkstore import __version__
from alkstore._cli._paging import DEFAULT_PAGE
from alkstore._cli._tables import json_safe, visible
from alkstore._cli._target import CliError
from alkstore._core import _MAX_BATCH, _batch_size
from alkstore._errors import AlkstoreError

__all__ = ["main"]

PROG = "alkstore"
#: Where a command takes its store's URL from when the command line gives none.
URL_ENV = "ALKSTORE_URL"
URL_HELP = (
    "a SQLite file path, sqlite:///relative.db, sqlite:////absolute.db or postgresql://user@host/db "
    f"(options in its query string, e.g. ?statements=unnamed); may be left out when {URL_ENV} is set"
)
#: The commands that take no store.
NO_STORE = ("demo",)


class _UsageError(Exception):
    """A usage error argparse found, kept to be reported or retried."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are raised, not printed: a command
    missing its URL is parsed again with ``ALKSTORE_URL``'s (see ``_parse``)."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(self, message)


def _batch(what: str) -> Callable[[str], int]:
    """An argparse type for a page size: the core's rule, so a bad value is a usage error."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        try:
            return _batch_size(what, n)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


_limit = _batch("limit")
_page_size = _batch("--page-size")


def _job_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a job id (an integer), got {text!r}") from None


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def _port(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port 1-65535, got {text!r}") from None
    if not 1 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port 1-65535, got {n}")
    return n


def _seconds(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not s >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return s


def _store_args(p: argparse.ArgumentParser, *, queue: bool = False, json_help: str = "a table") -> None:
    p.add_argument("url", metavar="URL", help=URL_HELP)
    if queue:
        p.add_argument("queue", metavar="QUEUE", help="queue name")
    p.add_argument("--schema", default=None, help="Postgres: the engine-owned schema (default alkstore)")
    p.add_argument("--json", action="store_true", help=f"print JSON for a program instead of {json_help}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Durable job queues on SQLite and Postgres.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = commands.add_parser("demo", help="a self-contained tour on a local SQLite file")
    demo.add_argument(
        "--path", default=None, help="SQLite file to use (default: a new file in a fresh temp dir)"
    )

    worker = commands.add_parser(
        "worker",
        help="run a Worker (MODULE:ATTR), or a task registry (URL --tasks MODULE:ATTR), until SIGTERM",
    )
    worker.add_argument(
        "spec",
        metavar="MODULE:ATTR | URL",
        help="where the alkstore.Worker is, e.g. myapp.tasks:worker; with --tasks, the store's URL "
        f"(may be left out when {URL_ENV} is set)",
    )
    worker.add_argument(
        "--tasks",
        metavar="MODULE:ATTR",
        default=None,
        help="run every task of this alkstore.Tasks registry (e.g. myapp.jobs:tasks) on the store at URL",
    )
    worker.add_argument("--schema", default=None, help="with --tasks: the Postgres schema (default alkstore)")
    worker.add_argument(
        "--queues",
        default=None,
        metavar="Q1,Q2",
        help="with --tasks: only these queues (default: every task's)",
    )
    worker.add_argument(
        "--no-schedules",
        action="store_true",
        help="with --tasks: do not run the schedules of the registry's periodic tasks in this process",
    )
    worker.add_argument(
        "--concurrency", type=_positive_int, default=None, help="override the Worker's concurrency"
    )
    worker.add_argument(
        "--status-every",
        type=_seconds,
        default=10.0,
        metavar="S",
        help="seconds between status lines (0: none)",
    )

    stats = commands.add_parser(
        "stats",
        help="every queue's pending/waiting/scheduled/processing/dead counts and whether it is paused",
    )
    _store_args(stats)

    jobs = commands.add_parser("jobs", help="the newest jobs of a queue (live, or dead with --dead)")
    _store_args(jobs, queue=True)
    jobs.add_argument(
        "--dead", action="store_true", help="list dead jobs (with last_error) instead of live ones"
    )
    jobs.add_argument(
        "--limit", type=_limit, default=50, help=f"how many jobs, newest first (1-{_MAX_BATCH}, default 50)"
    )

    result = commands.add_parser(
        "result",
        help="a finished job's result: its state, the value its handler returned or its error (SPEC §25)",
    )
    result.add_argument("url", metavar="URL", help=URL_HELP)
    result.add_argument("id", metavar="ID", type=_job_id, help="the job's id")
    result.add_argument("--schema", default=None, help="Postgres: the engine-owned schema (default alkstore)")
    result.add_argument(
        "--json", action="store_true", help="print JSON for a program instead of a line and the value"
    )

    job = commands.add_parser("job", help="one job by id, live or dead, whatever its queue")
    job.add_argument("url", metavar="URL", help=URL_HELP)
    job.add_argument("id", metavar="ID", type=_job_id, help="the job's id")
    job.add_argument("--schema", default=None, help="Postgres: the engine-owned schema (default alkstore)")
    job.add_argument("--json", action="store_true", help="print JSON for a program instead of lines")

    sweep = commands.add_parser("sweep", help="move a queue's expired jobs to dead, purge old dead jobs")
    _store_args(sweep, queue=True)

    schedules = commands.add_parser("schedules", help="every registered schedule and its next fire")
    _store_args(schedules)

    dashboard = commands.add_parser("dashboard", help="serve the web dashboard (extra alkstore[dashboard])")
    dashboard.add_argument("url", metavar="URL", help=URL_HELP)
    dashboard.add_argument(
        "--schema", default=None, help="Postgres: the engine-owned schema (default alkstore)"
    )
    dashboard.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    dashboard.add_argument("--port", type=_port, default=8765, help="port (default 8765)")
    dashboard.add_argument(
        "--allowed-host",
        dest="allowed_hosts",
        action="append",
        default=[],
        metavar="NAME",
        help="a further name the dashboard answers to, as browsers reach it (repeatable); "
        "127.0.0.1, localhost, ::1 and --host always are",
    )
    dashboard.add_argument("--read-only", action="store_true", help="show everything, change nothing")
    dashboard.add_argument(
        "--auth",
        default=None,
        metavar="USER:PASSWORD",
        help="HTTP Basic credentials (or ALKSTORE_DASHBOARD_AUTH)",
    )

    # The subcommands' parsers are `_Parser`s; the helper only adds parsers.
    _operate_commands(cast("argparse._SubParsersAction[argparse.ArgumentParser]", commands))
    return parser


def _ids_arg(p: argparse._ActionsContainer, what: str, *, required: bool = False) -> None:
    p.add_argument(
        "--id",
        dest="ids",
        type=_job_id,
        nargs="+",
        action="extend",
        metavar="N",
        required=required,
        help=f"the id(s) of the job(s) to {what} (repeat or list several)",
    )


def _page_size_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--page-size",
        type=_page_size,
        default=DEFAULT_PAGE,
        metavar="N",
        help=f"jobs per call, each call its own transaction (1-{_MAX_BATCH}, default {DEFAULT_PAGE})",
    )


def _operate_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pause = commands.add_parser("pause", help="stop every worker claiming from a queue (persisted)")
    _store_args(pause, queue=True, json_help="a line")
    pause.add_argument(
        "--create",
        action="store_true",
        help="the queue has had no job yet, and that is meant: pause it without a warning",
    )
    resume = commands.add_parser("resume", help="let workers claim from a paused queue again")
    _store_args(resume, queue=True, json_help="a line")

    from alkstore._cli import _limits

    _store_args(_limits.add_parser(commands), queue=True, json_help="a line")

    cancel = commands.add_parser("cancel", help="delete pending or processing jobs by id")
    _store_args(cancel, queue=True, json_help="a line")
    _ids_arg(cancel, "cancel", required=True)

    requeue = commands.add_parser(
        "requeue", help="move dead jobs back to pending (attempts 0, ready now); Ctrl-C stops between pages"
    )
    _store_args(requeue, queue=True, json_help="a line")
    which = requeue.add_mutually_exclusive_group(required=True)
    _ids_arg(which, "requeue")
    which.add_argument("--all", action="store_true", help="every dead job of the queue, in pages")
    _page_size_arg(requeue)

    forget = commands.add_parser(
        "forget",
        help="forget a queue that holds no job: it leaves stats, /metrics and the dashboard",
    )
    _store_args(forget, queue=True, json_help="a line")

    purge = commands.add_parser("purge", help="delete dead jobs; Ctrl-C stops between pages")
    _store_args(purge, queue=True, json_help="a line")
    which = purge.add_mutually_exclusive_group(required=True)
    _ids_arg(which, "delete")
    which.add_argument(
        "--older-than",
        type=_seconds,
        metavar="SECONDS",
        help="every dead job that died more than SECONDS ago, in pages",
    )
    which.add_argument("--all", action="store_true", help="every dead job of the queue, in pages")
    _page_size_arg(purge)


#: The commands that change a queue; each returns its text and exit status.
OPERATIONS = ("pause", "resume", "limits", "cancel", "requeue", "purge", "forget")


# Not `_run`: importing the submodule `alkstore._cli._run` sets that name on
# this package, replacing a function of the same name (once anything in the
# process has imported it, e.g. alkstore.contrib's worker commands).
def _command(args: argparse.Namespace) -> int:
    from alkstore._cli import _inspect  # imported late: `alkstore --help` stays fast

    command: str = args.command
    if command == "demo":
        from alkstore import _demo

        return _demo.run(args.path)
    if command == "worker":
        from alkstore._cli._run import run_worker

        if args.tasks is None and (args.url_from_env or "://" in args.spec):
            # Never echoed: a URL may hold a password.
            where = URL_ENV if args.url_from_env else "a URL"
            raise CliError(
                f"the store comes from {where}: pass --tasks MODULE:ATTR, the task registry to run on it "
                "(or give MODULE:ATTR naming an alkstore.Worker instead)",
                status=2,
            )
        if args.tasks is not None:
            from alkstore._cli._run import run_tasks

            queues = None if args.queues is None else [q for q in args.queues.split(",") if q]
            return run_tasks(
                args.spec,
                args.schema,
                args.tasks,
                args.concurrency,
                args.status_every,
                queues=queues,
                schedules=not args.no_schedules,
            )
        return run_worker(args.spec, args.concurrency, args.status_every)
    if command == "dashboard":
        from alkstore._cli._dashboard import serve

        return serve(
            args.url, args.schema, args.host, args.port, args.read_only, args.auth, args.allowed_hosts
        )
    if command in OPERATIONS:
        text, status = _operation(args)
        print(_shown(text, args), flush=True)
        if status == 130:
            # stdout says what was done; this tells a person whose stdout goes elsewhere.
            print(f"{PROG}: interrupted", file=sys.stderr)
        return status
    printers: dict[str, Callable[[], str]] = {
        "stats": lambda: _inspect.stats(args.url, args.schema, args.json),
        "jobs": lambda: _inspect.jobs(args.url, args.schema, args.queue, args.dead, args.limit, args.json),
        "result": lambda: _inspect.result(args.url, args.schema, args.id, args.json),
        "job": lambda: _inspect.job(args.url, args.schema, args.id, args.json),
        "sweep": lambda: _inspect.sweep(args.url, args.schema, args.queue, args.json),
        "schedules": lambda: _inspect.schedules(args.url, args.schema, args.json),
    }
    print(_shown(printers[command](), args))
    return 0


def _shown(text: str, args: argparse.Namespace) -> str:
    """A command's output as it may reach a terminal (see the module's doc)."""
    return json_safe(text) if getattr(args, "json", False) else visible(text, newlines=True)


def _operation(args: argparse.Namespace) -> tuple[str, int]:
    from alkstore._cli import _operate

    where = (args.url, args.schema, args.queue)
    if args.command == "pause":
        return _operate.pause(*where, args.json, args.create), 0
    if args.command == "resume":
        return _operate.resume(*where, args.json), 0
    if args.command == "limits":
        from alkstore._cli import _limits

        return _limits.limits(*where, args, args.json), 0
    if args.command == "cancel":
        return _operate.cancel(*where, args.ids, args.json)
    if args.command == "requeue":
        return _operate.requeue(*where, args.ids, args.page_size, args.json)
    if args.command == "forget":
        return _operate.forget(*where, args.json), 0
    return _operate.purge(*where, args.ids, args.older_than, args.page_size, args.json)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line. A store command whose positional words lack
    the URL is parsed again with ``ALKSTORE_URL`` as its first word; the
    namespace's ``url_from_env`` says whether that happened."""
    words = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    try:
        args = parser.parse_args(words)
        args.url_from_env = False
        return args
    except _UsageError as first:
        error = first
    # argparse: "the following arguments are required: URL, QUEUE" (or "--id").
    prefix = "the following arguments are required: "
    missing = error.message.startswith(prefix) and any(
        not name.startswith("-") for name in error.message[len(prefix) :].split(", ")
    )
    url = os.environ.get(URL_ENV)
    if missing and url and words and words[0] not in NO_STORE and not words[0].startswith("-"):
        try:
            args = parser.parse_args([words[0], url, *words[1:]])
            args.url_from_env = True
            return args
        except _UsageError as second:
            error = second
    elif missing and words and words[0] not in NO_STORE:
        error.message += f" (the store's URL comes first, or from {URL_ENV})"
    # argparse's own report: the usage of the command at fault, exit status 2.
    argparse.ArgumentParser.error(error.parser, error.message)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, AlkstoreError):
        return f"{type(exc).__name__}: {text}"
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the process exit status."""
    args = _parse(argv)
    try:
        return _command(args)
    except CliError as exc:
        print(f"{PROG}: error: {visible(str(exc))}", file=sys.stderr)
        return exc.status
    except BrokenPipeError:
        # The reader went away (`alkstore jobs … | head`): not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (AlkstoreError, ValueError, TypeError, OSError) as exc:
        print(f"{PROG}: error: {visible(_one_line(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
