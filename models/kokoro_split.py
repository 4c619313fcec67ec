"""Kokoro cut in two — the front (text → durations, aligned features, F0, energy) and the decoder —
so that only voiced frames are rendered and the first sound of a reply comes early.

Facts this rests on (measured on the int8 export): the only tensors
that cross from ``/encoder/*`` to ``/decoder/*`` are the aligned features [1, 512, T], F0 and
energy [1, 2T] and the style vector; ``/encoder/Clip_output_0`` holds the per-token durations in
frames; one frame is 600 samples (25 ms at 24 kHz). The front is 3–4 % of the time; the decoder
costs the same for every frame, silent or not — and the start token alone gets 17–19 frames.

``Span`` is what to decode: from a few frames before the first phoneme (``LEAD_FRAMES`` of the
start token's silence, which keeps the level the decoder gives the speech) to just after the last
phoneme, played from the first phoneme's aligned frame (or ``onset`` frames before it); the end
token and trailing punctuation are not rendered (the pipeline adds its own pause).

The decoder normalizes over time, so a piece decoded alone sounds a little different from the
whole. ``splice`` joins an early head (the first frames, decoded alone and played at once) to the
whole span's rendering at the head's end with a raised-cosine cross-fade: one join, and from there
on the audio is exactly the whole rendering.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from models.protocols import ModelError, Samples

FEATURES, F0, ENERGY, DURATIONS = ("/encoder/MatMul_1_output_0", "/encoder/Reshape_output_0",
                                   "/encoder/Reshape_1_output_0", "/encoder/Clip_output_0")
FRAME = 600  # samples per decoder frame at 24 kHz
LEAD_FRAMES = 8  # of the start token's silence, decoded but not played
# The first phoneme is heard before the frame its duration starts at: played from that frame, a piece
# loses its first consonant's onset (火车 → 过车, 再把 → 带把, 周末 → 多么: Whisper base's CER on the ten
# round-trip sentences of ``assistant npu build``, the whole rendering played from there, 0.080; from
# 2 frames (50 ms) earlier 0.049, from 4 the same; the whole rendering as it is 0.055). ``span``'s
# ``onset`` (``tts.onset_frames``, 2 by default) plays that many frames earlier: see config.toml.
TAIL_FRAMES = 2  # after the last phoneme, for its decay
FADE = 480  # samples of cross-fade at the join (20 ms)
# The decoder's time per frame over a frame's duration: 0.28–0.31 on long spans on a 2-core EPYC, more on
# short ones. At 0.3 the bench's largest gap was 0.19 s (the whole piece late after its head), at 0.35 0.03–0.06 s.
DECODE_SHARE = 0.35


def split(model_path: Path) -> tuple[bytes, bytes]:
    """The serialized front and decoder of the Kokoro export at ``model_path``."""
    try:
        import onnx
        import onnx.utils
    except ImportError as exc:
        raise ModelError(f"tts: the onnx package is needed to split Kokoro ({exc})") from None
    try:
        extractor = onnx.utils.Extractor(onnx.load(str(model_path)))
        front = extractor.extract_model(["tokens", "style", "speed"], [FEATURES, F0, ENERGY, DURATIONS])
        decoder = extractor.extract_model([FEATURES, F0, ENERGY, "style"], ["audio"])
    except Exception as exc:  # onnx raises plain Exceptions on a graph it cannot cut
        raise ModelError(f"tts: {model_path} cannot be cut into front and decoder: {exc}") from None
    return front.SerializeToString(), decoder.SerializeToString()


@dataclass(frozen=True)
class Front:
    """The front's output for one piece: aligned features, F0, energy, durations, and the style."""

    features: np.ndarray
    f0: np.ndarray
    energy: np.ndarray
    durations: np.ndarray  # frames per token, start and end token included
    style: np.ndarray

    def feed(self, start: int, end: int) -> dict[str, np.ndarray]:
        """The decoder's inputs for frames ``start`` to ``end``."""
        return {FEATURES: self.features[:, :, start:end], F0: self.f0[:, 2 * start:2 * end],
                ENERGY: self.energy[:, 2 * start:2 * end], "style": self.style}


def front_of(outputs: list[Any], names: list[str], style: np.ndarray) -> Front:
    got = dict(zip(names, outputs, strict=True))
    durations = np.rint(np.asarray(got[DURATIONS]).reshape(-1)).astype(np.int64)
    return Front(got[FEATURES], got[F0], got[ENERGY], durations, style)


@dataclass(frozen=True)
class Span:
    """Frames to decode (``start``–``end``) and the first one to play (``voice``)."""

    start: int
    voice: int
    end: int

    @property
    def frames(self) -> int:
        return self.end - self.start


def span(front: Front, phonemes: str, silent: str, onset: int = 0) -> Span:
    """The voiced frames of a piece: its phonemes without the end token and trailing punctuation,
    played from ``onset`` frames before the first phoneme's aligned frame."""
    durations = front.durations
    total = int(durations.sum())
    trailing = len(phonemes) - len(phonemes.rstrip(silent))
    last = len(durations) - 1 - trailing  # durations[0] is the start token, durations[-1] the end token
    voice = max(0, int(durations[0]) - onset)
    end = min(total, int(durations[:last].sum()) + TAIL_FRAMES)
    if end <= voice:  # nothing voiced: decode it all rather than nothing
        return Span(0, 0, total)
    return Span(max(0, voice - LEAD_FRAMES), voice, end)


def whole(front: Front) -> Span:
    """Every frame of a piece, the start token's silence and the end token included."""
    return Span(0, 0, int(front.durations.sum()))


def head_frames(s: Span, least: int) -> int:
    """How many voiced frames to play first, so the whole span is decoded before they run out."""
    return max(least, math.ceil(DECODE_SHARE * s.frames))


def played(audio: Samples, s: Span) -> Samples:
    """The decoded ``audio`` of ``s`` from its first voiced frame on."""
    return audio[(s.voice - s.start) * FRAME:]


def splice(head: Samples, whole: Samples) -> Samples:
    """From the end of ``head`` (held back by ``FADE``) on: the cross-fade into ``whole``, then ``whole``."""
    cut = head.size
    fade = min(FADE, cut)
    ramp = (0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, fade))).astype(np.float32)
    joined = head[cut - fade:] * (1 - ramp) + whole[cut - fade:cut] * ramp
    return np.concatenate([joined, whole[cut:]]).astype(np.float32)
