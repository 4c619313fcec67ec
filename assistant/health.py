"""What the assistant's processes hold: resident memory, open files and threads, from /proc.

``assistant run`` logs a ``health`` line every ``log.health_interval_s`` so that slow drift (a leak,
descriptors not closed, threads not joined) shows in the log of a box left running for months; the
soak benchmark samples the same numbers per turn.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("health")

PAGE = os.sysconf("SC_PAGE_SIZE")


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


def snapshot(pids: dict[str, int | None]) -> dict[str, Any]:
    """``process()`` for each named pid that is running (``main`` → {...}, ``worker`` → {...})."""
    return {name: found for name, pid in pids.items() if pid is not None and (found := process(pid)) is not None}


async def report_every(interval_s: float, pids: Callable[[], dict[str, int | None]]) -> None:
    """Log a ``health`` line now and every ``interval_s`` seconds (until cancelled)."""
    while True:
        log.info("health", **snapshot(pids()))
        await asyncio.sleep(interval_s)

