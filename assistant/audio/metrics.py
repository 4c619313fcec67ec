"""How different two renderings of the same speech sound: mean log-mel distance over the loud frames."""

from __future__ import annotations

import numpy as np


def log_mel(audio: np.ndarray, rate: int = 24000, n_fft: int = 1024, hop: int = 256, bands: int = 80) -> np.ndarray:
    """dB power in ``bands`` mel bands per frame (frames × bands)."""
    window = np.hanning(n_fft)
    padded = np.pad(audio.astype(np.float64), (n_fft // 2, n_fft // 2))
    frames = np.lib.stride_tricks.sliding_window_view(padded, n_fft)[::hop] * window
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    mel = 2595 * np.log10(1 + np.array([0.0, rate / 2]) / 700)
    edges = 700 * (10 ** (np.linspace(mel[0], mel[1], bands + 2) / 2595) - 1)
    freqs = np.fft.rfftfreq(n_fft, 1 / rate)
    bank = np.zeros((bands, freqs.size))
    for i in range(bands):
        low, mid, high = edges[i:i + 3]
        bank[i] = np.clip(np.minimum((freqs - low) / (mid - low), (high - freqs) / (high - mid)), 0, None)
    return 10 * np.log10(np.maximum(power @ bank.T, 1e-10))


def log_mel_distance(a: np.ndarray, b: np.ndarray, rate: int = 24000) -> float:
    """Mean |dB| difference of ``a`` from ``b`` over the frames where ``b`` is within 30 dB of its peak
    (values floored 50 dB below it, so near-silence does not dominate)."""
    n = min(a.size, b.size)
    x, y = log_mel(a[:n], rate), log_mel(b[:n], rate)
    top = y.max()
    x, y = np.maximum(x, top - 50), np.maximum(y, top - 50)
    loud = y.max(axis=1) > top - 30
    return float(np.mean(np.abs(x - y)[loud]))
