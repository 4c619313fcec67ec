"""Kokoro's decoder run in fixed windows and stitched: the streaming form the NPU needs.

The decoder's parts (``models/kokoro_graph.py``): the ``source`` runs once over the piece, then the
``window`` graph, whose inputs have one fixed shape, renders ``frames`` decoder frames at a time,
and the ``tail`` turns each window's output into audio. A window's frames are, in order:

- ``context`` frames of left context, taken from the window before (for the first window: none, so
  it starts at frame 0 and its extra frames are look-ahead); their audio is dropped;
- ``hop`` new frames, played;
- ``overlap`` frames that the next window renders again: the two renderings are joined there with a
  raised-cosine cross-fade, so no edge of a window is ever played unsmoothed.

The decoder normalizes over time (instance norms inside every block), so a window hears only its own
``frames`` and differs a little from the whole rendering; the context and the cross-fade keep the
joins inaudible. A window past the end of the piece is padded with the piece's last frame (the
end token's silence) and the padding is never played.

``render`` yields each window's finished audio as soon as it is stitched, so a caller streams it
window by window; what runs the three parts (onnxruntime here and in tests, RKNNLite on the board)
is passed in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.kokoro_graph import COLUMNS, ENERGY, F0, FEATURES, HAR, STYLE, WINDOW_FRAMES

FRAME = 600  # samples per decoder frame at 24 kHz
CONTEXT_FRAMES = 12
OVERLAP_FRAMES = 12

Array = npt.NDArray[np.float32]
Feed = dict[str, Array]


@dataclass(frozen=True)
class Plan:
    """Window geometry, in decoder frames."""

    frames: int = WINDOW_FRAMES
    context: int = CONTEXT_FRAMES
    overlap: int = OVERLAP_FRAMES

    def __post_init__(self) -> None:
        if self.context < 0 or self.overlap < 0 or self.hop < 1:
            raise ValueError(f"kokoro window: {self.frames} frames cannot hold {self.context} of context and "
                             f"{self.overlap} of overlap with at least one new frame")

    @property
    def hop(self) -> int:
        """New frames each window adds."""
        return self.frames - self.context - self.overlap


@dataclass(frozen=True)
class Window:
    """One window: its input frames start at ``start``; it plays frames ``first``–``last``."""

    index: int
    start: int
    first: int
    last: int  # exclusive; the overlap after it is rendered but left to the next window


def windows(plan: Plan, total: int) -> list[Window]:
    """The windows that render frames 0–``total``."""
    if total < 1:
        return []
    out = []
    for k in range(math.ceil(total / plan.hop)):
        first = k * plan.hop
        out.append(Window(k, max(0, first - plan.context), first, min(total, first + plan.hop)))
    return out


def _slice(a: Array, start: int, size: int) -> Array:
    """``a[..., start:start + size]``, padded past its end with its last column."""
    part = a[..., start:start + size]
    short = size - part.shape[-1]
    if short > 0:
        part = np.concatenate([part, np.repeat(a[..., -1:], short, axis=-1)], axis=-1)
    return np.ascontiguousarray(part, np.float32)


def feed(features: Array, f0: Array, energy: Array, style: Array, har: Array, w: Window, frames: int) -> Feed:
    """The window graph's inputs for ``w``: every one of its fixed shape."""
    return {FEATURES: _slice(features, w.start, frames), F0: _slice(f0, 2 * w.start, 2 * frames),
            ENERGY: _slice(energy, 2 * w.start, 2 * frames), STYLE: np.asarray(style, np.float32).reshape(1, -1),
            HAR: _slice(har, COLUMNS * w.start, COLUMNS * frames + 1)}


def fade(n: int) -> Array:
    """A raised-cosine ramp of ``n`` samples from 0 to 1."""
    return (0.5 - 0.5 * np.cos(np.pi * (np.arange(n) + 0.5) / n)).astype(np.float32) if n else np.zeros(0, np.float32)


class Stitcher:
    """Joins windows' audio: keeps each window's overlap until the next one cross-fades into it."""

    def __init__(self, plan: Plan, total: int) -> None:
        self.plan = plan
        self.total = total
        self._pending = np.zeros(0, np.float32)  # the last window's overlap audio, not yet played

    def add(self, w: Window, audio: Array) -> Array:
        """The finished audio once window ``w``'s rendering (``frames`` × 600 samples) is added."""
        audio = np.asarray(audio, np.float32).reshape(-1)
        own = audio[(w.first - w.start) * FRAME:]
        end = min(self.total, w.last + self.plan.overlap)
        own = own[:(end - w.first) * FRAME]
        n = min(self._pending.size, own.size)
        if n:
            ramp = fade(n)
            own = own.copy()
            own[:n] = self._pending[:n] * (1 - ramp) + own[:n] * ramp
        keep = (w.last - w.first) * FRAME
        self._pending = own[keep:].copy()
        return own[:keep]


def computed(har: Array) -> Callable[[Array], Array]:
    """A ``source`` for ``render`` whose HAR was computed already (over the whole piece, then cut to the
    frames rendered, as the board's backend does)."""
    return lambda _f0: har


def render(features: Array, f0: Array, energy: Array, style: Array, *, source: Callable[[Array], Array],
           window: Callable[[Feed], Array], tail: Callable[[Array], Array], plan: Plan | None = None,
           ) -> Iterator[Array]:
    """The piece's audio window by window: ``source(f0)`` → HAR once, ``window(feed)`` → POST and
    ``tail(post)`` → audio per window, stitched."""
    plan = plan or Plan()
    total = features.shape[-1]
    har = source(f0)
    stitcher = Stitcher(plan, total)
    for w in windows(plan, total):
        post = window(feed(features, f0, energy, style, har, w, plan.frames))
        yield stitcher.add(w, tail(post))
