"""Who answers a request, as one pure function: ``decide(request, conversation, rules) -> Decision``.

It reads the transcript, the ASR's other readings of it and how likely its rescoring model found it,
and the conversation so far (a request asked back, a transcript asked again), and names what
answers: an offline tool or an honest limit (by the router's intent), Home Assistant (a device), a
question asked back (你是说“…”吗？), an honest 没听清, or the LLM. In order:

1. a 是的 / 不是 settles the request asked back in this conversation;
2. a command heard through a doubtful slip is asked back (``slips.doubtful``);
3. where the ASR's other readings know better (``tools.readings``), that reading is answered or
   asked back, unless the transcript's whole sound surely names another command (step 5's);
4. a command, a limit or a device the router names is answered by its tool;
5. a request that sounds like a command through slips in several syllables is that command, or is
   asked back (``tools.sounds_like``);
6. a transcript the rescoring model finds too unlikely as Mandarin is asked again, unless it is
   what was asked again last time (then it is meant);
7. everything else goes to the LLM.

It saves nothing, says nothing and changes no state, and each text is routed once:
``Responder.commit`` (``assistant/respond.py``) acts on the decision, in one place, before anything
is spoken.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from assistant.text.cer import cer

if TYPE_CHECKING:
    from assistant.tools.router import Intent

# A doubted transcript heard again this close (character error rate against the first) is taken as
# meant: the words are rare (宫保鸡丁辣不辣 reads as unlikely as many near-misses), not misheard, and
# asking again would never end; a mishearing seldom comes out the same twice.
SAME_REQUEST_CER = 0.25


class Kind(StrEnum):
    TOOL = "tool"  # an offline tool or an honest limit answers ``intent`` (a repeat too)
    HOME = "home"  # Home Assistant switches ``device``
    CONFIRM = "confirm"  # asked back: 你是说“meant”吗？, for the next 是的 / 不是 to settle
    SAY_AGAIN = "say_again"  # the request asked back was not what was meant: say it again
    UNCLEAR = "unclear"  # too unlikely as Mandarin to answer: asked again
    LLM = "llm"


@dataclass(frozen=True)
class Request:
    """What was heard (or typed)."""

    text: str
    spoken_s: float = 0.0  # how long it took to say; 0: typed
    char_logprob: float | None = None  # per character, by the ASR's rescoring model; None: not weighed
    readings: tuple[str, ...] = ()  # the ASR's other readings, likeliest first


@dataclass(frozen=True)
class Conversation:
    """What the decision reads of the conversation so far."""

    now: datetime
    continued: bool  # the request began within the conversation window of the last reply's end
    pending: str | None = None  # the request asked back by the last reply
    doubted: str | None = None  # the last transcript asked again as too unlikely


def _as_heard(text: str) -> str:
    return text


@dataclass(frozen=True)
class Rules:
    """The responder's fixed settings, as the decision reads them."""

    tools: bool = True  # offline tools answer what they can
    query: Callable[[Intent, str], str] | None = None  # a query's answer (time, date, sums: nothing saved)
    home: bool = False  # Home Assistant switches the devices the honest limits name
    honest_limits: bool = True  # False: what needs a network or a device goes to the LLM too
    correct: Callable[[str], str] = _as_heard  # near-miss command words and a sum's slips put right
    min_char_logprob: float = -math.inf  # a transcript less likely than this is asked again
    sure_sound: float = 1.0  # a request this near a command's phrasing is that command
    near_sound: float = 1.0  # … this near, asked back


@dataclass(frozen=True)
class Decision:
    """What answers the request, and why (for the log)."""

    kind: Kind
    text: str  # the request as decided: corrected, or the request a 是的 confirmed
    intent: Intent | None = None  # TOOL: what the tool is asked
    device: str | None = None  # HOME: the device
    meant: str | None = None  # CONFIRM: the request asked back
    why: str = ""

    @property
    def acts(self) -> bool:
        """Acting on it changes something outside the conversation (a timer set, a todo saved, a
        device switched): it waits until the request is surely over."""
        from assistant.tools.answers import ACTIONS

        return self.kind is Kind.HOME or (self.kind is Kind.TOOL and self.intent is not None
                                          and self.intent.name in ACTIONS)


def decide(request: Request, conversation: Conversation, rules: Rules) -> Decision:
    """Who answers ``request`` in ``conversation`` (see the module's docstring for the order)."""
    from assistant.text.slips import doubtful  # pinyin and the router are read on the first request
    from assistant.tools.router import clean

    pending = conversation.pending if conversation.continued else None
    doubted = conversation.doubted if conversation.continued else None
    now = conversation.now
    if pending is not None and (settled := _settle(request.text, pending, now, rules)) is not None:
        return settled
    text = rules.correct(request.text)  # once: every decision below reads the corrected text
    if rules.tools and (meant := doubtful(clean(text))) is not None:
        return Decision(Kind.CONFIRM, text, meant=meant, why="a doubtful command")
    mine = _route(text, now, rules)
    if request.spoken_s > 0 and request.readings and rules.tools and rules.query is not None:
        read = _other_reading(text, mine, request.readings, now, rules, rules.query)
        if read is not None:
            return _unless_sounded_otherwise(read, text, mine, now, rules)
    if (local := _local(text, mine, now, rules)) is not None:
        return local
    if request.spoken_s > 0 and rules.tools and (near := _sounds_like(text, now, rules)) is not None:
        return near
    if request.char_logprob is not None and request.char_logprob < rules.min_char_logprob:
        if doubted is None or cer(doubted, text) > SAME_REQUEST_CER:
            return Decision(Kind.UNCLEAR, text, why=f"too unlikely to answer ({request.char_logprob:.2f} a character)")
        return Decision(Kind.LLM, text, why="the unlikely transcript heard again")
    return Decision(Kind.LLM, text)


