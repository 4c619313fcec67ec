"""Optional JSON tool calls from the LLM, read tolerantly.

With ``llm.tool_calls`` on, the system prompt tells the model it may answer a command with one JSON
object instead of words, e.g. {"tool": "reminder", "when": "二十分钟后", "what": "吃药"}. A small
model writes such objects sloppily (single quotes, Chinese punctuation, trailing commas, a code
fence, text around it), so the parser repairs what it can; whatever it cannot read as a known tool
is spoken as plain chat. A call becomes the canonical command sentence the router understands
(二十分钟后提醒我吃药), so tool calls and spoken commands take the same path.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from models.protocols import TextSource

log = structlog.get_logger("toolcall")

NOT_UNDERSTOOD = "这个我还不会。"

PROMPT = (
    "\n如果用户要报时、算数、设提醒或计时、记待办、查看待办，只输出一个JSON对象，不要别的文字："
    '{"tool":"time"}；{"tool":"calc","expression":"12乘以8"}；'
    '{"tool":"reminder","when":"二十分钟后","what":"吃药"}；{"tool":"todo","item":"买牛奶"}；{"tool":"todos"}。'
)

_FENCE = re.compile(r"```(?:json)?", re.IGNORECASE)
_BRACED = re.compile(r"\{[^{}]*\}")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_CHINESE_PUNCT = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'", "：": ":", "，": ",", "｛": "{", "｝": "}"})

SENTENCES: dict[str, Callable[[dict[str, str]], str | None]] = {
    "time": lambda a: "现在几点",
    "date": lambda a: "今天星期几",
    "calc": lambda a: a.get("expression") or None,
    "reminder": lambda a: f"{a['when']}提醒我{a.get('what', '')}" if a.get("when") else None,
    "timer": lambda a: f"{a['when']}叫我" if a.get("when") else None,
    "todo": lambda a: f"添加待办{a['item']}" if a.get("item") else None,
    "todos": lambda a: "看看待办",
    "reminders": lambda a: "看看我的提醒",
}


def looks_like_a_call(start: str) -> bool:
    """Does a reply beginning with ``start`` look like a JSON object (so it must not be spoken yet)?"""
    head = start.lstrip()
    return head.startswith(("{", "```", "｛"))


def parse_call(text: str) -> dict[str, str] | None:
    """The first JSON-ish object in ``text`` as a dict of strings, repaired where possible; or None."""
    cleaned = _FENCE.sub("", text).translate(_CHINESE_PUNCT)
    start = cleaned.find("{")
    if start < 0:
        return None
    depth, end = 0, -1
    for i, ch in enumerate(cleaned[start:], start):
        depth += (ch == "{") - (ch == "}")
        if depth == 0:
            end = i + 1
            break
    if end < 0:
        return None
    body = _TRAILING_COMMA.sub(r"\1", cleaned[start:end])
    for candidate in (body, body.replace("'", '"')):
        try:
            found = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(found, dict):
            return {str(k).strip().lower(): str(v).strip() for k, v in found.items()}
    return None


def command_of(text: str) -> str | None:
    """The command sentence a tool call in ``text`` stands for, or None (then it is plain chat)."""
    call = parse_call(text)
    if call is None:
        return None
    make = SENTENCES.get(call.get("tool", call.get("name", "")).lower())
    return make(call) if make is not None else None


class ToolCallReader:
    """A text source around the LLM: a reply that starts like a JSON object is held back, read as a
    tool call and answered by the tools; any other reply streams through untouched."""

    def __init__(self, llm: TextSource, answer: Callable[[str], str | None]) -> None:
        self.llm = llm
        self.answer = answer  # a command sentence -> the tools' reply, or None

    def stop(self) -> None:
        self.llm.stop()

    async def reply(self, question: str) -> AsyncIterator[str]:
        head = ""  # the reply until its first visible character tells a call from chat
        passing = False
        async for piece in self.llm.reply(question):
            if passing:
                yield piece
                continue
            head += piece
            if not head.strip() or looks_like_a_call(head):
                continue  # a call is held back whole
            passing = True
            yield head
        if head.strip() and not passing:
            yield self._answer_call(head)

    def _answer_call(self, text: str) -> str:
        command = command_of(text)
        said = self.answer(command) if command is not None else None
        if said is None:
            log.info("a tool call the tools cannot answer: said as plain text", reply=text)
            said = _BRACED.sub("", _FENCE.sub("", text)).strip() or NOT_UNDERSTOOD
        else:
            log.info("the LLM called a tool", command=command)
        return said
