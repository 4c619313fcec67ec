"""The second VAD of a barge-in (states/talk_ear.py): fed only near a reply, warmed when armed, and
its windows in step with the first VAD's; a real echo defence, a counting stand-in for silero."""

from __future__ import annotations

import numpy as np

from assistant.clock import SampleClock
from assistant.events import EventBus, PlaybackFinished
from states.echo_defence import EchoDefence
from states.talk_ear import WARM_S, TalkEar
from tests.conftest import make_config, real

RATE = 16000
WINDOW = 512
CHUNK = 320  # 20 ms, as configured: not a whole number of VAD windows


class CountingVad:
    """One probability per complete window of what it heard since its last reset."""

    window_samples = WINDOW

    def __init__(self) -> None:
        self.pending = 0
        self.fed = 0
        self.resets = 0

    def reset(self) -> None:
        self.pending = 0
        self.resets += 1

    async def accept(self, samples: np.ndarray) -> list[float]:
        self.fed += len(samples)
        self.pending += len(samples)
        done, self.pending = divmod(self.pending, WINDOW)
        return [0.5] * done


class Room:
    """The pump's part of it: the echo defence cleans each chunk, both VADs hear it."""

    def __init__(self) -> None:
        self.clock = SampleClock(RATE)
        self.bus = EventBus(self.clock)
        self.echo = EchoDefence(make_config("echo.cancel=true"), self.clock, self.bus, 30 * RATE, WINDOW)
        self.first, self.second = CountingVad(), CountingVad()
        self.ear = TalkEar(self.second, self.echo, RATE, WINDOW)
        self.voice = real("greeting_10s.wav")
        self.at = 0

    async def hear(self, seconds: float, *, playing: bool) -> list[tuple[int, int]]:
        """``seconds`` of the room, the reply playing or not; per chunk, (first VAD's windows, second's)."""
        counts = []
        for _ in range(int(seconds * RATE) // CHUNK):
            played = self.voice[self.at:self.at + CHUNK] if playing else np.zeros(CHUNK, np.float32)
            self.echo.clean(0.5 * played, played)
            self.clock.advance(CHUNK)
            self.at += CHUNK
            counts.append((len(await self.first.accept(played)), len(await self.ear.hear())))
        return counts


async def test_the_second_vad_hears_only_near_a_reply_and_keeps_the_first_vads_windows():
    room = Room()
    idle = await room.hear(3.0, playing=False)
    assert room.second.fed == 0 and all(second == 0 for _, second in idle)

    room.echo.playback_started()
    reply = await room.hear(2.0, playing=True)
    assert room.second.resets == 1  # armed once: reset, then warmed
    assert [first for first, _ in reply] == [second for _, second in reply]  # the windows end together
    warmed = room.second.fed - 2.0 * RATE
    assert WARM_S * RATE - WINDOW < warmed <= WARM_S * RATE + WINDOW  # a second before, from a window's start

    room.bus.publish(PlaybackFinished(interrupted=False))
    tail = await room.hear(room.echo.cfg.echo.transcript_window_s, playing=False)
    assert [first for first, _ in tail] == [second for _, second in tail]  # the echo's tail is still heard
    fed = room.second.fed
    after = await room.hear(2.0, playing=False)
    assert room.second.fed == fed and all(second == 0 for _, second in after)

    room.echo.playback_started()  # the next reply: armed again, from a fresh state
    again = await room.hear(1.0, playing=True)
    assert room.second.resets == 2
    assert [first for first, _ in again] == [second for _, second in again]


async def test_without_a_second_vad_or_a_linear_canceller_nothing_is_heard():
    room = Room()
    room.echo.playback_started()
    assert await TalkEar(None, room.echo, RATE, WINDOW).hear() == []
    plain = EchoDefence(make_config("echo.cancel=true", "echo.linear=false"), room.clock, room.bus, 30 * RATE, WINDOW)
    plain.playback_started()
    plain.clean(np.zeros(CHUNK, np.float32), np.zeros(CHUNK, np.float32))
    assert await TalkEar(CountingVad(), plain, RATE, WINDOW).hear() == []
