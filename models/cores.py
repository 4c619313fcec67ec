"""Two cores, shared in turns: the first sound of a reply must not wait behind the LLM's next tokens.

On a 2-core CPU the LLM and the TTS each run two threads, and side by side both slow down (Kokoro's
first chunk took 0.30 s alone and 0.59 s beside the LLM). The LLM is far ahead of speech by the
time the first chunk is being rendered, so it waits: ``hold()`` is taken while the first audio is
made, and a backend that should give way calls ``wait()`` between its steps (between tokens).
With the models in a worker process, the gate is built on a process-shared event: the pipeline
holds it in the main process, the LLM waits on it in the worker.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Flag(Protocol):
    """What ``threading.Event`` and ``multiprocessing.Event`` have in common."""

    def set(self) -> None: ...

    def clear(self) -> None: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class CoreGate:
    """A hold that other work waits for between its steps, never longer than ``max_hold_s``."""

    def __init__(self, max_hold_s: float = 1.0, free: Flag | None = None) -> None:
        self.max_hold_s = max_hold_s
        self._free = free if free is not None else threading.Event()  # a process-shared one across processes
        self._free.set()

    @property
    def flag(self) -> Flag:
        """The event the gate is built on (shared with a worker process, if it is a process-shared one)."""
        return self._free

    @contextmanager
    def hold(self) -> Iterator[None]:
        self._free.clear()
        try:
            yield
        finally:
            self._free.set()

    def wait(self) -> None:
        """Block (on a worker thread) while the cores are held; bounded, so a lost hold stalls nothing."""
        self._free.wait(self.max_hold_s)
