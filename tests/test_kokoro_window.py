"""Kokoro's decoder in fixed NPU-sized windows, run on x86 through onnxruntime with the exact shapes.

The window geometry and the stitching are checked on known signals; then the real model, real
Mandarin text: the cut's fixed shapes, the windowed rendering against the whole-graph rendering
(log-mel distance over the loud frames), Whisper reading the windowed audio, and the stream yielding
each window's audio before the next window is run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from assistant.audio.metrics import log_mel_distance
from assistant.audio.resample import resample
from assistant.text.cer import cer
from models import kokoro_graph as kg
from models import kokoro_split as ks
from models import kokoro_window as kw
from models.kokoro_tts import KokoroTts
from models.whisper_asr import WhisperAsr
from tests.conftest import KokoroFiles, says

# Measured 2.8 dB on two sentences (windows of 64 frames, 12 of context, 12 of overlap); of that,
# 0.8 dB is the int8 export against its dequantized fp32 weights, the rest is the windows' own time
# normalisation. A window decoded with no context nor cross-fade measured 3.6–3.7 dB.
WINDOWED_MAX_DB = 3.5
SENTENCES = ("今天天气不错，我们去公园散步吧。", "北京是中国的首都，也是一座历史悠久的城市。")


# --- geometry and stitching, on known signals ---

def test_the_windows_play_every_frame_once_and_each_sees_its_context() -> None:
    plan = kw.Plan(64, 12, 12)
    for total in (1, 39, 40, 41, 103, 168, 400):
        ws = kw.windows(plan, total)
        played = [f for w in ws for f in range(w.first, w.last)]
        assert played == list(range(total))
        for w in ws[1:]:
            assert w.first - w.start == plan.context  # left context from the window before
            assert w.last + plan.overlap <= w.start + plan.frames  # its overlap is rendered too


def test_stitching_renderings_that_agree_gives_the_signal_back() -> None:
    """If every window renders its frames as the whole would, the cross-fades change nothing."""
    plan, total = kw.Plan(16, 3, 4), 50
    signal = np.sin(np.arange(total * kw.FRAME) * 0.01).astype(np.float32)
    padded = np.concatenate([signal, np.zeros(plan.frames * kw.FRAME, np.float32)])
    stitcher = kw.Stitcher(plan, total)
    out = [stitcher.add(w, padded[w.start * kw.FRAME:(w.start + plan.frames) * kw.FRAME])
           for w in kw.windows(plan, total)]
    assert np.allclose(np.concatenate(out), signal, atol=1e-6)


def test_a_cross_fade_goes_smoothly_from_one_window_to_the_next() -> None:
    plan, total = kw.Plan(16, 3, 4), 30
    ones = np.ones(plan.frames * kw.FRAME, np.float32)
    stitcher = kw.Stitcher(plan, total)
    ws = kw.windows(plan, total)
    first = stitcher.add(ws[0], ones)
    second = stitcher.add(ws[1], 3 * ones)
    joined = np.concatenate([first, second])
    assert np.all(joined[: first.size] == 1)
    rising = joined[first.size:first.size + plan.overlap * kw.FRAME]
    assert np.all(np.diff(rising) >= 0) and 1 < rising[0] < 1.01 and 2.99 < rising[-1] < 3
    assert np.all(joined[first.size + plan.overlap * kw.FRAME:] == 3)


def test_a_window_longer_than_the_npu_takes_is_refused() -> None:
    assert kg.WindowShapes(68).columns == 8161
    with pytest.raises(ValueError, match="8191"):
        kg.WindowShapes(69)
    with pytest.raises(ValueError, match="new frame"):
        kw.Plan(16, 8, 8)


# --- the real model ---

@dataclass
class Decoder:
    parts: kg.Parts
    source: Any
    window: Any
    tail: Any

    def render(self, front: ks.Front, calls: list[int] | None = None) -> Iterator[np.ndarray]:
        def window(feed: kw.Feed) -> np.ndarray:
            if calls is not None:
                calls.append(1)
            return self.window.run([kg.POST], feed)[0]

        return kw.render(front.features, front.f0, front.energy, front.style,
                         source=lambda f0: self.source.run([kg.HAR], {kg.F0: f0})[0], window=window,
                         tail=lambda post: self.tail.run([kg.AUDIO], {kg.POST: post})[0])


@pytest.fixture(scope="module")
def decoder(kokoro_files: KokoroFiles) -> Decoder:
    import onnxruntime as ort

    parts = kg.cut(kokoro_files.model)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    sessions = [ort.InferenceSession(b, options, providers=["CPUExecutionProvider"])
                for b in (parts.source, parts.window, parts.tail)]
    return Decoder(parts, *sessions)


def front(tts: KokoroTts, text: str) -> ks.Front:
    return tts.front(" ".join(tts.pieces(text)))


def whole(tts: KokoroTts, f: ks.Front) -> np.ndarray:
    return tts.render_whole(f)


def test_the_window_graph_has_the_fixed_npu_shapes(decoder: Decoder) -> None:
    inputs = {i.name: tuple(i.shape) for i in decoder.window.get_inputs()}
    assert inputs == kg.WindowShapes(kg.WINDOW_FRAMES).inputs
    assert max(s[-1] for s in inputs.values()) <= kg.NPU_TIME_LIMIT
    (post,) = decoder.window.get_outputs()
    assert tuple(post.shape) == (1, 2 * kg.BINS, kg.COLUMNS * kg.WINDOW_FRAMES + 1)
    ops = {n.op_type for n in __import__("onnx").load_from_string(decoder.parts.window).graph.node}
    assert not ops & {"ConvInteger", "MatMulInteger", "DynamicQuantizeLinear", "CumSum", "STFT", "ScatterND",
                      "ReduceMean"}
    assert "InstanceNormalization" in ops  # the 54 spelled-out time norms, as one op each


@pytest.mark.parametrize("text", SENTENCES)
def test_the_windowed_rendering_sounds_like_the_whole_one(tts: KokoroTts, decoder: Decoder, text: str) -> None:
    f = front(tts, text)
    frames = int(f.durations.sum())
    assert frames > 2 * kw.Plan().frames  # long enough for several windows and joins
    pieces = list(decoder.render(f))
    assert len(pieces) == len(kw.windows(kw.Plan(), frames))
    windowed, reference = np.concatenate(pieces), whole(tts, f)
    assert windowed.size == reference.size == frames * kw.FRAME
    assert log_mel_distance(windowed, reference) < WINDOWED_MAX_DB


def test_the_stream_yields_a_window_before_running_the_next(tts: KokoroTts, decoder: Decoder) -> None:
    calls: list[int] = []
    stream = decoder.render(front(tts, SENTENCES[0]), calls)
    first = next(stream)
    assert len(calls) == 1 and first.size == kw.Plan().hop * kw.FRAME
    rest = list(stream)
    assert len(calls) == 1 + len(rest)


def test_whisper_reads_the_windowed_rendering(tts: KokoroTts, decoder: Decoder, assets) -> None:
    asr = WhisperAsr(assets.folder("whisper-base"))
    asr.load()
    try:
        audio = np.concatenate(list(decoder.render(front(tts, SENTENCES[1]))))
        heard = asyncio.run(asr.transcribe(resample(audio, tts.sample_rate, asr.sample_rate)))
    finally:
        asr.close()
    # 19 characters; one homophone (首度 for 首都, both shǒudù) is 0.053
    assert says(heard, "北京") and says(heard, "历史悠久") and cer(SENTENCES[1], heard) <= 0.11, heard
