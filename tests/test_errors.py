"""The public exception hierarchy (SPEC §12) and the package's public names."""

from __future__ import annotations

import builtins
import types

import pytest

import alkstore

HIERARCHY = [
    ("AlkstoreError", Exception),
    ("InvalidName", "AlkstoreError"),
    ("InvalidName", ValueError),
    ("InvalidSpec", "AlkstoreError"),
    ("InvalidSpec", ValueError),
    ("LeadershipLost", "AlkstoreError"),
    ("LockHeld", "AlkstoreError"),
    ("StoreClosed", "AlkstoreError"),
    ("TransactionError", "AlkstoreError"),
    ("TransactionClosed", "TransactionError"),
    ("Fail", "AlkstoreError"),
    ("DatabaseError", "AlkstoreError"),
    ("ConnectionLost", "DatabaseError"),
]

ERROR_NAMES = sorted({child for child, _ in HIERARCHY})


@pytest.mark.parametrize(("child", "parent"), HIERARCHY, ids=lambda v: getattr(v, "__name__", v))
def test_hierarchy(child: str, parent: str | type) -> None:
    parent_cls = getattr(alkstore, parent) if isinstance(parent, str) else parent
    assert issubclass(getattr(alkstore, child), parent_cls)


@pytest.mark.parametrize(
    ("child", "not_parent"),
    [
        ("StoreClosed", ValueError),
        ("DatabaseError", ValueError),
        ("TransactionError", ValueError),
        ("LockHeld", ValueError),
        ("TransactionError", "DatabaseError"),
        ("ConnectionLost", "TransactionError"),
        ("Fail", "DatabaseError"),
    ],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_no_extra_bases(child: str, not_parent: str | type) -> None:
    """Runtime errors must not be catchable as argument errors, nor as each other."""
    parent_cls = getattr(alkstore, not_parent) if isinstance(not_parent, str) else not_parent
    assert not issubclass(getattr(alkstore, child), parent_cls)


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_error_names_are_not_builtin_names(name: str) -> None:
    """SPEC §12: never reuse builtin exception names."""
    assert not hasattr(builtins, name)
    assert getattr(alkstore, name) is not getattr(builtins, name, None)


def test_database_error_carries_code() -> None:
    err = alkstore.DatabaseError("boom", "23505")
    assert err.code == "23505"
    assert alkstore.ConnectionLost("gone").code is None


def test_fail_is_raisable_with_message() -> None:
    with pytest.raises(alkstore.Fail, match="bad input"):
        raise alkstore.Fail("bad input")


@pytest.mark.parametrize(
    "name",
    [*ERROR_NAMES, "open", "backoff_range", "StopToken", "Job", "JobHandle", "QueueStats", "Swept"],
)
def test_public_names_in_all(name: str) -> None:
    assert name in alkstore.__all__
    assert hasattr(alkstore, name)


def test_all_is_exact() -> None:
    """Every name in __all__ exists, and every public non-module attribute is in __all__."""
    for name in alkstore.__all__:
        assert hasattr(alkstore, name), name
    public = {
        n
        for n, v in vars(alkstore).items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType) and n != "annotations"
    }
    assert public <= set(alkstore.__all__), public - set(alkstore.__all__)
