"""Who answers a request: an offline tool, or the LLM (behind the reply guard).

``Responder.answer(text)`` is the one decision every front end takes after the transcript — the
hands-free session, ``assistant ask`` and ``file``, and the answer evaluation — so they cannot drift
apart. It is made in two steps: ``decide`` (``assistant/decide.py``), a pure function of the request,
the conversation so far and the responder's settings, names what answers (a tool, an honest limit,
Home Assistant, a question asked back, an honest 没听清, or the LLM); ``commit`` acts on that, in one
place, before anything is spoken: a tool's answer is computed and saved, a question asked back is
kept for the 是的 / 不是 that follows, and a new conversation makes the LLM forget the last one. The
LLM's stream passes the reply guard before anything of it is spoken.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import structlog

from assistant.pipeline import FixedText
from assistant.text.guard import ClauseGuard, GuardOptions
from models.protocols import scored_reply

if TYPE_CHECKING:
    from assistant.config import Config
    from assistant.decide import Conversation, Decision, Rules
    from assistant.pipeline import Voice
    from assistant.text.hotwords import HotwordCorrector
    from assistant.tools.answers import Tools
    from assistant.tools.home import HomeAssistant
    from assistant.tools.router import Intent
    from models.protocols import Llm, TextSource

log = structlog.get_logger("respond")

Corrected = tuple[str, list[Any], list[tuple[str, str]]]  # a text put right, its hot-word fixes, its sums' slips

NOTHING_TO_REPEAT = "我刚才还没说什么。"
NOT_HEARD = "没听清，请再说一遍。"
SAY_AGAIN = "好的，请再说一遍。"


@dataclass(frozen=True)
class Memory:
    """What a commit changes in the responder, kept to undo one made ahead of the endpoint."""

    pending: str | None
    doubted: str | None
    reply_ended: datetime | None
    last_reply: str
    exchanges: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Answer:
    """What will speak the reply, and why."""

    source: TextSource  # a FixedText for a tool's answer, else the (guarded) LLM, or a remote pipeline's reply
    text: str  # the request after hot-word correction
    intent: str | None  # the tool's intent, or None for the LLM
    voice: Voice | None = None  # the reply's own audio (a remote pipeline's), spoken in place of the local TTS

    @property
    def acted(self) -> bool:
        """Answering it changed something (a timer set, a todo added, a device switched)."""
        from assistant.tools.answers import ACTIONS

        return self.intent in ACTIONS or self.intent == "home_control"


def for_config(cfg: Config, llm: Llm | None, tools: Tools | None,
               now: Callable[[], datetime] | None = None) -> Responder:
    """The responder the configuration asks for (hot words, tool calls, reply lengths, Home Assistant)."""
    from assistant.tools import home
    from models.chat import prompt

    guard = GuardOptions(soft_chars=cfg.llm.reply_soft_chars, max_chars=cfg.llm.reply_max_chars,
                         min_confidence=cfg.llm.min_confidence,
                         examples=tuple(asked for asked, _ in prompt(cfg.llm.system_prompt)[1]))
    if tools is not None and cfg.tools.sounds_like_ask < 1:
        from assistant.tools.sounds_like import prepare

        prepare()  # the phrasings are read once (0.6 s here), now rather than on the first request
    return Responder(llm, tools, hotwords=hotwords_for(cfg), tool_calls=cfg.llm.tool_calls, guard=guard, now=now,
                     home=home.from_config(cfg), conversation_s=cfg.llm.conversation_s,
                     min_char_logprob=cfg.asr.min_char_logprob,
                     sounds_like=(cfg.tools.sounds_like_answer, cfg.tools.sounds_like_ask))


def hotwords_for(cfg: Config) -> HotwordCorrector | None:
    """What puts near-miss command words right by pinyin: ``tools.hotwords`` and the router's words."""
    from assistant.text.hotwords import HotwordCorrector
    from assistant.tools.router import COMMAND_WORDS

    words = [*cfg.tools.hotwords, *(COMMAND_WORDS if cfg.tools.command_words and cfg.tools.enabled else ())]
    return HotwordCorrector(words) if words else None


