"""Silero VAD v5 run directly by onnxruntime: a speech probability for every window.

The states need probabilities, not decisions: endpointing counts windows above ``vad.threshold``
and barge-in those above its own, higher ``barge_in.threshold``. (sherpa-onnx's Python binding
only answers yes or no at one threshold; see ``sherpa_vad``.) The model file is the one shipped
in PyPI's ``silero-vad`` wheel (taken out of it by ``assistant models fetch``), checked against its
sha256 before loading.

Each call scores 512 new samples plus the 64 before them, carrying the recurrent state from
window to window, exactly as silero's own runtime does at 16 kHz.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from models.protocols import ModelError, Samples
from models.worker import Worker

WINDOW = 512
CONTEXT = 64
STATE_SHAPE = (2, 1, 128)


class SileroVad:
    """The ``Vad`` protocol: one speech probability per 32 ms window."""

    sample_rate = 16000
    window_samples = WINDOW

    def __init__(self, model_path: Path) -> None:
        if "half" in model_path.name:
            raise ModelError(f"vad: {model_path.name} is not supported; use silero_vad.onnx")
        self.model_path = model_path
        self._worker = Worker("vad")
        self._session: Any = None
        self._sr = np.array(self.sample_rate, np.int64)
        self.reset()

    def load(self) -> None:
        self._session = self._worker.call(self._create)

    def _create(self) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        try:
            session = ort.InferenceSession(str(self.model_path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise ModelError(f"vad: cannot load {self.model_path}: {exc}") from None
        names = {i.name for i in session.get_inputs()}
        if names != {"input", "state", "sr"}:
            raise ModelError(f"vad: {self.model_path} is not a silero v5 model (inputs {sorted(names)})")
        return session

    def close(self) -> None:
        self._session = None
        self._worker.close()

    def reset(self) -> None:
        self._state = np.zeros(STATE_SHAPE, np.float32)
        self._buffer = np.zeros(CONTEXT, np.float32)

    async def accept(self, samples: Samples) -> list[float]:
        return await self._worker.run(self._probabilities, samples)

    def _probabilities(self, samples: Samples) -> list[float]:
        if self._session is None:
            raise ModelError("vad: used before load()")
        buf = np.concatenate([self._buffer, samples.astype(np.float32, copy=False)])
        probs, start = [], 0
        while start + CONTEXT + WINDOW <= len(buf):
            frame = buf[start:start + CONTEXT + WINDOW][np.newaxis, :]
            out, self._state = self._session.run(None, {"input": frame, "state": self._state, "sr": self._sr})
            probs.append(float(out[0, 0]))
            start += WINDOW
        self._buffer = buf[start:]
        return probs
