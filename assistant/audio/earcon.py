"""The wake earcon: a short two-note chime, generated (no sound file to ship or lose)."""

from __future__ import annotations

import numpy as np

from assistant.audio.protocols import Samples

DURATION_MS = 80


def chime(sample_rate: int, duration_ms: int = DURATION_MS, level: float = 0.25) -> Samples:
    """A rising fifth (880 Hz then 1320 Hz), each note with a raised-cosine envelope, no clicks."""
    n = sample_rate * duration_ms // 1000
    half = n // 2
    out = np.zeros(n, np.float32)
    for i, freq in enumerate((880.0, 1320.0)):
        t = np.arange(half) / sample_rate
        envelope = np.sin(np.pi * np.arange(half) / half) ** 2
        out[i * half:(i + 1) * half] = level * envelope * np.sin(2 * np.pi * freq * t)
    return out
