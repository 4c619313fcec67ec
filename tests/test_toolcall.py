"""The LLM's optional JSON tool calls: read tolerantly, answered by the tools, else plain chat."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from assistant.tools.answers import Tools
from assistant.tools.store import Store
from assistant.tools.toolcall import command_of, looks_like_a_call, parse_call
from tests.conftest import real, session_of, silence
from tests.doubles import ScriptedAsr, ScriptedLlm

TZ = ZoneInfo("Asia/Shanghai")


@pytest.mark.parametrize(("reply", "command"), [
    ('{"tool": "reminder", "when": "二十分钟后", "what": "吃药"}', "二十分钟后提醒我吃药"),
    ("{'tool': 'calc', 'expression': '12乘以8'}", "12乘以8"),  # single quotes
    ('```json\n{"tool": "time"}\n```', "现在几点"),  # a code fence
    ("好的：{“tool”：“todo”，“item”：“买牛奶”}", "添加待办买牛奶"),  # Chinese punctuation, text before
    ('{"tool": "todos",}', "看看待办"),  # a trailing comma
    ('{"name": "timer", "when": "十分钟后"}', "十分钟后叫我"),
    ('{"tool": "weather", "city": "北京"}', None),  # no such tool
    ('{"tool": "reminder", "what": "吃药"}', None),  # no time: not a call it can make
    ('{"tool": "calc", "expression": ', None),  # cut off
    ("北京是中国的首都。", None),
])
def test_tool_calls_are_read_tolerantly(reply, command):
    assert command_of(reply) == command


def test_a_call_is_recognised_from_its_first_visible_character():
    assert looks_like_a_call('  {"tool"') and looks_like_a_call("```json") and not looks_like_a_call("好的")
    assert parse_call("no braces") is None


@pytest.fixture
def tools(tmp_path):
    store = Store(tmp_path / "t.sqlite3")
    yield Tools(store, lambda: datetime(2026, 11, 29, 14, 0, tzinfo=TZ))
    store.close()


async def test_a_call_from_the_llm_is_answered_by_the_tools_and_chat_streams_through(run_replay, tools):
    session = session_of(real("cmd_qiehuan_1.wav"), silence(3.0), real("cmd_qiehuan_2.wav"), silence(2.0))
    llm = ScriptedLlm('{"tool": "reminder", "when": "半小时后", "what": "关火"}', "前视就是车前方的画面。")
    r = await run_replay(session, "llm.tool_calls=true", "dialog.follow_up_s=4", llm=llm,
                         asr=ScriptedAsr("帮我在三十分钟以后关一下火", "切换前视"), tools=tools,
                         start=datetime(2026, 11, 29, 14, 0, tzinfo=TZ))
    replies = [e["text"] for e in r.events if e["type"] == "reply_text"]
    assert replies[0] == "好的，半小时后，也就是今天下午两点半，提醒你关火。"
    assert "{" not in "".join(e["text"] for e in r.events if e["type"] == "text_chunk")  # never spoken
    assert replies[1] == "前视就是车前方的画面。"
    assert [p.text for p in tools.store.pending()] == ["关火"]
