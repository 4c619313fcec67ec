"""The machine's inputs (``states/inputs.py``): one frozen dataclass per trigger of the table, and
the session's one mailbox, which fires what the loop's tasks post, in order, before the next chunk."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pytest

from assistant.audio.replay import ReplayDevice
from assistant.clock import SampleClock
from assistant.events import Event, EventBus, StateChanged
from models.protocols import Backends
from states import inputs
from states.machine import TRIGGERS
from states.session import Session
from tests.conftest import make_config
from tests.doubles import ScriptedAsr, ScriptedLlm, ToneTts


def input_classes() -> list[type[inputs.Input]]:
    return [c for c in vars(inputs).values()
            if isinstance(c, type) and issubclass(c, inputs.Input) and c is not inputs.Input]


def test_every_trigger_of_the_table_has_one_input_and_every_input_a_trigger() -> None:
    named = [c.trigger for c in input_classes() if c is not inputs.Start]  # start enters, no transition
    assert sorted(named) == TRIGGERS  # one class per trigger: no name twice, none missing


def test_the_inputs_are_frozen() -> None:
    for cls in input_classes():
        assert cls.__dataclass_params__.frozen, cls.__name__  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        inputs.Wake(onset=3).onset = 4  # type: ignore[misc]


@dataclass
class Owner:
    stopped: bool = False


class SilentVad:
    """Hears no speech in any window."""

    sample_rate = 16000
    window_samples = 512

    async def accept(self, samples: np.ndarray) -> list[float]:
        return [0.0] * (len(samples) // self.window_samples)

    def reset(self) -> None: ...


async def test_the_mailbox_fires_in_order_before_the_next_chunk_and_drops_a_stopped_owners_input() -> None:
    cfg = make_config()
    clock = SampleClock(16000)
    device = ReplayDevice(np.zeros(16000, np.float32), clock, cfg.audio.chunk_samples)
    backends = Backends(vad=SilentVad(), asr=ScriptedAsr(), llm=ScriptedLlm(), tts=ToneTts())  # type: ignore[arg-type]
    session = Session(cfg, clock, EventBus(clock), device, device.speaker, backends)
    seen: list[tuple[float, Event]] = []
    session.bus.subscribe(lambda t, e: seen.append((t, e)))

    stale = Owner(stopped=True)
    session.post(inputs.Wake(onset=0))
    session.post(inputs.NoSpeechTimeout(), owner=stale)  # its owner was stopped: never fired
    session.post(inputs.ReplyDone(), owner=Owner())  # fired, but no row of the table takes it in listening
    await session.run()

    changes = [(t, e) for t, e in seen if isinstance(e, StateChanged)]
    assert [(e.from_, e.to, e.trigger) for _, e in changes] == [("idle", "listening", "wake")]
    assert changes[0][0] == cfg.audio.chunk_samples / 16000  # fired before the second chunk, not later
    assert session.state == "listening"
