"""The state machine's inputs: a closed set of frozen dataclasses, one per trigger of the table.

Every change of state has one of these as its cause. The pump and the state code it calls fire one
at once (``Session.fire``); any other task of the loop posts it to the session's one mailbox
(``Session.post``), where it is stamped with the session sample it was posted at (a ``Posted``) and
fired before the next chunk. The state entered gets the cause whole (``State.enter``): its fields
are what the transition carries, checked by mypy, where a trigger's string and a ``dict[str, Any]``
were before.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from assistant.audio.protocols import Samples


@dataclass
class Speculation:
    """A transcription (the answerer hearing the speech) started before the endpoint, on the speech
    up to ``speech_end``."""

    speech_end: int
    task: asyncio.Task[str]
    warmed: bool = False  # its transcript has been given to the LLM to evaluate ahead


@dataclass(frozen=True)
class Input:
    """What makes the machine move; ``trigger`` names its row in ``states/machine.py``."""

    trigger: ClassVar[str]


@dataclass(frozen=True)
class Start(Input):
    """The session began: the first state is entered (no transition)."""

    trigger: ClassVar[str] = "start"


@dataclass(frozen=True)
class Wake(Input):
    """Idle → listening: speech began (``onset``), or a wake word was heard, which the request may
    follow in one breath (``speech_from``: where the speech going on began)."""

    trigger: ClassVar[str] = "wake"
    onset: int | None = None
    speech_from: int | None = None


@dataclass(frozen=True)
class Remind(Input):
    """Idle → speaking: a reminder fell due; ``text`` is said unasked."""

    trigger: ClassVar[str] = "remind"
    text: str


@dataclass(frozen=True, eq=False)
class SpeechEnd(Input):
    """Listening → thinking: the request ended. ``utterance`` is its audio as the ASR hears it, from
    ``audio_from`` (the preroll before ``utterance_start``, its onset); ``voiced_end`` is its last
    voiced sample; ``speculation`` an ASR run already started on it. ``ahead``: listening prepared
    the reply on that speculation already, and handed it over as the session's reply."""

    trigger: ClassVar[str] = "speech_end"
    utterance: Samples
    utterance_start: int
    audio_from: int
    voiced_end: int
    speculation: Speculation | None = None
    ahead: bool = False


@dataclass(frozen=True)
class NoSpeechTimeout(Input):
    """Listening → idle: nobody spoke within the timeout (or the follow-up window)."""

    trigger: ClassVar[str] = "no_speech_timeout"


@dataclass(frozen=True)
class FirstAudio(Input):
    """Thinking → speaking: the reply's first audio was queued."""

    trigger: ClassVar[str] = "first_audio"


@dataclass(frozen=True)
class ReplyDone(Input):
    """Thinking or speaking → listening (follow-up window) or idle: the reply ended, or had nothing to say."""

    trigger: ClassVar[str] = "reply_done"


@dataclass(frozen=True)
class BargeIn(Input):
    """Thinking or speaking → listening: the user spoke over the reply from ``onset`` (None for a
    wake word). ``resume_from``: the start of the request it goes on with, if the speaker only paused."""

    trigger: ClassVar[str] = "barge_in"
    onset: int | None = None
    resume_from: int | None = None


@dataclass(frozen=True)
class Stop(Input):
    """Thinking or speaking → idle: a stop word; nothing more is said."""

    trigger: ClassVar[str] = "stop"
    onset: int | None = None


@dataclass(frozen=True)
class Failed(Input):
    """Any state → idle: the reply failed (reported on the bus)."""

    trigger: ClassVar[str] = "error"


@dataclass(frozen=True)
class Watchdog(Input):
    """Any state → idle: a state was held past its limit."""

    trigger: ClassVar[str] = "watchdog"



class Requester(Protocol):
    """Who posted an input: once it has been stopped, its inputs still in the mailbox are dropped."""

    stopped: bool


@dataclass(frozen=True)
class Posted:
    """An input in the mailbox: posted at session sample ``at`` by ``owner`` (None: by the session
    itself), and dropped unfired if its owner has been stopped meanwhile."""

    at: int
    cause: Input
    owner: Requester | None = None
