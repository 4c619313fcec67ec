"""The slow-turn watchdog: a worker that has become slow (memory pressure, a leak, a runtime gone wrong)
is restarted after ``worker.slow_turns`` turns in a row whose first reply sample came more than
``worker.slow_turn_s`` after the end of the user's speech. The restart waits for that reply to end,
so it is heard whole.

Not when the machine is busy with other work: if other processes took more than ``OTHERS_MAX`` of
the CPU from the first slow reply's first audio on, a new worker would be just as slow, and its
start (seconds of full CPU, and an apology to the user) would only make it worse. Seen in a soak
with two benchmarks beside it.
"""

from __future__ import annotations

from typing import Protocol

import structlog

from assistant.events import Event, PlaybackFinished, PlaybackStarted, SpeechEnded
from assistant.health import OthersLoad

log = structlog.get_logger("worker")

OTHERS_MAX = 0.5


class Killable(Protocol):
    def kill(self, reason: str) -> None: ...


class SlowTurns:
    """A bus subscriber that counts slow turns in a row and has the worker restarted at ``turns``."""

    def __init__(self, worker: Killable, budget_s: float, turns: int, others: OthersLoad | None = None) -> None:
        self.worker, self.budget_s, self.turns, self.others = worker, budget_s, turns, others
        self.in_a_row = 0
        self.due: str | None = None  # a restart waiting for the reply to end
        self._speech_end: float | None = None

    def __call__(self, t: float, event: Event) -> None:
        if isinstance(event, SpeechEnded):
            self._speech_end = event.speech_end_t
        elif isinstance(event, PlaybackStarted) and self._speech_end is not None:
            took, self._speech_end = t - self._speech_end, None
            self.in_a_row = self.in_a_row + 1 if took > self.budget_s else 0
            if self.in_a_row == 1 and self.others is not None:
                self.others.mark()  # a streak starts: /proc is read here, once the first audio is out
            if self.turns and self.in_a_row >= self.turns:
                reason = f"{self.in_a_row} turns in a row over {self.budget_s:g} s to first audio"
                self.in_a_row = 0
                share = self.others.share() if self.others is not None else None
                if share is not None and share > OTHERS_MAX:
                    log.warning("slow turns, but the machine is busy with other work: no restart",
                                reason=reason, others_cpu=f"{share:.0%}")
                else:
                    self.due = reason
        elif isinstance(event, PlaybackFinished) and self.due is not None:
            reason, self.due = self.due, None
            log.warning("restarting a slow worker", reason=reason)
            self.worker.kill(reason)
