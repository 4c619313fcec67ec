"""Sample-rate conversion: one function, so every module that needs it depends on a leaf."""

from __future__ import annotations

import numpy as np
import soxr

from assistant.audio.protocols import Samples


def resample(audio: Samples, src_rate: int, dst_rate: int) -> Samples:
    """High-quality resampling (libsoxr); a no-op when the rates match."""
    if src_rate == dst_rate or audio.size == 0:
        return audio.astype(np.float32, copy=False)
    return np.asarray(soxr.resample(audio, src_rate, dst_rate), dtype=np.float32)
