"""Idle: wait for the wake word, or (``wake.mode = "always"``) for any speech.

The keyword spotter fires a little after the wake word ends. If the speaker goes straight on
("小智小智，现在几点"), the request is in the same run of speech: listening is told where that run
began, and keeps it if the speech goes on (the wake word is taken off the transcript later).
The earcon is played only if the speaker has paused. With ``wake.verify`` a second stage checks
the spotter: the ASR must hear the wake word in the audio just before it fired (a satellite, with
no ASR of its own, has no second stage). Once a second, idle also asks the tools for reminders that
have fallen due, and speaks them unasked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from assistant.audio.earcon import chime
from assistant.audio.protocols import Samples
from assistant.audio.resample import resample
from assistant.events import WakeDetected, WakeRejected
from assistant.text.echo_match import match
from states.inputs import Input, Remind, Wake
from states.onset import OnsetDetector
from states.state import State, VadWindow

if TYPE_CHECKING:
    from models.protocols import Asr

log = structlog.get_logger("idle")

VERIFY_SIMILARITY = 0.5  # of the wake word's syllables to the best span of the transcript


class Idle(State):
    name = "idle"

    async def enter(self, cause: Input) -> None:
        s = self.session
        s.end_turn()
        rate = s.cfg.audio.sample_rate
        self.onset = OnsetDetector(s.cfg.vad.min_speech_ms * rate // 1000, s.vad_window, s.cfg.vad.threshold)
        self.run_start: int | None = None  # where the speech going on now began
        self.next_reminder_check = s.clock.samples
        if s.models.kws is not None:
            s.models.kws.reset()

    async def on_audio(self, chunk: Samples, windows: list[VadWindow]) -> None:
        s = self.session
        if s.tools is not None and s.clock.samples >= self.next_reminder_check and s.can_speak():
            self.next_reminder_check = s.clock.samples + s.cfg.audio.sample_rate  # once a second
            text, s.unsaid = s.unsaid or s.tools.due_announcement(), None
            if text is not None:
                await s.fire(Remind(text))
                return
        for w in windows:
            if w.prob < s.cfg.vad.threshold:
                self.run_start = None
            elif self.run_start is None:
                self.run_start = w.end - s.vad_window
        if s.cfg.wake.mode == "always":
            onset = self.onset.feed(windows)
            if onset is not None and s.is_noise(onset):
                self.onset.skip_run()
            elif onset is not None:
                await s.fire(Wake(onset=onset))

    async def on_keyword(self, keyword: str) -> None:
        s = self.session
        if s.cfg.wake.mode != "keyword" or keyword not in s.cfg.wake.keywords:
            return  # a stop word, with nothing to stop
        if s.cfg.wake.verify and (asr := s.models.asr) is not None:
            if not self.tasks.active:
                self.tasks.spawn(self._verify(asr, keyword, self.run_start, s.clock.samples), "verify")
            return
        await self._wake(keyword, self.run_start)
        await s.fire(Wake(speech_from=self.run_start))

    async def _wake(self, keyword: str, speech_from: int | None) -> None:
        """Announce the wake (event, earcon); the caller then fires or posts the ``Wake``."""
        s = self.session
        log.info("wake word", keyword=keyword)
        s.bus.publish(WakeDetected(keyword=keyword))
        if s.cfg.wake.earcon and speech_from is None:
            await s.sink.write(chime(s.sink.sample_rate))
        elif s.cfg.wake.earcon:
            # The request follows in the same breath: the chime would only be talked over, and the
            # echo canceller would suppress the speech under it.
            log.debug("earcon skipped: the speaker goes on")

    async def _verify(self, asr: Asr, keyword: str, speech_from: int | None, fired_at: int) -> None:
        """The second stage, in a task the state owns: wake only if the ASR hears the keyword too."""
        s, rate = self.session, self.session.cfg.audio.sample_rate
        window = s.history.slice(fired_at - int(s.cfg.wake.verify_window_s * rate), fired_at)
        heard = await asr.transcribe(resample(window, rate, asr.sample_rate))
        score = match(keyword, [heard]).score
        if score < VERIFY_SIMILARITY:
            log.info("wake word not confirmed by the ASR", keyword=keyword, heard=heard, score=round(score, 2))
            s.bus.publish(WakeRejected(keyword=keyword, heard=heard))
            return
        await self._wake(keyword, speech_from)
        s.post(Wake(speech_from=speech_from))
