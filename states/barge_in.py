"""Barge-in: deciding that the user is talking over the reply, and stopping the reply for it.

The decision is VAD speech lasting ``barge_in.min_speech_ms``, counted only after the echo window
(``speaking.echo_window_ms`` from the start of playback), when the assistant mostly hears itself.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import structlog

from assistant.audio.protocols import Samples
from assistant.events import BargeIn
from states.onset import OnsetDetector
from states.state import State, VadWindow

if TYPE_CHECKING:
    from states.session import Session

log = structlog.get_logger("barge_in")


def make_detector(session: Session, echo_window_from: int | None) -> OnsetDetector:
    """The barge-in decision for the current reply; muted for the echo window after playback starts."""
    cfg, rate = session.cfg, session.cfg.audio.sample_rate
    mute_until = 0
    if echo_window_from is not None:
        mute_until = echo_window_from + cfg.speaking.echo_window_ms * rate // 1000
    return OnsetDetector(cfg.barge_in.min_speech_ms * rate // 1000, session.vad_window, mute_until)


async def barge_in(session: Session, reason: str, onset: int | None) -> None:
    """Stop the reply and listen: cancel reply tasks, clear the sink, report, enter listening.

    ``onset`` is where the user's speech began, so the new request is captured from there.
    """
    decided = time.perf_counter()
    session.bus.publish(BargeIn(reason=reason))
    if session.reply is not None:
        await session.reply.stop()
    log.info("barge-in", reason=reason, stop_ms=round((time.perf_counter() - decided) * 1000, 1))
    await session.fire("barge_in", onset=onset)


class Interruptible(State):
    """A state the user can talk over (thinking, speaking): speech that passes the detector set
    on entry is a barge-in."""

    detector: OnsetDetector

    async def on_audio(self, chunk: Samples, windows: list[VadWindow]) -> None:
        if not self.session.cfg.barge_in.enabled:
            return
        onset = self.detector.feed(windows)
        if onset is not None:
            await barge_in(self.session, "speech", onset)
