"""A task registry for `python -m alkstore worker URL --tasks tasks_app:tasks`
(test_task_cli). Unbound: the command binds it to the store at URL.

Task "tasks_app.shout" prints "shouted <text>"; the periodic task "tick"
(every second) prints "tick".
"""

from __future__ import annotations

import alkstore

tasks = alkstore.Tasks()


@tasks.task(queue="app", name="tasks_app.shout")
def shout(text: str) -> str:
    print(f"shouted {text.upper()}", flush=True)
    return text.upper()


@tasks.periodic("@every 1s", name="tick", queue="ticks")
def tick() -> None:
    print("tick", flush=True)
