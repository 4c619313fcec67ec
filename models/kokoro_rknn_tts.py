"""Kokoro with its decoder windows on the RK3576 NPU (rknn-toolkit-lite2), streamed window by window.

Everything but the decoder window is as in ``KokoroTts`` and runs on the CPU: misaki's G2P and the
text plan, the front (durations, aligned features, F0, energy), and the decoder's ``source`` and
``tail`` (``models/kokoro_graph.py``, cut from the same export without its weights dequantized).
The window — the fixed-shape fp32 graph ``assistant npu build`` converts — runs through one
``RknnModel`` on the configured NPU core's worker, each call taking the NPU's turn
(``models/npu.py``). Only the voiced frames of each piece are decoded (``kokoro_split.span``); the
source runs once over the whole piece so the windows keep the whole rendering's sine phase.

Each window's stitched audio is yielded as soon as it is ready (``models/kokoro_window.py``);
``stop()`` ends every stream before its next window (an NPU call in flight cannot be aborted, and
lasts one window).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from models import kokoro_graph as kg
from models import kokoro_split as ks
from models import kokoro_window as kw
from models.kokoro_tts import SILENT, KokoroTts
from models.npu import NpuScheduler, core_mask
from models.protocols import ModelError, Samples
from models.rknn_model import RknnModel

log = structlog.get_logger("tts")


@dataclass(eq=False)
class _Stream:
    stopped: bool = False


class KokoroRknnTts(KokoroTts):
    """The ``Tts`` protocol on Kokoro, its decoder windows on one NPU core."""

    def __init__(self, model_path: Path, vocab_path: Path, voice_path: Path, window_path: Path, *,
                 npu: NpuScheduler, core: int = 0, threads: int = 2, speed: float = 1.0,
                 plan: kw.Plan | None = None, onset_frames: int = 0) -> None:
        super().__init__(model_path, vocab_path, voice_path, threads=threads, speed=speed, first_frames=0,
                         onset_frames=onset_frames)
        self.npu = npu
        self.core = core
        self.plan = plan or kw.Plan()
        self.window = RknnModel(window_path, core_mask(core), "tts decoder window")
        self._order = list(kg.WindowShapes(self.plan.frames).inputs)
        self._source: Any = None
        self._tail: Any = None
        self._streams: set[_Stream] = set()

    def load(self) -> None:
        super().load()
        self._worker.call(self._create_cpu_parts)
        self.npu.worker(self.core).call(self.window.load)
        expected = kg.WindowShapes(self.plan.frames).inputs
        if self.window.inputs is not None:
            declared = {i.name: i.shape for i in self.window.inputs}
            if set(declared) == set(expected):
                self._order = [i.name for i in self.window.inputs]
            shapes = sorted(tuple(sorted(i.shape)) for i in self.window.inputs)
            if shapes != sorted(tuple(sorted(s)) for s in expected.values()):
                self.close()
                raise ModelError(f"tts: {self.window.path} is not a {self.plan.frames}-frame Kokoro decoder window "
                                 f"(inputs {[i.shape for i in self.window.inputs]}); rebuild it with "
                                 "`assistant npu build`")
        log.info("kokoro decoder window on the NPU", core=self.core, frames=self.plan.frames,
                 context=self.plan.context, overlap=self.plan.overlap)

    def _create_cpu_parts(self) -> None:
        import onnx
        import onnx.utils
        import onnxruntime as ort

        extractor = onnx.utils.Extractor(onnx.load(str(self.model_path)))
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        try:
            self._source = ort.InferenceSession(extractor.extract_model([kg.F0], [kg.HAR]).SerializeToString(),
                                                options, providers=["CPUExecutionProvider"])
            self._tail = ort.InferenceSession(extractor.extract_model([kg.POST], [kg.AUDIO]).SerializeToString(),
                                              options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise ModelError(f"tts: {self.model_path} cannot be cut into the decoder's source and tail: "
                             f"{exc}") from None

    def close(self) -> None:
        self.stop()
        self.npu.worker(self.core).call(self.window.release)
        super().close()
        self._source = self._tail = None

    def stop(self) -> None:
        super().stop()
        for stream in self._streams:
            stream.stopped = True

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        """Float32 audio at 24 kHz, window by window; nothing for text with nothing to say."""
        import onnxruntime as ort

        stream = _Stream()
        self._streams.add(stream)
        options = ort.RunOptions()
        try:
            for phonemes in await self._worker.run(self._plan, text):
                front = await self._worker.run(self._run_front, phonemes, options)
                if front is None or stream.stopped:
                    return
                s = ks.span(front, phonemes, SILENT, self.onset_frames) if self.voiced_only else ks.whole(front)
                har = await self._worker.run(self._har, front, s)
                stitcher = kw.Stitcher(self.plan, s.frames)
                skip = (s.voice - s.start) * kw.FRAME  # the lead frames: decoded for their level, not played
                for w in kw.windows(self.plan, s.frames):
                    feed = kw.feed(front.features[:, :, s.start:s.end], front.f0[:, 2 * s.start:2 * s.end],
                                   front.energy[:, 2 * s.start:2 * s.end], front.style, har, w, self.plan.frames)
                    (post, *_) = await self.npu.run(self.core, "tts", self.window.infer, [feed[n] for n in self._order])
                    if stream.stopped:
                        return
                    audio = stitcher.add(w, await self._worker.run(self._run_tail, post))
                    audio, skip = audio[skip:], max(0, skip - audio.size)
                    if audio.size:
                        yield audio
        finally:
            stream.stopped = True
            self._streams.discard(stream)

    def _har(self, front: ks.Front, s: ks.Span) -> np.ndarray:
        """The source over the whole piece (its running phase), cut to the span's columns."""
        (har,) = self._source.run([kg.HAR], {kg.F0: front.f0})
        return np.asarray(har, np.float32)[:, :, kg.COLUMNS * s.start:kg.COLUMNS * s.end + 1]

    def _run_tail(self, post: np.ndarray) -> np.ndarray:
        shape = (1, 2 * kg.BINS, kg.COLUMNS * self.plan.frames + 1)
        (audio,) = self._tail.run([kg.AUDIO], {kg.POST: np.asarray(post, np.float32).reshape(shape)})
        return np.asarray(audio, np.float32).reshape(-1)
