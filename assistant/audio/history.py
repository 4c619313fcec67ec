"""The last few seconds of microphone audio, addressed by absolute sample index.

States hand each other sample positions (where speech began, where it ended), and the utterance is
cut from here, so a request is captured from its onset even when the decision came later.
"""

from __future__ import annotations

import numpy as np

from assistant.audio.protocols import Samples


class AudioHistory:
    """A ring buffer of ``capacity`` samples; ``end`` is the absolute index after the newest one."""

    def __init__(self, capacity_samples: int) -> None:
        self.capacity = capacity_samples
        self._ring = np.zeros(capacity_samples, np.float32)
        self.end = 0

    def append(self, chunk: Samples) -> None:
        chunk = chunk[-self.capacity:]
        at = self.end % self.capacity
        first = min(len(chunk), self.capacity - at)
        self._ring[at:at + first] = chunk[:first]
        self._ring[:len(chunk) - first] = chunk[first:]
        self.end += len(chunk)

    @property
    def start(self) -> int:
        """The oldest absolute index still held."""
        return max(0, self.end - self.capacity)

    def slice(self, start: int, stop: int) -> Samples:
        """Samples ``[start, stop)``, clipped to what is still held."""
        start, stop = max(start, self.start), min(stop, self.end)
        if stop <= start:
            return np.zeros(0, np.float32)
        idx = np.arange(start, stop) % self.capacity
        return self._ring[idx]
