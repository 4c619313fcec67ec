"""The context the states are given (``states/context.py``): the session has every member of
``TurnContext`` and the reply every member of ``TurnReply``, of the same kind, methods with the same
signature. mypy checks the types where the session hands itself to a state; this fails, without
mypy, when a member is renamed or dropped on one side only."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from assistant.audio.replay import ReplayDevice
from assistant.clock import SampleClock
from assistant.events import EventBus
from models.protocols import Backends
from states.context import TurnContext, TurnReply
from states.inputs import Requester
from states.reply import Reply
from states.session import Session
from tests.conftest import make_config
from tests.doubles import ScriptedAsr, ScriptedLlm, ToneTts


class StandInVad:
    """Only its window is read when a session is built."""

    sample_rate = 16000
    window_samples = 512


def members(protocol: type) -> tuple[set[str], set[str]]:
    """A Protocol's own (data members, methods)."""
    methods = {name for name, value in vars(protocol).items() if inspect.isfunction(value) and not name.startswith("_")}
    return set(inspect.get_annotations(protocol)), methods


def mismatches(protocol: type, instance: object) -> list[str]:
    data, methods = members(protocol)
    cls = type(instance)
    out = [f"{name}: missing" for name in sorted(data | methods) if not hasattr(instance, name)]
    out += [f"{name}: a method, not data" for name in sorted(data)
            if hasattr(instance, name) and inspect.isfunction(getattr(cls, name, None))]
    for name in sorted(methods):
        theirs = getattr(cls, name, None)
        if theirs is None:
            continue
        ours = getattr(protocol, name)
        if not inspect.isfunction(theirs):
            out.append(f"{name}: not a method")
        elif inspect.iscoroutinefunction(theirs) != inspect.iscoroutinefunction(ours):
            out.append(f"{name}: async on one side only")
        elif inspect.signature(theirs) != inspect.signature(ours):
            out.append(f"{name}: {inspect.signature(theirs)} where the context says {inspect.signature(ours)}")
    return out


@pytest.fixture
def session() -> Session:
    cfg = make_config()
    clock = SampleClock(16000)
    device = ReplayDevice(np.zeros(16000, np.float32), clock, cfg.audio.chunk_samples)
    backends = Backends(vad=StandInVad(), asr=ScriptedAsr(), llm=ScriptedLlm(), tts=ToneTts())  # type: ignore[arg-type]
    return Session(cfg, clock, EventBus(clock), device, device.speaker, backends)


def test_the_session_is_a_turn_context(session: Session) -> None:
    assert mismatches(TurnContext, session) == []


async def test_a_reply_is_a_turn_reply_and_a_requester(session: Session) -> None:
    reply = Reply(session)
    assert mismatches(TurnReply, reply) == []
    assert mismatches(Requester, reply) == []


def test_the_check_sees_a_missing_member(session: Session) -> None:
    class Wider(TurnContext):
        hearing_aid: bool

        def louder(self) -> None: ...

        def is_noise(self, onset: int, strict: bool = False) -> bool: ...  # a parameter more

    assert [m.partition(":")[0] for m in mismatches(Wider, session)] == ["hearing_aid", "louder", "is_noise"]
