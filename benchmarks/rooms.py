"""Simulated rooms for the spoken evaluation: a talker and a fan in a small room, by pyroomacoustics.

Each room is a shoebox with a reverberation time; the talker stands at the distance from the
microphone that gives the room's direct-to-reverberant ratio (DRR), found by trying distances; a fan
in a corner plays steady noise, reverberated by the same room, at the room's signal-to-noise ratio
(measured against the speech where it is voiced). The impulse responses come from pyroomacoustics'
image-source model; the fan's sound is pink noise shaped like a fan's hum.

- ``clean``: the rendered speech as it is;
- ``near``: a furnished living room (RT60 0.15 s), talker close (DRR about +5 dB, SNR 30 dB);
- ``far``: the same room barer (RT60 0.3 s), talker further off (DRR about −4 dB, SNR 25 dB).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.signal import fftconvolve

RATE = 16000
SIZE = (5.0, 4.0, 2.7)  # metres
MIC = (1.0, 2.0, 0.9)  # on a side table
FAN = (4.6, 0.4, 0.4)  # on the floor in a corner


@dataclass(frozen=True)
class Room:
    name: str
    rt60_s: float
    drr_db: float  # the target direct-to-reverberant ratio at the microphone
    snr_db: float


# RT60s that let the targets be met inside the room (0.35 s gave at best +0.4 dB at 0.2 m)
ROOMS = {"near": Room("near", 0.15, 5.0, 30.0), "far": Room("far", 0.3, -4.0, 25.0)}


@dataclass(frozen=True)
class Acoustics:
    """One room's impulse responses (talker → mic, fan → mic), the talker's distance and its DRR."""

    room: Room
    talker: np.ndarray
    fan: np.ndarray
    distance_m: float
    drr_db: float


def drr(rir: np.ndarray, rate: int = RATE) -> float:
    """Direct-to-reverberant ratio (dB): the energy within 2.5 ms of the direct path's peak against the rest."""
    peak = int(np.argmax(np.abs(rir)))
    half = int(0.0025 * rate)
    direct = float(np.sum(rir[max(0, peak - half): peak + half] ** 2))
    rest = float(np.sum(rir ** 2)) - direct
    return 10 * np.log10(direct / max(rest, 1e-12))


def _rir(rt60_s: float, source: tuple[float, float, float]) -> np.ndarray:
    import pyroomacoustics as pra

    absorption, max_order = pra.inverse_sabine(rt60_s, SIZE)
    shoebox = pra.ShoeBox(SIZE, fs=RATE, materials=pra.Material(absorption), max_order=max_order)
    shoebox.add_source(list(source))
    shoebox.add_microphone(list(MIC))
    shoebox.compute_rir()
    return np.asarray(shoebox.rir[0][0], dtype=np.float64)


@cache
def acoustics(name: str) -> Acoustics:
    """The room ``name``: the talker at the distance (0.2–2.5 m along the room) nearest its target DRR."""
    room = ROOMS[name]
    best: tuple[float, float, np.ndarray] | None = None
    for distance in np.arange(0.2, 2.51, 0.1):
        rir = _rir(room.rt60_s, (MIC[0] + float(distance), MIC[1], 1.5))
        found = drr(rir)
        if best is None or abs(found - room.drr_db) < abs(best[1] - room.drr_db):
            best = (float(distance), found, rir)
    assert best is not None
    return Acoustics(room, best[2], _rir(room.rt60_s, FAN), round(best[0], 2), round(best[1], 1))


def fan_noise(samples: int, seed: int = 7) -> np.ndarray:
    """Steady fan noise: pink noise with a hum at the blade rate (unit RMS)."""
    rng = np.random.default_rng(seed)
    spectrum = np.fft.rfft(rng.standard_normal(samples))
    freqs = np.fft.rfftfreq(samples, 1 / RATE)
    spectrum /= np.sqrt(np.maximum(freqs, 20.0))  # pink: 3 dB per octave down
    noise = np.fft.irfft(spectrum, samples)
    t = np.arange(samples) / RATE
    noise += 0.3 * np.std(noise) * np.sin(2 * np.pi * 120.0 * t)
    return noise / np.std(noise)


def voiced_power(speech: np.ndarray) -> float:
    """Mean power of the speech where it is voiced (20 ms frames within 30 dB of the loudest)."""
    frames = speech[: len(speech) // 320 * 320].reshape(-1, 320)
    power = np.mean(frames ** 2, axis=1)
    loud = power > power.max() * 1e-3
    return float(np.mean(power[loud])) if loud.any() else 0.0


def through(name: str, timeline: np.ndarray, voiced: float) -> np.ndarray:
    """``timeline`` (speech at 16 kHz, float) as the microphone in room ``name`` hears it; ``voiced`` is
    the dry speech's voiced power, so the noise level is the same whatever the silences around it."""
    if name == "clean":
        return timeline.astype(np.float32)
    a = acoustics(name)
    wet = fftconvolve(timeline, a.talker)[: len(timeline)]
    gain = float(np.sum(a.talker ** 2))  # the room's energy gain on speech
    fan = fftconvolve(fan_noise(len(timeline)), a.fan)[: len(timeline)]
    fan *= np.sqrt(voiced * gain / 10 ** (a.room.snr_db / 10) / np.mean(fan ** 2))
    mixed = wet + fan
    peak = float(np.max(np.abs(mixed)))
    return (mixed / peak * 0.7 if peak > 0.7 else mixed).astype(np.float32)
