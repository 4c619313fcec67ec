"""A reply that only says the request back is no answer: the guard asks again, and nothing is remembered."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from assistant.respond import ReplyGuard, Responder
from assistant.text.guard import ASK_AGAIN, ClauseGuard
from assistant.text.parrot import restates
from models.chat import History
from tests.doubles import FixedClock, ScriptedLlm


@pytest.mark.parametrize(("request_text", "reply"), [
    ("今天有什么新玩", "今天有什么新玩？"),  # the measured parrots of the understanding issue
    ("一天有多少个小时", "一天有多少个小时"),
    ("把空桥架到二十六度", "把空桥架到二十六度。"),
    ("明天是几号", "明天是几号？"),
    ("后天北京冷不冷", "北京冷不冷，"),
    ("铃铭是继号", "铃明是几号？"),  # a homophone is the same syllable
    ("100减去38", "一百减去三十八"),  # digits read as the TTS says them
    ("猫喜欢吃鱼还是吃肉", "猫喜欢吃鱼还是吃肉？"),  # a choice question asked back whole
])
def test_a_clause_that_only_says_the_request_back_restates_it(request_text, reply):
    assert restates(request_text, reply)


@pytest.mark.parametrize(("request_text", "reply"), [
    ("一天有多少个小时", "一天有二十四个小时。"),  # the answer adds what was asked for
    ("中国的首都是哪里", "中国的首都是北京。"),
    ("早上好", "早上好！"),  # a greeting said back is the right answer to one
    ("新年快乐", "新年快乐！"),
    ("你好", "你好！"),
    ("讲个笑话", "好，"),  # too short to judge
    ("我今天有点累", "辛苦了，早点休息吧。"),
    ("你会说英语吗", "会说英语，"),  # a yes-no question answered with its own verb
    ("北京冷不冷", "北京冷，"),
    ("猫喜欢吃鱼还是吃肉", "猫喜欢吃鱼。"),  # a choice question answered by one of its choices
])
def test_an_answer_that_shares_words_with_the_request_is_not_a_parrot(request_text, reply):
    assert not restates(request_text, reply)


def test_the_guard_asks_again_instead_of_a_parrot_even_after_an_acknowledgement():
    guard = ClauseGuard(request="把空桥架到二十六度")
    said = [s for ch in "好的，把空桥架到二十六度。" for s in guard.feed(ch)] + guard.finish()
    assert "".join(said) == ASK_AGAIN and guard.replaced == ASK_AGAIN


def test_a_later_clause_that_repeats_words_of_the_request_is_not_judged():
    guard = ClauseGuard(request="明天是几号")
    said = [s for ch in "我没有日历。明天是几号，你可以看看手机。" for s in guard.feed(ch)] + guard.finish()
    assert "".join(said) == "我没有日历。明天是几号，你可以看看手机。"


class RememberingLlm(ScriptedLlm):
    """Scripted replies, remembered in the history as the real backends do (whatever was streamed)."""

    def __init__(self, *replies: str) -> None:
        super().__init__(*replies)
        self.history = History(2)

    async def reply(self, text: str) -> AsyncIterator[str]:
        said: list[str] = []
        try:
            async for piece in super().reply(text):
                said.append(piece)
                yield piece
        finally:
            self.history.remember(text, "".join(said))


async def test_a_parroted_reply_is_asked_again_and_not_remembered():
    llm = RememberingLlm("一天有多少个小时？", "一天有二十四个小时。")
    said = "".join([piece async for piece in ReplyGuard(llm).reply("一天有多少个小时")])
    assert said == ASK_AGAIN and llm.stops == 1
    assert llm.history.exchanges == []
    said = "".join([piece async for piece in ReplyGuard(llm).reply("一天有多少个小时")])
    assert llm.history.exchanges == [("一天有多少个小时", "一天有二十四个小时。")]


def test_a_request_begun_soon_after_the_reply_continues_the_conversation_and_a_later_one_starts_afresh():
    clock = FixedClock()
    llm = ScriptedLlm()
    llm.history = History(2)
    responder = Responder(llm, None, now=clock, conversation_s=8.0)
    responder.answer("中国的首都是哪里")
    llm.history.remember("中国的首都是哪里", "北京。")
    responder.finished()
    clock.t += timedelta(seconds=6)
    responder.answer("那日本的呢", spoken_s=1.5)  # begun 4.5 s after the reply ended
    assert llm.history.exchanges == [("中国的首都是哪里", "北京。")]
    responder.finished()
    clock.t += timedelta(seconds=12)
    responder.answer("太阳系有几颗行星", spoken_s=2.0)  # begun 10 s after: another conversation
    assert llm.history.exchanges == []


def test_the_first_request_of_a_session_sees_no_history():
    llm = ScriptedLlm()
    llm.history = History(2)
    llm.history.remember("昨天的问题", "昨天的回答。")
    Responder(llm, None, now=FixedClock()).answer("你好")
    assert llm.history.exchanges == []
