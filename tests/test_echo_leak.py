"""The leak check (assistant/audio/echo_leak.py, EchoDefence.is_leak) on real recordings: a reply of
real speech heard back 40 ms later, as AEC3 lets it through when cold, against a real request said
over it with the echo cancelled."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import fftconvolve

from assistant.audio.echo_leak import LEAK_DB, MAX_LAG, SPAN, unexplained_db
from assistant.audio.history import AudioHistory
from tests.conftest import real
from tests.test_echo_defence import Defence

RATE = 16000
DELAY = 640 + 288  # the replays' 40 ms echo, and AEC3's own delay on top


@pytest.fixture(scope="module")
def reply() -> np.ndarray:
    return real("car_commands_68s.wav")[:8 * RATE]


@pytest.fixture(scope="module")
def asked() -> np.ndarray:
    return real("ask_who_are_you.wav")


def late(audio: np.ndarray, samples: int, gain: float = 0.5) -> np.ndarray:
    out = np.zeros_like(audio)
    out[samples:] = gain * audio[:-samples]
    return out


def judged(heard: np.ndarray, played: np.ndarray, end: int) -> float | None:
    return unexplained_db(heard[end - SPAN:end], played[end - SPAN - MAX_LAG:end])


def is_leak(heard: np.ndarray, played: np.ndarray, end: int) -> bool:
    """As EchoDefence.is_leak judges the 128 ms up to ``end``."""
    reading = judged(heard, played, end)
    return reading is not None and reading <= LEAK_DB


def loud_ends(audio: np.ndarray, start: int, stop: int) -> list[int]:
    """Window ends (every 64 ms) in ``[start, stop)`` whose last 128 ms of ``audio`` are speech, not a pause."""
    return [end for end in range(start, stop, 1024) if np.mean(audio[end - SPAN:end] ** 2) > 1e-4]


def test_the_echo_let_through_is_explained_by_what_was_played(reply: np.ndarray) -> None:
    heard = late(reply, DELAY)
    ends = loud_ends(heard, RATE, 7 * RATE)
    assert len(ends) > 20
    readings = [judged(heard, reply, end) for end in ends]
    assert all(r is not None and r < -20 for r in readings), readings
    assert all(is_leak(heard, reply, e) for e in ends)


def test_an_echo_with_early_reflections_is_still_a_leak(reply: np.ndarray) -> None:
    path = np.zeros(DELAY + 120)
    path[DELAY], path[DELAY + 37], path[DELAY + 111] = 0.3, -0.15, 0.08  # the last outside the fitted taps
    heard = fftconvolve(reply, path)[:len(reply)].astype(np.float32)
    ends = loud_ends(heard, RATE, 7 * RATE)
    assert sum(is_leak(heard, reply, e) for e in ends) >= 0.9 * len(ends)


def test_someone_talking_over_the_cancelled_echo_is_not(reply: np.ndarray, asked: np.ndarray) -> None:
    """The request as AEC3 passes it, with the echo 20 dB down: nothing played explains it."""
    user = np.zeros_like(reply)
    user[2 * RATE:2 * RATE + len(asked)] = asked[:6 * RATE]
    heard = user + late(reply, DELAY, 0.05)
    ends = loud_ends(user, 2 * RATE + SPAN, 2 * RATE + len(asked))
    readings = [judged(heard, reply, end) for end in ends]
    assert len(ends) > 20
    assert all(r is not None and r > LEAK_DB for r in readings), readings
    assert np.median([r for r in readings if r is not None]) > -1.5


def test_nothing_to_judge_in_silence(reply: np.ndarray) -> None:
    quiet = np.zeros(SPAN + MAX_LAG, np.float32)
    assert unexplained_db(reply[RATE:RATE + SPAN], quiet) is None  # nothing was played
    assert unexplained_db(quiet[:SPAN], reply[RATE:RATE + SPAN + MAX_LAG]) is None  # nothing came through
    with pytest.raises(ValueError, match="samples longer"):
        unexplained_db(reply[:SPAN], reply[:SPAN])


def test_the_defence_refuses_the_leak_and_says_so(reply: np.ndarray, asked: np.ndarray) -> None:
    d = Defence("echo.cancel=true")
    d.hear(late(reply, 640), reply)  # what the speaker played, fed as the pump feeds it
    assert d.echo.played is not None and d.echo.played.end == d.clock.samples
    leaked = AudioHistory(8 * RATE)
    leaked.append(late(reply, DELAY)[:d.clock.samples])  # AEC3 letting the echo through, in step
    assert d.echo.is_leak(leaked)
    assert [layer for layer, _ in d.ignored()] == ["leak"]
    talking = AudioHistory(8 * RATE)
    user = np.zeros(d.clock.samples, np.float32)
    said = asked[:loud_ends(asked, SPAN, len(asked))[0]]  # up to a moment of speech
    user[-len(said):] = said
    talking.append(user + late(reply, DELAY, 0.05)[:len(user)])
    assert not d.echo.is_leak(talking)
    assert len(d.ignored()) == 1


def test_the_check_is_off_without_the_canceller_or_when_switched_off(reply: np.ndarray) -> None:
    leaked = AudioHistory(8 * RATE)
    leaked.append(late(reply, DELAY))
    for overrides in (("echo.cancel=false",), ("echo.cancel=true", "echo.leak_check=false")):
        d = Defence(*overrides)
        d.hear(late(reply, 640), reply)
        assert d.echo.played is None
        assert not d.echo.is_leak(leaked)


def test_too_early_in_the_session_to_judge(reply: np.ndarray) -> None:
    d = Defence("echo.cancel=true")
    d.hear(late(reply, 640)[:2048], reply[:2048])
    leaked = AudioHistory(RATE)
    leaked.append(late(reply, DELAY)[:2048])
    assert not d.echo.is_leak(leaked)
