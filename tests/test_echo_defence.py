"""The echo defence on its own (states/echo_defence.py): which signal the ASR hears, what was said,
and the checks that compare the two; no session, no models."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from assistant.clock import SampleClock
from assistant.events import EchoIgnored, EventBus, PlaybackFinished, TextChunk
from states.echo_defence import EchoDefence
from tests.conftest import make_config, real

RATE = 16000
CHUNK = 512


class Defence:
    """An EchoDefence with its clock and bus, and the events it published."""

    def __init__(self, *overrides: str) -> None:
        self.clock = SampleClock(RATE)
        self.bus = EventBus(self.clock)
        self.events: list[Any] = []
        self.bus.subscribe(lambda t, e: self.events.append(e))
        self.echo = EchoDefence(make_config(*overrides), self.clock, self.bus, 30 * RATE)

    def hear(self, mic: np.ndarray, played: np.ndarray) -> np.ndarray:
        """Run the audio through ``clean`` chunk by chunk, as the pump does; the AEC3 history."""
        out = []
        for i in range(0, len(mic) - len(mic) % CHUNK, CHUNK):
            out.append(self.echo.clean(mic[i:i + CHUNK], played[i:i + CHUNK]))
            self.clock.advance(CHUNK)
        return np.concatenate(out)

    def ignored(self) -> list[tuple[str, str]]:
        return [(e.layer, e.detail) for e in self.events if isinstance(e, EchoIgnored)]


class History:
    """What the states heard, as the session keeps it."""

    def __init__(self, audio: np.ndarray) -> None:
        self.audio = audio

    def slice(self, start: int, stop: int) -> np.ndarray:
        return self.audio[start:stop]


@pytest.fixture
def double_talk() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A real voice played and heard back at half level 40 ms later, and from 4 s the user over it."""
    played = real("greeting_10s.wav")[:8 * RATE]
    user = np.zeros_like(played)
    request = real("ask_who_are_you.wav")
    user[4 * RATE:4 * RATE + len(request)] = request[:4 * RATE]
    mic = user.copy()
    mic[640:] += 0.5 * played[:-640]
    return mic, played, user


def test_speech_that_begins_over_the_reply_is_cut_from_the_linear_canceller(double_talk):
    mic, played, user = double_talk
    d = Defence("echo.cancel=true")
    aec3 = d.hear(mic, played)
    d.echo.playback_started()
    span = (4 * RATE, 6 * RATE)
    linear = d.echo.heard(History(aec3), *span)
    assert not np.array_equal(linear, aec3[span[0]:span[1]])
    # The linear signal keeps the user: it correlates with the voice better than AEC3's does.
    voice = user[span[0]:span[1]]
    assert np.corrcoef(linear, voice)[0, 1] > np.corrcoef(aec3[span[0] + 288:span[1] + 288], voice)[0, 1]


