"""The hands-free sessions the replay tests use: real recordings and synthesized speech laid out on
one microphone timeline, with the times the tests assert against.

The recordings are from ../shared/audio/real/ (see ../shared/README.md); a wake word spoken alone
is synthesized by the real TTS. Speech onsets inside the clips were measured once with the silero
VAD (first window above 0.5) and are written down here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from assistant.audio.resample import resample
from models.protocols import Tts
from tests.conftest import RATE, real, session_of, silence

# Where speech begins inside each clip, in seconds (silero VAD, measured once).
# hey_xiaozhi.wav: 嘿，小智你在吗 ends at 1.80 s; 今天怎么样 begins at 2.08 s.
HEY_XIAOZHI_FIRST_QUESTION_S = 1.95
ONSET_S = {"cmd_qiehuan_1.wav": 0.704, "ask_who_are_you.wav": 0.352, "hey_xiaozhi.wav": 0.256,
           "cmd_qiehuan_6.wav": 0.544}


@dataclass
class Layout:
    """A session's microphone audio and the named moments in it (seconds)."""

    parts: list[np.ndarray] = field(default_factory=list)
    marks: dict[str, float] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return sum(len(p) for p in self.parts) / RATE

    def add(self, audio: np.ndarray, mark: str | None = None, onset_s: float = 0.0) -> Layout:
        if mark is not None:
            self.marks[mark] = round(self.seconds + onset_s, 3)
        self.parts.append(audio.astype(np.float32))
        return self

    def clip(self, name: str, mark: str | None = None) -> Layout:
        return self.add(real(name), mark, ONSET_S.get(name, 0.0))

    def pause_until(self, t: float) -> Layout:
        """Silence up to session time ``t`` (at least none)."""
        return self.add(silence(max(0.0, t - self.seconds)))

    def pause(self, seconds: float) -> Layout:
        return self.add(silence(seconds))

    @property
    def audio(self) -> np.ndarray:
        return session_of(*self.parts)


async def spoken(tts: Tts, text: str) -> np.ndarray:
    """``text`` said by the real TTS, at the microphone's rate.

    A keyword said by Kokoro is rendered as the whole model renders it (every frame): the keyword
    spotter is borderline on a lone synthesized 小智 or 别说了, and hears the voiced-only rendering
    less often. These are the test's microphone input, not what the assistant says.
    """
    voiced, first = getattr(tts, "voiced_only", None), getattr(tts, "first_frames", None)
    if voiced is not None:
        tts.voiced_only, tts.first_frames = False, 0  # type: ignore[attr-defined]
    try:
        audio = np.concatenate([a async for a in tts.synthesize(text)])
    finally:
        if voiced is not None:
            tts.voiced_only, tts.first_frames = voiced, first  # type: ignore[attr-defined]
    return resample(audio, tts.sample_rate, RATE)


def wake_and_request() -> np.ndarray:
    """"嘿，小智你在吗？" from hey_xiaozhi.wav: the wake word and the request in one breath (the
    clip's second question, 今天怎么样, after a pause, is left out)."""
    return real("hey_xiaozhi.wav")[:int(HEY_XIAOZHI_FIRST_QUESTION_S * RATE)]


def paused_request() -> Layout:
    """The whole of hey_xiaozhi.wav: 嘿，小智你在吗？ [0.28 s] 今天怎么样？, then quiet."""
    return Layout().pause(0.5).clip("hey_xiaozhi.wav", "request").pause(14.0)


def one_turn() -> Layout:
    """The wake word and a request in one breath, then quiet."""
    return Layout().pause(0.5).add(wake_and_request(), "request", ONSET_S["hey_xiaozhi.wav"]).pause(14.0)


def interrupted_turn(playback_start_s: float, after_s: float = 1.0,
                     request: tuple[np.ndarray, float] | None = None) -> Layout:
    """One turn, and about ``after_s`` into the reply the user says 切换前视 over it (the first request
    as in double_talk_turn)."""
    audio, onset = request or (wake_and_request(), ONSET_S["hey_xiaozhi.wav"])
    layout = Layout().pause(0.5).add(audio, "request", onset)
    layout.pause_until(playback_start_s + after_s - ONSET_S["cmd_qiehuan_1.wav"])
    return layout.clip("cmd_qiehuan_1.wav", "interruption").pause(10.0)


def double_talk_turn(playback_start_s: float, after_s: float = 1.0,
                     request: tuple[np.ndarray, float] | None = None) -> Layout:
    """One turn, and ``after_s`` into the reply the user asks 告诉我，你是谁？你叫什么名字？ over it
    (a real request, louder than a command word, under the loud echo of the reply). The first
    request is ``request`` (audio, its onset in seconds), by default wake_and_request()."""
    audio, onset = request or (wake_and_request(), ONSET_S["hey_xiaozhi.wav"])
    layout = Layout().pause(0.5).add(audio, "request", onset)
    layout.pause_until(playback_start_s + after_s - ONSET_S["ask_who_are_you.wav"])
    return layout.clip("ask_who_are_you.wav", "interruption").pause(12.0)


def two_turns(second_at_s: float) -> Layout:
    """One turn, then a second request (no wake word) at ``second_at_s``, in the follow-up window."""
    layout = Layout().pause(0.5).add(wake_and_request(), "request", ONSET_S["hey_xiaozhi.wav"])
    return layout.pause_until(second_at_s).clip("ask_who_are_you.wav", "follow_up").pause(14.0)


async def wake_then_silence(tts: Tts) -> Layout:
    """The wake word alone (synthesized), then nobody speaks."""
    return Layout().pause(0.5).add(await spoken(tts, "小智。"), "wake_word").pause(10.0)
