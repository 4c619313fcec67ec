"""Audio hygiene for synthesized speech: cut junk tails, soften chunk edges, pause at punctuation.

A reply is spoken as a row of TTS chunks, one per clause group. Three things make such a row
sound wrong, and each has one function here:

- ``trim_tail``: models that render into a fixed window (the NPU TTS exports) pad a short clause
  with silence and sometimes end the window with a burst of noise. Played as is, the reply has a
  long gap and a click or hiss in it.
- ``fade_edges``: a chunk that starts or ends on a non-zero sample clicks at the join.
- ``pause_after`` and ``silence``: chunks are separate model calls, so the pause a comma or a full
  stop asks for is added here, by the punctuation the chunk's text ends with.

``finish_chunk`` applies all three in order. Every function takes the sample rate as an argument
and returns new audio; none mutates its input. Audio is float32 mono in [-1, 1].
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from assistant.audio.protocols import Samples

COMMA_MARKS = frozenset("，、；：,;:")
PERIOD_MARKS = frozenset("。！？.!?…\n")
# Closing quotes and brackets after the mark do not hide it: 他说：“好的。” ends a sentence.
_CLOSERS = "”’\"'」』）)》〉】]"
_BLANKS = " \t\r\f\v\u3000"  # trailing blanks other than a newline, which itself counts as a period


def trim_tail(audio: Samples, sample_rate: int, *, window_s: float = 0.1, min_voiced_s: float = 0.4,
              keep_s: float = 0.15, max_gap_s: float = 0.2, relative_db: float = -26.0,
              floor_db: float = -60.0) -> Samples:
    """``audio`` up to the end of its last sustained voiced run plus ``keep_s``; a later burst is cut.

    The audio is cut into windows of ``window_s`` and each window's RMS is measured. A window is
    *voiced* when its RMS is within ``relative_db`` of the chunk's speech level (no more than 26 dB
    below it) and above the absolute ``floor_db``. The speech level is the loudest level the chunk *sustains* for
    ``min_voiced_s``: the highest median window RMS over any ``min_voiced_s`` stretch of windows.

    Why relative, and why a sustained level: a fixed absolute threshold cannot separate a noise burst
    from speech — the bursts measured on fixed-window NPU models had an RMS of 0.108, far above a
    naive 0.01, while a softly spoken ending can sit below 0.01. Measured against the chunk's own
    speech level, quiet endings stay voiced (−26 dB is below a fading final syllable but well above
    the near-digital silence a TTS pads with); and because the level is a median over
    ``min_voiced_s``, a short burst, however loud, cannot raise it and mute the speech. What then
    rejects the burst is its length: only a voiced run with at least ``min_voiced_s`` of voiced
    windows counts as speech, and the burst is shorter and comes after silence.

    Voiced windows separated by at most ``max_gap_s`` of unvoiced ones belong to one run, so a short
    final word after a clause pause ("…，好。") is kept with the speech before it (Kokoro's pauses
    inside a sentence left at most one quiet 100 ms window in the pieces measured; 0.2 s leaves room
    for slower voices). The price: a burst less than about 0.3 s after the speech is kept; a longer
    silence separates it.

    Nothing is cut when no run lasts ``min_voiced_s`` (a lone short word, or silence): without
    sustained speech there is no telling speech from junk, and keeping is the harmless mistake.
    ``keep_s`` should be at least ``window_s``, so speech ending early in an unvoiced window is kept.
    """
    _check_audio(audio, sample_rate)
    if window_s <= 0 or min_voiced_s < 0 or keep_s < 0 or max_gap_s < 0:
        raise ValueError("trim_tail: window_s must be positive; min_voiced_s, keep_s and max_gap_s not negative")
    size = max(1, round(window_s * sample_rate))
    rms = window_rms(audio, size)
    needed = max(1, math.ceil(min_voiced_s / window_s - 1e-9))  # voiced windows a run needs
    if len(rms) < needed:
        return audio
    stretches = np.lib.stride_tricks.sliding_window_view(rms, needed)
    level = float(np.median(stretches, axis=1).max())
    threshold = max(level * 10 ** (relative_db / 20), 10 ** (floor_db / 20))
    voiced = np.flatnonzero(rms >= threshold)
    last_end = _end_of_last_run(voiced, needed, gap=math.floor(max_gap_s / window_s + 1e-9))
    if last_end is None:
        return audio
    end = min(len(audio), last_end * size + round(keep_s * sample_rate))
    return audio[:end]


def window_rms(audio: Samples, size: int) -> npt.NDArray[np.float64]:
    """RMS of each consecutive window of ``size`` samples; the last window may be shorter."""
    if len(audio) == 0:
        return np.zeros(0, np.float64)
    starts = np.arange(0, len(audio), size)
    power = np.add.reduceat(np.square(audio, dtype=np.float64), starts)
    lengths = np.diff(np.append(starts, len(audio)))
    return np.asarray(np.sqrt(power / lengths), np.float64)


def _end_of_last_run(voiced: npt.NDArray[np.intp], needed: int, gap: int) -> int | None:
    """One past the last window of the last run holding ``needed`` voiced windows, gaps of at most
    ``gap`` unvoiced windows bridged; None if no run holds that many."""
    found: int | None = None
    count = 0
    previous = -1
    for index in voiced.tolist():
        count = count + 1 if count and index - previous - 1 <= gap else 1
        previous = index
        if count >= needed:
            found = index + 1
    return found


def fade_edges(audio: Samples, sample_rate: int, fade_ms: float = 5.0, *,
               start: bool = True, end: bool = True) -> Samples:
    """A copy of ``audio`` faded in and out over ``fade_ms`` with a raised-cosine ramp.

    The first and last samples become exactly 0, so consecutive chunks (and the silence between
    them) join without a step — a step is what is heard as a click. A raised cosine has no corner
    at either end of the ramp, so the fade itself adds no click; 5 ms is far shorter than any
    phoneme. The samples between the ramps are unchanged. On a chunk shorter than two fades each
    ramp takes half of it.
    """
    _check_audio(audio, sample_rate)
    if fade_ms < 0:
        raise ValueError(f"fade_edges: fade_ms must not be negative, not {fade_ms}")
    out = np.array(audio, dtype=np.float32, copy=True)
    n = min(round(fade_ms / 1000 * sample_rate), len(out) // 2)
    if n == 0:
        return out
    ramp = (0.5 - 0.5 * np.cos(np.pi * np.arange(n) / n)).astype(np.float32)
    if start:
        out[:n] *= ramp
    if end:
        out[-n:] *= ramp[::-1]
    return out


def pause_after(text: str, *, comma_ms: float = 150, period_ms: float = 300) -> float:
    """Seconds of silence to play after a chunk whose text is ``text``.

    ``period_ms`` after a sentence end (。！？.!?… or a newline), ``comma_ms`` after a clause end
    (，、；：,;:), nothing otherwise. Trailing blanks and closing quotes or brackets are looked
    past. The TTS renders each chunk alone, so without this the clauses of a reply run together.
    """
    if comma_ms < 0 or period_ms < 0:
        raise ValueError("pause_after: pauses must not be negative")
    tail = text.rstrip(_BLANKS)
    if tail.endswith("\n"):
        return period_ms / 1000
    last = tail.rstrip(_CLOSERS)[-1:]
    if last in PERIOD_MARKS:
        return period_ms / 1000
    if last in COMMA_MARKS:
        return comma_ms / 1000
    return 0.0


def silence(seconds: float, sample_rate: int) -> Samples:
    """``seconds`` of digital silence at ``sample_rate`` (rounded to whole samples)."""
    if seconds < 0 or sample_rate <= 0:
        raise ValueError(f"silence: need seconds >= 0 and a positive sample rate, not {seconds}, {sample_rate}")
    return np.zeros(round(seconds * sample_rate), np.float32)


def finish_chunk(audio: Samples, sample_rate: int, text: str) -> Samples:
    """One TTS chunk ready to play: tail trimmed, edges faded, the pause its punctuation asks for appended."""
    cleaned = fade_edges(trim_tail(audio, sample_rate), sample_rate)
    return np.concatenate([cleaned, silence(pause_after(text), sample_rate)])


def _check_audio(audio: Samples, sample_rate: int) -> None:
    if audio.ndim != 1:
        raise ValueError(f"expected mono audio (one dimension), not shape {audio.shape}")
    if sample_rate <= 0:
        raise ValueError(f"sample rate must be positive, not {sample_rate}")


def trim_head(audio: Samples, sample_rate: int, *, keep_s: float = 0.02, floor_db: float = -50.0) -> Samples:
    """``audio`` from ``keep_s`` before its first sample louder than ``floor_db`` (relative to full scale).

    Kokoro starts every piece with about 0.3 s of near-digital silence; handed to the sink as it is, that
    silence is heard as latency. Only leading samples that are quieter than ``floor_db`` are cut, so a soft
    onset is kept; audio that is silent throughout is returned as it is.
    """
    _check_audio(audio, sample_rate)
    loud = np.flatnonzero(np.abs(audio) > 10 ** (floor_db / 20))
    if loud.size == 0:
        return audio.copy()
    start = max(0, int(loud[0]) - int(keep_s * sample_rate))
    return audio[start:].copy()
