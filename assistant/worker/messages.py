"""The worker RPC: the closed set of messages between the main process and the worker process.

Each is a small frozen dataclass, pickled over the one ``multiprocessing`` connection (so they stay
at module level). ``ToWorker`` goes from the main process to the worker, ``FromWorker`` back;
``Lost`` never crosses the pipe: the main process puts it in the way of a call whose worker died.
Both sides dispatch with ``match`` on the class and end with ``unknown(msg)``, which mypy checks is
unreachable and which, if a message outside the set arrives all the same, is one clear error.

A call's values (``Call.args``, ``Item.value``, ``Done.value``) are whatever the called method
takes and gives (samples, text, ``Scored`` pieces), so they are ``Any`` here; ``remote`` types them.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from typing import Any, Literal, Never, NoReturn, TypeAlias

from models.protocols import Samples

Kind: TypeAlias = Literal["asr", "llm", "tts"]
"""The backends the worker runs."""


# -- to the worker -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Call:
    """Start call ``id``: ``kind``'s ``method`` on ``args`` (a streamed one sends its first item at once)."""

    id: int
    kind: Kind
    method: str
    args: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Next:
    """The caller has taken streamed call ``id``'s last item: send the next one."""

    id: int


@dataclass(frozen=True, slots=True)
class Cancel:
    """Abandon call ``id``: its task is cancelled, so the backend stops in flight; nothing more is sent."""

    id: int


@dataclass(frozen=True, slots=True)
class Stop:
    """Run ``kind``'s ``stop()`` at once, on the worker's reading thread, whatever is queued (barge-in)."""

    kind: Kind


@dataclass(frozen=True, slots=True)
class Exit:
    """Close the models and end the worker."""


# -- from the worker -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Ready:
    """The models are loaded: the worker's ``pid``, its ASR's and TTS's sample ``rates``, and the apology
    rendered by its TTS (empty if it was not asked to render one)."""

    pid: int
    rates: dict[str, int]
    apology: Samples


@dataclass(frozen=True, slots=True)
class LoadFailed:
    """The models did not load; the worker ends. ``error`` is one line."""

    error: str


@dataclass(frozen=True, slots=True)
class Item:
    """The next item of streamed call ``id``; the worker waits for a ``Next`` before it makes another."""

    id: int
    value: Any


@dataclass(frozen=True, slots=True)
class Done:
    """Call ``id`` is finished: its result (``None`` for a stream, whose items came before)."""

    id: int
    value: Any


@dataclass(frozen=True, slots=True)
class Failed:
    """Call ``id`` raised in the worker: the caller's ``ModelError``."""

    id: int
    error: str


# -- in the main process only --------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Lost:
    """Call ``id`` will get no answer: its worker died, hung or was closed (the caller's ``WorkerLost``)."""

    id: int
    reason: str


ToWorker: TypeAlias = Call | Next | Cancel | Stop | Exit
"""What the main process sends the worker."""

FromWorker: TypeAlias = Ready | LoadFailed | Item | Done | Failed
"""What the worker sends the main process."""

Answer: TypeAlias = Item | Done | Failed | Lost
"""What a call in the main process waits for: the worker's answers to it, or its loss."""


def unknown(msg: Never) -> NoReturn:
    """Refuse a message outside the closed set (typed ``Never``: mypy checks every class was matched)."""
    raise TypeError(f"worker RPC: unknown message {type(msg).__qualname__}: {reprlib.repr(msg)}")
