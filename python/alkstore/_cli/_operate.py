"""The commands that change a queue (SPEC §18): ``pause``, ``resume``, ``cancel``,
``requeue``, ``purge`` and ``forget``.

Each returns what to print and the exit status: 0, or 130 when Ctrl-C stopped
it part-way (what was done by then stays done; see ``_paging``). Ids that are
not in the state a command acts on are skipped, not an error, as in the API.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from alkstore._cli._paging import StopRequest, chunks, progress, stop_on_ctrl_c, unique
from alkstore._cli._tables import visible
from alkstore._cli._target import open_existing, queue_view
from alkstore._core import Queue

__all__ = ["cancel", "forget", "pause", "purge", "requeue", "resume"]

#: Skipped ids listed in a line for a person; --json lists them all.
SHOWN_IDS = 20


def _dump(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _switch(
    target: str, schema: str | None, queue: str, as_json: bool, *, pause: bool, create: bool = False
) -> str:
    with open_existing(target, schema) as store:
        q = queue_view(store, queue)
        # Read first only to tell the user whether anything changed; pausing twice is harmless.
        was_paused = q.is_paused()
        known = store.queues()
        if pause:
            q.pause()
        else:
            q.resume()
    seen = queue in known
    if pause and not seen and not create:
        # Pausing a queue before its first job is allowed (SPEC §18), and so is
        # a typo that pauses a queue nobody uses: say which it may be.
        others = ", ".join(repr(n) for n in known if not n.startswith("__alkstore")) or "none yet"
        print(
            visible(
                f"warning: {queue!r} has never had a job in this store (its queues: {others}); "
                "paused it anyway, for jobs enqueued later (--create says this is meant)"
            ),
            file=sys.stderr,
        )
    if as_json:
        return _dump({"queue": queue, "paused": pause, "was_paused": was_paused, "seen": seen})
    if pause:
        if was_paused:
            return f"{queue!r} was already paused"
        return (
            f"paused {queue!r}: workers claim none of its jobs until `alkstore resume`; jobs in flight finish"
        )
    if not was_paused:
        return f"{queue!r} was not paused"
    return f"resumed {queue!r}: workers claim its jobs again"


def pause(target: str, schema: str | None, queue: str, as_json: bool, create: bool = False) -> str:
    """``Queue.pause()``: every process stops claiming from ``queue``; a warning
    on stderr when the queue never had a job, unless ``create``."""
    return _switch(target, schema, queue, as_json, pause=True, create=create)


def resume(target: str, schema: str | None, queue: str, as_json: bool) -> str:
    """``Queue.resume()``."""
    return _switch(target, schema, queue, as_json, pause=False)


@dataclass
class Tally:
    """What a paged command has done so far."""

    verb: str
    by_id: bool
    done: int = 0
    skipped: int = 0
    pages: int = 0
    #: Rows the call in flight may change, while it runs: after a second Ctrl-C it
    #: is how many the abandoned call changed all of, or none of.
    in_doubt: int = 0
    interrupted: bool = False
    done_ids: list[int] = field(default_factory=list)
    skipped_ids: list[int] = field(default_factory=list)

    def page(self, changed: int, skipped: int = 0) -> None:
        self.pages += 1
        self.done += changed
        self.skipped += skipped

    def page_of_ids(self, asked: Sequence[int], changed: Sequence[int]) -> None:
        self.page(len(changed), len(asked) - len(changed))
        moved = set(changed)
        self.done_ids.extend(i for i in asked if i in moved)
        self.skipped_ids.extend(i for i in asked if i not in moved)

    def as_dict(self, queue: str) -> dict[str, object]:
        out: dict[str, object] = {
            "queue": queue,
            self.verb: self.done,
            "skipped": self.skipped,
            "pages": self.pages,
            "interrupted": self.interrupted,
            "in_doubt": self.in_doubt,
        }
        if self.by_id and self.verb != "purged":  # purge_dead returns a count, not the ids
            out[f"{self.verb}_ids"] = self.done_ids
            out["skipped_ids"] = self.skipped_ids
        return out

    def status(self) -> int:
        return 130 if self.interrupted else 0

    def interrupted_text(self, rest: str) -> str:
        if not self.interrupted:
            return ""
        text = f"; interrupted after {self.pages} {'id' if self.verb == 'cancelled' else 'page'}(s): {rest}"
        if self.in_doubt:
            text += (
                f"; the call abandoned by a second Ctrl-C (up to {self.in_doubt} job(s))"
                " took effect whole or not at all"
            )
        return text


def _paged(work: Callable[[StopRequest, Tally], bool], tally: Tally) -> None:
    """Runs ``work`` (which returns True once it has done everything) under the Ctrl-C rule."""
    with stop_on_ctrl_c() as stop:
        try:
            finished = work(stop, tally)
        except KeyboardInterrupt:  # the second Ctrl-C
            finished = False
        tally.interrupted = not finished


def _ids_text(ids: Sequence[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:SHOWN_IDS])
    return shown + (f", … ({len(ids)} in all)" if len(ids) > SHOWN_IDS else "")


# -- requeue ---------------------------------------------------------------------


def _requeue_ids(q: Queue, ids: list[int], page: int) -> Callable[[StopRequest, Tally], bool]:
    def work(stop: StopRequest, tally: Tally) -> bool:
        pieces = list(chunks(ids, page))
        for piece in pieces:
            if stop.requested:
                return False
            tally.in_doubt = len(piece)
            moved = q.requeue_dead(piece)
            tally.in_doubt = 0
            tally.page_of_ids(piece, moved)
            if len(pieces) > 1:
                progress(f"requeued {len(moved)} (total {tally.done})")
        return True

    return work


def _requeue_all(q: Queue, page: int) -> Callable[[StopRequest, Tally], bool]:
    # Walks the dead rows by id, newest first, each page below the last one's
    # lowest id. `requeue_dead(ids=None)` would take the oldest dead rows each
    # time: a row left dead (its unique key is live again) would come back in
    # every page, and a requeued job that died again meanwhile would be moved
    # twice. Walking down by id visits each id once, and ends.
    def work(stop: StopRequest, tally: Tally) -> bool:
        below: int | None = None
        while not stop.requested:
            listed = [j.id for j in q.dead_jobs(limit=page, before_id=below)]
            if not listed:
                return True
            tally.in_doubt = len(listed)
            moved = q.requeue_dead(listed)
            tally.in_doubt = 0
            left = len(listed) - len(moved)
            tally.page(len(moved), left)
            progress(f"requeued {len(moved)} (total {tally.done})" + (f", {left} left dead" if left else ""))
            if len(listed) < page:
                return True
            below = min(listed)
        return False

    return work


def requeue(
    target: str, schema: str | None, queue: str, ids: list[int] | None, page: int, as_json: bool
) -> tuple[str, int]:
    """``requeue_dead`` on the given ids, or on every dead job of ``queue`` (``ids`` None)."""
    tally = Tally("requeued", by_id=ids is not None)
    with open_existing(target, schema) as store:
        q = queue_view(store, queue)
        _paged(_requeue_ids(q, unique(ids), page) if ids is not None else _requeue_all(q, page), tally)
    if as_json:
        return _dump(tally.as_dict(queue)), tally.status()
    text = f"requeued {tally.done} dead job(s) of {queue!r} to pending"
    if tally.by_id and tally.skipped_ids:
        why = f"not dead in {queue!r}, or unique key live again"
        text += f"; skipped id(s) {_ids_text(tally.skipped_ids)} ({why})"
    elif tally.skipped:
        text += f"; {tally.skipped} left dead (unique key live again, or no longer dead)"
    return text + tally.interrupted_text("the rest stay dead"), tally.status()


# -- purge -----------------------------------------------------------------------


def _purge_ids(q: Queue, ids: list[int], page: int) -> Callable[[StopRequest, Tally], bool]:
    def work(stop: StopRequest, tally: Tally) -> bool:
        pieces = list(chunks(ids, page))
        for piece in pieces:
            if stop.requested:
                return False
            tally.in_doubt = len(piece)
            n = q.purge_dead(piece)
            tally.in_doubt = 0
            tally.page(n, len(piece) - n)
            if len(pieces) > 1:
                progress(f"purged {n} (total {tally.done})")
        return True

    return work


def _purge_older(q: Queue, older_than_s: float, page: int) -> Callable[[StopRequest, Tally], bool]:
    # The cutoff is pinned to the command's start: each page asks for rows dead
    # longer than `older_than_s` plus the whole seconds elapsed. Whole, because
    # the store rounds a fraction up (0.1 s would become 1 s and miss the latest
    # deaths), so the cutoff can run up to a second late. The set to delete then
    # only shrinks: the loop ends even where jobs die faster than pages are
    # deleted, and jobs that die later stay.
    def work(stop: StopRequest, tally: Tally) -> bool:
        started = time.monotonic()
        while not stop.requested:
            tally.in_doubt = page
            n = q.purge_dead(older_than_s=older_than_s + int(time.monotonic() - started), limit=page)
            tally.in_doubt = 0
            tally.page(n)
            progress(f"purged {n} (total {tally.done})")
            if n < page:
                return True
        return False

    return work


def purge(
    target: str,
    schema: str | None,
    queue: str,
    ids: list[int] | None,
    older_than_s: float | None,
    page: int,
    as_json: bool,
) -> tuple[str, int]:
    """``purge_dead`` by ids, or every dead job older than ``older_than_s`` (all with 0)."""
    tally = Tally("purged", by_id=ids is not None)
    with open_existing(target, schema) as store:
        q = queue_view(store, queue)
        if ids is not None:
            _paged(_purge_ids(q, unique(ids), page), tally)
        else:
            _paged(_purge_older(q, older_than_s or 0.0, page), tally)
    if as_json:
        return _dump(tally.as_dict(queue)), tally.status()
    text = f"purged {tally.done} dead job(s) of {queue!r}"
    if older_than_s:
        text += f" that died more than {older_than_s:g} s ago"
    if tally.skipped:
        text += f"; {tally.skipped} id(s) skipped (not dead in {queue!r})"
    return text + tally.interrupted_text("the rest stay dead"), tally.status()


# -- cancel ----------------------------------------------------------------------


def _cancel_ids(q: Queue, ids: list[int]) -> Callable[[StopRequest, Tally], bool]:
    def work(stop: StopRequest, tally: Tally) -> bool:
        for job_id in ids:
            if stop.requested:
                return False
            tally.in_doubt = 1
            done = q.cancel(job_id)
            tally.in_doubt = 0
            tally.page_of_ids([job_id], [job_id] if done else [])
        return True

    return work


def cancel(target: str, schema: str | None, queue: str, ids: list[int], as_json: bool) -> tuple[str, int]:
    """``Queue.cancel`` on each id, one call each: deletes pending and processing jobs."""
    tally = Tally("cancelled", by_id=True)
    with open_existing(target, schema) as store:
        _paged(_cancel_ids(queue_view(store, queue), unique(ids)), tally)
    if as_json:
        return _dump(tally.as_dict(queue)), tally.status()
    text = f"cancelled {tally.done} job(s) of {queue!r}"
    if tally.skipped_ids:
        text += f"; skipped id(s) {_ids_text(tally.skipped_ids)} (not pending or processing in {queue!r})"
    return text + tally.interrupted_text("the other ids were not cancelled"), tally.status()


# -- forget ----------------------------------------------------------------------


def forget(target: str, schema: str | None, queue: str, as_json: bool) -> str:
    """``store.forget_queue``: a queue that holds no job leaves ``stats``, ``/metrics``
    and the dashboard. Refused (a ValueError, exit 1) while it holds one."""
    with open_existing(target, schema) as store:
        known = store.forget_queue(queue)
    if as_json:
        return _dump({"queue": queue, "forgotten": known})
    if not known:
        return f"{queue!r} is not known to this store: nothing to forget"
    return (
        f"forgot {queue!r}: it leaves `alkstore stats`, /metrics and the dashboard, with its pause, limits "
        "and completion counts; a job enqueued to it later lists it again"
    )
