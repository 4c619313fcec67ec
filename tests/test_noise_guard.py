"""The noise-onset guard on real speech onsets and synthesized noise onsets (door slam, hiss, fan).

Speech onsets are found without the VAD: the first 32 ms frame 20 dB above the clip's quiet level
(its 10th-percentile frame, floored at −70 dBFS for clips with digital silence) after at least
224 ms below it. Each is checked at the found frame and up to two frames (±64 ms) either side, for a
VAD that fires early or late.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from assistant.audio.protocols import Samples
from assistant.audio.wav import read_wav
from states.noise_guard import NoiseGuard, NoiseVerdict, spectral_flatness
from tests.conftest import REAL

RATE = 16000
FRAME = 512
BEFORE = round(0.3 * RATE)
ONSET = 4096  # 256 ms
MARGIN = 0.08  # flatness kept between the thresholds and both speech and noise
CLIPS = ["ask_who_are_you.wav", "greeting_10s.wav", "hey_xiaozhi.wav", "car_commands_68s.wav",
         *(f"cmd_qiehuan_{i}.wav" for i in range(1, 8))]


def white(seconds: float, dbfs: float, seed: int = 1) -> Samples:
    x = np.random.default_rng(seed).standard_normal(round(seconds * RATE))
    return np.asarray(x / np.sqrt(np.mean(x**2)) * 10 ** (dbfs / 20), np.float32)


def lowpassed(x: Samples, a: float) -> Samples:
    """White made pink-ish by a 1-pole low-pass y[n] = a·y[n-1] + (1-a)·x[n], rescaled to x's RMS."""
    y = np.empty(len(x))
    state = 0.0
    for i, v in enumerate(x.astype(np.float64)):
        state = a * state + (1 - a) * v
        y[i] = state
    return np.asarray(y * np.sqrt(np.mean(x.astype(np.float64) ** 2) / np.mean(y**2)), np.float32)


def slam(seconds: float, dbfs: float, tau: float = 0.05) -> Samples:
    """A door-slam-like burst: white noise decaying exponentially (time constant ``tau``), at ``dbfs``
    over its first ``tau``."""
    t = np.arange(round(seconds * RATE)) / RATE
    x = np.random.default_rng(2).standard_normal(len(t)) * np.exp(-t / tau)
    return np.asarray(x / np.sqrt(np.mean(x[: round(tau * RATE)] ** 2)) * 10 ** (dbfs / 20), np.float32)


def frame_db(x: Samples) -> np.ndarray:
    n = len(x) // FRAME
    power = np.mean(x[: n * FRAME].reshape(n, FRAME).astype(np.float64) ** 2, axis=1)
    return np.asarray(10 * np.log10(power + 1e-12), np.float64)


@cache
def clip(name: str) -> Samples:
    """A real recording with 512 ms of digital silence ahead, so that its first onset has a 'before'."""
    return np.concatenate([np.zeros(16 * FRAME, np.float32), read_wav(REAL / name, RATE)])


def onsets(x: Samples, quiet_frames: int = 7) -> list[int]:
    db = frame_db(x)
    threshold = max(float(np.percentile(db, 10)), -70.0) + 20.0
    found, quiet = [], quiet_frames
    for i, level in enumerate(db):
        if level >= threshold:
            if quiet >= quiet_frames:
                found.append(i * FRAME)
            quiet = 0
        else:
            quiet += 1
    return found


def verdict_at(x: Samples, start: int) -> NoiseVerdict:
    return NoiseGuard().check(x[start - BEFORE:start], x[start:start + ONSET])


def test_spectral_flatness() -> None:
    rng = np.random.default_rng(0)
    noise = [spectral_flatness(rng.standard_normal(FRAME).astype(np.float32)) for _ in range(200)]
    t = np.arange(FRAME) / RATE
    tone = np.sum([np.sin(2 * np.pi * 200 * k * t + k) / k for k in range(1, 30)], axis=0).astype(np.float32)
    print(f"\nwhite noise flatness: min {min(noise):.3f} median {np.median(noise):.3f}; "
          f"200 Hz harmonics {spectral_flatness(tone):.3f}")
    assert min(noise) > 0.6 and np.median(noise) > 0.75
    assert spectral_flatness(tone) < 0.2
    for quiet in (np.zeros(FRAME, np.float32), np.zeros(0, np.float32), np.full(FRAME, 1e-30, np.float32)):
        assert spectral_flatness(quiet) == 0.0
    assert 0.0 < spectral_flatness(white(0.032, -90)) <= 1.0  # very quiet is still noise, not silence


