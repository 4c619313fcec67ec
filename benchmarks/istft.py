"""Benchmark of the vocoder's ISTFT on the CPU: one window of the NPU TTS (600 frames, n_fft 1024, hop 256).

    .venv/bin/python benchmarks/istft.py [--repeats N]

The spectrum is the centred STFT of a real recording, as the vocoder's would be; the time covers the
magnitude/phase → complex step (``complex_spectrum``) and the ISTFT, i.e. all the CPU does per window
after the vocoder call. The first call (which builds the cached envelope) is reported apart.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant.audio.wav import read_wav  # noqa: E402
from models.istft import Istft, stft  # noqa: E402
from models.matcha_rknn_tts import complex_spectrum  # noqa: E402

SR, N_FFT, HOP, FRAMES = 16000, 1024, 256, 600


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    speech = read_wav(ROOT.parent / "shared" / "audio" / "real" / "greeting_10s.wav", SR)[:HOP * (FRAMES - 1)]
    spectrum = stft(speech, N_FFT, HOP)
    parts = [np.abs(spectrum)[None].astype(np.float32), np.angle(spectrum)[None].astype(np.float32)]
    inverse = Istft(N_FFT, HOP)
    start = time.perf_counter()
    inverse(complex_spectrum(parts, N_FFT // 2 + 1))
    first_ms = (time.perf_counter() - start) * 1000
    times, istft_only = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        complex_in = complex_spectrum(parts, N_FFT // 2 + 1)
        middle = time.perf_counter()
        audio = inverse(complex_in)
        end = time.perf_counter()
        times.append((end - start) * 1000)
        istft_only.append((end - middle) * 1000)
    print(f"ISTFT of {FRAMES} frames (n_fft {N_FFT}, hop {HOP}) → {len(audio) / SR:.2f} s of audio")
    print(f"first call {first_ms:.1f} ms; then median {statistics.median(times):.1f} ms "
          f"(of which the ISTFT {statistics.median(istft_only):.1f} ms), min {min(times):.1f} ms, "
          f"max {max(times):.1f} ms over {args.repeats}")


if __name__ == "__main__":
    main()
