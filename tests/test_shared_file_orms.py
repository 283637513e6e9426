"""SQLAlchemy and Django on the store's file, in the same process as a Worker (SPEC §16).

The ORMs reach the file through Python's sqlite3, a second SQLite in the
process; their writes and the Worker's claims and acks interleave, and every
business row and every job must be there at the end.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import alkstore
from tests.conftest import Target
from tests.workers import running, wait_for

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the protection is Linux-only (ADR 0009); elsewhere open() warns"
)

N = 200


@pytest.fixture
def engine() -> str:
    """Overrides the conftest's engine parameter: every test here is SQLite-only."""
    return "sqlite"


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(primary_key=True)
    item: Mapped[str]


class Shipment(Base):
    __tablename__ = "shipments"
    id: Mapped[int] = mapped_column(primary_key=True)
    order_id: Mapped[int]


def integrity(path: str) -> str:
    with closing(sqlite3.connect(path)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def test_sqlalchemy_sessions_and_a_worker_share_the_file(target: Target) -> None:
    path = target.location
    db = create_engine(f"sqlite:///{path}", connect_args={"timeout": 30})
    Base.metadata.create_all(db)
    with target.open() as store:
        q = store.queue("ship")
        worker = alkstore.Worker(store, concurrency=4)

        @worker.handler("ship")
        def ship(payload: dict[str, Any], _job: alkstore.JobHandle) -> None:
            with Session(db) as s:
                s.add(Shipment(order_id=payload["order_id"]))
                s.commit()

        def shipped() -> int:
            with Session(db) as s:
                return s.scalar(select(func.count()).select_from(Shipment)) or 0

        with running(worker):
            for i in range(N):
                with Session(db) as s:
                    order = Order(item=f"item {i}")
                    s.add(order)
                    s.commit()
                    q.enqueue({"order_id": order.id})
            wait_for(lambda: shipped() == N, timeout=60, what=f"{N} shipments")
        stats = q.stats()
        assert (stats.pending, stats.processing, stats.dead) == (0, 0, 0)
    with Session(db) as s:
        orders = sorted(s.scalars(select(Order.id)))
        shipped_ids = sorted(s.scalars(select(Shipment.order_id)))
    db.dispose()
    assert len(orders) == N
    assert shipped_ids == orders
    assert integrity(path) == "ok"


def test_django_orm_and_a_worker_share_the_file(target: Target) -> None:
    path = target.location
    helper = Path(__file__).parent / "helpers" / "django_shared.py"
    out = subprocess.run(
        [sys.executable, str(helper), path, str(N)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert len(result["orders"]) == N
    assert result["shipped"] == result["orders"]
    assert (result["pending"], result["processing"], result["dead"]) == (0, 0, 0)
    assert integrity(path) == "ok"
