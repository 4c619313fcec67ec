"""The linear echo canceller (libspeexdsp's MDF through ctypes) on real recordings."""

from __future__ import annotations

import numpy as np
import pytest

from assistant.audio import linear_echo
from assistant.audio.linear_echo import LinearEchoCanceller, LinearEchoError
from tests.conftest import real

RATE = 16000


def run(canceller: LinearEchoCanceller, mic: np.ndarray, ref: np.ndarray, chunk: int = 512) -> np.ndarray:
    n = len(mic) - len(mic) % chunk
    return np.concatenate([canceller.process(mic[i:i + chunk], ref[i:i + chunk]) for i in range(0, n, chunk)])


def db(a: np.ndarray, b: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(a.astype(np.float64) ** 2) / np.sum(b.astype(np.float64) ** 2)))


@pytest.fixture
def room() -> tuple[np.ndarray, np.ndarray]:
    """A real voice played (greeting_10s.wav) and heard back at half level 40 ms later."""
    played = real("greeting_10s.wav")
    echo = np.zeros_like(played)
    echo[640:] = 0.5 * played[:-640]
    return echo, played


def test_the_echo_of_real_speech_is_cancelled_once_the_filter_has_learnt_the_room(room):
    echo, played = room
    out = run(LinearEchoCanceller(RATE), echo, played)
    learnt = slice(2 * RATE, 6 * RATE)
    assert db(echo[learnt], out[learnt]) > 10  # measured 14–26 dB a second; AEC3 adds its suppressor to this


def test_the_user_alone_passes_as_spoken():
    voice = real("ask_who_are_you.wav")
    out = run(LinearEchoCanceller(RATE), voice, np.zeros_like(voice))
    n = len(out)
    assert abs(db(voice[:n], out)) < 0.5  # only its DC filter acts: no suppressor
    assert np.corrcoef(voice[:n], out)[0, 1] > 0.98  # measured 0.986: its DC notch


def test_whole_frames_have_no_delay_and_other_chunks_one_frame(room):
    echo, played = room
    whole = run(LinearEchoCanceller(RATE), echo, played, chunk=512)
    frames = run(LinearEchoCanceller(RATE), echo, played, chunk=128)
    assert np.array_equal(frames[:len(whole)], whole)
    odd = run(LinearEchoCanceller(RATE, frame=128), echo, played, chunk=100)
    n = min(len(odd) - 128, len(whole))
    assert np.array_equal(odd[128:128 + n], whole[:n])


def test_reset_forgets_the_room(room):
    echo, played = room
    canceller = LinearEchoCanceller(RATE)
    first = run(canceller, echo, played)
    canceller.reset()
    assert np.array_equal(run(canceller, echo, played), first)


def test_a_closed_canceller_starts_a_new_stream(room):
    echo, played = room
    canceller = LinearEchoCanceller(RATE)
    first = run(canceller, echo, played)
    canceller.close()
    canceller.close()  # twice is harmless
    assert np.array_equal(run(canceller, echo, played), first)


def test_a_missing_library_is_one_line_that_names_the_package(monkeypatch):
    monkeypatch.setattr(linear_echo, "LIBRARY", "libspeexdsp-not-installed.so.1")
    monkeypatch.setattr(linear_echo, "find_library", lambda name: None)
    with pytest.raises(LinearEchoError, match="apt install libspeexdsp1") as err:
        LinearEchoCanceller(RATE)
    assert "\n" not in str(err.value)


def test_mismatched_chunks_are_refused():
    with pytest.raises(ValueError, match="same length"):
        LinearEchoCanceller(RATE).process(np.zeros(512, np.float32), np.zeros(256, np.float32))
