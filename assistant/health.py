"""What the assistant's processes hold: resident memory, open files and threads, from /proc.

``assistant run`` logs a ``health`` line every ``log.health_interval_s`` so that slow drift (a leak,
descriptors not closed, threads not joined) shows in the log of a box left running for months; the
soak benchmark samples the same numbers per turn.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("health")

PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


def process(pid: int) -> dict[str, float] | None:
    """RSS in MB, open descriptors and threads of ``pid``; None if it is gone."""
    proc = Path(f"/proc/{pid}")
    try:
        rss = int((proc / "statm").read_text().split()[1]) * PAGE / 2**20
        fds = len(os.listdir(proc / "fd"))
        threads = next(int(line.split()[1]) for line in (proc / "status").read_text().splitlines()
                       if line.startswith("Threads:"))
    except (OSError, StopIteration, ValueError):
        return None
    return {"rss_mb": round(rss, 1), "fds": fds, "threads": threads}


def cpu_s(pid: int) -> float | None:
    """CPU seconds ``pid`` has used (user + system, all its threads); None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime: fields 14 and 15 of stat
    except (OSError, IndexError, ValueError):
        return None


def busy_s() -> float:
    """CPU seconds the whole machine has spent busy (not idle, not waiting for I/O), all CPUs."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = (
        int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9])
    return (user + nice + system + irq + softirq + steal) / TICK


class OthersLoad:
    """How much of the machine's CPU went to processes other than ``pids()`` since ``mark()``:
    0 (none) to 1 (every CPU, all the time)."""

    def __init__(self, pids: Callable[[], Sequence[int | None]]) -> None:
        self.pids = pids
        self._mark: tuple[float, float, float, tuple[int | None, ...]] | None = None

    def _now(self) -> tuple[float, float, float, tuple[int | None, ...]] | None:
        pids = tuple(self.pids())
        ours = [cpu_s(pid) for pid in pids if pid is not None]
        if any(s is None for s in ours):
            return None
        return time.monotonic(), busy_s(), sum(s for s in ours if s is not None), pids

    def mark(self) -> None:
        self._mark = self._now()

    def share(self) -> float | None:
        """Others' share since the mark; None without one, or if a process came or went meanwhile."""
        now = self._now()
        if self._mark is None or now is None or now[3] != self._mark[3] or now[0] <= self._mark[0]:
            return None
        wall, busy, ours = (a - b for a, b in zip(now[:3], self._mark[:3], strict=True))
        return max(0.0, (busy - ours) / (wall * (os.cpu_count() or 1)))


def snapshot(pids: dict[str, int | None]) -> dict[str, Any]:
    """``process()`` for each named pid that is running (``main`` → {...}, ``worker`` → {...})."""
    return {name: found for name, pid in pids.items() if pid is not None and (found := process(pid)) is not None}


async def report_every(interval_s: float, pids: Callable[[], dict[str, int | None]]) -> None:
    """Log a ``health`` line now and every ``interval_s`` seconds (until cancelled)."""
    while True:
        log.info("health", **snapshot(pids()))
        await asyncio.sleep(interval_s)

