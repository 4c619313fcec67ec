"""A noise-onset guard: a sudden energy rise with a flat spectrum is not speech.

A door slam, a clap or a fan switched on can push the VAD over threshold. Such an onset is much
louder than the room before it *and* spectrally flat. Speech after silence rises just as sharply but
is not flat (harmonics, formants, a falling tilt); a steady noise is flat but does not rise. Either
condition alone is not enough, so the guard asks for both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from assistant.audio.protocols import Samples

BAND_HZ = (100.0, 6000.0)  # the flatness band: above hum, up to where speech still has energy
SMOOTH_HZ = 125.0  # bins averaged into bands this wide: a raw periodogram is so ragged that white noise
# scores only e^-γ ≈ 0.56; 125 Hz bands lift it to ~0.8 and still resolve harmonics 200 Hz apart
GATE_DB = 20.0  # onset frames this far below its loudest are the room, not the onset
_FLOOR = 1e-10  # mean-square floor of a level: −100 dBFS
_TINY = 1e-20  # a band power spectrum whose mean is below this is silence


def spectral_flatness(frame: Samples, sample_rate: int = 16000) -> float:
    """Geometric over arithmetic mean of the frame's power spectrum (Hann window, rfft) in ``BAND_HZ``.

    Between 0 and 1: ~0.8 for white noise, ~0.07 for a 200 Hz harmonic series, mostly below 0.1 for
    voiced speech. Silence (or a frame too short to have a band) has no spectrum: 0.0, "not flat".
    """
    n = len(frame)
    if n < 2:
        return 0.0
    power = np.abs(np.fft.rfft(np.asarray(frame, np.float64) * np.hanning(n))) ** 2
    freqs = np.fft.rfftfreq(n, 1.0 / sample_rate)
    power = power[(freqs >= BAND_HZ[0]) & (freqs <= min(BAND_HZ[1], sample_rate / 2))]
    group = max(1, round(SMOOTH_HZ * n / sample_rate))
    bands = len(power) // group
    if bands == 0:
        return 0.0
    power = power[: bands * group].reshape(bands, group).mean(axis=1)
    mean = float(power.mean())
    if mean <= _TINY:
        return 0.0
    geometric = float(np.exp(np.mean(np.log(power + 1e-12 * mean))))  # the offset guards log(0)
    return min(1.0, geometric / mean)


def level_db(samples: Samples) -> float:
    """Mean-square level in dBFS, floored at −100 dB (also for no samples at all)."""
    if len(samples) == 0:
        return float(10.0 * np.log10(_FLOOR))
    return float(10.0 * np.log10(max(float(np.mean(np.square(samples, dtype=np.float64))), _FLOOR)))


@dataclass(frozen=True)
class NoiseVerdict:
    noise: bool
    flatness: float  # median flatness over the onset audio (its frames within GATE_DB of the loudest)
    rise_db: float  # level of the onset audio minus the level of the audio before it (its median frame), dB


class NoiseGuard:
    """Decides whether a VAD onset is a noise onset (a sudden rise with a flat spectrum) rather than speech.

    Defaults from tests/test_noise_guard.py (47 real speech onsets, each at five VAD timings, clean and
    with white noise at −50/−60 dBFS added): speech onsets rising by 20 dB or more have a flatness of
    at most ~0.45 (aspirated "q" onsets; most stay below ~0.1), and the flat ones (up to ~0.8,
    a consonant in −50 dBFS noise) rise by at most ~13 dB. White noise bursts and slams score ~0.8,
    pink-ish noise (1-pole low-pass, a = 0.5) ~0.64, and rise 38–80 dB; steady noise rises ~0 dB.
    0.55 splits 0.45 and 0.64; noise coloured more steeply (a corner below ~1 kHz) is not caught.
    """

    def __init__(self, sample_rate: int = 16000, *, flatness: float = 0.55, rise_db: float = 20.0,
                 frame_ms: int = 32) -> None:
        if sample_rate <= 0 or frame_ms <= 0:
            raise ValueError("sample_rate and frame_ms must be positive")
        self.sample_rate = sample_rate
        self.flatness = flatness
        self.rise_db = rise_db
        self.frame = max(2, round(sample_rate * frame_ms / 1000))

    def frames(self, audio: Samples) -> npt.NDArray[np.float32]:
        """The whole frames of ``audio`` as rows (one zero-padded frame if it is shorter than one)."""
        audio = np.asarray(audio, np.float32)
        if len(audio) < self.frame:
            audio = np.concatenate([audio, np.zeros(self.frame - len(audio), np.float32)])
        count = len(audio) // self.frame
        return audio[: count * self.frame].reshape(count, self.frame)

    def check(self, before: Samples, onset: Samples) -> NoiseVerdict:
        """``before``: ~300 ms preceding the VAD onset; ``onset``: the audio from the onset through the
        min-speech run (~100–300 ms). Noise: a rise of at least ``rise_db`` and a median flatness of at
        least ``flatness``.

        The level before is its median frame's, so an onset that lags the noise by a window or two (the
        noise already in ``before``) still shows the rise from the quiet room; the flatness skips onset
        frames more than ``GATE_DB`` below the loudest, the room ahead of an early onset.
        """
        frames = self.frames(onset)
        levels = np.array([level_db(f) for f in frames])
        loud = frames[levels >= levels.max() - GATE_DB]
        flatness = float(np.median([spectral_flatness(f, self.sample_rate) for f in loud]))
        if len(before) < self.frame:
            base = level_db(before)
        else:
            base = float(np.median([level_db(f) for f in self.frames(before)]))
        rise = level_db(onset) - base
        return NoiseVerdict(rise >= self.rise_db and flatness >= self.flatness, flatness, rise)
