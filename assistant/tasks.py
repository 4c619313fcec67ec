"""Tasks owned by a state: started on entry, cancelled and awaited on exit.

Every task keeps a reference here (RUF006), and ``cancel()`` never swallows the caller's own
cancellation: if the task awaiting the scope is itself cancelled, that CancelledError propagates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import structlog

log = structlog.get_logger("tasks")


class TaskScope:
    """A named set of tasks that live and die together."""

    def __init__(self, name: str, cancel_timeout_s: float = 2.0) -> None:
        self.name = name
        self.cancel_timeout_s = cancel_timeout_s
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=f"{self.name}:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    @property
    def active(self) -> bool:
        return any(not t.done() for t in self._tasks)

    async def cancel(self) -> None:
        """Cancel every task but the caller, and wait (bounded) until they have stopped."""
        me = asyncio.current_task()
        pending = [t for t in self._tasks if t is not me and not t.done()]
        for task in pending:
            task.cancel()
        if not pending:
            return
        _, stuck = await asyncio.wait(pending, timeout=self.cancel_timeout_s)
        for task in stuck:
            log.error("task did not stop after cancel", task=task.get_name(), waited_s=self.cancel_timeout_s)

    async def wait(self) -> None:
        """Wait until every task spawned so far has ended (their errors are logged, not raised)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks))

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("task failed", task=task.get_name(), error=repr(task.exception()))
