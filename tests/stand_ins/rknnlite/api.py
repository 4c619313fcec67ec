"""Stand-in ``rknnlite.api``: ``RKNNLite`` with the real API surface, scripted by tests.

The surface mirrors rknn-toolkit-lite2 2.5.0: the ``NPU_CORE_*`` constants, ``load_rknn(path)`` and
``init_runtime(core_mask=…)`` returning 0 or -1, ``inference(inputs=[…])`` returning a list of
arrays or None (also for inputs of the wrong shape, as the runtime does), ``release()``; no shape
query (the real class has none either).

``SCRIPT`` says how each model file (by file name) behaves and records every call with its thread.
``matcha`` and ``vocos`` build behaviours with the real build's shapes: matcha-s64 takes x [1, 64]
(+ x_length, noise_scale, length_scale) and gives a mel [1, 80, 599] whose voiced part lasts
``rate`` frames a token, then sits at a silence floor, then ends in a run of repeated columns (the
masked frames that the vocoder turns into the noise tail); vocos-16khz-600 takes [1, 80, 600] and
gives the STFT, as magnitude + phase parts of [1, 513, 600], of a known signal — a tone wherever the
mel is voiced — so a test can check the audio after the ISTFT. ``write_rknn`` writes a file that
declares its tensors the way .rknn files do (header, model bytes, JSON length, JSON).
"""

from __future__ import annotations

import json
import os
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

Arrays = list[np.ndarray]
Behaviour = Callable[[Arrays], Arrays]

FLOOR = -11.5  # log-mel of silence
SPEECH = -4.0
TAIL = -5.0  # level of the repeated columns at the window's end
PAUSE_FRAMES = 10  # a comma's pause in the stand-in mel: shorter than the run the cut takes for the end
COMMA = 2  # the comma's id in the tests' token tables
TONE_HZ, TONE_AMPLITUDE = 440.0, 0.3


@dataclass
class Call:
    method: str
    model: str  # file name, "" before load_rknn
    thread: str
    core_mask: int | None = None
    inputs: Arrays | None = None


@dataclass
class Model:
    """One model file: the input shapes it accepts and what it computes."""

    input_shapes: list[tuple[int, ...]]
    run: Behaviour


@dataclass
class Script:
    models: dict[str, Model] = field(default_factory=dict)
    fail: dict[str, str] = field(default_factory=dict)  # file name → "load_rknn" | "init_runtime" | "inference"
    fail_on_inference: int = 1  # with fail "inference": the n-th inference (1-based) returns None
    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, call: Call) -> None:
        with self.lock:
            self.calls.append(call)

    def of(self, model: str, method: str) -> list[Call]:
        return [c for c in self.calls if c.model == model and c.method == method]

    def reset(self) -> None:
        self.models.clear()
        self.fail.clear()
        self.fail_on_inference = 1
        self.calls.clear()


SCRIPT = Script()


class RKNNLite:
    NPU_CORE_AUTO = 0
    NPU_CORE_0 = 1
    NPU_CORE_1 = 2
    NPU_CORE_2 = 4
    NPU_CORE_0_1 = 3
    NPU_CORE_0_1_2 = 7
    NPU_CORE_ALL = 0xFFFF

    def __init__(self, verbose: bool = False, verbose_file: str | None = None) -> None:
        self._name = ""
        self._loaded = False
        self._runtime = False
        self._inferences = 0
        SCRIPT.record(Call("__init__", "", threading.current_thread().name))

    def load_rknn(self, path: str, key_path: str | None = None) -> int:
        self._name = os.path.basename(path)
        SCRIPT.record(Call("load_rknn", self._name, threading.current_thread().name))
        if not os.path.exists(path) or SCRIPT.fail.get(self._name) == "load_rknn":
            return -1
        self._loaded = True
        return 0

    def init_runtime(self, target: str | None = None, device_id: str | None = None, async_mode: bool = False,
                     core_mask: int = NPU_CORE_AUTO) -> int:
        SCRIPT.record(Call("init_runtime", self._name, threading.current_thread().name, core_mask=core_mask))
        if not self._loaded or SCRIPT.fail.get(self._name) == "init_runtime" or self._name not in SCRIPT.models:
            return -1
        self._runtime = True
        self._core_mask = core_mask
        return 0

    def inference(self, inputs: Sequence[np.ndarray], data_type: Any = None, data_format: Any = None,
                  inputs_pass_through: Any = None, get_frame_id: bool = False,
                  reuse_outputs: bool = False) -> Arrays | None:
        arrays = [np.array(x, copy=True) for x in inputs]
        SCRIPT.record(Call("inference", self._name, threading.current_thread().name,
                           core_mask=getattr(self, "_core_mask", None), inputs=arrays))
        if not self._runtime:
            return None
        self._inferences += 1
        if SCRIPT.fail.get(self._name) == "inference" and self._inferences >= SCRIPT.fail_on_inference:
            return None
        model = SCRIPT.models[self._name]
        if [tuple(a.shape) for a in arrays] != model.input_shapes[:len(arrays)]:
            return None  # the runtime refuses inputs of another shape
        return model.run(arrays)

    def release(self) -> None:
        SCRIPT.record(Call("release", self._name, threading.current_thread().name))
        self._runtime = False


