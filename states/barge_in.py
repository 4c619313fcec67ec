"""Barge-in: deciding that the user is talking over the reply, and stopping the reply for it.

The decision is either speech (a run of windows that starts above ``barge_in.threshold``, goes on
while above ``barge_in.hold_threshold``, and lasts ``barge_in.min_speech_ms``, or sooner,
``barge_in.sure_ms``, when its windows in a row all reach ``barge_in.sure_threshold``; a window the
linear canceller finds the user in counts from ``barge_in.double_talk_threshold`` on; counted only
after the echo window, ``speaking.echo_window_ms`` from
the start of playback, when the assistant mostly hears itself), or a stop word or wake word from
the keyword spotter, unless the reply being spoken contains that very word (the assistant heard
itself say it). Both checks are the echo defence's (``states/echo_defence.py``), as is the refusal of
speech that is the reply's own echo let through by a cold canceller (``EchoDefence.is_leak``).
"""

from __future__ import annotations

import time
from enum import StrEnum

import structlog

from assistant.audio.protocols import Samples
from assistant.events import BargeIn
from states import inputs
from states.context import TurnContext
from states.onset import OnsetDetector
from states.state import State, VadWindow

log = structlog.get_logger("barge_in")


class Reason(StrEnum):
    """What interrupted the reply (the ``barge_in`` event's ``reason``)."""

    SPEECH = "speech"
    STOP_WORD = "stop_word"  # idle follows: nothing more is said
    WAKE_WORD = "wake_word"


def make_detector(session: TurnContext, echo_window_from: int | None) -> OnsetDetector:
    """The barge-in decision for the current reply; muted for the echo window after playback starts."""
    cfg, rate = session.cfg, session.cfg.audio.sample_rate
    mute_until = 0 if echo_window_from is None else session.echo.window_end(echo_window_from)
    b = cfg.barge_in
    return OnsetDetector(b.min_speech_ms * rate // 1000, session.vad_window, b.threshold,
                         ignore_until=mute_until, hold=b.hold_threshold, max_gap_samples=b.max_gap_ms * rate // 1000,
                         sure=b.sure_threshold, sure_samples=b.sure_ms * rate // 1000,
                         talk=b.double_talk_threshold if b.double_talk else None)


async def barge_in(session: TurnContext, reason: Reason, onset: int | None) -> None:
    """Stop the reply and listen: cancel reply tasks, clear the sink, report, enter listening
    (or, for a stop word, idle).

    ``onset`` is where the user's speech began, so the new request is captured from there; or, if
    the speaker only paused (``Reply.continued_by``), from the start of the request the reply was
    answering, which is heard again whole with its second part.
    """
    decided = time.perf_counter()
    session.bus.publish(BargeIn(reason=reason))
    reply = session.reply
    resume_from = reply.continued_by(onset) if reply is not None and onset is not None else None
    if reply is not None:
        await reply.interrupt()
    timing = reply.timing(onset) if reply is not None and onset is not None else {}
    log.info("barge-in", reason=reason, stop_ms=round((time.perf_counter() - decided) * 1000, 1),
             continues=resume_from is not None, **timing)
    if reply is not None and resume_from is not None and reply.answer is not None and session.responder is not None:
        session.responder.withdraw(reply.answer.text)  # its reply was to half a request
    if reason is Reason.STOP_WORD:
        await session.fire(inputs.Stop(onset))
    else:
        await session.fire(inputs.BargeIn(onset, resume_from))


class Interruptible(State):
    """A state the user can talk over (thinking, speaking): speech that passes the detector set
    on entry, or a stop or wake word, is a barge-in."""

    detector: OnsetDetector

    async def on_audio(self, chunk: Samples, windows: list[VadWindow]) -> None:
        s = self.session
        if not (s.cfg.barge_in.enabled and s.cfg.barge_in.by_speech):
            return
        muted = self.detector.muted_runs
        onset = self.detector.feed(windows)
        if self.detector.muted_runs > muted:
            s.echo.window_muted()
        if onset is not None and s.is_noise(onset):
            self.detector.skip_run()
        elif onset is not None and s.echo.is_leak(s.history):
            # not yet: decided again on the windows to come, from the same onset while it is recent (a
            # run refused for long is the echo's: speech decided later in it begins at most 0.5 s back)
            self.detector.prime(max(onset, s.history.end - s.cfg.audio.sample_rate // 2))
        elif onset is not None:
            await barge_in(s, Reason.SPEECH, onset)

    async def on_keyword(self, keyword: str) -> None:
        s = self.session
        if not s.cfg.barge_in.enabled:
            return
        if keyword in s.cfg.barge_in.stop_words:
            reason = Reason.STOP_WORD
        elif keyword in s.cfg.wake.keywords and s.cfg.wake.mode == "keyword":
            reason = Reason.WAKE_WORD
        else:
            return
        if s.echo.said_it_myself(keyword):
            return
        await barge_in(s, reason, None)
