"""The inference worker seen from the main process: started, called, watched and restarted.

``InferenceProcess`` spawns ``assistant.worker.child`` (spawned, never forked: nothing loaded here
is shared) and waits until it has loaded its models. Calls go out over one pipe; a reading thread
hands each answer to its call. If the worker dies (the pipe ends) or a call gets no answer for
``call_timeout_s`` (the worker is then killed), every call in flight fails with ``WorkerLost``, the
session is told (``worker_lost``), and a new worker is started after a back-off that doubles on
each failure in a row (``worker_restarted`` once it answers). While there is none, a call waits for
the new one up to ``restart_wait_s`` (a request spoken during a restart is answered when the worker
is back, not dropped), then fails; in lockstep replay, where compute takes no session time, it waits
for the new one whatever that takes.

Barge-in stays prompt across the boundary: ``stop(kind)`` is read and run by the worker at once,
and a cancelled call tells the worker to cancel it, which stops the backend in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import structlog

from assistant.config import Config
from assistant.events import Event, WorkerRestarted, WorkerStarted
from assistant.events import WorkerLost as LostEvent
from assistant.worker.messages import (
    Answer,
    Call,
    Cancel,
    Done,
    Exit,
    Failed,
    FromWorker,
    Item,
    Kind,
    LoadFailed,
    Lost,
    Next,
    Ready,
    Stop,
    ToWorker,
    unknown,
)
from models.cores import CoreGate
from models.protocols import APOLOGY, ModelError, Samples, WorkerLost
from models.worker import LOCKSTEP

log = structlog.get_logger("worker")

SPAWN = multiprocessing.get_context("spawn")
HEALTHY_S = 60.0  # a worker that lived this long resets the back-off
EXIT_WAIT_S = 5.0
LOAD_TIMEOUT_S = 600.0  # the largest models load in well under a minute
RESTART_POLL_S = 0.05  # how often a call waiting for a restarting worker looks again


@dataclass
class _Call:
    """One call in flight: its answers arrive on ``answers`` from the reading thread."""

    id: int
    answers: queue.SimpleQueue[Answer] = field(default_factory=queue.SimpleQueue)
    loop: asyncio.AbstractEventLoop | None = None
    wake: asyncio.Event | None = None
    link: _Link | None = None  # the worker it was sent to

    def put(self, msg: Answer) -> None:
        self.answers.put(msg)
        if self.loop is not None and self.wake is not None:
            self.loop.call_soon_threadsafe(self.wake.set)


class _Link:
    """One running worker: its process, the pipe, and a writing thread, so that sending never blocks the
    loop (a hung worker stops reading; a call's audio is bigger than the pipe's buffer)."""

    def __init__(self, proc: Any, conn: Connection) -> None:
        self.proc, self.conn = proc, conn
        self.kill_reason: str | None = None
        self._outbox: queue.SimpleQueue[ToWorker | None] = queue.SimpleQueue()
        threading.Thread(target=self._write, name="worker-calls", daemon=True).start()

    def send(self, msg: ToWorker) -> None:
        self._outbox.put(msg)

    def _write(self) -> None:
        while (msg := self._outbox.get()) is not None:
            try:
                self.conn.send(msg)
            except (OSError, ValueError):  # the worker is gone: its reading thread reports it
                return

    def end(self) -> None:
        self._outbox.put(None)

    def kill(self, reason: str) -> None:
        if self.proc.is_alive():
            self.kill_reason = reason
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGKILL)


class InferenceProcess:
    """The one worker process of a session and its restarts."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        w = cfg.worker
        self.call_timeout_s = w.call_timeout_s
        self.restart_wait_s = w.restart_wait_s
        self.backoff_s, self.backoff_max_s = w.restart_backoff_s, w.restart_backoff_max_s
        self.cores = CoreGate(free=SPAWN.Event()) if cfg.tts.llm_waits != "never" else None
        self.rates: dict[str, int] = {}
        self.apology: Samples = np.zeros(0, np.float32)  # APOLOGY, spoken by the TTS at the worker's start
        self.pid: int | None = None
        self._link: _Link | None = None
        self._calls: dict[int, _Call] = {}
        self._ids = itertools.count(1)
        self._up = threading.Event()  # a worker answers
        self._closing = False
        self._started_at = 0.0
        self._failures = 0
        self._publish: Callable[[Event], None] | None = None

    @property
    def up(self) -> bool:
        """A worker is running and answers calls."""
        return self._up.is_set()

    # -- life cycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker and wait until its models are loaded (idempotent); a failed load raises."""
        if self._up.is_set():
            return
        self._spawn()

    def _spawn(self) -> None:
        parent, child = SPAWN.Pipe()
        from assistant.worker import child as entry

        free = self.cores.flag if self.cores is not None else None
        # The apology is rendered by the first worker only: a restarted one comes up that much sooner.
        apology = "" if self.apology.size else APOLOGY
        proc = SPAWN.Process(target=entry.main, args=(child, self.cfg, free, apology), name="tingshuo-worker",
                             daemon=True)
        proc.start()
        child.close()
        ready = self._loaded(proc, parent)
        self.pid, self.rates = ready.pid, ready.rates
        if ready.apology.size:
            self.apology = ready.apology
        link = self._link = _Link(proc, parent)
        self._started_at = time.monotonic()
        self._up.set()
        threading.Thread(target=self._read, args=(link,), name="worker-answers", daemon=True).start()
        log.info("worker started", pid=self.pid)
        self._emit(WorkerStarted(pid=self.pid))

    def _loaded(self, proc: Any, conn: Connection) -> Ready:
        """The worker's ``Ready``; a failed, ended or stuck load is one ``ModelError``."""
        try:
            if not conn.poll(LOAD_TIMEOUT_S):
                proc.kill()
                raise ModelError(f"worker: the models did not load within {LOAD_TIMEOUT_S:g} s")
            msg: FromWorker = conn.recv()
        except (EOFError, OSError):
            msg = LoadFailed(f"worker: the inference process ended while loading (exit code {proc.exitcode})")
        match msg:
            case Ready():
                return msg
            case LoadFailed(error=error):
                pass  # the worker ends after sending it
            case _:
                error = f"worker: {type(msg).__name__} before the models were loaded"
                proc.kill()
        proc.join(EXIT_WAIT_S)
        conn.close()
        raise ModelError(error)

    def close(self) -> None:
        """End the worker (idempotent): asked to exit, killed if it does not within a few seconds."""
        self._closing = True
        self._up.clear()
        for call in list(self._calls.values()):
            call.put(Lost(call.id, "the worker was closed"))
        link, self._link = self._link, None
        if link is None:
            return
        link.send(Exit())
        link.end()
        link.proc.join(EXIT_WAIT_S)
        if link.proc.is_alive():
            link.proc.kill()
            link.proc.join(EXIT_WAIT_S)
        link.conn.close()

    def attach(self, publish: Callable[[Event], None]) -> None:
        """Report ``worker_*`` events through ``publish`` (called on the running loop's thread)."""
        loop = asyncio.get_running_loop()

        def threadsafe(event: Event) -> None:
            loop.call_soon_threadsafe(publish, event)

        self._publish = threadsafe
        if self.pid is not None and self._up.is_set():
            self._emit(WorkerStarted(pid=self.pid))

    def detach(self) -> None:
        self._publish = None

    def _emit(self, event: Event) -> None:
        if self._publish is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody to tell
                self._publish(event)

    # -- losing and restarting -------------------------------------------------------------------
    def _read(self, link: _Link) -> None:
        """The reading thread of one worker: answers to their calls, until the pipe ends."""
        while True:
            try:
                msg: FromWorker = link.conn.recv()
            except (EOFError, OSError):
                break
            match msg:
                case Item(id=call_id) | Done(id=call_id) | Failed(id=call_id):
                    call = self._calls.get(call_id)
                    if call is not None:  # else the call was given up (cancelled, timed out): dropped
                        call.put(msg)
                case _:  # a second Ready, or a message outside the set: the two sides disagree
                    link.kill(f"the worker sent an unexpected {type(msg).__name__}")
        link.end()
        link.proc.join(EXIT_WAIT_S)
        if self._closing or self._link is not link:
            return
        self._lost(link.kill_reason or f"the worker exited (code {link.proc.exitcode})")

    def _lost(self, reason: str) -> None:
        self._up.clear()
        self._link = None
        down_at = time.monotonic()
        log.error("worker lost", reason=reason, pid=self.pid)
        self._emit(LostEvent(reason=reason))
        for call in list(self._calls.values()):
            call.put(Lost(call.id, reason))
        self._failures = 1 if down_at - self._started_at >= HEALTHY_S else self._failures + 1
        threading.Thread(target=self._restart, args=(reason, down_at), name="worker-restart", daemon=True).start()

    def _restart(self, reason: str, down_at: float) -> None:
        while not self._closing:
            time.sleep(min(self.backoff_max_s, self.backoff_s * 2 ** (self._failures - 1)))
            if self._closing:
                return
            try:
                self._spawn()
            except (ModelError, OSError) as exc:  # a restart that fails is tried again, never given up
                self._failures += 1
                log.error("worker restart failed", error=str(exc))
                continue
            down_s = round(time.monotonic() - down_at, 3)
            log.info("worker restarted", reason=reason, down_s=down_s)
            self._emit(WorkerRestarted(reason=reason, down_s=down_s))
            return

    def kill(self, reason: str) -> None:
        """End a worker that stopped answering; its reading thread reports the loss."""
        link = self._link
        if link is not None:
            link.kill(reason)

    # -- calls -----------------------------------------------------------------------------------
    def send(self, msg: ToWorker) -> None:
        """Send ``msg`` if there is a worker; quietly nothing if there is none (a stop, a prefill)."""
        link = self._link
        if link is not None:
            link.send(msg)

    def stop(self, kind: Kind) -> None:
        self.send(Stop(kind))

    async def _open(self, kind: Kind, method: str, args: tuple[Any, ...]) -> _Call:
        if not self._up.is_set() and not self._closing:
            if LOCKSTEP.get():
                self._up.wait(LOAD_TIMEOUT_S)  # deliberate: in lockstep a restart takes no session time either
            else:
                await self._back_up(f"{kind}.{method}")
        link = self._link
        if link is None or not self._up.is_set():
            raise WorkerLost("the worker is restarting")
        call = _Call(next(self._ids), loop=asyncio.get_running_loop(), wake=asyncio.Event(), link=link)
        self._calls[call.id] = call
        link.send(Call(call.id, kind, method, args))
        return call

    async def _back_up(self, what: str) -> None:
        """Wait (cancellably) for a restarting worker to answer again, up to ``restart_wait_s``."""
        log.info("waiting for the worker to restart", call=what, up_to_s=self.restart_wait_s)
        deadline = time.monotonic() + self.restart_wait_s
        # polled: the flag is a threading.Event the restart thread sets, and a thread blocked on it
        # would hold up the loop's executor at exit
        while not self._up.is_set() and not self._closing and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(RESTART_POLL_S)

    async def _answer(self, call: _Call, what: str) -> Item | Done:
        """The call's next answer; a worker silent for ``call_timeout_s`` is killed as hung."""
        msg = await self._next(call, within=self.call_timeout_s)
        if msg is None:
            reason = f"no answer to {what} in {self.call_timeout_s:g} s"
            if call.link is not None:
                call.link.kill(reason)  # the loss follows the kill
            msg = await self._next(call, within=EXIT_WAIT_S + 1.0) or Lost(call.id, reason)
        match msg:
            case Item() | Done():
                return msg
            case Lost(reason=reason):
                raise WorkerLost(f"{what}: {reason}")
            case Failed(error=error):
                raise ModelError(error)
            case _:
                unknown(msg)

    async def _next(self, call: _Call, *, within: float) -> Answer | None:
        """The next answer within ``within`` seconds, else None."""
        if LOCKSTEP.get():
            try:
                msg = call.answers.get(timeout=within)  # deliberate: compute takes no session time
            except queue.Empty:
                return None
            await asyncio.sleep(0)
            return msg
        assert call.wake is not None
        deadline = time.monotonic() + within
        while True:
            call.wake.clear()
            try:
                return call.answers.get_nowait()
            except queue.Empty:
                pass
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(call.wake.wait(), left)

    def _close(self, call: _Call, finished: bool) -> None:
        self._calls.pop(call.id, None)
        if not finished and call.link is not None:
            call.link.send(Cancel(call.id))

    async def call(self, kind: Kind, method: str, *args: Any) -> Any:
        """One call's result (``ModelError`` if the backend failed, ``WorkerLost`` if the worker did)."""
        call = await self._open(kind, method, args)
        finished = False
        try:
            msg = await self._answer(call, f"{kind}.{method}")
            finished = True
            return msg.value
        finally:
            self._close(call, finished)

    async def stream(self, kind: Kind, method: str, *args: Any) -> AsyncIterator[Any]:
        """A streamed call's items, each fetched when the previous one has been taken."""
        call = await self._open(kind, method, args)
        finished = False
        try:
            while True:
                match await self._answer(call, f"{kind}.{method}"):
                    case Done():
                        finished = True
                        return
                    case Item(value=value):
                        yield value
                        assert call.link is not None
                        call.link.send(Next(call.id))
        finally:
            self._close(call, finished)

    def notify(self, kind: Kind, method: str, *args: Any) -> None:
        """A call whose result nobody waits for (a prefill); nothing if there is no worker."""
        if self._up.is_set():
            self.send(Call(next(self._ids), kind, method, args))
