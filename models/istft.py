"""Short-time Fourier transforms in numpy: the vocoder's ISTFT, and the matching STFT to test it.

Vocos does not output audio: it outputs one complex spectrum column per mel frame, and the audio is
its inverse STFT. Vocos' ISTFT head with ``padding="center"`` is ``torch.istft(center=True)`` with a
periodic Hann window of ``n_fft`` samples, no normalisation: each column is inverse-FFT'd, windowed,
overlap-added ``hop`` samples apart, divided by the overlap-added squared window, and ``n_fft // 2``
samples are dropped from each end (the reflect padding a centred STFT adds). ``frames`` columns give
``hop * (frames - 1)`` samples; frame ``t`` is centred on sample ``t * hop``.

``Istft`` keeps the window and the squared-window envelope of the last few frame counts it has seen,
so a call is one batched ``irfft`` and ``n_fft / hop`` vectorised adds. ``stft`` is the forward
transform with the same conventions; ``istft(stft(x))`` gives ``x`` back (its first
``hop * (frames - 1)`` samples) to float rounding.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float32]
Spectrum = npt.NDArray[np.complex64]

ENVELOPE_FLOOR = 1e-11  # where the squared windows sum to less (never inside the kept span), no division
CACHED_ENVELOPES = 8  # frame counts whose envelope is kept (a caller that trims its spectrum varies them)


def hann(size: int) -> Floats:
    """The periodic Hann window (``torch.hann_window``'s default): its shifted copies sum flat."""
    if size < 1:
        raise ValueError(f"hann: size must be positive, not {size}")
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(size) / size)).astype(np.float32)


def _check(n_fft: int, hop: int, window: Floats) -> None:
    if n_fft < 2 or not 0 < hop <= n_fft:
        raise ValueError(f"stft: need n_fft >= 2 and 0 < hop <= n_fft, not n_fft={n_fft}, hop={hop}")
    if window.shape != (n_fft,):
        raise ValueError(f"stft: the window must have n_fft={n_fft} samples, not shape {window.shape}")


def stft(signal: Floats, n_fft: int, hop: int, window: Floats | None = None) -> Spectrum:
    """Centred STFT of ``signal``: (n_fft // 2 + 1, 1 + len // hop) complex, reflect-padded like torch."""
    win = hann(n_fft) if window is None else np.asarray(window, np.float32)
    _check(n_fft, hop, win)
    if signal.ndim != 1 or len(signal) <= n_fft // 2:
        raise ValueError(f"stft: need mono audio longer than n_fft // 2 = {n_fft // 2} samples")
    padded = np.pad(signal.astype(np.float32), n_fft // 2, mode="reflect")
    frames = 1 + len(signal) // hop
    starts = np.arange(frames) * hop
    blocks = padded[starts[:, None] + np.arange(n_fft)[None, :]] * win
    return np.fft.rfft(blocks, axis=1).T.astype(np.complex64)


class Istft:
    """The inverse of ``stft`` for one (n_fft, hop, window), with the envelope cached per frame count."""

    def __init__(self, n_fft: int = 1024, hop: int = 256, window: Floats | None = None) -> None:
        self.n_fft = n_fft
        self.hop = hop
        self.window = hann(n_fft) if window is None else np.asarray(window, np.float32)
        _check(n_fft, hop, self.window)
        self._inverse_envelope: dict[int, Floats] = {}

    def __call__(self, spectrum: Spectrum) -> Floats:
        """Audio of a (n_fft // 2 + 1, frames) complex spectrum: ``hop * (frames - 1)`` float32 samples."""
        bins = self.n_fft // 2 + 1
        if spectrum.ndim != 2 or spectrum.shape[0] != bins or spectrum.shape[1] < 1:
            raise ValueError(f"istft: expected a spectrum of shape ({bins}, frames), not {spectrum.shape}")
        frames = spectrum.shape[1]
        blocks = np.fft.irfft(spectrum.T, n=self.n_fft, axis=1).astype(np.float32) * self.window
        audio = self._overlap_add(blocks)
        half = self.n_fft // 2
        return (audio[half:half + self.hop * (frames - 1)] * self._envelope(frames)).astype(np.float32)

    def _overlap_add(self, blocks: Floats) -> Floats:
        frames, n_fft, hop = blocks.shape[0], self.n_fft, self.hop
        out = np.zeros(n_fft + hop * (frames - 1), np.float32)
        if n_fft % hop == 0:
            # Cut each block into n_fft / hop slices of one hop: slice k of every block lands hop
            # samples after slice k of the block before, so each slice index is one strided add.
            slices = blocks.reshape(frames, n_fft // hop, hop)
            for k in range(n_fft // hop):
                out[k * hop:(k + frames) * hop] += slices[:, k, :].reshape(-1)
        else:
            for t in range(frames):
                out[t * hop:t * hop + n_fft] += blocks[t]
        return out

    def _envelope(self, frames: int) -> Floats:
        """1 / (overlap-added squared window) over the kept span (0 where it vanishes)."""
        cached = self._inverse_envelope.get(frames)
        if cached is None:
            squared = np.broadcast_to(self.window**2, (frames, self.n_fft))
            total = self._overlap_add(np.ascontiguousarray(squared))
            half = self.n_fft // 2
            kept = total[half:half + self.hop * (frames - 1)]
            safe = np.where(kept > ENVELOPE_FLOOR, kept, 1.0)
            cached = np.where(kept > ENVELOPE_FLOOR, 1.0 / safe, 0.0).astype(np.float32)
            if len(self._inverse_envelope) >= CACHED_ENVELOPES:
                del self._inverse_envelope[next(iter(self._inverse_envelope))]  # the oldest
            self._inverse_envelope[frames] = cached
        return cached


def istft(spectrum: Spectrum, n_fft: int, hop: int, window: Floats | None = None) -> Floats:
    """One-off ``Istft(n_fft, hop, window)(spectrum)``."""
    return Istft(n_fft, hop, window)(spectrum)
