"""Listening: find where the request starts and ends, or give up when nobody speaks.

Endpointing runs on VAD windows in sample counts: the utterance ends after
``vad.endpoint_silence_ms`` of silence or at ``listening.max_utterance_s``; if no speech starts
within the no-speech timeout (the follow-up window after a reply) the assistant goes back to idle.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import structlog

from assistant.audio.protocols import Samples
from assistant.events import SpeechEnded, SpeechStarted
from states.onset import OnsetDetector
from states.state import State, VadWindow

log = structlog.get_logger("listening")


@dataclass(frozen=True)
class Utterance:
    """Where a request began and ended (absolute samples) and why it ended."""

    start: int
    end: int
    trailing_silence: int
    reason: str


class Endpointer:
    """Utterance boundaries from VAD windows; every duration is in samples."""

    def __init__(self, *, window: int, min_speech: int, endpoint_silence: int, max_utterance: int,
                 onset: int | None = None) -> None:
        self.window = window
        self.endpoint_silence = endpoint_silence
        self.max_utterance = max_utterance
        self.onset = onset
        self._detector = OnsetDetector(min_speech, window)
        self._silence = 0

    def feed(self, windows: Iterable[VadWindow]) -> tuple[int | None, Utterance | None]:
        """(onset if speech started in these windows, the utterance if it ended in them)."""
        started = None
        for w in windows:
            if self.onset is None:
                self.onset = started = self._detector.feed([w])
                continue
            self._silence = 0 if w.speech else self._silence + self.window
            if self._silence >= self.endpoint_silence:
                return started, Utterance(self.onset, w.end, self._silence, "silence")
            if w.end - self.onset >= self.max_utterance:
                return started, Utterance(self.onset, w.end, self._silence, "max_utterance")
        return started, None


class Listening(State):
    name = "listening"

    async def enter(self, trigger: str, kwargs: dict[str, Any]) -> None:
        s, cfg = self.session, self.session.cfg
        rate = cfg.audio.sample_rate
        s.new_turn()
        onset = kwargs.get("onset")
        follow_up = trigger == "reply_done"
        timeout_s = cfg.dialog.follow_up_s if follow_up else cfg.listening.no_speech_timeout_s
        self.deadline = s.clock.samples + int(timeout_s * rate)
        self.endpointer = Endpointer(
            window=s.vad_window, min_speech=cfg.vad.min_speech_ms * rate // 1000,
            endpoint_silence=cfg.vad.endpoint_silence_ms * rate // 1000,
            max_utterance=int(cfg.listening.max_utterance_s * rate), onset=onset)
        if onset is not None:
            s.bus.publish(SpeechStarted())
        log.debug("listening", follow_up=follow_up, timeout_s=timeout_s, from_onset=onset)

    async def on_audio(self, chunk: Samples, windows: list[VadWindow]) -> None:
        s = self.session
        started, utterance = self.endpointer.feed(windows)
        if started is not None:
            s.bus.publish(SpeechStarted())
        if utterance is not None:
            rate = s.cfg.audio.sample_rate
            audio = s.history.slice(utterance.start - s.cfg.vad.preroll_ms * rate // 1000, utterance.end)
            s.bus.publish(SpeechEnded(audio_s=round(len(audio) / rate, 3)))
            log.info("utterance ended", reason=utterance.reason, audio_s=round(len(audio) / rate, 2))
            await s.fire("speech_end", utterance=audio)
        elif self.endpointer.onset is None and s.clock.samples >= self.deadline:
            await s.fire("no_speech_timeout")
