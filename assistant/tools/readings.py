"""Whisper's other readings of a heard request, where they know better than the one it chose.

Whisper base's beam often has the request right a place or two down: 九成以七十多少 (九乘以七是多少)
under 周成以七十多少, 5加27等于多少 beside 中加二十七等于多少. The rescoring picks the likeliest as
Mandarin, which need not be the command. So, for a heard request (``other_reading``):

- when the chosen reading is no command and another reading is one, that reading is meant: answered
  when it asks the time or a date, or meets an honest limit, it is the likeliest of the other
  readings, and every reading that is a command gives the same answer; asked back otherwise
  (你是说“九乘以七十多少”吗？: a sum's numbers may be a reading's slip too). A command further down is
  weak evidence: the readings include those of the decoding given the command words, which writes
  them where they were not said (今天是惊奇解's seventh reading was 今天是惊起几点);
- when the chosen reading is a sum and another reading is a sum with another result, the numbers are
  in doubt: the chosen one is asked back rather than answered with numbers nobody said.

Everything here is pure: ``route`` names a text's command, ``answer`` computes a query's answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from assistant.tools import limits

# Answered from another reading without asking: they change nothing, and their answer does not take
# the heard numbers (a sum does: 5加27 beside 十五加二十七 would say a wrong result with confidence);
# the honest limits too (今天有什么新玩 under 今天有什么新闻: 我没有联网…).
QUERIES = frozenset({"date", "time", *limits.INTENTS})


@dataclass(frozen=True)
class Meant:
    """The reading a heard request most likely meant, and whether to answer it or ask it back."""

    text: str
    intent: str
    sure: bool


def other_reading(chosen: str, readings: Sequence[str], route: Callable[[str], str | None],
                  answer: Callable[[str], str]) -> Meant | None:
    """What ``readings`` (the other readings, likeliest first) say of ``chosen``; None when nothing."""
    mine = route(chosen)
    commands = [(text, intent) for text in readings if text != chosen and (intent := route(text)) is not None]
    if not commands:
        return None
    if mine is None:
        text, intent = commands[0]
        agreed = intent in QUERIES and text == readings[0] and all(i == intent for _, i in commands) \
            and len({answer(t) for t, _ in commands}) == 1
        return Meant(text, intent, agreed)
    if mine == "calc" and any(i == "calc" and answer(t) != answer(chosen) for t, i in commands):
        return Meant(chosen, mine, False)
    return None
