"""Acoustic echo cancellation: remove what the speaker played from the microphone (WebRTC AEC3).

The assistant listens while it talks, so the microphone hears its own voice. ``EchoCanceller`` wraps
``pywebrtc_audio.AudioProcessor`` (AEC3, optionally noise suppression and AGC2) behind the
assistant's float32 conventions and any chunk length.

Library facts this module relies on (pywebrtc-audio 0.2.0):

* WebRTC works in 10 ms frames. ``process`` accepts any length but zero-pads a partial last frame,
  which would corrupt a continuous stream, so we buffer and only ever hand it whole frames.
* float32 in [-1, 1] is accepted and returned as is (int16 works too; float64 is refused).
* ``process(near, far)`` feeds the far (render) frame before the near (capture) frame (measured: an
  echo with zero delay is cancelled, one 5 ms early is not); we call it once per frame so that this
  order holds frame by frame.
* The pipeline order is high-pass -> AEC -> NS -> AGC, so gain is applied after suppression, never
  before. AEC3 itself delays its output by 8 ms (128 samples at 16 kHz) and NS by 6 ms more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from pywebrtc_audio import AudioProcessor

from assistant.audio.protocols import Samples

ECHO_FLOOR_DBFS = -50.0
"""A reference chunk louder than this (RMS) counts as the speaker playing something."""
ACTED_DB = 6.0
"""An echo chunk whose energy dropped by at least this much counts as cancelled."""


@dataclass
class EchoStats:
    """Running counters that show whether cancellation is doing anything, for logs and benchmarks."""

    chunks: int = 0
    echo_chunks: int = 0
    acted_chunks: int = 0
    in_energy: float = 0.0
    out_energy: float = 0.0

    @property
    def erle_db(self) -> float | None:
        """Echo return loss enhancement over echo chunks (input over output energy); None before any echo."""
        if self.echo_chunks == 0 or self.in_energy <= 0.0:
            return None
        if self.out_energy <= 0.0:
            return math.inf
        return 10.0 * math.log10(self.in_energy / self.out_energy)


class EchoCanceller:
    """Cleans the microphone of what the speaker played.

    Output lags input by exactly one 10 ms frame (``latency_samples``) from this class's buffering,
    whatever the chunk lengths, plus the library's own fixed delay (see the module docstring). Not
    thread-safe: use one instance per stream.
    """

    def __init__(
        self, sample_rate: int = 16000, *, noise_suppression: bool = False, gain_control: bool = False
    ) -> None:
        if sample_rate % 100:
            raise ValueError(f"sample rate {sample_rate} Hz has no whole number of samples in 10 ms")
        self.sample_rate = sample_rate
        self.frame = sample_rate // 100
        self._apm = AudioProcessor(
            sample_rate,
            echo_cancellation=True,
            noise_suppression=noise_suppression,
            auto_gain_control=gain_control,
        )
        self._floor = 10.0 ** (ECHO_FLOOR_DBFS / 20.0)
        self._acted = 10.0 ** (ACTED_DB / 10.0)
        self.stats = EchoStats()
        self._clear_buffers()

    @property
    def latency_samples(self) -> int:
        """How many samples the output lags the input through this class's buffering (one frame)."""
        return self.frame

    def reset(self) -> None:
        """Forget the echo path, buffered audio and stats, for a new stream."""
        self._apm.reset()
        self.stats = EchoStats()
        self._clear_buffers()

    def _clear_buffers(self) -> None:
        # Rows: mic, reference. Audio received but not yet a whole frame.
        self._pending: npt.NDArray[np.float32] = np.zeros((2, 0), np.float32)
        # Rows: output, mic, reference. Processed audio waiting to be returned; starting it with one
        # frame of silence is what lets every call return as many samples as it was given.
        self._ready: npt.NDArray[np.float32] = np.zeros((3, self.frame), np.float32)

    def process(self, mic: Samples, reference: Samples) -> Samples:
        """Return ``mic`` without the echo of ``reference``, as many samples as given, one frame late.

        ``reference[i]`` is what the speaker played when ``mic[i]`` was captured; the acoustic delay
        on top of that is found by AEC3's delay estimator.
        """
        if mic.ndim != 1 or mic.shape != reference.shape:
            raise ValueError(f"mic {mic.shape} and reference {reference.shape} must be 1-D and the same length")
        n = mic.size
        if n == 0:
            return np.zeros(0, np.float32)
        pending = np.concatenate([self._pending, np.stack([mic, reference]).astype(np.float32)], axis=1)
        whole = pending.shape[1] - pending.shape[1] % self.frame
        if whole:
            done = np.empty((3, whole), np.float32)
            done[1:] = pending[:, :whole]
            for start in range(0, whole, self.frame):
                stop = start + self.frame
                done[0, start:stop] = self._apm.process(done[1, start:stop], done[2, start:stop])
            self._ready = np.concatenate([self._ready, done], axis=1)
        self._pending = pending[:, whole:]
        chunk, self._ready = self._ready[:, :n], self._ready[:, n:]
        self._count(chunk)
        return np.array(chunk[0], dtype=np.float32)

    def _count(self, chunk: npt.NDArray[np.float32]) -> None:
        """Update stats from one returned chunk and the mic and reference samples it came from."""
        self.stats.chunks += 1
        out, mic, ref = chunk.astype(np.float64)
        if math.sqrt(float(np.mean(ref * ref))) <= self._floor:
            return
        e_in, e_out = float(np.dot(mic, mic)), float(np.dot(out, out))
        self.stats.echo_chunks += 1
        self.stats.in_energy += e_in
        self.stats.out_energy += e_out
        if e_in > 0.0 and e_in >= self._acted * e_out:
            self.stats.acted_chunks += 1
