"""Session time, counted from audio samples.

The microphone is the master clock: every captured chunk advances it by its sample count, so a
replayed session has exactly the same timeline on every run. In real time (a live microphone or
``replay --realtime``) ``now()`` also counts the wall time since the newest chunk, capped at one
chunk, so that latencies measured inside a chunk are not rounded down to the chunk boundary.
"""

from __future__ import annotations

import time


class SampleClock:
    """Seconds of session time = samples captured / sample rate (+ sub-chunk wall time if real time)."""

    def __init__(self, sample_rate: int, *, realtime: bool = False) -> None:
        self.sample_rate = sample_rate
        self.realtime = realtime
        self._samples = 0
        self._last_chunk = 0
        self._last_wall = time.perf_counter()

    @property
    def samples(self) -> int:
        """Samples captured so far."""
        return self._samples

    def advance(self, n: int) -> None:
        """Called by the audio source for every captured chunk of ``n`` samples."""
        self._samples += n
        self._last_chunk = n
        self._last_wall = time.perf_counter()

    def now(self) -> float:
        t = self._samples / self.sample_rate
        if self.realtime:
            t += min(time.perf_counter() - self._last_wall, self._last_chunk / self.sample_rate)
        return t


class WallClock:
    """Seconds since it was made, by the wall: the clock of a job with no microphone to count."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.start
