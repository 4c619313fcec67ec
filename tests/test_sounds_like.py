"""A heard request near a command's phrasing by its whole sound is that command (今天是兄弟姐 → 今天是星期几),
or asked back when only near; everyday speech is left to the LLM. The transcripts are Whisper base's,
of Kokoro voices in the spoken evaluation's near room (benchmarks/spoken.py, tuning half)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from assistant.config import load
from assistant.respond import for_config
from assistant.tools.answers import Tools
from assistant.tools.router import route
from assistant.tools.sounds_like import MARGIN, _forms, heard_as
from assistant.tools.store import Store
from tests.doubles import FixedClock, ScriptedLlm

CONFIG = Path(__file__).resolve().parent.parent / "config.toml"


def test_every_phrasing_is_one_the_router_understands_as_its_command() -> None:
    now = datetime(2026, 1, 1).astimezone()
    for form in _forms():
        said = "".join({"*": "客厅", "…": "买牛奶"}.get(p, p) for p in form.pieces)
        found = route(said, now)
        assert found is not None and found.name == form.intent, said


@pytest.mark.parametrize(("heard", "meant", "intent"), [
    ("今天是兄弟姐", "今天是星期几", "date"),  # xiong di jie / xing qi ji
    ("去消病直气。", "取消定时器", "reminder_cancel"),
    ("玩掉客厅的动", "关掉客厅的灯", "no_device"),
    ("后天北京能不能。", "后天北京冷不冷", "no_network"),  # the city is kept as heard
    ("天家 待办 给 花椒水", "添加待办给 花椒水", "todo_add"),  # and a todo's item
    ("你能帮我做神吗?", "你能帮我做什么", "help"),
])
def test_a_command_heard_through_slips_is_near_its_phrasing(heard, meant, intent) -> None:
    found = heard_as(heard)
    assert found is not None
    assert (found.text, found.intent) == (meant, intent)
    assert found.score >= 0.75 and found.score - found.rival >= MARGIN


def test_a_slip_that_could_mean_either_direction_leaves_the_nearest_in_doubt() -> None:
    found = heard_as("把音量都少一点")  # 调小 was said; 都少 is as near 调高
    assert found is not None and found.intent == "volume"
    assert found.score - found.rival < MARGIN


@pytest.mark.parametrize("heard", ["单曲有点冷怎么办。", "晚饭吃什么好?", "给我讲个故事吧", "春节是农历几月几号。",
                                   "胎红又几种颜色。", "宫保鸡丁辣不辣", "我饿了", "你在吗? 今天怎么样?"])
def test_everyday_speech_is_not_near_a_command(heard) -> None:
    found = heard_as(heard)
    assert found is None or found.score < 0.6


def test_nothing_chinese_is_near_nothing() -> None:
    assert heard_as("") is None
    assert heard_as("?!") is None


def test_a_heard_command_through_slips_is_answered_by_its_tool(tool_responder) -> None:
    r, llm = tool_responder
    answer = r.answer("今天是兄弟姐", spoken_s=1.4)
    assert answer.intent == "date" and "星期" in answer.source.text
    assert llm.asked == []


def test_typed_text_has_no_slips_to_hear_through(tool_responder) -> None:
    r, _ = tool_responder
    assert r.answer("今天是兄弟姐").intent is None  # typed as it is meant: the LLM's


def test_a_request_only_near_a_command_is_asked_back_and_a_yes_answers_it(tool_responder) -> None:
    r, llm = tool_responder
    asked = r.answer("刀肯定是", spoken_s=1.2)  # 打开电视, 0.62 near
    assert (asked.intent, asked.source.text) == ("confirm", "你是说“打开电视”吗？")
    r.finished()
    settled = r.answer("是的", spoken_s=0.5)
    assert settled.intent == "no_device" and "电视" in settled.source.text
    assert llm.asked == []


def test_a_todo_heard_through_slips_is_confirmed_not_saved_with_its_item_as_heard(tool_responder, tmp_path) -> None:
    r, _ = tool_responder
    found = heard_as("听家代棒底花酒水。")  # 添加待办给花浇水 in the near room: the item came out as 底花酒水
    assert found is not None and (found.intent, found.item) == ("todo_add", "底花酒水") and found.score >= 0.75
    asked = r.answer("听家代棒底花酒水。", spoken_s=2.1)
    assert (asked.intent, asked.source.text) == ("confirm", "你是说“添加待办底花酒水”吗？")
    assert r.tools.store.todos() == []
    r.finished()
    assert r.answer("不是", spoken_s=0.5).intent != "todo_add"
    assert r.tools.store.todos() == []


def test_a_doubtful_direction_is_asked_back_not_guessed(tool_responder) -> None:
    r, _ = tool_responder
    asked = r.answer("把音量都少一点", spoken_s=1.5)
    assert asked.intent == "confirm"


def test_the_check_is_off_at_one(tmp_path: Path) -> None:
    store = Store(tmp_path / "t.sqlite3")
    clock = FixedClock()
    cfg = load(CONFIG, ["tools.sounds_like_ask=1"])
    r = for_config(cfg, ScriptedLlm("好的。"), Tools(store, clock), now=clock)
    assert r.answer("今天是兄弟姐", spoken_s=1.4).intent is None
    store.close()


def test_the_phrasings_are_read_when_the_responder_is_made_not_on_the_first_request(tmp_path: Path) -> None:
    _forms.cache_clear()
    store = Store(tmp_path / "t.sqlite3")
    clock = FixedClock()
    for_config(load(CONFIG, []), ScriptedLlm("好的。"), Tools(store, clock), now=clock)
    assert _forms.cache_info().currsize == 1
    store.close()
