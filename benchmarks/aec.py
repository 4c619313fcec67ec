"""Benchmark of the echo canceller: ERLE and real-time factor on a simulated echo of a real recording.

    .venv/bin/python benchmarks/aec.py

The speaker plays greeting_10s.wav; the microphone hears 0.5 x it through a 30 ms decaying room
response, 40 ms late. Audio goes through in 20 ms chunks, as the assistant's audio pump does. ERLE is
input over output energy on chunks where the reference is active, over the whole file and after a
2 s convergence period; RTF is processing time over audio duration.
"""

from __future__ import annotations

import copy
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant.audio.echo import EchoCanceller, EchoStats  # noqa: E402
from assistant.audio.protocols import Samples  # noqa: E402
from assistant.audio.wav import read_wav  # noqa: E402

SR = 16000
CHUNK = 320
REAL = ROOT.parent / "shared" / "audio" / "real"


def simulated_echo(reference: Samples, delay_ms: int = 40) -> Samples:
    """0.5 x the reference through a seeded 30 ms room response with a 50 ms RT60, ``delay_ms`` late."""
    t = np.arange(30 * SR // 1000)
    h = np.random.default_rng(0).standard_normal(t.size) * np.exp(-t / (0.05 * SR / 6.9))
    h[0] = 1.0
    h /= np.sqrt(np.sum(h * h))
    wet = 0.5 * np.convolve(reference, h)[: reference.size]
    d = delay_ms * SR // 1000
    mic = np.zeros(reference.size, np.float32)
    mic[d:] = wet[: reference.size - d]
    return mic


def erle_between(before: EchoStats, after: EchoStats) -> float:
    return 10 * math.log10((after.in_energy - before.in_energy) / (after.out_energy - before.out_energy))


def measure(label: str, reference: Samples, **options: bool) -> None:
    mic = simulated_echo(reference)
    ec = EchoCanceller(SR, **options)
    at_2s = EchoStats()
    elapsed = 0.0
    for pos in range(0, mic.size, CHUNK):
        started = time.perf_counter()
        ec.process(mic[pos : pos + CHUNK], reference[pos : pos + CHUNK])
        elapsed += time.perf_counter() - started
        if pos + CHUNK == 2 * SR:
            at_2s = copy.copy(ec.stats)
    st = ec.stats
    whole = "n/a" if st.erle_db is None else f"{st.erle_db:.1f}"
    print(
        f"| {label} | {reference.size / SR:.1f} | {whole} | {erle_between(at_2s, st):.1f} "
        f"| {st.acted_chunks}/{st.echo_chunks} | {elapsed / (mic.size / SR):.4f} |"
    )


def main() -> None:
    greeting = read_wav(REAL / "greeting_10s.wav", SR)
    looped = np.tile(greeting[: int(3.6 * SR)], 3)  # the file's speech ends at 3.6 s
    print("| case | audio s | ERLE dB (all) | ERLE dB (after 2 s) | acted/echo chunks | RTF |")
    print("|---|---|---|---|---|---|")
    measure("greeting_10s, AEC", greeting)
    measure("greeting_10s, AEC+NS+AGC", greeting, noise_suppression=True, gain_control=True)
    measure("greeting speech x3, AEC", looped)


if __name__ == "__main__":
    main()
