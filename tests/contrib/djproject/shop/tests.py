"""Django's own test cases against the real store (SPEC §28), run by
tests/test_contrib_django.py through ``manage.py test`` on each engine."""

# mypy: disallow-subclassing-any=False
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test import Client, TestCase, TransactionTestCase

from alkstore.contrib.django import store
from alkstore.testing import enqueued

from .jobs import ship
from .models import Order, Shipment

PROJECT = Path(__file__).resolve().parent.parent
DEADLINE_S = 60.0


def jobs_table() -> str:
    """The store's job table, as Django's connection names it (SQLite file or the pg schema)."""
    return "__alkstore_jobs" if connection.vendor == "sqlite" else "alkstore.jobs"


def seen_by_django(job_id: int) -> bool:
    """Whether Django's connection (in whatever transaction it is) sees the job."""
    with connection.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {jobs_table()} WHERE id = %s", [job_id])
        return bool(cur.fetchone()[0])


class Boom(Exception):
    pass


def fail() -> None:
    """The view fails after its writes (a function, so the type checker does not
    take the code after the ``with`` for unreachable)."""
    raise Boom


class EnqueueInsideTheTestTransaction(TestCase):
    """TestCase: every test is one transaction that is rolled back, so the
    job is seen by Django's connection only (the store's own never sees it)."""

    @classmethod
    def setUpClass(cls) -> None:
        store()  # opened before the test transaction writes (SQLite: before it holds the lock)
        super().setUpClass()

    def test_a_job_commits_with_the_savepoint_and_goes_with_its_rollback(self) -> None:
        with transaction.atomic():
            order = Order.objects.create(item="kept")
            kept = ship.enqueue(order.pk)
        self.assertTrue(seen_by_django(kept))
        gone = None
        with self.assertRaises(Boom), transaction.atomic():
            Order.objects.create(item="gone")
            gone = ship.enqueue(order.pk)
            fail()
        assert gone is not None
        self.assertFalse(seen_by_django(gone))
        self.assertEqual(list(Order.objects.values_list("item", flat=True)), ["kept"])


class EnqueueAndCommit(TransactionTestCase):
    """TransactionTestCase: real commits, seen by the store and by other processes."""

    def test_a_job_is_there_after_the_commit_and_absent_after_a_rollback(self) -> None:
        before = {c.job_id for c in enqueued(ship)}
        with transaction.atomic():
            order = Order.objects.create(item="book")
            kept = ship.enqueue(order.pk)
            self.assertNotIn(kept, {c.job_id for c in enqueued(ship)}, "not before the commit")
        calls = {c.job_id: c for c in enqueued(ship)}
        self.assertEqual(calls[kept].args, (order.pk,))
        with self.assertRaises(Boom), transaction.atomic():
            Order.objects.create(item="lamp")
            gone = ship.enqueue(-1)
            fail()
        after = {c.job_id for c in enqueued(ship)}
        self.assertEqual(after - before, {kept})
        self.assertIsNone(store().queue("ship").get_job(gone))
        self.assertFalse(Order.objects.filter(item="lamp").exists())

    def test_the_worker_command_runs_the_job(self) -> None:
        with transaction.atomic():
            order = Order.objects.create(item="chair")
            job_id = ship.enqueue(order.pk)
        env = {**os.environ, "ALK_DJ_NAME": str(connection.settings_dict["NAME"])}
        env.pop("ALK_DJ_TEST_NAME", None)
        worker = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "alkstore_worker",
                "--tasks",
                "shop.jobs:tasks",
                "--status-every",
                "0",
            ],
            cwd=PROJECT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            q = store().queue("ship")
            deadline = time.monotonic() + DEADLINE_S
            while q.get_job(job_id) is not None and worker.poll() is None:
                self.assertLess(time.monotonic(), deadline, "the worker did not run the job")
                time.sleep(0.05)
            self.assertTrue(Shipment.objects.filter(order_id=order.pk).exists())
        finally:
            worker.send_signal(signal.SIGTERM)
            _, err = worker.communicate(timeout=DEADLINE_S)
        self.assertEqual(worker.returncode, 0, err)
        # Jobs left by earlier tests (the store's tables are not flushed) may run too.
        self.assertRegex(err, r"stopped: [1-9]\d* acked, 0 retried, 0 dead")


