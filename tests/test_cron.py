"""Cron specs with time zones (SPEC §23): ``alkstore.next_fires`` against an
independent implementation, Python's ``cronsim`` (cronie's rules), over
random specs, zones and starts, daylight-saving days included; the grammar's
refusals; and the zone database that ships inside the wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import alkstore

#: Zones with the shapes that matter: no DST, DST both hemispheres, a 30-minute
#: DST shift, a :45 offset, DST at midnight, and one that dropped DST.
ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "America/Santiago",
    "Asia/Kolkata",
    "America/Sao_Paulo",
]

NAMES = {3: ["JAN", "feb", "Mar", "APR", "dec"], 4: ["SUN", "mon", "Tue", "FRI", "sat"]}
BOUNDS = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]


@st.composite
def fields(draw: st.DrawFn, i: int) -> str:
    lo, hi = BOUNDS[i]
    # Cron fields are mostly small: values near the hours a DST change touches.
    value = st.integers(lo, hi).map(str)
    if i in NAMES:
        value = value | st.sampled_from(NAMES[i])

    def term() -> st.SearchStrategy[str]:
        return st.one_of(
            value,
            st.tuples(st.integers(lo, hi), st.integers(lo, hi)).map(lambda ab: f"{min(ab)}-{max(ab)}"),
            st.tuples(value, st.integers(1, 12)).map(lambda t: f"{t[0]}/{t[1]}"),
            st.tuples(st.integers(lo, hi), st.integers(lo, hi), st.integers(1, 9)).map(
                lambda t: f"{min(t[0], t[1])}-{max(t[0], t[1])}/{t[2]}"
            ),
            st.integers(1, 15).map(lambda n: f"*/{n}"),
        )

    kind = draw(st.sampled_from(["star", "term", "list"]))
    if kind == "star":
        return "*"
    if kind == "term":
        return draw(term())
    return ",".join(draw(st.lists(term(), min_size=2, max_size=3)))


@st.composite
def specs(draw: st.DrawFn) -> str:
    return " ".join(draw(fields(i)) for i in range(5))


def cronsim_fires(spec: str, tz: str, after: datetime, n: int) -> list[datetime] | None:
    """cronsim's first fires strictly after ``after`` (it can yield a repeated
    hour's first pass from its second); None for a spec it refuses."""
    try:
        it = CronSim(spec, after.astimezone(ZoneInfo(tz)))
    except Exception:
        return None
    out: list[datetime] = []
    try:
        while len(out) < n:
            f = next(it)
            if f > after:
                out.append(f.astimezone(UTC))
    except StopIteration:
        pass
    return out


# Starts are drawn around DST changes as often as not.
TRANSITIONS = [
    datetime(2026, 3, 29, 0, 30, tzinfo=UTC),  # Europe: spring forward
    datetime(2026, 10, 25, 0, 15, tzinfo=UTC),  # Europe: fall back
    datetime(2026, 3, 8, 6, 45, tzinfo=UTC),  # US
    datetime(2026, 11, 1, 5, 20, tzinfo=UTC),
    datetime(2026, 4, 4, 15, 0, tzinfo=UTC),  # Australia
    datetime(2026, 10, 3, 15, 0, tzinfo=UTC),
    datetime(2026, 4, 5, 2, 0, tzinfo=UTC),  # Chile (at midnight)
    datetime(2026, 9, 6, 3, 0, tzinfo=UTC),
]
starts = st.one_of(
    st.datetimes(datetime(2000, 1, 1), datetime(2035, 12, 31), timezones=st.just(UTC)),
    st.tuples(st.sampled_from(TRANSITIONS), st.integers(-3 * 3600, 3 * 3600)).map(
        lambda t: t[0] + timedelta(seconds=t[1])
    ),
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), tz=st.sampled_from(ZONES), after=starts)
@example(spec="30 2 * * *", tz="Europe/Berlin", after=datetime(2026, 3, 28, 12, tzinfo=UTC))
@example(spec="30 2 * * *", tz="Europe/Berlin", after=datetime(2026, 10, 25, 0, 45, tzinfo=UTC))
@example(spec="30 * * * *", tz="Europe/Berlin", after=datetime(2026, 10, 24, 23, tzinfo=UTC))
@example(spec="0 0 * * *", tz="America/Santiago", after=datetime(2026, 9, 5, tzinfo=UTC))
@example(spec="*/20 2 * * *", tz="Australia/Lord_Howe", after=datetime(2026, 10, 3, 14, tzinfo=UTC))
def test_next_fires_equals_cronsim(spec: str, tz: str, after: datetime) -> None:
    expected = cronsim_fires(spec, tz, after, 4)
    if expected is None:
        with pytest.raises(alkstore.InvalidSpec):
            alkstore.next_fires(spec, tz=tz, after=after, n=4)
        return
    assert alkstore.next_fires(spec, tz=tz, after=after, n=4) == expected


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="0123456789*/-, LJANMONSUNFRI@hourlyev", max_size=30))
def test_no_text_makes_the_parser_do_anything_but_answer(text: str) -> None:
    try:
        alkstore.next_fires(text, n=1, after=datetime(2026, 1, 1, tzinfo=UTC))
    except alkstore.InvalidSpec as exc:
        assert exc.spec == text


