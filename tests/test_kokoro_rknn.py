"""Kokoro with its decoder windows on the NPU, against the stand-in ``rknnlite`` (tests/stand_ins).

The stand-in's window model computes with onnxruntime on the real fixed-shape window graph that
``assistant npu build`` converts, so the RKNNLite calls (shapes, core, thread, order, stopping) are
checked on real Mandarin audio: the result is compared with the CPU backend's rendering of the
same voiced frames.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from assistant.audio.metrics import log_mel_distance
from models import kokoro_graph as kg
from models import kokoro_split as ks
from models import kokoro_window as kw
from models.kokoro_rknn_tts import KokoroRknnTts
from models.kokoro_tts import SILENT, KokoroTts
from models.npu import NpuScheduler
from models.protocols import ModelError
from tests.conftest import KokoroFiles
from tests.stand_ins import rknnlite as stand_in_package
from tests.stand_ins.rknnlite import api as stand_in

WINDOW = "kokoro-decoder-window-rk3576-fp16.rknn"
TEXT = "今天天气不错，我们去公园散步吧。"
WINDOWED_MAX_DB = 3.5  # as on onnxruntime (tests/test_kokoro_window.py): the windows' own normalisation


@pytest.fixture(scope="module")
def window_session(kokoro_files: KokoroFiles):
    import onnxruntime as ort

    return ort.InferenceSession(kg.cut(kokoro_files.model).window, providers=["CPUExecutionProvider"])


@pytest.fixture
def rknn(monkeypatch: pytest.MonkeyPatch, window_session) -> Iterator[stand_in.Script]:
    monkeypatch.setitem(sys.modules, "rknnlite", stand_in_package)
    monkeypatch.setitem(sys.modules, "rknnlite.api", stand_in)
    stand_in.SCRIPT.reset()
    names = [i.name for i in window_session.get_inputs()]
    shapes = [kg.WindowShapes(kg.WINDOW_FRAMES).inputs[n] for n in names]

    def run(arrays: list[np.ndarray]) -> list[np.ndarray]:
        return window_session.run([kg.POST], dict(zip(names, arrays, strict=True)))

    stand_in.SCRIPT.models[WINDOW] = stand_in.Model(shapes, run)
    yield stand_in.SCRIPT
    stand_in.SCRIPT.reset()


def window_file(folder: Path, frames: int = kg.WINDOW_FRAMES) -> Path:
    shapes = kg.WindowShapes(frames, limit=0)
    return stand_in.write_rknn(folder / WINDOW, inputs=list(shapes.inputs.values()),
                               outputs=[(1, 2 * kg.BINS, shapes.columns)])


@pytest.fixture
def tts(rknn: stand_in.Script, kokoro_files: KokoroFiles, tmp_path: Path) -> Iterator[KokoroRknnTts]:
    t = KokoroRknnTts(kokoro_files.model, kokoro_files.vocab, kokoro_files.voice, window_file(tmp_path),
                      npu=NpuScheduler())
    t.load()
    yield t
    t.close()


async def collect(tts: KokoroTts, text: str) -> list[np.ndarray]:
    return [p async for p in tts.synthesize(text)]


async def test_the_npu_windows_render_what_the_cpu_backend_does(tts: KokoroRknnTts, rknn: stand_in.Script,
                                                                kokoro_files: KokoroFiles) -> None:
    pieces = await collect(tts, TEXT)
    cpu = KokoroTts(kokoro_files.model, kokoro_files.vocab, kokoro_files.voice, first_frames=0)
    cpu.load()
    try:
        reference = np.concatenate(await collect(cpu, TEXT))
    finally:
        cpu.close()
    audio = np.concatenate(pieces)
    assert audio.size == reference.size  # the same voiced frames, the lead frames not played
    assert log_mel_distance(audio, reference) < WINDOWED_MAX_DB
    calls = rknn.of(WINDOW, "inference")
    assert len(pieces) >= len(calls) - 1 >= 1  # streamed window by window (the first may be all lead)
    expected = [tuple(s) for s in kg.WindowShapes(kg.WINDOW_FRAMES).inputs.values()]
    assert all([tuple(a.shape) for a in c.inputs or []] == expected for c in calls)
    assert {c.thread.split("_")[0] for c in calls} == {"npu0"} and {c.core_mask for c in calls} == {1}


async def test_stop_ends_the_stream_before_the_next_window(tts: KokoroRknnTts, rknn: stand_in.Script) -> None:
    long = TEXT * 3
    stream = tts.synthesize(long)
    first = await anext(stream)
    assert first.size > 0
    tts.stop()
    rest = [p async for p in stream]
    assert rest == []
    first_piece = tts.pieces(long)[0]
    needed = len(kw.windows(kw.Plan(), ks.span(tts.front(first_piece), first_piece, SILENT).frames))
    assert len(rknn.of(WINDOW, "inference")) <= 2 < needed


def test_a_window_of_other_shapes_is_refused(rknn: stand_in.Script, kokoro_files: KokoroFiles,
                                            tmp_path: Path) -> None:
    t = KokoroRknnTts(kokoro_files.model, kokoro_files.vocab, kokoro_files.voice, window_file(tmp_path, 32),
                      npu=NpuScheduler())
    with pytest.raises(ModelError, match="not a 64-frame Kokoro decoder window"):
        t.load()


def test_a_missing_runtime_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, kokoro_files: KokoroFiles,
                                           tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "rknnlite.api", None)
    t = KokoroRknnTts(kokoro_files.model, kokoro_files.vocab, kokoro_files.voice, window_file(tmp_path),
                      npu=NpuScheduler())
    with pytest.raises(ModelError, match="rknn-toolkit-lite2 is not installed"):
        t.load()
    t.close()
