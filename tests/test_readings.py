"""Whisper's other readings of a heard request: a command the chosen reading missed is answered (the
time, a date) or asked back, and a sum whose readings disagree on its numbers is asked back. The
readings are Whisper base's beam for Kokoro voices in the spoken evaluation's near room."""

from __future__ import annotations

from pathlib import Path

from assistant.tools.readings import Meant, other_reading

CONFIG = Path(__file__).resolve().parent.parent / "config.toml"
ROUTES = {"九乘以七是多少": "calc", "5加27等于多少": "calc", "十五加27等于多少": "calc", "现在几点了": "time",
          "正在几点了": "time"}
ANSWERS = {"九乘以七是多少": "63", "5加27等于多少": "32", "十五加27等于多少": "42", "现在几点了": "8点",
           "正在几点了": "8点"}


def read(chosen: str, readings: list[str]) -> Meant | None:
    return other_reading(chosen, readings, ROUTES.get, lambda t: ANSWERS[t])


def test_a_command_in_another_reading_is_asked_back_and_a_query_they_agree_on_is_answered() -> None:
    assert read("周成以七十多少", ["周承以七十多少", "九乘以七是多少"]) == Meant("九乘以七是多少", "calc", False)
    assert read("镇在几点了", ["现在几点了", "正在几点了"]) == Meant("现在几点了", "time", True)


def test_a_query_further_down_the_readings_is_asked_back_not_answered() -> None:
    # the readings include the decoding given the command words, which writes them in where they were
    # not said: only the likeliest other reading may be answered unasked
    assert read("今天是惊奇解", ["今天是惊奇几", "今天是惊起几", "现在几点了"]) == Meant("现在几点了", "time", False)
    assert read("镇在几点了", ["镇在几点啦", "现在几点了"]) == Meant("现在几点了", "time", False)


def test_a_sum_whose_readings_disagree_on_its_numbers_is_asked_back() -> None:
    assert read("十五加27等于多少", ["5加27等于多少"]) == Meant("十五加27等于多少", "calc", False)
    assert read("十五加27等于多少", ["十五加二十七等于多少"]) is None  # the same sum, or no other command


def test_readings_that_name_no_command_change_nothing() -> None:
    assert read("给我讲个故事吧", ["给我讲个故事把", "给我将个故事吧"]) is None
    assert read("现在几点了", ["正在几点了"]) is None  # a command already, and not a sum
    assert read("给我讲个故事吧", []) is None


def test_a_heard_request_is_answered_from_the_reading_that_is_a_command(tool_responder) -> None:
    r, llm = tool_responder
    asked = r.answer("周成以七十多少", spoken_s=1.6, readings=["周承以七十多少", "九成以七十多少"])
    assert (asked.intent, asked.source.text) == ("confirm", "你是说“九乘以七十多少”吗？")  # 成以 → 乘以
    r.finished()
    assert r.answer("是的", spoken_s=0.5).intent == "calc"  # what was asked back, confirmed
    answered = r.answer("镇在几点了", spoken_s=1.2, readings=["正在几点了"])
    assert answered.intent == "time"
    limit = r.answer("今天有什么新玩", spoken_s=1.3, readings=["今天有什么新闻"])  # the near room's
    assert limit.intent == "no_network" and "联网" in limit.source.text
    assert llm.asked == []


def test_a_sum_the_readings_disagree_on_is_not_answered_with_its_numbers(tool_responder) -> None:
    r, _ = tool_responder
    asked = r.answer("十五加27等于多少", spoken_s=1.8, readings=["5加27等于多少"])
    assert (asked.intent, asked.source.text) == ("confirm", "你是说“十五加27等于多少”吗？")
    assert r.answer("十五加27等于多少", spoken_s=1.8).intent == "calc"  # without readings: answered


def test_typed_text_has_no_readings(tool_responder) -> None:
    r, _ = tool_responder
    assert r.answer("十五加27等于多少", readings=["5加27等于多少"]).intent == "calc"


def test_a_sum_whose_readings_agree_once_their_slips_are_put_right_is_answered(tool_responder) -> None:
    r, _ = tool_responder  # the near room's readings of 一百减去三十八是多少: 是 heard as 时 and as 十
    heard = r.answer("100减去 三十八是多少", spoken_s=2.1, readings=["100 减去38 时多少", "100减去 三十八十多少"])
    assert (heard.intent, heard.source.text) == ("calc", "一百减三十八等于六十二。")
