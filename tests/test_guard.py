"""The reply guard: speaker tags, claims the assistant cannot make, and length — on scripted LLM streams."""

from __future__ import annotations

import pytest

from assistant.respond import ReplyGuard
from assistant.text.guard import (
    ASK_AGAIN,
    CANNOT,
    IDENTITY,
    NO_LOOKUP,
    NO_NETWORK,
    NOT_HEARD,
    ClauseGuard,
    GuardOptions,
)
from models.chat import EXAMPLES, History
from tests.doubles import ScriptedLlm


def guarded(reply: str, options: GuardOptions | None = None) -> tuple[str, ClauseGuard]:
    """The reply fed one character at a time (as a stream may cut it anywhere), and what was said."""
    guard = ClauseGuard(options)
    out = [said for ch in reply for said in guard.feed(ch)] + guard.finish()
    return "".join(out), guard


@pytest.mark.parametrize(("reply", "said"), [
    ("听说：北京是中国的首都。", "北京是中国的首都。"),
    ("助手: 今天是个好日子。", "今天是个好日子。"),
    ("好的。听说：再见。", "好的。再见。"),
    ("今晚早点睡。用户：好的，谢谢。听说：不客气。", "今晚早点睡。"),  # a made-up dialogue ends the reply
    ("**先**把水烧开，再放面。", "先把水烧开，再放面。"),
])
def test_tags_dialogue_and_markdown_never_reach_speech(reply, said):
    assert guarded(reply)[0] == said


@pytest.mark.parametrize(("reply", "honest"), [
    ("听说：客厅的灯是开着的。", CANNOT),
    ("好的，我设了一个五分钟的定时器，具体来说，每隔5秒会提醒你。", NOT_HEARD),
    ("当然可以，设置一个午分钟的定时器。", NOT_HEARD),
    ("十分钟计时器已启动，从现在开始计时。", NOT_HEARD),
    ("好的，打开客厅的灯。", CANNOT),
    ("客厅的灯已经打开了。", CANNOT),
    ("空调已调到二十六度。", CANNOT),
    ("好的，正在为你播放周杰伦的歌。", CANNOT),
    ("我是百度，一个在本机离线运行的中文语音助手。", IDENTITY),
    ("我叫通义千问。", IDENTITY),
    ("北京今天的天气晴朗，温度为21℃。", NO_NETWORK),
    ("明天不会下雨。", NO_NETWORK),
    ("好的，我帮你查一下。", NO_LOOKUP),  # the 1.5B, asked to book a train ticket (spoken held-out half)
    ("我来查一下最近的航班。", NO_LOOKUP),
    ("正在为你查询火车票。", NO_LOOKUP),
])
def test_a_claim_it_cannot_make_is_replaced_by_an_honest_sentence(reply, honest):
    said, guard = guarded(reply)
    assert said == honest and guard.replaced == honest  # the 好的 before a false claim goes too


def test_an_honest_sentence_that_begins_with_what_was_said_is_not_said_twice():
    said, guard = guarded("我是听说，由阿里云开发的语音助手。")
    assert said == IDENTITY and guard.replaced == IDENTITY  # not 我是听说，我是听说，在这台设备上…


@pytest.mark.parametrize("reply", [
    "水的沸点是一百度。", "先深呼吸，再喝杯温水。", "把闹钟放远一点，起床先喝杯水。", "好的，没问题。",
    "下雨天记得带伞。", "我是听说，很高兴认识你。", "我建议你打开窗户通通风。", "我可以帮你设定提醒和闹钟。",
    "你可以查一下说明书。", "查字典就知道了。", "找一找抽屉里有没有。",
])
def test_honest_replies_pass_unchanged(reply):
    said, guard = guarded(reply)
    assert said == reply and guard.replaced is None


