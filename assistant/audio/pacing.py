"""How a recorded microphone hands out chunks: as fast as taken, or at one second per second."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

SETTLE_YIELDS = 16


class Pacing(Protocol):
    """What a recorded microphone waits on before each chunk."""

    async def until(self, end_sample: int) -> None: ...


class Pacer:
    """Waits before each chunk: until the chunk is due in wall time, or (as fast as possible) just
    long enough for the other tasks to run their next steps.

    As fast as possible, the loop is yielded to ``SETTLE_YIELDS`` times, so a reply's steps between
    two model calls (queueing, publishing, the next call) happen within the same chunk, as they
    would on a real machine in far less than a chunk's time.
    """

    def __init__(self, sample_rate: int, *, realtime: bool) -> None:
        self.sample_rate = sample_rate
        self.realtime = realtime
        self._start = time.perf_counter()

    async def until(self, end_sample: int) -> None:
        """Return once the chunk that ends at ``end_sample`` may be delivered."""
        if not self.realtime:
            for _ in range(SETTLE_YIELDS):
                await asyncio.sleep(0)
            return
        due = self._start + end_sample / self.sample_rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
