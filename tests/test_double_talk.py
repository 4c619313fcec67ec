"""Double talk from the linear canceller (assistant/audio/double_talk.py), on real recordings: a
reply of real speech (car_commands_68s.wav) heard back at half level 40 ms later, and a real request
(ask_who_are_you.wav) said over it."""

from __future__ import annotations

import numpy as np
import pytest

from assistant.audio.double_talk import DoubleTalk, db, power
from assistant.audio.linear_echo import LinearEchoCanceller
from tests.conftest import real

RATE = 16000
WINDOW = 512  # silero's window at 16 kHz
CHUNK = 320  # the session's 20 ms chunks: the canceller's output lags by one of its frames


@pytest.fixture(scope="module")
def reply() -> np.ndarray:
    return real("car_commands_68s.wav")[:10 * RATE]


def judged(played: np.ndarray, user: np.ndarray, chunk: int = CHUNK) -> dict[int, bool]:
    """Every window's verdict (by its end sample), the microphone hearing ``user`` over the echo."""
    mic = user.copy()
    mic[640:] += 0.5 * played[:-640]
    canceller, talk = LinearEchoCanceller(RATE), DoubleTalk(RATE, WINDOW)
    verdicts: dict[int, bool] = {}
    for i in range(0, len(mic) - chunk + 1, chunk):
        out = canceller.process(mic[i:i + chunk], played[i:i + chunk])
        talk.feed(mic[i:i + chunk], out, played[i:i + chunk], canceller.lag)
        end = (i + chunk) // WINDOW * WINDOW
        for e in range(WINDOW, end + 1, WINDOW):
            verdicts.setdefault(e, talk.at(e))
    canceller.close()
    return verdicts


def request_at(played: np.ndarray, at_s: float) -> np.ndarray:
    user = np.zeros_like(played)
    request = real("ask_who_are_you.wav")
    start = int(at_s * RATE)
    user[start:start + len(request)] = request[:len(played) - start]
    return user


def voiced(signal: np.ndarray, end: int) -> bool:
    return db(power(signal[end - WINDOW:end])) > -40


@pytest.mark.parametrize("at_s", [2.0, 4.0, 6.0])
def test_the_user_over_the_reply_is_double_talk_once_the_canceller_has_learnt_the_room(reply, at_s):
    user = request_at(reply, at_s)
    verdicts = judged(reply, user)
    over = [e for e in verdicts if voiced(user, e) and voiced(reply, e - 640)]  # both talking
    assert len(over) > 40
    assert sum(verdicts[e] for e in over) >= 0.7 * len(over)  # measured 56–59 of 64–69
    echo_only = [e for e, talk in verdicts.items() if talk and not voiced(user, e)]
    assert echo_only == []


def test_the_echo_alone_is_never_double_talk(reply):
    assert not any(judged(reply, np.zeros_like(reply)).values())


def test_a_canceller_that_has_not_learnt_the_room_says_nothing(reply):
    user = request_at(reply, 0.6)  # over the reply's first second: the filter has not converged
    verdicts = judged(reply, user)
    assert not any(talk for e, talk in verdicts.items() if e < 1.5 * RATE)


def test_without_a_reply_there_is_no_double_talk(reply):
    user = request_at(reply, 1.0)
    assert not any(judged(np.zeros_like(reply), user).values())


def test_a_window_is_judged_on_the_output_it_made_whatever_the_chunks(reply):
    user = request_at(reply, 4.0)
    odd, whole = judged(reply, user, CHUNK), judged(reply, user, WINDOW)
    agree = sum(odd[e] == whole[e] for e in whole if e in odd)
    assert agree >= 0.95 * len(whole)


def test_a_window_not_judged_yet_or_long_gone_is_no_double_talk():
    talk = DoubleTalk(RATE, WINDOW)
    assert not talk.at(WINDOW)
    talk.feed(np.zeros(WINDOW, np.float32), np.zeros(WINDOW, np.float32), np.zeros(WINDOW, np.float32))
    assert not talk.at(WINDOW) and not talk.at(2 * WINDOW)


def test_the_user_in_a_pause_of_the_reply_is_left_to_the_vad(reply):
    paused = reply.copy()
    paused[5 * RATE:] = 0.0  # the reply stops (a pause, or its end), the canceller still learnt
    user = request_at(paused, 5.5)
    assert not any(judged(paused, user).values())  # no echo to find the user over: AEC3 lets them through
