"""Two cores, shared in turns: the first sound of a reply must not wait behind the LLM's next tokens.

On a 2-core CPU the LLM and the TTS each run two threads, and side by side both slow down (Kokoro's
first chunk took 0.30 s alone and 0.59 s beside the LLM). The LLM is far ahead of speech by the
time the first chunk is being rendered, so it waits: ``hold()`` is taken while the first audio is
made, and a backend that should give way calls ``wait()`` between its steps (between tokens).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class CoreGate:
    """A hold that other work waits for between its steps, never longer than ``max_hold_s``."""

    def __init__(self, max_hold_s: float = 1.0) -> None:
        self.max_hold_s = max_hold_s
        self._free = threading.Event()
        self._free.set()

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
