"""The named single-thread executor every backend owns.

A backend's model is only ever touched from its own thread (an NPU context must never be shared
across threads). Jobs run inside a copy of the caller's context, so structlog's turn_id and state
reach the worker.

In lockstep mode (deterministic replay) the event loop waits for the job: model compute then takes
zero session time and a replay gives the same events on every run. Lockstep is a context variable,
set once by the replay runner and inherited by every task it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

LOCKSTEP: contextvars.ContextVar[bool] = contextvars.ContextVar("lockstep", default=False)


@contextlib.contextmanager
def lockstep(on: bool) -> Iterator[None]:
    """Within it, model compute takes no session time (``on``: a replay as fast as the models allow),
    or runs beside the loop (off: real time)."""
    token = LOCKSTEP.set(on)
    try:
        yield
    finally:
        LOCKSTEP.reset(token)


class Worker:
    """One named thread that runs a backend's jobs in order."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` on the worker thread and block until it is done (for loading and closing)."""
        job = functools.partial(contextvars.copy_context().run, functools.partial(fn, *args, **kwargs))
        return self._executor.submit(job).result()

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` on the worker thread without blocking the loop (unless in lockstep)."""
        job = functools.partial(contextvars.copy_context().run, functools.partial(fn, *args, **kwargs))
        future = self._executor.submit(job)
        if LOCKSTEP.get():
            result = future.result()  # deliberate: compute takes no session time in a replay
            await asyncio.sleep(0)  # still a point where cancellation can land
            return result
        return await asyncio.wrap_future(future)

    def submit(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Queue ``fn`` on the worker thread without waiting for it (work done ahead, in order)."""
        job = functools.partial(contextvars.copy_context().run, functools.partial(fn, *args, **kwargs))
        return self._executor.submit(job)

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
