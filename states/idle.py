"""Idle: wait for the wake word, or (``wake.mode = "always"``) for any speech."""

from __future__ import annotations

from typing import Any

import structlog

from assistant.audio.protocols import Samples
from assistant.events import WakeDetected
from states.onset import OnsetDetector
from states.state import State, VadWindow

log = structlog.get_logger("idle")


class Idle(State):
    name = "idle"

    async def enter(self, trigger: str, kwargs: dict[str, Any]) -> None:
        s = self.session
        s.end_turn()
        rate = s.cfg.audio.sample_rate
        self.onset = OnsetDetector(s.cfg.vad.min_speech_ms * rate // 1000, s.vad_window)
        if s.models.kws is not None:
            s.models.kws.reset()

    async def on_audio(self, chunk: Samples, windows: list[VadWindow]) -> None:
        s = self.session
        if s.cfg.wake.mode == "always":
            onset = self.onset.feed(windows)
            if onset is not None:
                await s.fire("wake", onset=onset)
            return
        if s.models.kws is None:
            return
        keyword = await s.models.kws.accept(chunk)
        if keyword:
            log.info("wake word", keyword=keyword)
            s.bus.publish(WakeDetected(keyword=keyword))
            await s.fire("wake")
