"""``alkstore limits URL QUEUE``: show or change a queue's flow-control limits
(SPEC §24). Every process sees a change at its next claim."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from alkstore._cli._target import open_existing, queue_view
from alkstore._core import QueueLimits

__all__ = ["add_parser", "describe", "limits", "limits_dict"]

#: ``--concurrency none`` (and the others) clears that kind only.
CLEAR_WORDS = ("none", "off")


def _count(what: str, low: int) -> Callable[[str], int | None]:
    def parse(text: str) -> int | None:
        if text.lower() in CLEAR_WORDS:
            return None
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number or 'none', got {text!r}") from None
        if n < low:
            raise argparse.ArgumentTypeError(f"{what} must be >= {low}, got {n}")
        return n

    return parse


def _rate(text: str) -> tuple[int, float] | None:
    if text.lower() in CLEAR_WORDS:
        return None
    count, sep, period = text.partition("/")
    try:
        if not sep:
            raise ValueError
        n, p = int(count), float(period)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected COUNT/SECONDS (e.g. 100/60: at most 100 claims in any 60 s) or 'none', got {text!r}"
        ) from None
    if n < 1 or not p > 0:
        raise argparse.ArgumentTypeError(f"COUNT must be >= 1 and SECONDS > 0, got {text!r}")
    return n, p


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """The ``limits`` command's arguments; ``url``, ``queue``, ``--schema``, ``--json`` are the caller's."""
    p = commands.add_parser(
        "limits",
        help="show or set a queue's limits across every worker: concurrency, rate, per-group concurrency",
        description="With no option, prints the queue's limits. Each option sets one kind "
        "('none' clears it); the kinds not named stay as they are.",
    )
    unset = argparse.SUPPRESS  # an option not given leaves that kind as it is
    p.add_argument(
        "--concurrency",
        type=_count("concurrency", 0),
        metavar="N",
        default=unset,
        help="at most N of the queue's jobs processing at once, over every worker (0: none)",
    )
    p.add_argument(
        "--rate",
        type=_rate,
        metavar="COUNT/SECONDS",
        default=unset,
        help="at most COUNT claims in any window of SECONDS (a sliding window)",
    )
    p.add_argument(
        "--group-concurrency",
        type=_count("group concurrency", 1),
        metavar="N",
        default=unset,
        help="at most N processing jobs per group key",
    )
    p.add_argument("--clear", action="store_true", help="remove every limit of the queue")
    return p


def limits_dict(lim: QueueLimits) -> dict[str, object]:
    """The limits as JSON-ready fields (None: no limit of that kind)."""
    return {
        "concurrency": lim.concurrency,
        "rate_count": lim.rate_count,
        "rate_period_s": lim.rate_period_s,
        "group_concurrency": lim.group_concurrency,
    }


def describe(lim: QueueLimits) -> str:
    """One short line, e.g. ``concurrency 5, rate 100/60s, group 1``; ``-`` when none."""
    parts = []
    if lim.concurrency is not None:
        parts.append(f"concurrency {lim.concurrency}")
    if lim.rate_count is not None and lim.rate_period_s is not None:
        parts.append(f"rate {lim.rate_count}/{lim.rate_period_s:g}s")
    if lim.group_concurrency is not None:
        parts.append(f"group {lim.group_concurrency}")
    return ", ".join(parts) or "-"


def limits(target: str, schema: str | None, queue: str, args: argparse.Namespace, as_json: bool) -> str:
    """Applies the options of ``args`` to ``queue``'s limits and prints the result."""
    change: dict[str, object] = {}
    if args.clear:
        change = {"concurrency": None, "rate": None, "group_concurrency": None}
    for kind in ("concurrency", "rate", "group_concurrency"):
        if kind in vars(args):
            change[kind] = getattr(args, kind)
    with open_existing(target, schema) as store:
        q = queue_view(store, queue)
        lim = q.set_limits(**change) if change else q.limits()  # type: ignore[arg-type]
    if as_json:
        return json.dumps({"queue": queue, **limits_dict(lim)}, indent=2)
    verb = "limits of" if not change else "set the limits of"
    return f"{verb} {queue!r}: {describe(lim) if lim != QueueLimits() else 'none'}"