class AdminPages(TransactionTestCase):
    """The admin's queue pages render; requeue and purge need Django's CSRF token."""

    def setUp(self) -> None:
        # Each test its own queue: the store's tables outlive TransactionTestCase's flush.
        self.queue = f"mail-{uuid.uuid4().hex[:8]}"
        self.url = f"/admin/alkstore/queue/{self.queue}/change/"
        self.user = User.objects.create_superuser("admin", "admin@example.com", "pw")
        self.client = Client(enforce_csrf_checks=True)
        self.client.force_login(self.user)

    def dead_letters(self, n: int) -> list[int]:
        q = store().queue(self.queue, max_attempts=1)
        for i in range(n):
            q.enqueue({"n": i})
        ids = []
        while job := q.claim("admin-test"):
            job.fail("broken <script>")
            ids.append(job.id)
        return ids

    def token(self, page: Any) -> str:
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
        assert found is not None, "the page has a CSRF token"
        return found.group(1)

    def test_the_queue_list_and_a_queue_page_render(self) -> None:
        dead = self.dead_letters(2)
        listing = self.client.get("/admin/alkstore/queue/")
        self.assertEqual(listing.status_code, 200)
        self.assertContains(listing, self.url)
        index = self.client.get("/admin/")
        self.assertContains(index, "/admin/alkstore/queue/")
        page = self.client.get(self.url)
        self.assertContains(page, f'value="{dead[0]}"')
        self.assertContains(page, "broken &lt;script&gt;")
        self.assertNotContains(page, "broken <script>")
        # The model has no table: nothing routes to a view that would read it.
        for missing in ("add/", f"{self.queue}/history/", f"{self.queue}/delete/"):
            self.assertEqual(self.client.get(f"/admin/alkstore/queue/{missing}").status_code, 404, missing)

    def test_a_dead_letter_that_cannot_be_decoded_shows_its_stored_text(self) -> None:
        """Issue 44: a payload written around the enqueue checks (here an
        UPDATE behind the store's back) does not take the page down."""
        dead = self.dead_letters(2)
        table = "__alkstore_dead" if connection.vendor == "sqlite" else "alkstore.dead"
        with connection.cursor() as cur:
            cur.execute(f"UPDATE {table} SET payload = %s WHERE id = %s", ["[" * 3000 + "]" * 3000, dead[0]])
        page = self.client.get(self.url)
        self.assertEqual(page.status_code, 200)
        self.assertContains(page, "(cannot be decoded) [[[[")
        self.assertContains(page, f'value="{dead[1]}"')

    def test_requeue_and_purge_need_the_csrf_token(self) -> None:
        first, second = self.dead_letters(2)
        url = self.url
        refused = self.client.post(url, {"action": "requeue", "id": [first]})
        self.assertEqual(refused.status_code, 403)
        q = store().queue(self.queue)
        self.assertEqual(q.stats().dead, 2, "nothing changed without the token")
        token = self.token(self.client.get(url))
        done = self.client.post(url, {"action": "requeue", "id": [first], "csrfmiddlewaretoken": token})
        self.assertEqual(done.status_code, 302)
        job = q.get_job(first)
        self.assertEqual(job.state if job else None, "pending")
        purged = self.client.post(url, {"action": "purge", "all": "1", "csrfmiddlewaretoken": token})
        self.assertEqual(purged.status_code, 302)
        self.assertEqual((q.stats().dead, q.stats().pending), (0, 1))
        self.assertIsNone(q.get_job(second))

    def test_a_user_without_change_permission_cannot_act(self) -> None:
        viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
        from django.contrib.auth.models import Permission

        viewer.user_permissions.add(Permission.objects.get(codename="view_queue"))
        client = Client(enforce_csrf_checks=True)
        client.force_login(viewer)
        (dead,) = self.dead_letters(1)
        url = self.url
        page = client.get(url)
        self.assertEqual(page.status_code, 200)
        self.assertNotContains(page, "Requeue selected")
        token = self.token(page)
        refused = client.post(url, {"action": "requeue", "id": [dead], "csrfmiddlewaretoken": token})
        self.assertEqual(refused.status_code, 403)
        self.assertEqual(store().queue(self.queue).stats().dead, 1)