def matcha(*, x_len: int = 64, frames: int = 599, rate: float = 5.0, tail: int = 40, inputs: int = 4) -> Model:
    """Matcha: each token of x[:x_length] lasts ``rate`` × length_scale voiced frames (a comma:
    ``PAUSE_FRAMES`` at the floor); the rest of the window is floor, and the last ``tail`` frames
    repeat one loud column."""
    def run(arrays: Arrays) -> Arrays:
        x = arrays[0][0]
        n = int(arrays[1][0]) if len(arrays) > 1 else len(x)
        scale = float(arrays[3][0]) if len(arrays) > 3 else 1.0
        mel = np.full((80, frames), FLOOR, np.float32)
        t = 0.0
        for token in x[:n].tolist():
            start = round(t)
            t += PAUSE_FRAMES if token == COMMA else rate * scale
            for frame in range(start, min(round(t), frames - tail)) if token != COMMA else ():
                mel[:, frame] = voiced_column(token, frame)
        mel[:, frames - tail:] = TAIL + np.linspace(-0.5, 0.5, 80, dtype=np.float32)[:, None]
        return [mel[None]]

    shapes = [(1, x_len), (1,), (1,), (1,)][:inputs]
    return Model(shapes, run)


def spoken_frames(ids: Sequence[int], rate: float = 5.0, scale: float = 1.0) -> int:
    """How many frames ``matcha`` makes of ``ids`` (its voiced part, pauses included)."""
    return round(sum(PAUSE_FRAMES if i == COMMA else rate * scale for i in ids))


def voiced_column(token: int, frame: int) -> np.ndarray:
    """A speech-like mel column that differs from token to token and from frame to frame."""
    bins = np.arange(80, dtype=np.float32)
    return (SPEECH + 0.8 * np.sin(bins / 7.0 + token) + 0.3 * np.sin(bins / 5.0 + 0.7 * frame)).astype(np.float32)


def voiced_frames(mel: np.ndarray) -> np.ndarray:
    """Which columns of a (80, frames) mel the stand-ins call voiced: above halfway to the floor."""
    return np.asarray(mel.mean(axis=0) > (FLOOR + SPEECH) / 2)


def known_signal(mel: np.ndarray, hop: int, rate: int = 16000) -> np.ndarray:
    """The audio ``vocos`` encodes for a (80, frames) mel: a tone over the voiced frames, else silence."""
    frames = mel.shape[1]
    envelope = np.repeat(voiced_frames(mel).astype(np.float32), hop)[:hop * (frames - 1)]
    t = np.arange(len(envelope)) / rate
    return (TONE_AMPLITUDE * np.sin(2 * np.pi * TONE_HZ * t) * envelope).astype(np.float32)


def centred_stft(signal: np.ndarray, n_fft: int, hop: int) -> np.ndarray:
    """A plain per-frame centred STFT (periodic Hann, reflect padding), independent of models/istft.py."""
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)
    padded = np.pad(signal.astype(np.float64), n_fft // 2, mode="reflect")
    columns = [np.fft.rfft(padded[i * hop:i * hop + n_fft] * window) for i in range(1 + len(signal) // hop)]
    return np.stack(columns, axis=1)


def vocos(*, frames: int = 600, n_fft: int = 1024, hop: int = 256, parts: str = "phase") -> Model:
    """Vocos: the STFT of ``known_signal(mel)`` as parts (magnitude, phase) | (magnitude, cos, sin) |
    (log-magnitude, phase)."""
    def run(arrays: Arrays) -> Arrays:
        spectrum = centred_stft(known_signal(arrays[0][0], hop), n_fft, hop)[:, :frames]
        magnitude, phase = np.abs(spectrum), np.angle(spectrum)
        if parts == "cos_sin":
            planes = [magnitude, np.cos(phase), np.sin(phase)]
        elif parts == "log_phase":
            planes = [np.log(np.maximum(magnitude, 1e-7)), phase]
        else:
            planes = [magnitude, phase]
        return [p.astype(np.float32)[None] for p in planes]

    return Model([(1, 80, frames)], run)


def write_rknn(path: Path, inputs: Sequence[tuple[int, ...]] = (), outputs: Sequence[tuple[int, ...]] = (),
               model_bytes: int = 256) -> Path:
    """A file laid out as .rknn files are: ``RKNN``, version, model length, 40 more header bytes,
    the model, then the JSON that declares the tensors (left out when ``inputs`` is empty)."""
    model = bytes(range(256)) * (model_bytes // 256 + 1)
    model = model[:model_bytes]
    header = b"RKNN" + b"\0" * 4 + struct.pack("<Q", 6) + struct.pack("<Q", len(model)) + b"\0" * 40
    body = header + model
    if inputs:
        tensors, graph = [], []
        for side, shapes in (("input", inputs), ("output", outputs)):
            for i, shape in enumerate(shapes):
                tid = len(tensors)
                tensors.append({"tensor_id": tid, "url": f"{side}{i}", "size": list(shape), "dim_num": len(shape),
                                "dtype": {"vx_type": "float16", "qnt_type": "none"}})
                graph.append({"left": side, "left_tensor_id": i, "right": "norm_tensor", "right_tensor_id": tid})
        doc = json.dumps({"norm_tensor": tensors, "graph": graph, "input_num": len(inputs),
                          "output_num": len(outputs), "target_platform": ["rk3576"]}).encode()
        body += struct.pack("<Q", len(doc)) + doc
    path.write_bytes(body)
    return path
