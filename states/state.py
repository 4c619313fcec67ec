"""What every state module provides: enter, exit, and what to do with each chunk of audio."""

from __future__ import annotations

from dataclasses import dataclass

from assistant.audio.protocols import Samples
from assistant.tasks import TaskScope
from states.context import TurnContext
from states.inputs import Input


@dataclass(frozen=True)
class VadWindow:
    """The VAD's speech probability for the window that ends at absolute sample ``end``; ``talk``: the
    linear canceller found more than the reply's echo in it (``assistant/audio/double_talk.py``);
    ``linear``: the second VAD's probability on that canceller's output (``barge_in.double_talk_vad``)."""

    end: int
    prob: float
    talk: bool = False
    linear: float = 0.0


class State:
    """A state's behaviour. ``enter`` and ``exit`` are short: they start or stop owned tasks."""

    name = "state"

    def __init__(self, session: TurnContext) -> None:
        self.session = session
        self.tasks = TaskScope(self.name)

    async def enter(self, cause: Input) -> None:
        """Called after the machine has entered this state, with the input that made it move."""

    async def exit(self, dest: str) -> None:
        """Called before the machine leaves this state for ``dest``: stop what the state owns."""
        await self.tasks.cancel()

    async def on_audio(self, chunk: Samples, windows: list[VadWindow]) -> None:
        """Each captured chunk, with the VAD windows it completed."""

    async def on_keyword(self, keyword: str) -> None:
        """The keyword spotter heard a wake or stop word in this chunk (before ``on_audio``)."""
