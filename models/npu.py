"""The NPU's one owner: a pinned worker thread per NPU core, and the turn every NPU job waits for.

The RK3576 NPU has two cores, 0 and 1 (a mask naming core 2 is silently remapped by the runtime,
so it is refused here instead). An RKNNLite context is created, used and released on one worker
thread, whose core mask pins it to one core: ``worker(core)`` gives that thread.

Running RKNN and RKLLM models at the same moment is a reported problem (rknn-llm#315), so by
default (``serialised``) every NPU job takes the NPU's turn first: an RKNN inference holds it for
one call, the RKLLM generation for the whole reply but hands it over between tokens
(``hand_over``) whenever a job is waiting — the LLM pauses for one TTS call, then goes on.
``concurrent`` lets every job run at once; each core's jobs are still in order on its thread.

The turn is a ticket lock: jobs are served in the order they asked, so a generating LLM that hands
over goes to the back of the queue and cannot take the NPU straight back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

import structlog

from models.worker import Worker

P = ParamSpec("P")
T = TypeVar("T")

log = structlog.get_logger("npu")

CORES = (0, 1)
CORE_MASKS = {0: 1, 1: 2}  # RKNNLite.NPU_CORE_0, RKNNLite.NPU_CORE_1
MODES = ("serialised", "concurrent")
SLOW_WAIT_S = 0.1  # a wait for the NPU longer than this is logged


def core_mask(core: int) -> int:
    """The RKNN core mask that pins a context to ``core``; cores other than 0 and 1 are refused."""
    if core not in CORE_MASKS:
        raise ValueError(f"npu: the RK3576 has NPU cores 0 and 1, not {core}")
    return CORE_MASKS[core]


class NpuScheduler:
    """Owns NPU access: pinned per-core workers and, when serialised, one turn at a time."""

    def __init__(self, mode: str = "serialised") -> None:
        if mode not in MODES:
            raise ValueError(f"npu: mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self._cond = threading.Condition()
        self._next_ticket = 0
        self._serving = 0
        self._holder: str | None = None
        self._workers: dict[int, Worker] = {}
        self.waited_s: dict[str, float] = {}  # total time each job kind waited for its turn

    @property
    def serialised(self) -> bool:
        return self.mode == "serialised"

    def worker(self, core: int) -> Worker:
        """The one thread that owns the RKNN contexts pinned to ``core``."""
        core_mask(core)
        if core not in self._workers:
            self._workers[core] = Worker(f"npu{core}")
        return self._workers[core]

    async def run(self, core: int, who: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` on ``core``'s thread during an NPU turn."""
        return await self.worker(core).run(self._during_turn, who, lambda: fn(*args, **kwargs))

    def _during_turn(self, who: str, job: Callable[[], T]) -> T:
        with self.turn(who):
            return job()

    @contextmanager
    def turn(self, who: str) -> Iterator[None]:
        """Hold the NPU (serialised mode) for the block; a no-op when concurrent."""
        if not self.serialised:
            yield
            return
        self._acquire(who)
        try:
            yield
        finally:
            self._release()

    def hand_over(self, who: str) -> float:
        """Called by a long job between steps: if another job waits, let it run first.

        Returns the seconds spent handed over (0 when nobody was waiting or not serialised).
        """
        if not self.serialised:
            return 0.0
        with self._cond:
            if self._holder != who or self._next_ticket - self._serving <= 1:
                return 0.0
        start = time.monotonic()
        self._release()
        self._acquire(who)
        return time.monotonic() - start

    def waiting(self) -> int:
        """Jobs waiting for the turn now."""
        with self._cond:
            return max(0, self._next_ticket - self._serving - (1 if self._holder else 0))

    def _acquire(self, who: str) -> None:
        start = time.monotonic()
        with self._cond:
            ticket = self._next_ticket
            self._next_ticket += 1
            while self._serving != ticket or self._holder is not None:
                self._cond.wait()
            self._holder = who
        waited = time.monotonic() - start
        self.waited_s[who] = self.waited_s.get(who, 0.0) + waited
        if waited > SLOW_WAIT_S:
            log.info("waited for the NPU", who=who, waited_ms=round(waited * 1000))

    def _release(self) -> None:
        with self._cond:
            self._holder = None
            self._serving += 1
            self._cond.notify_all()

    def close(self) -> None:
        for worker in self._workers.values():
            worker.close()
        self._workers.clear()