class Responder:
    def __init__(self, llm: Llm | None, tools: Tools | None, *, hotwords: HotwordCorrector | None = None,
                 tool_calls: bool = False, guard: GuardOptions | None = None,
                 now: Callable[[], datetime] | None = None, honest_limits: bool = True,
                 guarded: bool = True, home: HomeAssistant | None = None, conversation_s: float = 8.0,
                 min_char_logprob: float = -math.inf, sounds_like: tuple[float, float] = (1.0, 1.0)) -> None:
        self.llm = llm
        self.home = home  # device commands go to it, when there is one
        self.honest_limits = honest_limits
        self.tools = tools
        self.now = now or (tools.now if tools is not None else (lambda: datetime.now().astimezone()))
        self.hotwords = hotwords
        self.tool_calls = tool_calls
        # Unguarded: to measure the guard, and for a satellite, whose replies Home Assistant makes
        self.guard: GuardOptions | None = (guard or GuardOptions()) if guarded else None
        self.last_reply = ""  # what was said last, for "再说一遍"
        self.conversation_s = conversation_s
        self.reply_ended: datetime | None = None  # when the last reply was heard to its end (or cut)
        self.pending: str | None = None  # a request asked back (你是说…吗？), for a 是的 / 不是 to settle
        self.min_char_logprob = min_char_logprob  # a transcript less likely than this is not the LLM's
        self.doubted: str | None = None  # the last transcript asked again for that, for its repetition
        # A heard request this near a command's phrasing (sounds_like.heard_as) is answered as that
        # command; this near, asked back; farther, left as heard.
        self.sure_sound, self.near_sound = sounds_like
        self._before: Memory | None = None  # as it was before the last answer_ahead, for retract

    def answer(self, text: str, *, spoken_s: float = 0.0, char_logprob: float | None = None,
               readings: Sequence[str] = ()) -> Answer:
        """Decide who answers ``text``, a request that took ``spoken_s`` seconds to say, whose transcript
        the ASR's rescoring model found ``char_logprob`` likely (per character; None: not weighed, as
        typed text), and which the ASR also read as ``readings`` (likeliest first), and commit to it: a
        tool's answer is computed (and saved) here, before it is spoken."""
        self._before = None
        decision, conversation = self._decided(text, spoken_s, char_logprob, readings)
        return self.commit(decision, conversation, heard=text)

    def answer_ahead(self, text: str, *, spoken_s: float = 0.0, char_logprob: float | None = None,
                     readings: Sequence[str] = ()) -> Answer | None:
        """``answer`` for a request that may not be over (a speculative transcript, before the endpoint).
        None, with nothing done, where acting on it would change something outside the conversation (a
        timer, a todo, a device): that waits for ``answer`` once the request is over. Otherwise it is
        committed as ``answer`` commits, and what that changes is kept for ``retract``."""
        decision, conversation = self._decided(text, spoken_s, char_logprob, readings)
        if decision.acts:
            return None
        history: Any = getattr(self.llm, "history", None)
        self._before = Memory(self.pending, self.doubted, self.reply_ended, self.last_reply,
                              tuple(history.exchanges) if history is not None else ())
        return self.commit(decision, conversation, heard=text)

    def retract(self) -> None:
        """Undo the last ``answer_ahead``: the speaker went on, and its reply is dropped unheard (the
        LLM forgets the exchange, the conversation is as it was)."""
        before, self._before = self._before, None
        if before is None:
            return
        self.pending, self.doubted, self.reply_ended, self.last_reply = (
            before.pending, before.doubted, before.reply_ended, before.last_reply)
        history: Any = getattr(self.llm, "history", None)
        if history is not None:
            history.restore(before.exchanges)

    def _decided(self, text: str, spoken_s: float, char_logprob: float | None,
                 readings: Sequence[str]) -> tuple[Decision, Conversation]:
        from assistant.decide import Request, decide

        corrections: dict[str, Corrected] = {}  # each text decide put right, kept for the log lines

        def correct(said: str) -> str:
            corrections[said] = self._corrected(said)
            return corrections[said][0]

        conversation = self.conversation(spoken_s)
        rules = replace(self.rules, correct=correct)
        decision = decide(Request(text, spoken_s, char_logprob, tuple(readings)), conversation, rules)
        if text in corrections:
            _log_fixes(*corrections[text][1:])  # which words of the request were put right, and how near
        return decision, conversation

    @property
    def rules(self) -> Rules:
        """The settings ``decide`` reads."""
        from assistant.decide import Rules

        tools = self.tools
        return Rules(tools=tools is not None, query=tools.answer if tools is not None else None,
                     home=self.home is not None, honest_limits=self.honest_limits,
                     correct=lambda text: self.correct(text, quiet=True), min_char_logprob=self.min_char_logprob,
                     sure_sound=self.sure_sound, near_sound=self.near_sound)

    def conversation(self, spoken_s: float) -> Conversation:
        """The conversation a request that took ``spoken_s`` seconds to say, ending now, is part of.
        One begun more than ``conversation_s`` after the last reply ended starts a new one."""
        from assistant.decide import Conversation

        now = self.now()
        began = now - timedelta(seconds=spoken_s)
        ended = self.reply_ended
        continued = ended is not None and (began - ended).total_seconds() <= self.conversation_s
        return Conversation(now, continued, self.pending, self.doubted)

    def commit(self, decision: Decision, conversation: Conversation, heard: str | None = None) -> Answer:
        """Act on ``decision``, the one place a request changes anything: a new conversation makes
        the LLM forget the earlier exchanges (they belong to another request), the question asked back
        or the transcript asked again is kept for the next request, and a tool computes (and saves) its
        answer."""
        from assistant.decide import Kind

        if not conversation.continued:
            self._forget_conversation()
        self.pending = decision.meant if decision.kind is Kind.CONFIRM else None
        self.doubted = decision.text if decision.kind is Kind.UNCLEAR else None
        if decision.why or (heard is not None and heard != decision.text):
            log.info("decided", kind=str(decision.kind), why=decision.why, heard=heard, request=decision.text,
                     meant=decision.meant)
        return self._act(decision)

    def _act(self, decision: Decision) -> Answer:
        """The answer ``decision`` names; a tool's computed (and saved) now."""
        from assistant.decide import Kind

        text = decision.text
        match decision.kind:
            case Kind.TOOL if decision.intent is not None:
                return Answer(FixedText(self._tool(decision.intent, text)), text, decision.intent.name)
            case Kind.HOME if self.home is not None and decision.device is not None:
                from assistant.tools.home import HomeReply

                log.info("a device command for home assistant", device=decision.device)
                return Answer(HomeReply(self.home, decision.device), text, "home_control")
            case Kind.CONFIRM:
                return Answer(FixedText(f"你是说“{decision.meant}”吗？"), text, "confirm")
            case Kind.SAY_AGAIN:
                return Answer(FixedText(SAY_AGAIN), text, "confirm")
            case Kind.UNCLEAR:
                return Answer(FixedText(NOT_HEARD), text, "unclear")
            case Kind.LLM:
                return Answer(self._llm(self._need_llm()), text, None)
            case _:
                raise ValueError(f"respond: a decision this responder cannot act on: {decision}")

    def _forget_conversation(self) -> None:
        history: Any = getattr(self.llm, "history", None)
        if history is not None and history.exchanges:
            log.info("a new conversation: earlier exchanges forgotten", exchanges=len(history.exchanges))
            history.clear()

    def withdraw(self, text: str) -> None:
        """The request ``text`` was not finished (the speaker went on after a pause): its reply, cut,
        is not an exchange for the LLM to remember; the whole request comes next."""
        history: Any = getattr(self.llm, "history", None)
        if history is not None:
            history.forget(text)

    def warm(self, text: str) -> None:
        """``text`` is likely the request (a speculative transcript): if only the LLM would answer it,
        let the LLM evaluate its prompt now. Nothing is saved or said."""
        from assistant.tools.router import route
        from models.protocols import Prefill

        if not isinstance(self.llm, Prefill) or not text:
            return
        if self.hotwords is not None:
            text, _ = self.hotwords.correct(text)
        if self.tools is not None and route(text, self.now(), honest_limits=self.honest_limits) is not None:
            return  # a tool or an honest limit answers this
        self.llm.prefill(text)

    def prepare_next(self) -> None:
        """A reply is over: let the LLM evaluate what its next prompt begins with (the conversation as
        it now is) before the next request comes. Nothing is saved or said."""
        from models.protocols import Prefill

        if isinstance(self.llm, Prefill):
            self.llm.prefill_history()

    def local(self, text: str) -> Answer | None:
        """The answer of an offline tool, Home Assistant or an honest limit, or None when only the LLM can answer."""
        from assistant.decide import local

        decision = local(self.correct(text), self.now(), self.rules)
        return None if decision is None else self._act(decision)

    def correct(self, text: str, *, quiet: bool = False) -> str:
        """``text`` with near-miss command words put right (``tools.hotwords``), and a sum's numerals
        heard through a slip (``slips.repair``); each fix logged unless ``quiet``."""
        fixed, fixes, slipped = self._corrected(text)
        if not quiet:
            _log_fixes(fixes, slipped)
        return fixed

    def _corrected(self, text: str) -> Corrected:
        """``correct`` without the log lines: the text and what was put right in it."""
        if self.hotwords is None:
            return text, [], []
        from assistant.text.slips import repair

        text, fixes = self.hotwords.correct(text)
        text, slipped = repair(text)
        return text, list(fixes), list(slipped)

    def tool_answer(self, text: str) -> tuple[str | None, str | None]:
        """(intent, answer) of an offline tool, or (None, None) when the LLM should answer."""
        if self.tools is None:
            return None, None
        from assistant.tools.router import route

        intent = route(text, self.now(), honest_limits=self.honest_limits)
        return (None, None) if intent is None else (intent.name, self._tool(intent, text))

    def _tool(self, intent: Intent, text: str) -> str:
        """The tool's answer to ``intent``, committed (a timer set, a todo saved) before it is said."""
        if intent.name == "repeat":
            return self.last_reply or NOTHING_TO_REPEAT
        if self.tools is None:
            raise RuntimeError("respond: no tools to answer with")
        answer = self.tools.answer(intent, text)
        log.info("answered by a tool", intent=intent.name, answer=answer)
        return answer

    def said(self, reply: str) -> None:
        """The reply as it was spoken (so far as it was heard)."""
        if reply.strip():
            self.last_reply = reply.strip()
        self.reply_ended = self.now()

    def finished(self) -> None:
        """The last reply has been heard to its end, or was cut off, now."""
        self.reply_ended = self.now()

    def _need_llm(self) -> Llm:
        if self.llm is None:
            raise RuntimeError("respond: no LLM to answer with")
        return self.llm

    def _llm(self, llm: Llm) -> TextSource:
        calls = self.tool_calls and self.tools is not None
        source: TextSource = llm if self.guard is None else ReplyGuard(llm, self.guard, pass_calls=calls)
        if calls:
            from assistant.tools.toolcall import ToolCallReader

            source = ToolCallReader(source, lambda command: self.tool_answer(command)[1])
        return source


