"""The answer evaluation: everyday requests put to the assistant, each reply judged by stated rules.

A question set (``benchmarks/questions.toml``) lists requests by category, each with what an
acceptable reply must say (``say``, a regular expression) and must not say (``never``), an optional
earlier turn (``before``) and what the tools must have saved (``stores``). Global rules apply to
every reply: no speaker tag, no Markdown, no other assistant's name, no refusal of a harmless
request, at most ``max_chars`` characters. Each request goes through the same ``Responder`` as a
spoken one (hot words, router, tools, honest limits, LLM behind the reply guard), so what is judged
is what a person would hear.

``judge`` is pure, so tests apply the same rules to real model output.
"""

from __future__ import annotations

import re
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.text.chunk import Chunker
from assistant.text.normalize import protected_spans

if TYPE_CHECKING:
    from assistant.respond import Responder
    from assistant.tools.store import Store


ASKED = re.compile(r"没听清|再说一遍|请再说|你是说.{1,40}吗|是这个意思吗")
UNSURE = re.compile(r"不太确定|不确定|拿不准|不敢肯定")
OUTCOMES = ("right", "asked", "unsure", "wrong")


class QuestionSetError(ValueError):
    """A question set that cannot be read: the message names the file and the item."""


@dataclass(frozen=True)
class Item:
    cat: str
    ask: str
    say: re.Pattern[str] | None = None
    never: re.Pattern[str] | None = None
    before: str = ""
    stores: str = ""  # "reminder" or "todo": the tools must have saved one more


@dataclass(frozen=True)
class Rules:
    max_chars: int = 50
    never: tuple[re.Pattern[str], ...] = ()


@dataclass
class Outcome:
    item: Item
    reply: str
    by: str  # the tool's intent, or "llm"
    first_clause_s: float  # request → first clause of text (what the TTS could start on)
    reply_s: float  # request → whole reply
    pieces: int  # LLM pieces (about one token each)
    problems: list[str] = field(default_factory=list)

    @property
    def acceptable(self) -> bool:
        return not self.problems


def load_questions(path: Path) -> tuple[Rules, list[Item]]:
    """The rules and items of a question set; a bad file or pattern is a QuestionSetError."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise QuestionSetError(f"{path}: {exc}") from None
    raw_rules = data.get("rules", {})
    try:
        rules = Rules(int(raw_rules.get("max_chars", 50)), tuple(re.compile(p) for p in raw_rules.get("never", [])))
        items = [_item(q) for q in data.get("q", [])]
    except (re.error, KeyError, TypeError, ValueError) as exc:
        raise QuestionSetError(f"{path}: {exc}") from None
    if not items:
        raise QuestionSetError(f"{path}: no [[q]] items")
    return rules, items


def _item(q: dict[str, Any]) -> Item:
    unknown = set(q) - {"cat", "ask", "say", "never", "before", "stores"}
    if unknown:
        raise ValueError(f"item {q.get('ask')!r}: unknown keys {sorted(unknown)}")
    if q.get("stores", "") not in ("", "reminder", "todo"):
        raise ValueError(f"item {q['ask']!r}: stores must be 'reminder' or 'todo'")
    return Item(cat=str(q["cat"]), ask=str(q["ask"]), say=re.compile(q["say"]) if "say" in q else None,
                never=re.compile(q["never"]) if "never" in q else None, before=str(q.get("before", "")),
                stores=str(q.get("stores", "")))


def judge(item: Item, reply: str, rules: Rules, stored: Sequence[str] = ()) -> list[str]:
    """Why ``reply`` is not acceptable for ``item`` (empty: acceptable). ``stored``: what the tools saved."""
    problems = []
    text = reply.strip()
    if not any("\u4e00" <= ch <= "\u9fff" for ch in text):
        problems.append("no Chinese in the reply")
    if len(text) > rules.max_chars:
        problems.append(f"too long to speak ({len(text)} > {rules.max_chars} characters)")
    for pattern in rules.never:
        if (m := pattern.search(text)) is not None:
            problems.append(f"global rule: {m.group()!r}")
    if item.say is not None and item.say.search(text) is None:
        problems.append(f"does not say /{item.say.pattern}/")
    if item.never is not None and (m := item.never.search(text)) is not None:
        problems.append(f"says {m.group()!r}")
    if item.stores and item.stores not in stored:
        problems.append(f"no {item.stores} was saved")
    return problems


def _saved(store: Store | None) -> tuple[int, int]:
    if store is None:
        return 0, 0
    return len(store.pending()), len(store.todos())


async def ask(responder: Responder, text: str, first_chunk_max: int = 12) -> tuple[str, str, float, float, int]:
    """Put ``text`` to the responder: (reply, who answered, first clause s, whole reply s, pieces)."""
    chunker = Chunker(first_chunk_max, 40, protected_spans)
    started = time.perf_counter()
    answer = responder.answer(text)
    first: float | None = None
    pieces: list[str] = []
    async for piece in answer.source.reply(answer.text):
        pieces.append(piece)
        if first is None and chunker.feed(piece):
            first = time.perf_counter() - started
    reply = "".join(pieces).strip()
    done = time.perf_counter() - started
    responder.said(reply)
    return reply, answer.intent or "llm", first if first is not None else done, done, len(pieces)


def classify(reply: str, problems: list[str]) -> tuple[str, list[str]]:
    """The outcome of ``reply`` (right, asked again, unsure or wrong), given what the judge found
    wrong with it: an honest 没听清 or 你是说…吗 is asked again, an honest 不太确定 is unsure, and
    anything else that is not right is wrong."""
    if not reply.strip():
        return "wrong", ["no answer"]
    if not problems:
        return "right", []
    if ASKED.search(reply):
        return "asked", problems
    if UNSURE.search(reply):
        return "unsure", problems
    return "wrong", problems


async def run_item(responder: Responder, item: Item, rules: Rules, store: Store | None) -> Outcome:
    """One request in a fresh conversation (after its ``before`` turn, if any), judged."""
    history = getattr(responder.llm, "history", None)
    if history is not None:
        history.clear()
    responder.last_reply = ""
    if item.before:
        await ask(responder, item.before)
    reminders, todos = _saved(store)
    reply, by, first, whole, pieces = await ask(responder, item.ask)
    now_reminders, now_todos = _saved(store)
    stored = [name for name, grew in (("reminder", now_reminders > reminders), ("todo", now_todos > todos)) if grew]
    outcome = Outcome(item, reply, by, first, whole, pieces if by == "llm" else 0)
    outcome.problems = judge(item, reply, rules, stored)
    return outcome
