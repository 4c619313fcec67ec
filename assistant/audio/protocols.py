"""The two audio protocols every part of the assistant talks to.

Audio inside the assistant is float32 mono in [-1, 1]. Sources deliver fixed-size chunks at
16 kHz and advance the session clock by each chunk's sample count; sinks accept audio at their own
rate and report how far playback has got, in samples.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

import numpy as np
import numpy.typing as npt

Samples = npt.NDArray[np.float32]


class AudioDeviceError(RuntimeError):
    """A sound device that cannot be opened or used; the message is meant for the user."""


class AudioSource(Protocol):
    sample_rate: int
    chunk_samples: int

    def chunks(self) -> AsyncIterator[Samples]:
        """Chunks of exactly ``chunk_samples`` samples, until the source ends or is closed."""
        ...

    def close(self) -> None: ...


class Played(Protocol):
    """What reached the speaker, handed back to the capture side (``assistant.audio.reference``)."""

    def push(self, samples: Samples) -> None:
        """Audio at the sink's rate, at the moment it goes out to the device."""
        ...

    def take(self, n: int) -> Samples:
        """The next ``n`` played samples at the capture rate, padded with silence."""
        ...

    def clear(self) -> None: ...


class AudioSink(Protocol):
    sample_rate: int

    @property
    def reference(self) -> Played:
        """What reached the speaker, for the echo canceller."""
        ...

    async def write(self, samples: Samples) -> None:
        """Queue audio for playback; may wait while the device buffer is full."""
        ...

    def clear(self) -> None:
        """Discard everything queued, in software and in the device buffer, at once."""
        ...

    async def wait_playout(self) -> None:
        """Return when everything written so far has been played (or cleared)."""
        ...

    @property
    def position(self) -> int:
        """Samples actually played so far (written minus still queued)."""
        ...

    def close(self) -> None: ...
