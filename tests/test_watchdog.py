"""The slow-turn watchdog: the worker is restarted after N slow turns in a row, once the reply has ended."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from assistant.events import PlaybackFinished, PlaybackStarted, SpeechEnded
from assistant.health import OthersLoad, cpu_s
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


class Others(OthersLoad):
    """Other processes' share of the CPU, as a test sets it."""

    def __init__(self, share: float | None) -> None:
        super().__init__(lambda: ())
        self.value, self.marks = share, 0

    def mark(self) -> None:
        self.marks += 1

    def share(self) -> float | None:
        return self.value


def test_slow_turns_on_a_machine_busy_with_other_work_do_not_restart_the_worker() -> None:
    worker, others = Worker(), Others(0.8)
    dog = SlowTurns(worker, budget_s=5.0, turns=3, others=others)
    for start in (0, 20, 40):
        turn(dog, start, 6.0)
    assert worker.killed == []  # a new worker would be as slow, and its start would cost more
    assert dog.in_a_row == 0 and others.marks == 1  # the count starts again (the next turn marks anew)
    others.value = 0.1
    for start in (60, 80, 100):
        turn(dog, start, 6.0)
    assert worker.killed == ["3 turns in a row over 5 s to first audio"]


def test_without_a_measure_of_the_others_slow_turns_restart_the_worker() -> None:
    worker = Worker()
    dog = SlowTurns(worker, budget_s=5.0, turns=2, others=Others(None))  # e.g. the worker was replaced meanwhile
    turn(dog, 0, 6.0)
    turn(dog, 20, 6.0)
    assert len(worker.killed) == 1


def test_the_cpu_another_process_takes_counts_as_others() -> None:
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # started
        others = OthersLoad(lambda: (os.getpid(),))
        ours = OthersLoad(lambda: (os.getpid(), spin.pid))
        began, spun = time.monotonic(), cpu_s(spin.pid)
        others.mark()
        ours.mark()
        time.sleep(1.0)
        with_spin, without = others.share(), ours.share()
        wall, spun = time.monotonic() - began, (cpu_s(spin.pid) or 0.0) - (spun or 0.0)
    finally:
        spin.kill()
        spin.wait()
    assert with_spin is not None and without is not None
    # What separates the two measures is the spinning process's CPU, whatever else the machine runs.
    assert spun > 0.1
    assert with_spin - without == pytest.approx(spun / (wall * (os.cpu_count() or 1)), abs=0.05)
    assert OthersLoad(lambda: (spin.pid,)).share() is None  # no mark, and the process is gone


def test_the_root_watches_the_turns_of_a_session_whose_models_are_in_a_worker(vad, monkeypatch) -> None:
    # the states do not know the watchdog: the composition root hangs it on a new session's events
    import numpy as np

    # a quiet machine, whatever runs beside the tests: the others' share is the test above's, and a
    # busy machine would rightly hold the restart back (it did, with another process on one core)
    monkeypatch.setattr(OthersLoad, "share", lambda self: 0.0)

    from assistant.app import Parts
    from assistant.audio.replay import ReplayDevice
    from assistant.clock import SampleClock
    from assistant.events import EventBus
    from models.protocols import Backends
    from tests.conftest import make_config
    from tests.doubles import ScriptedAsr, ScriptedLlm, ToneTts

    class Stand(Worker):
        apology = np.zeros(0, np.float32)
        rates = {"tts": 24000}
        pid = None
        up = True

        def attach(self, publish) -> None: ...

        def detach(self) -> None: ...

    def session_bus(*overrides: str) -> tuple[Stand, EventBus, SampleClock]:
        worker = Stand()
        cfg = make_config("worker.slow_turn_s=5", "worker.slow_turns=3", *overrides)
        parts = Parts(cfg, Backends(vad=vad, asr=ScriptedAsr(), llm=ScriptedLlm(), tts=ToneTts(), worker=worker))
        clock = SampleClock(16000)
        bus = EventBus(clock)
        device = ReplayDevice(np.zeros(16000, np.float32), clock, cfg.audio.chunk_samples)
        parts.session(clock, bus, device, device.speaker)
        return worker, bus, clock

    def three_slow_turns(bus: EventBus, clock: SampleClock) -> None:
        for turn_start in (0.0, 20.0, 40.0):
            clock.advance(int((turn_start + 0.3) * 16000) - clock.samples)
            bus.publish(SpeechEnded(audio_s=1.0, speech_end_t=turn_start))
            clock.advance(6 * 16000)  # first audio 6 s after the end of speech: over 5 s
            bus.publish(PlaybackStarted())
            clock.advance(2 * 16000)
            bus.publish(PlaybackFinished(interrupted=False))

    worker, bus, clock = session_bus()
    three_slow_turns(bus, clock)
    assert len(worker.killed) == 1  # restarted after the third
    unwatched, bus, clock = session_bus("worker.slow_turns=0")
    three_slow_turns(bus, clock)
    assert unwatched.killed == []  # the watchdog is off
