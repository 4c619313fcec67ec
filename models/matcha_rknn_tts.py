"""Matcha (acoustic model) + Vocos (vocoder) on the RK3576 NPU, both static-shape .rknn models.

Per window of text (see models/matcha_frontend.py for the text and the windows):

1. Acoustic model, on its NPU core: the token ids with blanks, padded with the blank to the model's
   ``x_len`` (64 in matcha-s64), plus ``x_length`` (the real count), ``noise_scale`` and
   ``length_scale`` (1 / speed) — as many of these four as the model has inputs. Out comes a mel of
   the window's fixed length (599 frames ≈ 9.6 s), whatever the text's length.
2. Cut: the text usually fills a fraction of the window and the rest is silence, ending in a burst of
   noise. The cut is where the mel's voiced part ends — the start of the longest run of padding frames
   (at the window's silence floor, or repeated unchanged columns) after half the estimated length —
   plus ``KEEP_FRAMES``. The estimate, frames = ``per_token`` × tokens + ``offset`` (at speed 1), is
   refitted by least squares to every voiced length measured this way, and is the cut itself when
   the mel shows no end (text that fills the window). ``tts.trim_tail`` stays the guard after this.
3. Vocoder, on the other core: the kept frames, padded to its input length (600) with each mel bin's
   floor (padding with zeros would be a loud frame in log-mel: noise).
4. ISTFT on the CPU (models/istft.py), audio cut to the kept frames' ``cut × hop`` samples.

The vocoder's outputs are read as Vocos' ISTFT head gives them: three outputs are magnitude,
cos(phase), sin(phase) (sherpa-onnx's vocos export); two are magnitude and phase in radians. A
"magnitude" with values below -1 is Vocos' log-magnitude (an export that left the head's ``exp`` out):
it is exponentiated and clipped at 100 as the head does. Shapes come from the .rknn files when they
describe them (models/rknn_model.py), else ``DEFAULT_X_LEN``/``DEFAULT_VOCODER_FRAMES``.

Each window's audio is yielded as soon as it is ready. While it is turned into audio the next
window's acoustic call already runs: after the vocoder call in serialised NPU mode (one model on the
NPU at a time), beside it in concurrent mode. ``stop()`` ends every stream at the next window.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import structlog

from models.istft import Istft, Spectrum
from models.matcha_frontend import Espeak, MatchaFrontend, capacity, windows
from models.npu import NpuScheduler, core_mask
from models.protocols import ModelError, Samples
from models.rknn_model import RknnModel
from models.worker import Worker

log = structlog.get_logger("tts")

# The 599-frame window holds 64 tokens at 9.36 frames a token; an estimate at that rate ran 30–40 %
# long on pure Chinese, so the text's real rate is 9.36 / 1.35 ≈ 6.9 frames a token (with blanks,
# two tokens a syllable: 0.22 s a syllable, the usual pace of read Mandarin). The offset errs long:
# what is cut off is lost, what is left over trim_tail removes.
FRAMES_PER_TOKEN = 6.9
FRAMES_OFFSET = 8.0
DEFAULT_X_LEN = 64  # when the .rknn file does not say (matcha-s64)
DEFAULT_VOCODER_FRAMES = 600  # likewise (vocos-16khz-600)
KEEP_FRAMES = 4  # after the voiced end (64 ms): the release of the last syllable
MIN_GAP_FRAMES = 12  # a run of padding frames shorter than this (0.19 s) is a pause, not the end
MIN_CONTRAST = 2.0  # log-mel units between the loudest frame and the floor, below which no floor is told
STATIC_EPS = 1e-4  # columns closer than this are the same column repeated (masked frames)
LOG_MAGNITUDE_BELOW = -1.0  # a linear magnitude is never this negative; a log-magnitude of silence is
MAX_MAGNITUDE = 100.0  # Vocos' ISTFT head clips exp(log-magnitude) here
FADE_S = 0.005  # window edges ramped so the joins between windows do not click

Array = npt.NDArray[Any]


class FrameEstimate:
    """Mel frames a window of n tokens lasts at speed 1: slope · n + offset, refitted to measurements.

    A weighted least-squares line through the measured (tokens, voiced frames) pairs and two
    pseudo-points on the configured line (at a quarter and three quarters of the window), which keep
    the fit defined and near the prior until real measurements outweigh them. Older measurements fade
    (``decay`` per new one), so the line follows a change of voice or speed.
    """

    def __init__(self, per_token: float, offset: float, *, x_len: int = DEFAULT_X_LEN,
                 prior_weight: float = 2.0, decay: float = 0.98) -> None:
        if per_token <= 0:
            raise ValueError(f"tts: frames_per_token must be positive, not {per_token}")
        self.prior = (per_token, offset)
        self.decay = decay
        xs = (x_len / 4, 3 * x_len / 4)
        self._prior_sums = _sums([(x, per_token * x + offset, prior_weight / 2) for x in xs])
        self._measured = np.zeros(5)
        self.measurements = 0
        self.slope, self.offset = per_token, offset

    def frames(self, tokens: int) -> float:
        return max(1.0, self.slope * tokens + self.offset)

    def add(self, tokens: int, frames: float) -> None:
        self._measured = self._measured * self.decay + _sums([(tokens, frames, 1.0)])
        self.measurements += 1
        w, wx, wxx, wy, wxy = self._prior_sums + self._measured
        slope = (w * wxy - wx * wy) / (w * wxx - wx * wx)  # the prior's two distinct x keep this nonzero
        self.slope, self.offset = float(slope), float((wy - slope * wx) / w)


def _sums(points: Sequence[tuple[float, float, float]]) -> npt.NDArray[np.float64]:
    """Σw, Σwx, Σwx², Σwy, Σwxy of weighted points (x, y, w): all a weighted line fit needs."""
    out = np.zeros(5)
    for x, y, w in points:
        out += w * np.array([1.0, x, x * x, y, x * y])
    return out


def voiced_end(mel: Array, not_before: int = 0) -> int | None:
    """The frame where ``mel`` (bins, frames) stops being speech, or None if it shows no end.

    Padding frames sit at the window's floor (mean level in the lowest quarter of the range from the
    quietest to the loudest frame) or repeat the column before them unchanged (masked frames). The end
    is the start of the longest run of at least ``MIN_GAP_FRAMES`` padding frames that starts at or
    after ``not_before`` (earlier runs are pauses inside the text); ties go to the earliest.
    """
    level = mel.mean(axis=0)
    floor, loudest = float(level.min()), float(level.max())
    padding = np.zeros(mel.shape[1], bool)
    if loudest - floor >= MIN_CONTRAST:
        padding |= level < floor + 0.25 * (loudest - floor)
    same = np.abs(np.diff(mel, axis=1)).max(axis=0) < STATIC_EPS  # column t+1 repeats column t
    padding[1:] |= same
    padding[:-1] |= same
    best: tuple[int, int] | None = None  # (length, start)
    start = None
    for t, pad in enumerate([*padding.tolist(), False]):
        if pad and start is None:
            start = t
        elif not pad and start is not None:
            if start >= not_before and t - start >= MIN_GAP_FRAMES and (best is None or t - start > best[0]):
                best = (t - start, start)
            start = None
    return None if best is None else best[1]


def complex_spectrum(parts: Sequence[Array], bins: int, frames: int | None = None) -> Spectrum:
    """The vocoder's outputs as one (bins, frames) complex spectrum (see the module docstring); only
    the first ``frames`` columns when given."""
    planes = [np.asarray(p, np.float32).reshape(np.shape(p)[-2], np.shape(p)[-1])[:, :frames] for p in parts]
    if any(p.shape[0] != bins for p in planes) or len({p.shape for p in planes}) != 1:
        raise ModelError(f"tts: vocoder outputs of shapes {[p.shape for p in planes]}, expected ({bins}, frames)")
    magnitude = planes[0]
    if float(magnitude.min()) < LOG_MAGNITUDE_BELOW:
        magnitude = np.minimum(np.exp(magnitude), MAX_MAGNITUDE)
    if len(planes) == 3:
        cos, sin = planes[1], planes[2]
    elif len(planes) == 2:
        cos, sin = np.cos(planes[1]), np.sin(planes[1])
    else:
        raise ModelError(f"tts: the vocoder has {len(planes)} outputs; expected magnitude + phase (2) "
                         "or magnitude + cos + sin (3)")
    spectrum = np.empty(magnitude.shape, np.complex64)  # built in float32: no complex128 detour
    spectrum.real = magnitude * cos
    spectrum.imag = magnitude * sin
    return spectrum


@dataclass(eq=False)
class _Stream:
    stopped: bool = False


class MatchaRknnTts:
    """The ``Tts`` protocol on Matcha + Vocos .rknn models, one NPU core each."""

    def __init__(self, acoustic: Path, vocoder: Path, lexicon: Path, tokens: Path, *, npu: NpuScheduler,
                 acoustic_core: int = 0, vocoder_core: int = 1, sample_rate: int = 16000, n_fft: int = 1024,
                 hop: int = 256, noise_scale: float = 0.667, speed: float = 1.0,
                 frames_per_token: float = FRAMES_PER_TOKEN, frames_offset: float = FRAMES_OFFSET,
                 espeak_lib: Path | None = None, espeak_data: Path | None = None, add_blank: bool = True) -> None:
        if not 0.5 <= speed <= 2.0:
            raise ValueError(f"tts: speed must be within 0.5–2.0, not {speed}")
        self.sample_rate = sample_rate
        self.files = {"acoustic model": acoustic, "vocoder": vocoder, "lexicon": lexicon, "token table": tokens}
        self.npu = npu
        self.acoustic_core, self.vocoder_core = acoustic_core, vocoder_core
        self.acoustic = RknnModel(acoustic, core_mask(acoustic_core), "tts acoustic model")
        self.vocoder = RknnModel(vocoder, core_mask(vocoder_core), "tts vocoder")
        english = espeak_lib is not None and str(espeak_lib) not in ("", ".")  # Path("") is "."
        espeak = Espeak(espeak_lib, espeak_data) if english and espeak_lib is not None else None
        self.frontend = MatchaFrontend(lexicon, tokens, espeak=espeak, add_blank=add_blank)
        self.hop = hop
        self.bins = n_fft // 2 + 1
        self.noise_scale = noise_scale
        self.length_scale = 1.0 / speed
        self.x_len, self.vocoder_frames, self.acoustic_inputs = DEFAULT_X_LEN, DEFAULT_VOCODER_FRAMES, 4
        self.estimate = FrameEstimate(frames_per_token, frames_offset)
        self._istft = Istft(n_fft, hop)
        self._cpu = Worker("matcha")  # text planning and ISTFT: CPU work off the loop and off the NPU threads
        self._streams: set[_Stream] = set()

    def load(self) -> None:
        for what, path in self.files.items():
            if not path.is_file():
                raise ModelError(f"tts: the Matcha {what} {path} is missing")
        self._cpu.call(self.frontend.load)
        try:
            self.npu.worker(self.acoustic_core).call(self.acoustic.load)
            self.npu.worker(self.vocoder_core).call(self.vocoder.load)
            self._read_shapes()
        except BaseException:
            self._release()
            raise
        self.estimate = FrameEstimate(*self.estimate.prior, x_len=self.x_len)

    def _read_shapes(self) -> None:
        """Window sizes from the files' declared tensors (kept at the defaults when not declared)."""
        if self.acoustic.inputs:
            self.x_len, self.acoustic_inputs = self.acoustic.inputs[0].shape[-1], len(self.acoustic.inputs)
            if self.acoustic_inputs > 4:
                raise ModelError(f"tts: {self.acoustic.path} has {self.acoustic_inputs} inputs; a Matcha export "
                                 "has x, x_length, noise_scale, length_scale")
        if self.vocoder.inputs:
            self.vocoder_frames = self.vocoder.inputs[0].shape[-1]
        if self.vocoder.outputs and self.vocoder.outputs[0].shape[-2] != self.bins:
            raise ModelError(f"tts: {self.vocoder.path} gives {self.vocoder.outputs[0].shape[-2]} frequency bins, "
                             f"but n_fft {2 * (self.bins - 1)} means {self.bins}: set matcha.n_fft")
        log.info("matcha windows", x_len=self.x_len, vocoder_frames=self.vocoder_frames,
                 mel=self.acoustic.output_shapes, spectrum=self.vocoder.output_shapes)

    def close(self) -> None:
        self.stop()
        self._release()
        self._cpu.close()
        self.npu.close()  # the pinned threads; a later NPU backend starts them again

    def _release(self) -> None:
        self.npu.worker(self.acoustic_core).call(self.acoustic.release)
        self.npu.worker(self.vocoder_core).call(self.vocoder.release)

    def stop(self) -> None:
        """End every stream at the next window (a model call in flight finishes: it cannot be aborted)."""
        for stream in self._streams:
            stream.stopped = True

    def plan(self, text: str) -> list[list[int]]:
        """The acoustic model's token ids (with blanks, before padding) per window of ``text``."""
        words = self.frontend.words(text)
        planned = windows(words, capacity(self.x_len, self.frontend.add_blank))
        # A window of punctuation alone ("……！") would be a model call for a breath of noise.
        return [self.frontend.with_blanks(w) for w in planned if not self.frontend.silent.issuperset(w)]

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        """One float32 piece per window, at ``sample_rate``; nothing for text with nothing to say."""
        stream = _Stream()
        self._streams.add(stream)
        pending: asyncio.Task[tuple[Array, int]] | None = None
        try:
            plan = await self._cpu.run(self.plan, text)
            if not plan:
                return
            pending = asyncio.create_task(self._mel(plan[0]))
            for k in range(len(plan)):
                task, pending = pending, None
                if task is None:  # stopped before the next window was asked for
                    return
                mel, tokens = await task
                if stream.stopped:
                    return
                cut = self._cut(mel, tokens)
                more = k + 1 < len(plan)
                if more and not self.npu.serialised:
                    pending = asyncio.create_task(self._mel(plan[k + 1]))
                spectrum_in = [self._vocoder_input(mel, cut)]
                parts = await self.npu.run(self.vocoder_core, "tts", self.vocoder.infer, spectrum_in)
                if more and pending is None and not stream.stopped:
                    pending = asyncio.create_task(self._mel(plan[k + 1]))
                audio = await self._cpu.run(self._audio, parts, cut)
                if stream.stopped:
                    return
                yield audio
        finally:
            stream.stopped = True
            self._streams.discard(stream)
            if pending is not None:
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, ModelError):
                    await pending

    async def _mel(self, ids: list[int]) -> tuple[Array, int]:
        """One acoustic call: the window's mel (bins, frames) and its real token count."""
        ids = ids[:self.x_len]
        x = np.full((1, self.x_len), self.frontend.blank, np.int64)
        x[0, :len(ids)] = ids
        every: list[Array] = [x, np.array([len(ids)], np.int64), np.array([self.noise_scale], np.float32),
                              np.array([self.length_scale], np.float32)]
        feed = every[:self.acoustic_inputs]
        outputs = await self.npu.run(self.acoustic_core, "tts", self.acoustic.infer, feed)
        mel = np.asarray(outputs[0], np.float32)
        mel = mel.reshape(mel.shape[-2], mel.shape[-1])
        return mel, len(ids)

    def _cut(self, mel: Array, tokens: int) -> int:
        """Frames of ``mel`` to keep: to its voiced end when it shows one, else the estimate."""
        frames = mel.shape[1]
        estimate = self.estimate.frames(tokens) * self.length_scale
        end = voiced_end(mel, not_before=int(0.5 * estimate))
        if end is not None:
            self.estimate.add(tokens, end / self.length_scale)
            cut = min(frames, end + KEEP_FRAMES)
        else:
            cut = min(frames, math.ceil(estimate))
        log.debug("matcha window", tokens=tokens, estimate=round(estimate), voiced_end=end, cut=cut,
                  fit=(round(self.estimate.slope, 2), round(self.estimate.offset, 1)))
        if cut > self.vocoder_frames:
            log.warning("the vocoder's window is shorter than the speech; its end is lost",
                        cut=cut, vocoder_frames=self.vocoder_frames)
        return int(max(1, min(cut, self.vocoder_frames)))

    def _vocoder_input(self, mel: Array, cut: int) -> Array:
        """The kept frames, padded with each bin's floor to the vocoder's length: (1, bins, frames)."""
        floor = mel.min(axis=1, keepdims=True)
        out = np.repeat(floor, self.vocoder_frames, axis=1)
        out[:, :cut] = mel[:, :cut]
        return out[None].astype(np.float32)

    def _audio(self, parts: Sequence[Array], cut: int) -> Samples:
        """The first ``cut`` frames' audio. Sample s depends on the frames within n_fft / 2 of it, so
        ``cut`` + n_fft / hop + 1 columns give those samples exactly, and a short window costs less."""
        needed = cut + math.ceil(2 * (self.bins - 1) / self.hop) + 1
        audio = self._istft(complex_spectrum(parts, self.bins, needed))[:cut * self.hop].copy()
        n = min(round(FADE_S * self.sample_rate), len(audio) // 2)
        if n:
            ramp = (0.5 - 0.5 * np.cos(np.pi * np.arange(n) / n)).astype(np.float32)
            audio[:n] *= ramp
            audio[-n:] *= ramp[::-1]
        return audio.astype(np.float32)
