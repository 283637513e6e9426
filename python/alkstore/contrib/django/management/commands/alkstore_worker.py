"""``manage.py alkstore_worker --tasks app.jobs:tasks``: run a task registry's
jobs on the project's store until SIGTERM / SIGINT, as ``alkstore worker URL
--tasks`` does (the Worker's signals and grace; no autoreload: a reload would
drop the jobs in flight)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from alkstore._cli._run import _load
from alkstore._cli._target import CliError
from alkstore._tasks import Tasks
from alkstore.contrib._worker import run_registry
from alkstore.contrib.django import Tasks as DjangoTasks
from alkstore.contrib.django import close, store
from alkstore.contrib.django.conf import target


class Command(BaseCommand):  # type: ignore[misc]  # django ships no type information
    help = "Run the jobs of an alkstore task registry until SIGTERM or Ctrl-C."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--tasks",
            metavar="MODULE:ATTR",
            default=None,
            help="the alkstore.Tasks registry to run (default: ALKSTORE['TASKS'])",
        )
        parser.add_argument("--queues", metavar="Q1,Q2", default=None, help="only these queues")
        parser.add_argument("--concurrency", type=int, default=4, help="handlers at once (default 4)")
        parser.add_argument(
            "--no-schedules", action="store_true", help="do not run the periodic tasks' schedules here"
        )
        parser.add_argument(
            "--status-every",
            type=float,
            default=10.0,
            metavar="S",
            help="seconds between status lines (0: none)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        spec = options["tasks"] or target().tasks
        if not spec:
            raise CommandError("name the task registry: --tasks app.jobs:tasks, or ALKSTORE['TASKS']")
        if options["concurrency"] < 1:
            raise CommandError("--concurrency must be >= 1")
        try:
            registry = _load(spec, Tasks, "an alkstore.Tasks registry", "app.jobs:tasks")
        except CliError as exc:
            raise CommandError(str(exc)) from None
        assert isinstance(registry, Tasks)
        if isinstance(registry, DjangoTasks):
            registry._manages_connections = True
        queues = [q for q in options["queues"].split(",") if q] if options["queues"] else None
        try:
            status = run_registry(
                store(),
                registry,
                concurrency=options["concurrency"],
                queues=queues,
                schedules=not options["no_schedules"],
                status_every_s=options["status_every"],
            )
        finally:
            close()
        if status:
            raise CommandError(f"the worker exited with status {status}", returncode=status)
