"""What the speaker played, handed back to the capture side as the echo canceller's reference.

A sink pushes audio here at the moment it goes out to the device (at the sink's rate, from any
thread); the audio pump takes exactly one capture chunk of it for every microphone chunk (at the
capture rate). Where nothing was played the reference is silence. The remaining offset (device
buffer plus the room) is left to the canceller's delay estimator.
"""

from __future__ import annotations

import threading

import numpy as np

from assistant.audio.protocols import Samples
from assistant.audio.resample import resample


class PlayedAudio:
    """A bounded FIFO of played samples, resampled to the capture rate."""

    def __init__(self, sink_rate: int, capture_rate: int = 16000, max_s: float = 2.0) -> None:
        self.sink_rate = sink_rate
        self.capture_rate = capture_rate
        self.max_samples = int(max_s * capture_rate)
        self.dropped = 0  # samples discarded because nobody took them in time
        self._buf = np.zeros(0, np.float32)
        self._lock = threading.Lock()

    def push(self, samples: Samples) -> None:
        audio = resample(samples.astype(np.float32, copy=False), self.sink_rate, self.capture_rate)
        with self._lock:
            self._buf = np.concatenate([self._buf, audio])
            excess = len(self._buf) - self.max_samples
            if excess > 0:
                self._buf = self._buf[excess:]
                self.dropped += excess

    def take(self, n: int) -> Samples:
        """The next ``n`` played samples, padded with silence."""
        out = np.zeros(n, np.float32)
        with self._lock:
            part, self._buf = self._buf[:n], self._buf[n:]
        out[:len(part)] = part
        return out

    def clear(self) -> None:
        with self._lock:
            self._buf = np.zeros(0, np.float32)
