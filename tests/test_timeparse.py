"""Chinese time expressions for timers and reminders: parse_when, say_when, say_duration."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from assistant.tools.timeparse import parse_when, preload, say_duration, say_when

SH = ZoneInfo("Asia/Shanghai")


def sh(month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, year: int = 2024) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=SH)


MON10 = sh(12, 2, 10)  # Monday 2024-12-02 10:00
MON16 = sh(12, 2, 16)
MON02 = sh(12, 2, 2)
WED10 = sh(12, 4, 10)
DEC29 = sh(12, 29, 10)  # a Sunday, late in the year

RELATIVE = [
    ("二十分钟后提醒我吃药", MON10, sh(12, 2, 10, 20)),
    ("20分钟后", MON10, sh(12, 2, 10, 20)),
    ("半小时后", MON10, sh(12, 2, 10, 30)),
    ("一个半小时以后", MON10, sh(12, 2, 11, 30)),
    ("十分钟后", MON10, sh(12, 2, 10, 10)),
    ("三天后", MON10, sh(12, 5, 10)),  # the clock kept (jionlp: midnight)
    ("两个小时后", MON10, sh(12, 2, 12)),
    ("一刻钟后", MON10, sh(12, 2, 10, 15)),
    ("五秒后", MON10, sh(12, 2, 10, 0, 5)),
    ("过十分钟", MON10, sh(12, 2, 10, 10)),
    ("再过五分钟提醒我", MON10, sh(12, 2, 10, 5)),
    ("一百零五分钟后", MON10, sh(12, 2, 11, 45)),
    ("一小时零五分钟后", MON10, sh(12, 2, 11, 5)),
    ("一天半以后", MON10, sh(12, 3, 22)),
    ("一个月后", MON10, sh(1, 2, 10, year=2025)),
    ("提醒我十分钟之后关火", MON10, sh(12, 2, 10, 10)),
]

ABSOLUTE: list[tuple[str, datetime, datetime | None, str | None]] = [
    ("明天早上八点提醒我开会", MON10, sh(12, 3, 8), None),
    ("提醒我明天下午三点开会", MON10, sh(12, 3, 15), None),
    ("后天早上", MON10, sh(12, 4, 8), "早上八点"),
    ("下周一", MON10, sh(12, 9, 9), "上午九点"),
    ("晚上十点零五分", MON10, sh(12, 2, 22, 5), None),
    ("十二月五号", MON10, sh(12, 5, 9), "上午九点"),
    ("两点半", MON10, sh(12, 2, 14, 30), "下午"),
    ("三点一刻", MON10, sh(12, 2, 15, 15), "下午"),
    ("早上八点", MON10, sh(12, 3, 8), "明天"),
    ("中午十二点", MON10, sh(12, 2, 12), None),
    ("凌晨三点", MON02, sh(12, 2, 3), None),
    ("今晚九点", MON10, sh(12, 2, 21), None),
    ("12月5日 10:30", MON10, sh(12, 5, 10, 30), "上午"),
    ("下午3点", MON10, sh(12, 2, 15), None),
    ("明早八点提醒我", MON10, sh(12, 3, 8), None),  # jionlp: today 08:00
    ("明晚", MON10, sh(12, 3, 20), "晚上八点"),
    ("十点过五分", MON10, sh(12, 2, 10, 5), "上午"),  # jionlp: 十点 and a 5-minute delta
    ("十点五分", MON16, sh(12, 2, 22, 5), "晚上"),
    ("两天后下午三点", MON10, sh(12, 4, 15), None),
    ("明天三点", MON10, sh(12, 3, 15), "下午"),  # jionlp: 03:00
    ("周五下午两点交报告", MON10, sh(12, 6, 14), None),
    ("晚上", MON10, sh(12, 2, 20), "晚上八点"),
    # ambiguity, resolved as a person would
    ("下午三点", MON16, sh(12, 3, 15), "明天"),
    ("三点", MON10, sh(12, 2, 15), "下午"),
    ("三点", MON02, sh(12, 2, 3), "凌晨"),
    ("三点", MON16, sh(12, 3, 3), "明天凌晨"),
    ("十二点", MON16, sh(12, 3, 0), "晚上"),
    ("十二月五号", DEC29, sh(12, 5, 9, year=2025), "明年，上午九点"),
    ("周一", WED10, sh(12, 9, 9), "下周一，上午九点"),
    ("5号", DEC29, sh(1, 5, 9, year=2025), "下个月，上午九点"),
    ("今天下午三点", MON16, sh(12, 2, 15), None),  # explicitly today: left past, for the caller to say so
    # no time to remind at
    ("打开蓝牙", MON10, None, None),
    ("今天天气怎么样", MON10, None, None),
    ("今天", MON10, None, None),
    ("现在几点", MON10, None, None),
    ("每天早上八点提醒我", MON10, None, None),  # recurring: not supported
    ("声音大一点", MON10, None, None),
    ("放三首歌", MON10, None, None),
    ("今年", MON10, None, None),  # no day named
    ("99999个月后", MON10, None, None),  # beyond the calendar
]


@pytest.mark.parametrize(("text", "now", "expected"), RELATIVE)
def test_relative(text: str, now: datetime, expected: datetime) -> None:
    when = parse_when(text, now)
    assert when is not None
    assert (when.at, when.relative, when.assumed) == (expected, True, None)
    assert when.at.tzinfo is now.tzinfo


@pytest.mark.parametrize(("text", "now", "expected", "assumed"), ABSOLUTE)
def test_absolute(text: str, now: datetime, expected: datetime | None, assumed: str | None) -> None:
    when = parse_when(text, now)
    if expected is None:
        assert when is None
        return
    assert when is not None
    assert (when.at, when.relative, when.assumed) == (expected, False, assumed)
    assert when.at.tzinfo is now.tzinfo


@pytest.mark.parametrize(("text", "matched"), [
    ("二十分钟后提醒我吃药", "二十分钟后"),
    ("提醒我明天下午三点开会", "明天下午三点"),
    ("请你过十分钟叫我", "过十分钟"),
    ("明早八点提醒我", "明早八点"),
    ("十点三十分提醒我", "十点三十分"),
    ("十点过五分叫我", "十点过五分"),
])
def test_text_is_the_expression_as_said(text: str, matched: str) -> None:
    when = parse_when(text, MON10)
    assert when is not None
    assert when.text == matched


def test_any_timezone() -> None:
    now = datetime(2024, 12, 2, 2, 0, tzinfo=UTC)  # 10:00 in Shanghai, but the clock read is the caller's
    when = parse_when("下午三点", now)
    assert when is not None
    assert when.at == datetime(2024, 12, 2, 15, 0, tzinfo=UTC)
    assert when.at.tzinfo is UTC


def test_preload_is_silent(capsys: pytest.CaptureFixture[str]) -> None:
    preload()
    assert capsys.readouterr() == ("", "")


SAY_WHEN = [
    (sh(12, 2, 15), MON10, "今天下午三点"),
    (sh(12, 2, 15, 20), MON10, "今天下午三点二十分"),
    (sh(12, 3, 8), MON10, "明天早上八点"),
    (sh(12, 4, 22, 5), MON10, "后天晚上十点零五分"),
    (sh(12, 5, 9), sh(11, 20, 10), "十二月五号上午九点"),
    (sh(12, 5, 9), MON10, "周四上午九点"),
    (sh(12, 9, 8), MON10, "下周一早上八点"),
    (sh(12, 2, 14, 30), MON10, "今天下午两点半"),
    (sh(12, 2, 14), MON10, "今天下午两点"),
    (sh(12, 2, 12), MON10, "今天中午十二点"),
    (sh(12, 3, 0), MON10, "今天晚上十二点"),
    (sh(12, 3, 0, 30), MON10, "明天凌晨十二点半"),
    (sh(12, 2, 3, 15), MON02, "今天凌晨三点十五分"),
    (sh(1, 5, 9, year=2025), DEC29, "下周日上午九点"),
    (sh(1, 15, 9, year=2025), DEC29, "明年一月十五号上午九点"),
    (sh(3, 1, 18, year=2026), MON10, "二〇二六年三月一号晚上六点"),
    (datetime(2024, 12, 2, 7, 0, tzinfo=UTC), MON10, "今天下午三点"),  # said in the tz of now
]


@pytest.mark.parametrize(("at", "now", "said"), SAY_WHEN)
def test_say_when(at: datetime, now: datetime, said: str) -> None:
    assert say_when(at, now) == said
    assert not re.search(r"\d", said)


@pytest.mark.parametrize(("seconds", "said"), [
    (1200, "二十分钟"),
    (1800, "半小时"),
    (5400, "一个半小时"),
    (9000, "两个半小时"),
    (7200, "两小时"),
    (3 * 86400, "三天"),
    (3900, "一小时零五分钟"),
    (6300, "一小时四十五分钟"),
    (5, "五秒"),
    (90, "一分钟三十秒"),
    (86405, "一天零五秒"),
    (0, "零秒"),
])
def test_say_duration(seconds: int, said: str) -> None:
    assert say_duration(seconds) == said


def test_round_trip_relative_duration() -> None:
    when = parse_when("一小时零五分钟后", MON10)
    assert when is not None
    assert say_duration(int((when.at - MON10).total_seconds())) == "一小时零五分钟"
