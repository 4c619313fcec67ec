"""Silero VAD run by sherpa-onnx, on the model file from PyPI's ``silero-vad`` wheel.

sherpa-onnx's ``VadModel.is_speech`` scores one window: 512 new samples plus the 64 before them
(silero v5's context at 16 kHz). With its own min-speech and min-silence set to zero it returns a
plain per-window decision, and all timing (onsets, endpoints, barge-in) is ours, in sample counts.

Its Python binding answers only yes or no at the threshold it was built with, so this backend's
"probabilities" are 0 or 1: ``barge_in.threshold`` cannot be set apart from ``vad.threshold``.
The default backend (``silero_vad``) gives true probabilities.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from models import sherpa_build
from models.assets import Assets
from models.protocols import ModelError, Samples
from models.worker import Worker

CONTEXT_SAMPLES = 64  # silero v5 at 16 kHz


def silero_model_path(assets: Assets) -> Path:
    """silero_vad.onnx from the model folders, else the model store (from the silero-vad wheel), verified."""
    return assets.path("silero-vad", "silero_vad.onnx")


class SherpaSileroVad:
    """The ``Vad`` protocol on sherpa-onnx's silero model."""

    sample_rate = 16000

    def __init__(self, model_path: Path, threshold: float = 0.5, provider: str = "cpu") -> None:
        if "half" in model_path.name:
            # sherpa-onnx ends the process on the fp16 export instead of raising.
            raise ModelError(f"vad: {model_path.name} is not supported; use silero_vad.onnx")
        self.model_path = model_path
        self.threshold = threshold
        # "rknn" only with an RKNN build of sherpa-onnx and a .rknn model file; otherwise the CPU
        self.provider = sherpa_build.usable(provider, "vad", [model_path])
        self.window_samples = 512
        self._model: Any = None
        self._worker = Worker("vad")
        self._buffer = np.zeros(CONTEXT_SAMPLES, np.float32)

    def load(self) -> None:
        self._model = self._worker.call(self._create)

    def _create(self) -> Any:
        import sherpa_onnx

        config = sherpa_onnx.VadModelConfig()
        config.silero_vad.model = str(self.model_path)
        config.silero_vad.threshold = self.threshold
        config.silero_vad.min_speech_duration = 0.0
        config.silero_vad.min_silence_duration = 0.0
        config.sample_rate = self.sample_rate
        config.num_threads = 1
        config.provider = self.provider
        model = sherpa_onnx.VadModel.create(config)
        if model is None or model.window_size() != self.window_samples + CONTEXT_SAMPLES:
            raise ModelError(f"vad: {self.model_path} did not load as silero v5")
        return model

    def close(self) -> None:
        self._model = None
        self._worker.close()

    def reset(self) -> None:
        self._buffer = np.zeros(CONTEXT_SAMPLES, np.float32)
        if self._model is not None:
            self._worker.call(self._model.reset)

    async def accept(self, samples: Samples) -> list[float]:
        return await self._worker.run(self._flags, samples)

    def _flags(self, samples: Samples) -> list[float]:
        if self._model is None:
            raise ModelError("vad: used before load()")
        buf = np.concatenate([self._buffer, samples.astype(np.float32, copy=False)])
        flags, start, span = [], 0, self.window_samples + CONTEXT_SAMPLES
        while start + span <= len(buf):
            flags.append(1.0 if self._model.is_speech(buf[start:start + span]) else 0.0)
            start += self.window_samples
        self._buffer = buf[start:]
        return flags
