"""The ``alkstore`` command line (also ``python -m alkstore``).

Only ``demo`` exists so far; the operational commands of SPEC §11 (``worker``,
``stats``, ``jobs``, ``sweep``, ``schedules``) are added as subcommands here.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="alkstore",
        description="Durable job queues on SQLite and Postgres.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    demo = commands.add_parser(
        "demo",
        help="a self-contained tour on a local SQLite file",
        description="Walk through a transactional enqueue, a rollback, retries and a dead letter "
        "on a local SQLite file.",
    )
    demo.add_argument(
        "--path",
        default=None,
        help="SQLite file to use (default: a new file in a fresh temporary directory)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the process exit status."""
    args = _parser().parse_args(argv)
    if args.command == "demo":
        # Imported here so `alkstore --help` works even when the tour has a problem.
        from alkstore import _demo

        path: str | None = args.path
        return _demo.run(path)
    raise AssertionError(f"unhandled command {args.command!r}")  # argparse rejects unknown ones


if __name__ == "__main__":
    raise SystemExit(main())