@pytest.mark.parametrize("noise_dbfs", [None, -50.0, -60.0])
def test_real_speech_onsets_are_not_noise(noise_dbfs: float | None) -> None:
    guard, checked, car = NoiseGuard(), [], 0
    for name in CLIPS:
        x = clip(name)
        if noise_dbfs is not None:
            x = x + white(len(x) / RATE, noise_dbfs, seed=len(name))
        found = onsets(clip(name))
        car += len(found) if name.startswith("car") else 0
        for onset in found:
            for shift in range(-2, 3):
                v = verdict_at(x, onset + shift * FRAME)
                assert not v.noise, (name, onset, shift, v)
                checked.append(v)
    flat = np.array([v.flatness for v in checked])
    rise = np.array([v.rise_db for v in checked])
    rising, flat_ones = flat[rise >= guard.rise_db], rise[flat >= guard.flatness]
    flat_rise = f"{flat_ones.max():.1f} dB" if len(flat_ones) else "(none flat)"
    print(f"\nspeech, noise {noise_dbfs} dBFS: {len(checked)} checks; flatness {flat.min():.3f}..{flat.max():.3f}, "
          f"rise {rise.min():.1f}..{rise.max():.1f} dB; flatness of those rising ≥ {guard.rise_db} dB at most "
          f"{rising.max():.3f}; rise of those flat ≥ {guard.flatness} at most {flat_rise}")
    assert len(checked) >= 5 * 10 and car >= 5
    assert rising.max() <= guard.flatness - MARGIN  # a margin in flatness where speech rises sharply
    assert len(flat_ones) == 0 or flat_ones.max() <= guard.rise_db - 5  # and in rise where it looks flat


NOISES = {
    "white -20 after silence": (np.zeros(RATE, np.float32), white(0.6, -20)),
    "white -20 after -60 hiss": (white(1.0, -60, seed=3), white(0.6, -20)),
    "pink-ish -20 after -60 hiss": (white(1.0, -60, seed=3), lowpassed(white(0.6, -20), 0.5)),
    "pink-ish -20 after silence": (np.zeros(RATE, np.float32), lowpassed(white(0.6, -20), 0.5)),
    "door slam -10 after -60 hiss": (white(1.0, -60, seed=3), slam(0.6, -10) + white(0.6, -60, seed=4)),
    "door slam -20 after silence": (np.zeros(RATE, np.float32), slam(0.6, -20)),
}


@pytest.mark.parametrize("name", list(NOISES))
@pytest.mark.parametrize("lag", [0, 1])
def test_noise_onsets_are_noise(name: str, lag: int) -> None:
    """``lag``: the VAD fires a window after the noise began, so the noise is already in 'before'."""
    room, burst = NOISES[name]
    x = np.concatenate([room, burst]).astype(np.float32)
    guard = NoiseGuard()
    v = verdict_at(x, len(room) + lag * FRAME)
    print(f"\n{name}, lag {lag}: flatness {v.flatness:.3f} (margin {v.flatness - guard.flatness:+.3f}), "
          f"rise {v.rise_db:.1f} dB (margin {v.rise_db - guard.rise_db:+.1f})")
    assert v.noise
    assert v.flatness >= guard.flatness + MARGIN and v.rise_db >= guard.rise_db + 10


@pytest.mark.parametrize("dbfs", [-20.0, -40.0])
@pytest.mark.parametrize("pole", [0.0, 0.5])
def test_steady_noise_is_not_noise(dbfs: float, pole: float) -> None:
    x = white(1.0, dbfs)
    x = lowpassed(x, pole) if pole else x
    v = verdict_at(x, RATE // 2)
    print(f"\nsteady noise {dbfs} dBFS, pole {pole}: flatness {v.flatness:.3f}, rise {v.rise_db:.1f} dB")
    assert not v.noise and abs(v.rise_db) < 3 and v.flatness >= NoiseGuard().flatness


def test_odd_inputs_give_defined_verdicts() -> None:
    guard = NoiseGuard()
    empty, zeros = np.zeros(0, np.float32), np.zeros(4096, np.float32)
    for before, onset in [(empty, empty), (empty, zeros), (zeros, zeros), (zeros[:100], white(0.01, -20))]:
        v = guard.check(before, onset)
        assert not np.isnan(v.flatness) and not np.isnan(v.rise_db)
    assert not guard.check(zeros, zeros).noise  # silence does not rise
    assert guard.check(empty, white(0.256, -20)).noise  # nothing before counts as silence
    with pytest.raises(ValueError, match="positive"):
        NoiseGuard(0)