def test_speech_long_after_playback_is_cut_from_what_the_states_heard_when_so_configured(double_talk):
    mic, played, _ = double_talk
    d = Defence("echo.cancel=true", "echo.transcript_window_s=1.0", 'echo.asr_hears="cancelled"')
    d.hear(mic, played)
    d.echo.playback_started()
    d.bus.publish(PlaybackFinished(interrupted=False))  # at 7.97 s
    late = d.clock.samples + 2 * RATE
    assert not d.echo.near_playback(late)
    assert np.array_equal(d.echo.heard(History(np.ones(20 * RATE, np.float32)), late, late + 10), np.ones(10))
    assert d.echo.near_playback(d.clock.samples + RATE // 2)


def test_away_from_playback_the_asr_hears_the_microphone_as_captured(double_talk):
    # AEC3's filters cost Whisper even with nothing played (benchmarks/asr_settings.py): by default the
    # ASR hears the microphone itself, and the linear canceller's output only near playback
    mic, played, _ = double_talk
    d = Defence("echo.cancel=true", "echo.transcript_window_s=1.0")
    d.hear(mic[:4 * RATE], np.zeros(4 * RATE, np.float32))  # nobody played anything yet
    quiet = (RATE, 3 * RATE)
    states_heard = History(np.ones(20 * RATE, np.float32))
    assert np.array_equal(d.echo.heard(states_heard, *quiet), mic[quiet[0]:quiet[1]])
    d.echo.playback_started()
    rest = slice(4 * RATE, 8 * RATE - 8 * RATE % CHUNK)
    d.hear(mic[rest], played[rest])
    over = (5 * RATE, 6 * RATE)
    linear = d.echo.heard(states_heard, *over)
    assert not np.array_equal(linear, mic[over[0]:over[1]])  # the echo subtracted while it played
    assert np.std(linear) < np.std(mic[over[0]:over[1]])


@pytest.mark.parametrize("overrides", [("echo.cancel=true", "echo.linear=false"), ("echo.cancel=false",)])
def test_without_the_linear_canceller_the_asr_hears_what_the_states_heard(overrides):
    d = Defence(*overrides)
    d.echo.playback_started()
    states_heard = History(np.arange(100, dtype=np.float32))
    assert np.array_equal(d.echo.heard(states_heard, 10, 20), np.arange(10, 20, dtype=np.float32))
    assert d.echo.linear is None


def test_no_canceller_counts_nothing_and_passes_the_microphone():
    d = Defence("echo.cancel=false")
    chunk = np.full(CHUNK, 0.1, np.float32)
    assert d.echo.clean(chunk, np.zeros(CHUNK, np.float32)) is chunk
    assert d.echo.cancelled() is None


def test_the_canceller_counts_the_echo_it_removed(double_talk):
    mic, played, _ = double_talk
    d = Defence("echo.cancel=true")
    d.hear(mic[:4 * RATE], played[:4 * RATE])
    counted = d.echo.cancelled()
    assert counted is not None and counted.echo_chunks > 50 and counted.erle_db > 10


def test_own_words_and_transcripts_are_compared_with_the_last_two_replies():
    d = Defence()
    for reply in (["好的，", "小智在这里。"], ["今天天气很好，", "适合出门。"], ["北京是中国的首都。"]):
        d.echo.reply_started()
        for text in reply:
            d.bus.publish(TextChunk(text=text))
    assert d.echo.spoken_texts() == ["今天天气很好，适合出门。", "北京是中国的首都。"]
    d.echo.playback_started()
    assert d.echo.is_own_echo("天气很好适合出门", 0)  # runs across the reply's chunks
    assert not d.echo.is_own_echo("小智在这里", 0)  # the oldest reply is forgotten
    assert not d.echo.said_it_myself("小智")
    assert d.echo.said_it_myself("北京")
    assert d.ignored() == [("transcript", "天气很好适合出门"), ("own_words", "北京")]


@pytest.mark.parametrize("overrides", [("echo.own_words=false", "echo.transcript_filter=false")])
def test_each_check_can_be_switched_off(overrides):
    d = Defence(*overrides)
    d.echo.reply_started()
    d.bus.publish(TextChunk(text="别说了，我在听。"))
    d.echo.playback_started()
    assert not d.echo.said_it_myself("别说了")
    assert not d.echo.is_own_echo("别说了我在听", 0)
    assert d.ignored() == []


def test_the_echo_tail_ends_its_length_after_playback_stopped():
    d = Defence("echo.cancel=true", "echo.tail_ms=300")
    assert d.echo.tail_end() == 0  # nothing played yet
    d.clock.advance(RATE)
    d.bus.publish(PlaybackFinished(interrupted=True))
    assert d.echo.tail_end() == RATE + 300 * RATE // 1000
    without = Defence("echo.cancel=false")
    without.bus.publish(PlaybackFinished(interrupted=True))
    assert without.echo.tail_end() == 0  # no canceller: nothing suppresses the user


def test_the_echo_window_ends_its_length_after_playback_starts():
    d = Defence("speaking.echo_window_ms=250")
    assert d.echo.window_end(16000) == 16000 + 4000
    d.echo.window_muted()
    assert d.ignored() == [("echo_window", "speech right after playback started")]


@pytest.mark.parametrize(("overrides", "finds"), [
    ((), True),
    (("barge_in.double_talk=false",), False),
    (("echo.linear=false",), False),
])
def test_the_linear_canceller_tells_the_user_over_the_reply(overrides, finds):
    played = real("car_commands_68s.wav")[:7 * RATE]  # speech all through, unlike greeting_10s
    user = np.zeros_like(played)
    request = real("ask_who_are_you.wav")
    user[4 * RATE:4 * RATE + len(request)] = request[:3 * RATE]
    mic = user.copy()
    mic[640:] += 0.5 * played[:-640]
    d = Defence("echo.cancel=true", *overrides)
    talk = []
    for end in range(CHUNK, len(mic) + 1, CHUNK):  # asked as the session asks: right after each window
        d.hear(mic[end - CHUNK:end], played[end - CHUNK:end])
        talk += [end] if d.echo.talk(end) else []
    counted = d.echo.cancelled()
    assert counted is not None
    if finds:
        assert len(talk) > 30 and min(talk) >= 4 * RATE  # the user's windows only (measured 56–59 of 64–69)
        assert counted.double_talk_windows == len(talk) and counted.linear_learnt  # summary.json's account
    else:
        assert talk == []
        assert counted.double_talk_windows is None and counted.linear_learnt is None
