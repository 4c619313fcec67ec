"""What the status page shows, kept as the session runs: a bus subscriber and a memory sampler.

Everything is bounded (the last ``turns`` turns, an hour or so of memory samples, the last errors),
so a box left running for months keeps the same few kilobytes. Watchers (the page's live stream)
get each change as a small dict; a slow watcher loses changes rather than holding memory.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from assistant import health
from assistant.events import (
    BargeIn,
    EchoCancelled,
    EchoIgnored,
    Error,
    Event,
    NoiseRejected,
    SpeechEnded,
    StateChanged,
    WakeDetected,
    WorkerRestarted,
    to_record,
)
from assistant.summary import summarize

MEMORY_SAMPLES = 720
ERRORS = 20
WATCHER_BACKLOG = 100


class Turn:
    """One turn's events, from its end of speech (with the wake word just before it, if any)."""

    def __init__(self, number: int, wall: float, records: list[dict[str, Any]]) -> None:
        self.number, self.wall, self.records = number, wall, records

    def summary(self) -> dict[str, Any]:
        turns = summarize(self.records)["turns"]
        return {"number": self.number, "wall": self.wall, **(turns[0] if turns else {})}


class StatusBoard:
    """The session's state, its last turns, the counters of the echo defence, errors and memory."""

    def __init__(self, turns: int = 20, pids: Callable[[], dict[str, int | None]] | None = None,
                 front_end: str = "run") -> None:
        self.front_end = front_end
        self.started = time.time()
        self.pids = pids or (lambda: {"main": os.getpid()})
        self.state, self.state_since = "idle", time.time()
        self.turns: deque[Turn] = deque(maxlen=turns)
        self.turn_count = 0
        self.counters: Counter[str] = Counter()
        self.canceller: dict[str, Any] | None = None
        self.errors: deque[dict[str, Any]] = deque(maxlen=ERRORS)
        self.memory: deque[dict[str, Any]] = deque(maxlen=MEMORY_SAMPLES)
        self.models: list[dict[str, Any]] = []
        self.extra: dict[str, Callable[[], Any]] = {}  # front-end sections (the satellite's timers, …)
        self.watchers: set[asyncio.Queue[dict[str, Any]]] = set()
        self._wake: dict[str, Any] | None = None

    # -- the bus ---------------------------------------------------------------------------------
    def __call__(self, t: float, event: Event) -> None:
        record = to_record(t, event)
        if isinstance(event, StateChanged):
            self.state, self.state_since = event.to, time.time()
            self._tell({"kind": "state", "state": event.to, "trigger": event.trigger, "since": self.state_since})
        if isinstance(event, WakeDetected):
            self._wake = record
        elif isinstance(event, SpeechEnded):
            self.turn_count += 1
            head = [self._wake] if self._wake is not None else []
            self.turns.append(Turn(self.turn_count, time.time(), [*head, record]))
            self._wake = None
        elif self.turns:
            self.turns[-1].records.append(record)
        self._count(event)
        if isinstance(event, StateChanged) and event.to == "idle" and self.turns:
            self._tell({"kind": "turn", "turn": self.turns[-1].summary()})

    def _count(self, event: Event) -> None:
        if isinstance(event, EchoIgnored):
            self.counters[f"echo_{event.layer}"] += 1
        elif isinstance(event, EchoCancelled):
            self.canceller = {"chunks": event.chunks, "echo_chunks": event.echo_chunks,
                              "acted_chunks": event.acted_chunks, "erle_db": event.erle_db,
                              "double_talk_windows": event.double_talk_windows, "linear_learnt": event.linear_learnt,
                              "room_recalled": event.room_recalled}
        elif isinstance(event, BargeIn):
            self.counters[f"barge_in_{event.reason}"] += 1
        elif isinstance(event, NoiseRejected):
            self.counters["noise_rejected"] += 1
        elif isinstance(event, WorkerRestarted):
            self.counters["worker_restarts"] += 1
        elif isinstance(event, Error):
            self.error(event.stage, event.message)

    def error(self, stage: str, message: str) -> None:
        entry = {"wall": time.time(), "stage": stage, "message": message}
        self.errors.append(entry)
        self._tell({"kind": "error", **entry})

    # -- memory ----------------------------------------------------------------------------------
    def sample(self) -> dict[str, Any]:
        """Every process's resident memory now (MB), kept and told to the watchers."""
        rss = {name: p["rss_mb"] for name, pid in self.pids().items()
               if pid is not None and (p := health.process(pid)) is not None}
        entry = {"wall": time.time(), "rss_mb": rss}
        self.memory.append(entry)
        self._tell({"kind": "memory", **entry})
        return entry

    async def sample_every(self, seconds: float) -> None:
        while True:
            self.sample()
            await asyncio.sleep(seconds)

    # -- what the page reads ---------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        return {"front_end": self.front_end, "started": self.started, "now": time.time(), "pid": os.getpid(),
                "state": self.state, "state_since": self.state_since, "turns_total": self.turn_count,
                "echo_defence": {**dict(self.counters), "canceller": self.canceller},
                "errors": list(self.errors), "memory": list(self.memory), "models": self.models,
                **{name: read() for name, read in self.extra.items()}}

    def turn_list(self) -> list[dict[str, Any]]:
        return [t.summary() for t in self.turns]

    def turn(self, number: int) -> Turn | None:
        return next((t for t in self.turns if t.number == number), None)

    # -- watchers --------------------------------------------------------------------------------
    def watch(self) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(WATCHER_BACKLOG)
        self.watchers.add(queue)
        return queue

    def unwatch(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self.watchers.discard(queue)

    def _tell(self, change: dict[str, Any]) -> None:
        for queue in self.watchers:
            if queue.full():
                queue.get_nowait()  # a watcher that does not keep up loses the oldest change
            queue.put_nowait(change)
