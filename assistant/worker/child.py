"""The worker process: loads the ASR, LLM and TTS and answers calls from the main process.

The messages (``assistant.worker.messages``) go over one ``multiprocessing`` connection. From the main
process: ``Call`` starts a call (a streamed one sends its first item at once), ``Next`` asks for a
stream's next item, ``Cancel`` abandons a call (its task is cancelled, so the backend stops in flight),
``Stop`` runs a backend's ``stop()`` at once on the reading thread, whatever is queued, and ``Exit``
closes the models and ends. To the main process: ``Ready`` once loaded (with the apology rendered if
its text was given, else empty) or ``LoadFailed``, then ``Item``, ``Done`` and ``Failed`` for the
calls. A cancelled call sends nothing more. Only the event loop's thread writes to the connection.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import AsyncIterator, Callable
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import structlog

from assistant import logs
from assistant.config import Config, ConfigError
from assistant.worker.messages import (
    Call,
    Cancel,
    Done,
    Exit,
    Failed,
    FromWorker,
    Item,
    Kind,
    LoadFailed,
    Next,
    Ready,
    Stop,
    ToWorker,
    unknown,
)
from models.cores import CoreGate, Flag
from models.protocols import ModelError, Samples, char_logprob, readings, scored_reply

log = structlog.get_logger("worker")

STREAMS: set[tuple[Kind, str]] = {("llm", "scored"), ("tts", "synthesize")}


def main(conn: Connection, cfg: Config, free: Flag | None, apology_text: str) -> None:
    """The worker process's entry point (spawned: it imports and loads everything itself)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the main process ends us
    logs.setup(cfg.log.level, cfg.log.format, logs.file_for(cfg, "worker"))
    if cfg.worker.nice:
        os.nice(cfg.worker.nice)  # the audio process keeps its priority; inference gives way to it
    try:
        models = _load(cfg, CoreGate(free=free) if free is not None else None)
        apology = asyncio.run(_render(models["tts"], apology_text)) if apology_text else np.zeros(0, np.float32)
    except (ModelError, ConfigError, OSError, ValueError) as exc:
        conn.send(LoadFailed(str(exc)))
        return
    rates = {"asr": models["asr"].sample_rate, "tts": models["tts"].sample_rate}
    conn.send(Ready(os.getpid(), rates, apology))
    try:
        asyncio.run(Server(conn, models).serve())
    finally:
        for model in models.values():
            model.close()


def _load(cfg: Config, gate: CoreGate | None) -> dict[str, Any]:
    from assistant import backends

    models = backends.inference(cfg, gate)
    for model in models.values():
        model.load()
    return models


async def _render(tts: Any, text: str) -> Samples:
    """``text`` spoken once now, so it can be played while there is no worker to speak it."""
    pieces = [piece async for piece in tts.synthesize(text)]
    return np.concatenate(pieces).astype(np.float32) if pieces else np.zeros(0, np.float32)


class Server:
    """Runs each call as a task on this process's event loop; a thread reads the connection."""

    def __init__(self, conn: Connection, models: dict[str, Any]) -> None:
        self.conn = conn
        self.models = models
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.pulls: dict[int, asyncio.Event] = {}
        self._ended: asyncio.Event | None = None

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        self._ended = asyncio.Event()
        threading.Thread(target=self._read, args=(loop,), name="worker-read", daemon=True).start()
        await self._ended.wait()
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            try:
                msg: ToWorker = self.conn.recv()
            except (EOFError, OSError):  # the main process is gone: nothing left to answer
                msg = Exit()
            match msg:
                case Stop(kind=kind):
                    self.models[kind].stop()  # at once: a barge-in must not wait behind queued calls
                case _:
                    loop.call_soon_threadsafe(self._dispatch, msg)
                    if isinstance(msg, Exit):
                        return

    def _dispatch(self, msg: Call | Next | Cancel | Exit) -> None:
        """Run one message on the loop; one outside the set raises here (the loop reports it, and the
        worker goes on serving the other calls)."""
        match msg:
            case Call(id=call_id, kind=kind, method=method, args=args):
                task = asyncio.create_task(self._call(call_id, kind, method, args))
                self.tasks[call_id] = task
                task.add_done_callback(lambda _: self._forget(call_id))
            case Next(id=call_id):
                if call_id in self.pulls:  # else the stream has ended or was cancelled meanwhile
                    self.pulls[call_id].set()
            case Cancel(id=call_id):
                if call_id in self.tasks:  # else the call has finished meanwhile: its answer is sent
                    self.tasks[call_id].cancel()
            case Exit():
                if self._ended is not None:
                    self._ended.set()
            case _:
                unknown(msg)

    def _forget(self, call_id: int) -> None:
        self.tasks.pop(call_id, None)
        self.pulls.pop(call_id, None)

    def _send(self, msg: FromWorker) -> None:
        try:
            self.conn.send(msg)
        except (BrokenPipeError, OSError):  # the main process is gone: end quietly
            if self._ended is not None:
                self._ended.set()

    async def _call(self, call_id: int, backend: Kind, method: str, args: tuple[Any, ...]) -> None:
        try:
            if (backend, method) in STREAMS:
                await self._stream(call_id, self._generator(backend, method, args))
            else:
                self._send(Done(call_id, await self._value(backend, method, args)))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # any failure of a model is the caller's to report, as in-process
            self._send(Failed(call_id, str(exc) or type(exc).__name__))

    async def _stream(self, call_id: int, items: AsyncIterator[Any]) -> None:
        pull = self.pulls[call_id] = asyncio.Event()
        try:
            async for item in items:
                self._send(Item(call_id, item))
                await pull.wait()
                pull.clear()
            self._send(Done(call_id, None))
        finally:
            await items.aclose()  # type: ignore[attr-defined]  # the backend's own clean-up runs now

    def _generator(self, backend: Kind, method: str, args: tuple[Any, ...]) -> AsyncIterator[Any]:
        if backend == "llm":
            text, exchanges = args
            self._recall(exchanges)
            return scored_reply(self.models["llm"], text)  # each piece with the model's confidence
        return self.models["tts"].synthesize(*args)  # type: ignore[no-any-return]

    async def _value(self, backend: Kind, method: str, args: tuple[Any, ...]) -> Any:
        model = self.models[backend]
        if (backend, method) == ("asr", "transcribe"):
            return await model.transcribe(*args)
        if (backend, method) == ("asr", "char_logprob"):
            return await char_logprob(model, *args)
        if (backend, method) == ("asr", "readings"):
            return await readings(model, *args)
        if (backend, method) == ("llm", "prefill"):
            text, exchanges = args
            prefill: Callable[[str], None] | None = getattr(model, "prefill", None)
            if prefill is not None:
                self._recall(exchanges)
                prefill(text)
            return None
        if (backend, method) == ("llm", "prefill_history"):
            (exchanges,) = args
            ahead: Callable[[], None] | None = getattr(model, "prefill_history", None)
            if ahead is not None:
                self._recall(exchanges)
                ahead()
            return None
        if (backend, method) == ("tts", "pieces"):
            return await asyncio.to_thread(model.pieces, *args)
        raise ModelError(f"worker: no call {backend}.{method}")

    def _recall(self, exchanges: list[tuple[str, str]]) -> None:
        """The main process keeps the conversation; the LLM here sees it as it is there."""
        history = getattr(self.models["llm"], "history", None)
        if history is not None:
            history.clear()
            for asked, answered in exchanges:
                history.remember(asked, answered)
