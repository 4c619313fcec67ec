"""The slow-turn watchdog: the worker is restarted after N slow turns in a row, once the reply has ended."""

from __future__ import annotations

from assistant.events import PlaybackFinished, PlaybackStarted, SpeechEnded
from assistant.worker.watchdog import SlowTurns


class Worker:
    def __init__(self) -> None:
        self.killed: list[str] = []

    def kill(self, reason: str) -> None:
        self.killed.append(reason)


def turn(dog: SlowTurns, start: float, first_audio_after_s: float) -> None:
    dog(start + 0.3, SpeechEnded(audio_s=1.0, speech_end_t=start))
    dog(start + first_audio_after_s, PlaybackStarted())
    dog(start + first_audio_after_s + 2.0, PlaybackFinished(interrupted=False))


def test_three_slow_turns_in_a_row_restart_the_worker_after_the_third_reply() -> None:
    worker = Worker()
    dog = SlowTurns(worker, budget_s=5.0, turns=3)
    turn(dog, 0.0, 6.0)
    turn(dog, 20.0, 7.0)
    dog(40.3, SpeechEnded(audio_s=1.0, speech_end_t=40.0))
    dog(46.0, PlaybackStarted())
    assert worker.killed == []  # the third reply is being spoken: it is heard whole
    dog(48.0, PlaybackFinished(interrupted=False))
    assert worker.killed == ["3 turns in a row over 5 s to first audio"]
    turn(dog, 60.0, 6.0)
    assert len(worker.killed) == 1  # counting starts again


def test_a_fast_turn_in_between_resets_the_count() -> None:
    worker = Worker()
    dog = SlowTurns(worker, budget_s=5.0, turns=3)
    for start, took in ((0, 6.0), (20, 6.0), (40, 0.8), (60, 6.0), (80, 6.0)):
        turn(dog, start, took)
    assert worker.killed == [] and dog.in_a_row == 2


def test_a_reply_without_speech_before_it_is_not_a_turn() -> None:
    worker = Worker()
    dog = SlowTurns(worker, budget_s=5.0, turns=1)
    dog(100.0, PlaybackStarted())  # a reminder, said unasked
    dog(102.0, PlaybackFinished(interrupted=False))
    assert worker.killed == []