def _log_fixes(fixes: Sequence[Any], slipped: Sequence[tuple[str, str]]) -> None:
    for fix in fixes:
        log.info("hot word corrected", heard=fix.heard, word=fix.word, score=fix.score)
    for heard, put in slipped:
        log.info("a sum's slip put right", heard=heard, put=put)


class ReplyGuard:
    """The LLM's reply through ``ClauseGuard``: only what passes is yielded. When the guard ends the
    reply early, the LLM is stopped, and its history is told what was really said."""

    def __init__(self, llm: Llm, options: GuardOptions | None = None, *, pass_calls: bool = False) -> None:
        self.llm = llm
        self.options = options or GuardOptions()
        self.pass_calls = pass_calls  # a reply that starts like a JSON tool call goes through untouched
        self.last: ClauseGuard | None = None

    def stop(self) -> None:
        self.llm.stop()

    async def reply(self, text: str) -> AsyncIterator[str]:
        from assistant.tools.toolcall import looks_like_a_call

        guard = self.last = ClauseGuard(self.options, request=text)
        stream = scored_reply(self.llm, text)
        head, passing, cut = "", False, False
        try:
            async for scored in stream:
                piece = scored.text
                if passing:
                    yield piece
                    continue
                head = head if guard.said else head + piece
                if self.pass_calls and head.strip() and not guard.said and looks_like_a_call(head):
                    passing = True
                    yield head
                    continue
                for said in guard.feed(piece, scored.confidence):
                    yield said
                if guard.ended:
                    cut = True
                    break
            if not passing:
                for said in guard.finish():
                    yield said
        finally:
            if cut:
                self.llm.stop()
            await stream.aclose()  # type: ignore[attr-defined]
        if guard.replaced is not None:
            log.info("reply replaced: it claimed what the assistant cannot, or said the request back",
                     said=guard.said)
        history: Any = getattr(self.llm, "history", None)  # the backends' shared chat.History
        if history is not None and not passing:
            if guard.replaced is not None:
                history.forget(text)  # a replaced reply teaches the next ones nothing
            else:
                history.amend(text, guard.said)  # what was said: tags and the overlong tail gone
