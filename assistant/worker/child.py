"""The worker process: loads the ASR, LLM and TTS and answers calls from the main process.

Messages are tuples over one ``multiprocessing`` connection. From the main process:

- ``("call", id, kind, method, args)``: start a call; a streamed one yields its first item at once;
- ``("next", id)``: the next item of a streamed call;
- ``("cancel", id)``: abandon the call (its task is cancelled, so the backend stops in flight);
- ``("stop", kind)``: the backend's ``stop()``, run at once on the reading thread, whatever is queued;
- ``("exit",)``: close the models and end.

To the main process: ``("ready", pid, rates, apology)`` once loaded (the apology rendered if its text was
given, else empty; or ``("load_failed", message)``),
then ``("item", id, value)``, ``("done", id, value)`` and ``("failed", id, message)``. A cancelled
call sends nothing more. Only the event loop's thread writes to the connection.
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
from models.cores import CoreGate, Flag
from models.protocols import ModelError, char_logprob, readings, scored_reply

log = structlog.get_logger("worker")

STREAMS = {("llm", "scored"), ("tts", "synthesize")}


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
        conn.send(("load_failed", str(exc)))
        return
    rates = {"asr": models["asr"].sample_rate, "tts": models["tts"].sample_rate}
    conn.send(("ready", os.getpid(), rates, apology))
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


async def _render(tts: Any, text: str) -> np.ndarray:
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
                msg = self.conn.recv()
            except (EOFError, OSError):  # the main process is gone: nothing left to answer
                msg = ("exit",)
            if msg[0] == "stop":
                self.models[msg[1]].stop()  # at once: a barge-in must not wait behind queued calls
                continue
            loop.call_soon_threadsafe(self._dispatch, msg)
            if msg[0] == "exit":
                return

    def _dispatch(self, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind == "call":
            _, call_id, backend, method, args = msg
            task = asyncio.create_task(self._call(call_id, backend, method, args))
            self.tasks[call_id] = task
            task.add_done_callback(lambda _: self._forget(call_id))
        elif kind == "next" and msg[1] in self.pulls:
            self.pulls[msg[1]].set()
        elif kind == "cancel" and msg[1] in self.tasks:
            self.tasks[msg[1]].cancel()
        elif kind == "exit" and self._ended is not None:
            self._ended.set()

    def _forget(self, call_id: int) -> None:
        self.tasks.pop(call_id, None)
        self.pulls.pop(call_id, None)

    def _send(self, msg: tuple[Any, ...]) -> None:
        try:
            self.conn.send(msg)
        except (BrokenPipeError, OSError):  # the main process is gone: end quietly
            if self._ended is not None:
                self._ended.set()

    async def _call(self, call_id: int, backend: str, method: str, args: tuple[Any, ...]) -> None:
        try:
            if (backend, method) in STREAMS:
                await self._stream(call_id, self._generator(backend, method, args))
            else:
                self._send(("done", call_id, await self._value(backend, method, args)))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # any failure of a model is the caller's to report, as in-process
            self._send(("failed", call_id, str(exc) or type(exc).__name__))

    async def _stream(self, call_id: int, items: AsyncIterator[Any]) -> None:
        pull = self.pulls[call_id] = asyncio.Event()
        try:
            async for item in items:
                self._send(("item", call_id, item))
                await pull.wait()
                pull.clear()
            self._send(("done", call_id, None))
        finally:
            await items.aclose()  # type: ignore[attr-defined]  # the backend's own clean-up runs now

    def _generator(self, backend: str, method: str, args: tuple[Any, ...]) -> AsyncIterator[Any]:
        if backend == "llm":
            text, exchanges = args
            self._recall(exchanges)
            return scored_reply(self.models["llm"], text)  # each piece with the model's confidence
        return self.models["tts"].synthesize(*args)  # type: ignore[no-any-return]

    async def _value(self, backend: str, method: str, args: tuple[Any, ...]) -> Any:
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
