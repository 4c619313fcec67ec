"""Commands heard through a slip: a sum's near-miss numerals, 十多少 for 是多少, and a doubtful date asked back."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from assistant.respond import SAY_AGAIN, Responder, hotwords_for
from assistant.text.slips import doubtful, repair
from assistant.tools.answers import Tools
from assistant.tools.store import Store
from tests.doubles import FixedClock, ScriptedLlm

TZ = ZoneInfo("Asia/Shanghai")


@pytest.mark.parametrize(("heard", "meant"), [
    ("植物加27等于多少", "十五加27等于多少"),  # zhi/shi: measured in a room (十五加二十七)
    ("100减去38十多少", "100减去38是多少"),  # 是 heard as 十 after a digit
    ("酒乘以七是多少", "九乘以七是多少"),
    ("100 减去 38 十多 少", "100减去38是多少"),  # as Whisper wrote it in the near room, spaces and all
    ("100减去 三十八十多少", "100减去三十八是多少"),  # after a Chinese numeral that cannot go on with 十
    ("25 14 十多少", "25 14是多少"),  # only the spaces beside a Chinese character go: two numbers stay two
    ("88剪19是多少?", "88减19是多少?"),  # an operator heard as its homophone, between two numbers
    ("一千楚以八是多少", "一千除以八是多少"),
    ("1000处以8等于几", "1000除以8等于几"),
    ("二十五成以四等于几", "二十五乘以四等于几"),
    ("七家八等于多少", "七加八等于多少"),
])
def test_a_sums_slip_is_put_right(heard, meant):
    assert repair(heard)[0] == meant


@pytest.mark.parametrize("text", ["十五加二十七", "九乘以七是多少", "苹果加香蕉", "我想吃饭", "三个苹果加两个梨",
                                  "今天十点多少人", "十八时几分", "三十多少钱",
                                  "中加20期 等于多少",
                                  "三点五加二", "2026年12月4号", "三本书五块钱", "七角八角九等于多少",
                                  "三下五除二", "九成以上是多少"])
def test_everything_else_is_left_as_heard(text):
    assert repair(text) == (text, [])


@pytest.fixture
def responder(tmp_path: Path):
    from assistant.config import load

    store = Store(tmp_path / "t.sqlite3")
    clock = FixedClock()
    cfg = load(Path(__file__).resolve().parent.parent / "config.toml", [])
    r = Responder(ScriptedLlm("随便说点什么。"), Tools(store, clock), hotwords=hotwords_for(cfg), now=clock)
    yield r, clock
    store.close()


def said(answer) -> str:
    return answer.source.text


def test_a_doubtful_date_is_asked_back_and_a_yes_answers_it(responder):
    r, clock = responder
    assert doubtful("铃铭是几号") == "明天是几号"
    first = r.answer("铃铭是继号")  # 继号 is put right by pinyin; 铃铭 is no day: asked back
    assert first.intent == "confirm" and said(first) == "你是说“明天是几号”吗？"
    r.finished()
    clock.t += timedelta(seconds=3)
    yes = r.answer("是的。", spoken_s=0.6)
    assert said(yes) == "明天是十一月三十号，星期一。"


def test_a_no_asks_again_and_anything_else_is_a_new_request(responder):
    r, clock = responder
    r.answer("铃铭是几号")
    r.finished()
    clock.t += timedelta(seconds=3)
    assert said(r.answer("不是", spoken_s=0.5)) == SAY_AGAIN
    r.answer("铃铭是几号")
    r.finished()
    clock.t += timedelta(seconds=3)
    assert r.answer("现在几点", spoken_s=1.0).intent == "time"
    assert r.pending is None


def test_a_yes_long_after_the_question_is_not_taken_for_an_answer(responder):
    r, clock = responder
    r.answer("铃铭是几号")
    r.finished()
    clock.t += timedelta(minutes=5)
    assert r.answer("是的", spoken_s=0.5).intent != "date"
