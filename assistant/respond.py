"""Who answers a request: an offline tool, or the LLM (behind the reply guard).

``Responder.answer(text)`` is the one decision every front end takes after the transcript — the
hands-free session, ``assistant ask`` and ``file``, and the answer evaluation — so they cannot drift
apart: near-miss command words are corrected by pinyin, the router names an intent the tools
answer (time, sums, timers, todos, the device, and the honest limits: no network, no connected
devices, who the assistant is), "再说一遍" repeats the last reply, a heard request whose whole sound is
near a command's phrasing is that command or asked back (今天是兄弟姐 → 今天是星期几, see
``tools.sounds_like``), and everything else goes to the
LLM, whose stream the reply guard filters before anything is spoken — unless the ASR's rescoring
model found the transcript too unlikely as Mandarin (``min_char_logprob``): then it is asked again,
since an LLM answers whatever it is given (胎红又几种颜色 → 胎红的颜色有多种…); said again at once the
same way, it is answered.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import structlog

from assistant.pipeline import FixedText
from assistant.text.cer import cer
from assistant.text.guard import ClauseGuard, GuardOptions
from models.protocols import scored_reply

if TYPE_CHECKING:
    from assistant.config import Config
    from assistant.text.hotwords import HotwordCorrector
    from assistant.tools.answers import Tools
    from assistant.tools.home import HomeAssistant
    from models.protocols import Llm, TextSource

log = structlog.get_logger("respond")

NOTHING_TO_REPEAT = "我刚才还没说什么。"
NOT_HEARD = "没听清，请再说一遍。"
# A doubted transcript heard again this close (character error rate against the first) is taken as
# meant: the words are rare (宫保鸡丁辣不辣 reads as unlikely as many near-misses), not misheard, and
# asking again would never end; a mishearing seldom comes out the same twice.
SAME_REQUEST_CER = 0.25
SAY_AGAIN = "好的，请再说一遍。"


@dataclass(frozen=True)
class Answer:
    """What will speak the reply, and why."""

    source: TextSource  # a FixedText for a tool's answer, else the (guarded) LLM
    text: str  # the request after hot-word correction
    intent: str | None  # the tool's intent, or None for the LLM

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

    def answer(self, text: str, *, spoken_s: float = 0.0, char_logprob: float | None = None,
               readings: Sequence[str] = ()) -> Answer:
        """Decide who answers ``text``, a request that took ``spoken_s`` seconds to say, whose transcript
        the ASR's rescoring model found ``char_logprob`` likely (per character; None: not weighed, as
        typed text), and which the ASR also read as ``readings`` (likeliest first). A tool's answer is
        computed (and saved) here, before it is spoken."""
        doubted, self.doubted = self.doubted, None
        if not self._scope(spoken_s):
            self.pending = None  # a confirmation question is answered in its conversation, or never
            doubted = None
        settled = self._settle(text)
        if settled is not None:
            return settled
        text = self.correct(text)  # once: every decision below reads the corrected text
        if self.pending is None and self.tools is not None and (meant := _doubtful(text)) is not None:
            self.pending = meant
            log.info("a doubtful command: asking back", heard=text, meant=meant)
            return Answer(FixedText(f"你是说“{meant}”吗？"), text, "confirm")
        if spoken_s > 0 and readings and (read := self._other_reading(text, readings)) is not None:
            return read
        local = self._local(text)
        if local is not None:
            return local
        if spoken_s > 0 and (near := self._sounds_like(text)) is not None:
            return near
        if char_logprob is not None and char_logprob < self.min_char_logprob:
            if doubted is None or cer(doubted, text) > SAME_REQUEST_CER:
                log.info("a transcript too unlikely to answer: asking again", heard=text,
                         char_logprob=round(char_logprob, 2))
                self.doubted = text
                return Answer(FixedText(NOT_HEARD), text, "unclear")
            log.info("the unlikely transcript heard again: answering it", heard=text, before=doubted)
        return Answer(self._llm(self._need_llm()), text, None)

    def _sounds_like(self, text: str) -> Answer | None:
        """A heard request that is a command through slips in several syllables (今天是兄弟姐 →
        今天是星期几): answered as that command when its phrasing is near and nothing meaning otherwise
        is as near, asked back when only near or when it carries an item heard through the slips;
        None for a request that sounds like no command."""
        from assistant.tools.sounds_like import MARGIN, heard_as

        if self.tools is None or self.near_sound >= 1 or (heard := heard_as(text)) is None \
                or heard.score < self.near_sound:
            return None  # off (sounds_like_ask = 1), or no command is near
        # A todo's item is taken as heard, through the same slips (添加待办给花浇水 → 底花酒水):
        # confirmed, never saved unasked
        if heard.score >= self.sure_sound and heard.score - heard.rival >= MARGIN and not heard.item:
            answer = self._local(heard.text)
            if answer is not None:
                log.info("a command heard through slips", heard=text, meant=heard.text, score=heard.score)
                return answer
        if self.pending is not None:
            return None
        self.pending = heard.text
        log.info("a request that sounds like a command: asking back", heard=text, meant=heard.text,
                 score=heard.score, rival=heard.rival)
        return Answer(FixedText(f"你是说“{heard.text}”吗？"), text, "confirm")

    def _other_reading(self, text: str, readings: Sequence[str]) -> Answer | None:
        """The answer where the ASR's other readings know better (``tools.readings``): a command the
        chosen reading missed, answered or asked back; a sum whose numbers they disagree on, asked back."""
        from assistant.tools.readings import other_reading
        from assistant.tools.router import route

        tools = self.tools
        if tools is None:
            return None
        now = self.now()
        corrected = {text: text, **{r: self.correct(r, quiet=True) for r in readings if r != text}}
        routed = {r: route(said, now, honest_limits=self.honest_limits) for r, said in corrected.items()}

        def intent(reading: str) -> str | None:
            found = routed[reading]
            return None if found is None or found.name == "repeat" else found.name

        def query(reading: str) -> str:
            found = routed[reading]
            return tools.answer(found, corrected[reading]) if found is not None else ""

        meant = other_reading(text, [r for r in corrected if r != text], intent, query)
        if meant is None:
            return None
        said = corrected[meant.text]
        if meant.sure and (answer := self._local(said)) is not None:
            log.info("another reading is the command", heard=text, meant=said, intent=meant.intent)
            return answer
        self.pending = said
        log.info("the readings disagree: asking back", heard=text, meant=said, readings=list(readings)[:4])
        return Answer(FixedText(f"你是说“{said}”吗？"), text, "confirm")

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

    def local(self, text: str) -> Answer | None:
        """The answer of an offline tool, Home Assistant or an honest limit, or None when only the LLM can answer."""
        return self._local(self.correct(text))

    def _local(self, text: str) -> Answer | None:
        """``local`` on a text already corrected."""
        if self.home is not None and (device := self._device(text)) is not None:
            from assistant.tools.home import HomeReply

            log.info("a device command for home assistant", device=device)
            return Answer(HomeReply(self.home, device), text, "home_control")
        intent, said = self.tool_answer(text)
        return None if said is None else Answer(FixedText(said), text, intent)

    def _device(self, text: str) -> str | None:
        """The device ``text`` asks to control (打开客厅灯 → 灯), or None if it is not a device command."""
        from assistant.tools.router import route

        intent = route(text, self.now())
        return intent.slots.get("detail", "") if intent is not None and intent.name == "no_device" else None

    def correct(self, text: str, *, quiet: bool = False) -> str:
        """``text`` with near-miss command words put right (``tools.hotwords``), and a sum's numerals
        heard through a slip (``slips.repair``); each fix logged unless ``quiet``."""
        if self.hotwords is None:
            return text
        from assistant.text.slips import repair

        text, fixes = self.hotwords.correct(text)
        text, slipped = repair(text)
        if not quiet:
            for fix in fixes:
                log.info("hot word corrected", heard=fix.heard, word=fix.word, score=fix.score)
            for heard, put in slipped:
                log.info("a sum's slip put right", heard=heard, put=put)
        return text

    def tool_answer(self, text: str) -> tuple[str | None, str | None]:
        """(intent, answer) of an offline tool, or (None, None) when the LLM should answer."""
        if self.tools is None:
            return None, None
        from assistant.tools.router import route

        intent = route(text, self.now(), honest_limits=self.honest_limits)
        if intent is None:
            return None, None
        if intent.name == "repeat":
            return intent.name, self.last_reply or NOTHING_TO_REPEAT
        answer = self.tools.answer(intent, text)  # quick, and committed before it is said
        log.info("answered by a tool", intent=intent.name, answer=answer)
        return intent.name, answer

    def said(self, reply: str) -> None:
        """The reply as it was spoken (so far as it was heard)."""
        if reply.strip():
            self.last_reply = reply.strip()
        self.reply_ended = self.now()

    def finished(self) -> None:
        """The last reply has been heard to its end, or was cut off, now."""
        self.reply_ended = self.now()

    def _scope(self, spoken_s: float) -> bool:
        """Whether the request continues the conversation. One begun more than ``conversation_s``
        after the last reply ended starts a new one: the LLM forgets the earlier exchanges (they
        belong to another request)."""
        began = self.now() - timedelta(seconds=spoken_s)
        if self.reply_ended is not None and (began - self.reply_ended).total_seconds() <= self.conversation_s:
            return True
        history: Any = getattr(self.llm, "history", None)
        if history is not None and history.exchanges:
            log.info("a new conversation: earlier exchanges forgotten", exchanges=len(history.exchanges))
            history.clear()
        return False

    def _settle(self, text: str) -> Answer | None:
        """The answer to a confirmation question: 是的 answers the request asked back, 不是 asks again;
        anything else is a new request (and the question is dropped)."""
        from assistant.text.slips import NO, YES
        from assistant.tools.router import clean

        meant, self.pending = self.pending, None
        if meant is None:
            return None
        said = clean(text)
        if YES.match(said):
            log.info("confirmed", request=meant)
            return self._local(meant) or Answer(self._llm(self._need_llm()), meant, None)
        if NO.match(said):
            return Answer(FixedText(SAY_AGAIN), text, "confirm")
        return None

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


def _doubtful(text: str) -> str | None:
    from assistant.text.slips import doubtful
    from assistant.tools.router import clean

    return doubtful(clean(text))


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