def test_macros_and_the_day_rules() -> None:
    after = datetime(2026, 12, 5, 7, 3, tzinfo=UTC)
    hourly = alkstore.next_fires("@hourly", after=after, n=2)
    assert hourly == [datetime(2026, 12, 5, 8, tzinfo=UTC), datetime(2026, 12, 5, 9, tzinfo=UTC)]
    assert alkstore.next_fires("@annually", after=after, n=1) == [datetime(2027, 1, 1, tzinfo=UTC)]
    assert alkstore.next_fires("0 0 * * 7", after=after, n=1) == [datetime(2026, 12, 6, tzinfo=UTC)], (
        "7=Sunday"
    )
    berlin = alkstore.next_fires("0 9 * * MON-FRI", tz="Europe/Berlin", after=after, n=1)
    assert berlin == [datetime(2026, 12, 7, 8, tzinfo=UTC)], "09:00 CET is 08:00 UTC, Monday"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ("60 * * * *", "minute"),
        ("* 24 * * *", "hour"),
        ("* * 32 * *", "day-of-month"),
        ("* * * 13 *", "month"),
        ("* * * * 8", "day-of-week"),
        ("* * * * MON#2", "day-of-week"),
        ("* * L * *", "day-of-month"),
        ("0 0 30 2 *", "day-of-month"),
    ],
)
def test_a_bad_field_is_an_invalid_spec_naming_it(spec: str, field: str) -> None:
    with pytest.raises(alkstore.InvalidSpec, match=f"bad {field} field") as caught:
        alkstore.next_fires(spec)
    assert caught.value.spec == spec
    with pytest.raises(alkstore.InvalidSpec, match="expected five cron fields"):
        alkstore.next_fires("* * * *")


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="tz must be an IANA time zone"):
        alkstore.next_fires("* * * * *", tz="Mars/Olympus")
    with pytest.raises(ValueError, match="timezone-aware"):
        alkstore.next_fires("* * * * *", after=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="n"):
        alkstore.next_fires("* * * * *", n=0)
    assert len(alkstore.next_fires("* * * * *", n=1000)) == 1000


def test_the_zone_database_ships_inside_the_wheel(tmp_path: object) -> None:
    """Berlin's DST, computed in a process that cannot see the OS zone files."""
    zoneinfo = "/usr/share/zoneinfo"
    if not os.path.isdir(zoneinfo):
        pytest.skip("this machine has no OS zone directory to hide")  # the fact holds already
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("hiding the OS zone directory needs root and unshare (util-linux)")
    code = (
        "import alkstore, datetime as d;"
        "print(alkstore.next_fires('30 2 * * *', tz='Europe/Berlin',"
        " after=d.datetime(2026, 3, 28, 12, tzinfo=d.timezone.utc), n=1)[0].isoformat())"
    )
    hide = f"mount -t tmpfs none {zoneinfo} && test ! -e {zoneinfo}/Europe/Berlin"
    script = f'{hide} && {sys.executable} -c "{code}"'
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2026-03-29T01:00:00+00:00", "03:00 CEST, the first minute after the gap"
