"""Echo leaks: is what AEC3 let through the reply's own echo, rather than someone talking?

A cold AEC3 (the session's first reply) sometimes lets a syllable of the reply through almost
untouched: for about 100 ms its output comes within a few dB of the microphone, and silero reads the
leak as speech (0.9–1.0), sure enough for a barge-in. Measured in ``benchmarks/echo.py``'s quiet
sessions: it happens about 0.7–1.0 s into the first reply, after a pause in it, and two sessions in
six interrupted themselves so with ``tts.onset_frames = 2``.

Such a leak is the played audio through the room, so a short linear filter of what was played
explains most of it, while someone talking is explained by nothing that was played. ``unexplained_db``
fits that filter by least squares: the lag of the strongest normalised cross-correlation within
``MAX_LAG`` (the echo path plus AEC3's own delay), and ``TAPS`` taps around it. It says how far under
the window's power the part the filter cannot explain lies. On ``benchmarks/echo.py``'s replays the
two leaks read −7.0 and −8.3 dB, and the 128 ms before the decisions of 23 real barge-ins and double
talks over the reply −3.9 dB at the lowest (most within 1 dB of 0).

A leak a short filter cannot explain (a long reverberant tail) reads near 0 and is let through: the
check can only refuse a barge-in, never make one.
"""

from __future__ import annotations

import numpy as np

from assistant.audio.protocols import Samples

SPAN = 2048  # samples of AEC3's output judged: the 128 ms up to the decision
MAX_LAG = 2800  # the echo path and AEC3's delay together, up to 175 ms at 16 kHz
TAPS = 128  # the filter fitted around the lag: 8 ms (a lag one pitch period off still covers the echo's)
LEAK_DB = -5.5  # at most this much unexplained: the played audio's own echo
QUIET = 1e-9  # mean power under which there is nothing to judge (about −90 dBFS)


def unexplained_db(heard: Samples, played: Samples) -> float | None:
    """How far (dB) under ``heard``'s power lies what a short linear filter of ``played`` cannot
    explain, ``played`` covering the ``MAX_LAG`` samples before ``heard`` and the same span; None when
    either is silent (nothing to judge)."""
    y = np.asarray(heard, np.float64)
    x = np.asarray(played, np.float64)
    if len(x) != len(y) + MAX_LAG:
        raise ValueError(f"played must be {MAX_LAG} samples longer than heard, not {len(x) - len(y)}")
    if np.mean(y * y) < QUIET or np.mean(x * x) < QUIET:
        return None
    lag = _strongest_lag(y, x)
    lo, hi = max(0, lag - TAPS // 2), min(MAX_LAG + 1, lag + TAPS // 2)
    shifted = np.lib.stride_tricks.sliding_window_view(x, len(y))[lo:hi]  # one row per tap
    gram = shifted @ shifted.T  # the normal equations: a few ms, where an SVD of the same took 30
    ridge = 1e-9 * float(np.trace(gram)) / len(gram) + 1e-20
    fit = np.linalg.solve(gram + ridge * np.eye(len(gram)), shifted @ y)
    rest = y - fit @ shifted
    return 10.0 * float(np.log10(max(float(np.sum(rest * rest)), 1e-20) / float(np.sum(y * y))))


def _strongest_lag(y: np.ndarray, x: np.ndarray) -> int:
    """The offset k (0..MAX_LAG) at which ``x[k:k + len(y)]`` correlates most with ``y``, normalised."""
    n = len(y)
    size = 1 << int(np.ceil(np.log2(len(x) + n)))
    corr = np.fft.irfft(np.fft.rfft(x, size) * np.conj(np.fft.rfft(y, size)), size)[:MAX_LAG + 1]
    summed = np.concatenate([[0.0], np.cumsum(x * x)])
    energy = (summed[n:] - summed[:-n])[:MAX_LAG + 1]  # each candidate's power, as a running sum
    return int(np.argmax(np.abs(corr) / np.sqrt(np.maximum(energy, 1e-20))))

