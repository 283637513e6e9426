"""Checked by mypy in tests/test_task_typing.py, never run: each line marked
`# expect:` is a misuse mypy must report (a task's `.enqueue` carries the
function's parameter types through ParamSpec)."""

import alkstore

tasks = alkstore.Tasks()


@tasks.task(queue="emails")
def send_email(to: str, subject: str = "hi") -> str:
    return to + subject


@tasks.task
async def ping(n: int) -> None: ...


send_email.enqueue("ada@example.com", subject="welcome")
send_email.options(delay=60).enqueue("ada@example.com")
job_id: int = send_email.enqueue("bob@example.com")
result: str = send_email("ada@example.com")

send_email.enqueue(42)  # expect: arg-type
send_email.enqueue("ada", topic="x")  # expect: call-arg
send_email.options(priority=1).enqueue()  # expect: call-arg
ping.enqueue("one")  # expect: arg-type
wrong: str = send_email.enqueue("ada")  # expect: assignment
