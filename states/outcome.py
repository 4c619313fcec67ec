"""How a reply ended: the value its handle's ``done`` future carries (``states/reply.py``).

A reply ends one way only, and what the machine does next follows from that way alone
(``NEXT``): a reply heard to its end, or one with nothing to say, goes back to listening; a stop
word to idle; a failure to the error path. An interrupted reply asks for nothing: whoever
interrupted it (a barge-in, a state left) has already chosen what comes next.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from states.inputs import Failed, Input, ReplyDone, Stop


class Ended(StrEnum):
    SPOKEN = "spoken"  # said to its end and heard played out
    SILENT = "silent"  # nothing to answer: no words, the assistant's own echo
    STOP_WORD = "stop_word"  # the whole request was a stop word
    INTERRUPTED = "interrupted"  # stopped early (a barge-in, or its state was left)
    FAILED = "failed"  # an error, reported on the bus


NEXT: dict[Ended, Input | None] = {
    Ended.SPOKEN: ReplyDone(),
    Ended.SILENT: ReplyDone(),
    Ended.STOP_WORD: Stop(),
    Ended.INTERRUPTED: None,
    Ended.FAILED: Failed(),
}


@dataclass(frozen=True)
class Outcome:
    """A finished reply: how it ended, the request it answered, what of the reply was said."""

    ended: Ended
    request: str = ""  # the transcript it answered ("" when there was none, or a reminder)
    said: str = ""  # the reply's text as far as it was spoken
    intent: str | None = None  # the tool or limit that answered, if one did
    first_audio_sample: int | None = None  # the session sample where its first audio was queued