def _route(text: str, now: datetime, rules: Rules) -> Intent | None:
    from assistant.tools.router import route

    return route(text, now, honest_limits=rules.honest_limits) if rules.tools or rules.home else None


def local(text: str, now: datetime, rules: Rules) -> Decision | None:
    """The tool, Home Assistant or honest limit that answers ``text`` (already corrected), or None:
    only the LLM can answer it."""
    return _local(text, _route(text, now, rules), now, rules)


def _local(text: str, found: Intent | None, now: datetime, rules: Rules) -> Decision | None:
    """An offline tool's, Home Assistant's or an honest limit's answer to ``text`` routed as ``found``."""
    if rules.home:
        # The devices are the no_device limit's, named even where the limits are off (then routed again)
        device = found if rules.honest_limits else _device_route(text, now)
        if device is not None and device.name == "no_device":
            return Decision(Kind.HOME, text, device=device.slots.get("detail", ""))
    if found is None or not rules.tools:
        return None
    return Decision(Kind.TOOL, text, intent=found)


def _device_route(text: str, now: datetime) -> Intent | None:
    from assistant.tools.router import route

    return route(text, now)


def _settle(text: str, pending: str, now: datetime, rules: Rules) -> Decision | None:
    """A 是的 answers the request asked back, a 不是 asks again; None: a new request."""
    from assistant.text.slips import NO, YES
    from assistant.tools.router import clean

    said = clean(text)
    if YES.match(said):
        local = _local(pending, _route(pending, now, rules), now, rules)
        return replace(local, why="confirmed") if local is not None else Decision(Kind.LLM, pending, why="confirmed")
    if NO.match(said):
        return Decision(Kind.SAY_AGAIN, text, why="not what was meant")
    return None


def _other_reading(text: str, mine: Intent | None, readings: tuple[str, ...], now: datetime, rules: Rules,
                   query: Callable[[Intent, str], str]) -> Decision | None:
    """Where the ASR's other readings know better: a command the chosen reading missed, answered or
    asked back; a sum whose numbers they disagree on, asked back."""
    from assistant.tools.readings import other_reading

    corrected = {text: text}
    for reading in readings:  # a reading that corrects to the chosen one says nothing more
        if reading not in corrected and (said := rules.correct(reading)) != text:
            corrected[reading] = said
    routes = {text: mine}  # each text routed once
    for said in corrected.values():
        if said not in routes:
            routes[said] = _route(said, now, rules)
    routed = {r: routes[said] for r, said in corrected.items()}

    def intent(reading: str) -> str | None:
        found = routed[reading]
        return None if found is None or found.name == "repeat" else found.name

    def answer(reading: str) -> str:
        found = routed[reading]
        return query(found, corrected[reading]) if found is not None else ""

    meant = other_reading(text, [r for r in corrected if r != text], intent, answer)
    if meant is None:
        return None
    said = corrected[meant.text]
    if meant.sure and (local := _local(said, routed[meant.text], now, rules)) is not None:
        return replace(local, why=f"another reading is the command (heard {text})")
    return Decision(Kind.CONFIRM, text, meant=said, why=f"the readings disagree ({', '.join(readings[:4])})")


def _unless_sounded_otherwise(read: Decision, text: str, mine: Intent | None, now: datetime,
                              rules: Rules) -> Decision:
    """What the other readings decided for a transcript that is no command itself, unless its whole
    sound surely names a command they did not answer: then the sound is answered. The chosen reading
    is the likeliest, heard syllable by syllable; another may differ by one command word the
    decoding given the command words wrote in (今天是惊奇解 sounds like 今天是星期几; its reading
    今天是惊起几点 would ask the time)."""
    if mine is not None:
        return read  # a command itself: its readings only doubt its numbers
    near = _sounds_like(text, now, rules)
    if near is None or near.kind is not Kind.TOOL or near.intent is None:
        return read
    if read.kind is Kind.TOOL and read.intent is not None and read.intent.name == near.intent.name:
        return read
    return replace(near, why=f"{near.why}; the readings said {read.kind} {read.meant or read.text}")


def _sounds_like(text: str, now: datetime, rules: Rules) -> Decision | None:
    """A heard request that is a command through slips in several syllables (今天是兄弟姐 → 今天是星期几):
    that command when its phrasing is near and nothing meaning otherwise is as near, asked back when
    only near or when it carries an item heard through the slips; None when it sounds like no command."""
    from assistant.tools.sounds_like import MARGIN, heard_as

    if rules.near_sound >= 1 or (heard := heard_as(text)) is None or heard.score < rules.near_sound:
        return None  # off (sounds_like_ask = 1), or no command is near
    # A todo's item is taken as heard, through the same slips (添加待办给花浇水 → 底花酒水):
    # confirmed, never saved unasked
    if heard.score >= rules.sure_sound and heard.score - heard.rival >= MARGIN and not heard.item:
        local = _local(heard.text, _route(heard.text, now, rules), now, rules)
        if local is not None:
            return replace(local, why=f"a command heard through slips (heard {text}, score {heard.score:.2f})")
    return Decision(Kind.CONFIRM, text, meant=heard.text,
                    why=f"sounds like a command (score {heard.score:.2f}, rival {heard.rival:.2f})")