def test_a_long_reply_ends_at_a_sentence_end_and_never_passes_the_limit():
    reply = "鸡蛋冷水下锅。水开后再煮八分钟左右。捞出来泡一下冷水。这样蛋壳更好剥，吃起来也更香，营养也很丰富哦。"
    said, _ = guarded(reply, GuardOptions(soft_chars=20, max_chars=40))
    assert said == "鸡蛋冷水下锅。水开后再煮八分钟左右。捞出来泡一下冷水。"
    said, _ = guarded("一二三四五六七八九十，" * 6, GuardOptions(soft_chars=30, max_chars=35))
    assert said == "一二三四五六七八九十，" * 3


async def test_the_stream_is_stopped_and_a_replaced_reply_is_not_remembered():
    llm = ScriptedLlm("好的，我已经帮你打开了客厅的灯，还有别的需要吗？")
    llm.history = History(2)
    llm.history.remember("你好", "你好！")
    llm.history.remember("打开客厅的灯", "好的，我已经帮你打开了客厅的灯，还有别的需要吗？")
    said = "".join([piece async for piece in ReplyGuard(llm).reply("打开客厅的灯")])
    assert said == CANNOT
    assert llm.stops == 1  # the LLM was told to stop at the claim
    assert llm.history.exchanges == [("你好", "你好！")]  # the replaced exchange teaches the next replies nothing


async def test_the_history_keeps_what_was_said_of_a_reply_the_guard_shortened():
    reply = "鸡蛋冷水下锅。水开后再煮八分钟左右。捞出来泡一下冷水。这样蛋壳更好剥，吃起来也更香。"
    llm = ScriptedLlm(reply)
    llm.history = History(2)
    llm.history.remember("鸡蛋怎么煮", reply)
    said = "".join([piece async for piece in ReplyGuard(llm, GuardOptions(soft_chars=20)).reply("鸡蛋怎么煮")])
    assert llm.history.exchanges == [("鸡蛋怎么煮", said)] and said != reply


async def test_a_json_tool_call_passes_through_for_the_tool_call_reader():
    llm = ScriptedLlm('{"tool": "time"}')
    said = "".join([piece async for piece in ReplyGuard(llm, pass_calls=True).reply("几点了")])
    assert said == '{"tool": "time"}'


def test_a_run_without_punctuation_is_not_held_back():
    guard = ClauseGuard()
    out = [said for ch in "一二三四五六七八九十" * 2 for said in guard.feed(ch)]
    assert "".join(out) == "一二三四五六七八九十一二三四五六"  # released at LONG_CLAUSE characters


EXAMPLE_REQUESTS = tuple(asked for asked, _ in EXAMPLES)


@pytest.mark.parametrize(("request_", "reply", "said"), [
    # the 0.5B on two misheard requests of the spoken evaluation's near room: its prompt's example again
    ("我做的", "我今天好烦，抱抱你，先深呼吸歇一会儿，想聊聊吗？", ASK_AGAIN),
    ("多么去哪里玩比较好?", "你今天好烦，抱抱你，先深呼吸歇一会儿，想聊聊吗？", ASK_AGAIN),
    ("我饿了", "先吃点东西吧。我今天好烦，抱抱你。", "先吃点东西吧。"),  # later in a reply: the end of it
])
def test_a_reply_that_replays_the_prompts_example_dialogue_is_no_answer(request_, reply, said):
    guard = ClauseGuard(GuardOptions(examples=EXAMPLE_REQUESTS), request=request_)
    out = [piece for ch in reply for piece in guard.feed(ch)] + guard.finish()
    assert "".join(out) == said


@pytest.mark.parametrize(("request_", "reply"), [
    ("我今天好烦", "抱抱你，先深呼吸歇一会儿，想聊聊吗？"),  # the example's own request is answered so
    ("早上好", "你好呀！今天有什么打算？"),  # a short example request (你好呀) is an everyday reply too
])
def test_an_example_reply_to_its_own_request_is_said(request_, reply):
    guard = ClauseGuard(GuardOptions(examples=EXAMPLE_REQUESTS), request=request_)
    out = [piece for ch in reply for piece in guard.feed(ch)] + guard.finish()
    assert "".join(out) == reply
