"""The intent router: transcripts → intent and slots, or None for the LLM (≥ 50 utterances)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from assistant.tools.router import route

NOW = datetime(2026, 11, 29, 14, 0, tzinfo=ZoneInfo("Asia/Shanghai"))

CASES = [
    # time and date
    ("现在几点", "time", {}), ("现在几点了？", "time", {}), ("几点了", "time", {}), ("现在什么时间", "time", {}),
    ("当前时间", "time", {}), ("今天几号", "date", {"day": "今天"}), ("今天星期几", "date", {"day": "今天"}),
    ("今天是几月几号？", "date", {"day": "今天"}), ("今天礼拜几", "date", {"day": "今天"}),
    ("今天周几", "date", {"day": "今天"}),
    ("明天是几号？", "date", {"day": "明天"}), ("后天星期几", "date", {"day": "后天"}), ("今天的日期", "date", {}),
    # the device
    ("内存还剩多少", "memory", {}), ("看看内存", "memory", {}), ("看看温度", "temperature", {}),
    ("CPU温度多少", "temperature", {}), ("芯片温度", "temperature", {}), ("本机IP", "ip", {}),
    ("我的IP地址是多少", "ip", {}), ("CPU占用多少", "load", {}), ("系统负载", "load", {}),
    ("你运行了多久", "uptime", {}), ("开机多长时间了", "uptime", {}), ("系统状态", "status", {}),
    # sums
    ("12乘以8等于多少", "calc", {}), ("三加五等于几", "calc", {}), ("一百除以四是多少", "calc", {}),
    ("帮我算一下二十减七", "calc", {}),
    # timers and reminders
    ("二十分钟后提醒我吃药", "reminder_set", {"what": "吃药", "kind": "reminder"}),
    ("明天早上八点提醒我开会", "reminder_set", {"what": "开会", "kind": "reminder"}),
    ("提醒我半小时后关火", "reminder_set", {"what": "关火", "kind": "reminder"}),
    ("十分钟后叫我", "reminder_set", {"kind": "timer"}),
    ("下午三点提醒我取快递", "reminder_set", {"what": "取快递", "kind": "reminder"}),
    ("看看我的提醒", "reminder_list", {}), ("有哪些提醒", "reminder_list", {}), ("我的定时器", "reminder_list", {}),
    ("取消所有提醒", "reminder_cancel", {"which": "提醒"}), ("取消定时器", "reminder_cancel", {"which": "定时器"}),
    ("删掉闹钟", "reminder_cancel", {"which": "闹钟"}),
    # todos
    ("添加待办买牛奶", "todo_add", {"item": "买牛奶"}), ("记一下待办交电费", "todo_add", {"item": "交电费"}),
    ("待办里加上给妈妈打电话", "todo_add", {"item": "给妈妈打电话"}), ("看看待办", "todo_list", {}),
    ("我的待办", "todo_list", {}), ("有哪些任务", "todo_list", {}),
    ("把买牛奶标记为完成", "todo_done", {"item": "买牛奶"}),
    ("交电费做完了", "todo_done", {"item": "交电费"}), ("清空待办", "todo_clear", {}),
    # volume and help
    ("大声点", "volume", {"dir": "大声"}), ("小声一点", "volume", {"dir": "小声"}),
    ("音量调大", "volume", {"dir": "调大"}),
    ("音量调到五十", "volume", {"level": "五十"}), ("你能做什么", "help", {}), ("你会什么", "help", {}),
    ("你有哪些功能", "help", {}), ("你能帮我做什么", "help", {}),
]

FOR_THE_LLM = ["给我讲个笑话", "北京是哪个国家的首都", "怎么做番茄炒蛋", "灯笼是什么做的", "水的沸点是多少度",
               "推荐一本书", "作业完成了吗", "", "。"]


@pytest.mark.parametrize(("text", "name", "slots"), CASES)
def test_frequent_commands_are_routed_with_their_slots(text, name, slots):
    intent = route(text, NOW)
    assert intent is not None, text
    assert intent.name == name, text
    for key, value in slots.items():
        assert intent.slots.get(key) == value, (text, intent.slots)


@pytest.mark.parametrize("text", FOR_THE_LLM)
def test_everything_else_goes_to_the_llm(text):
    assert route(text, NOW) is None


def test_the_table_is_big_enough():
    assert len(CASES) + len(FOR_THE_LLM) >= 50


LIMITS = [
    ("你是谁", "identity"), ("你叫什么名字", "identity"), ("你是百度的吗", "identity"), ("谁开发了你", "identity"),
    ("你需要联网吗", "offline"), ("谢谢你", "thanks"), ("再见", "bye"), ("没事了", "okay"),
    ("后天北京冷不冷", "no_network"), ("帮我查一下去上海的高铁票", "no_network"), ("黄金现在什么价格", "no_network"),
    ("今天天气怎么样", "no_network"), ("明天会下雨吗", "no_network"), ("今天外面的温度", "no_network"),
    ("最近有什么新闻", "no_network"), ("帮我查一下快递", "no_network"), ("给我订一张去北京的火车票", "no_network"),
    ("给妈妈发个微信", "no_phone"), ("放首歌", "no_music"), ("下一首", "no_music"), ("打开客厅的灯", "no_device"),
    ("把空调调到二十六度", "no_device"), ("卧室的灯开着吗", "no_device"), ("让扫地机器人开始打扫", "no_device"),
]


@pytest.mark.parametrize(("text", "name"), LIMITS)
def test_what_it_cannot_do_is_answered_by_an_honest_limit(text, name):
    intent = route(text, NOW)
    assert intent is not None and intent.name == name, (text, intent)


@pytest.mark.parametrize(("text", "name"), [
    ("看看温度", "temperature"), ("添加待办取快递", "todo_add"), ("下午三点提醒我取快递", "reminder_set"),
    ("看看我的提醒", "reminder_list")])
def test_the_tools_own_requests_win_over_the_limits(text, name):
    assert route(text, NOW).name == name


def test_without_honest_limits_they_go_to_the_llm():
    assert route("今天天气怎么样", NOW, honest_limits=False) is None


@pytest.mark.parametrize(("text", "after"), [
    ("帮我设一个五分钟的定时器", "五分钟后"), ("设一个十分钟的计时器", "十分钟后"), ("倒计时三分钟", "三分钟后"),
    ("计时半小时", "半小时后")])
def test_a_timer_given_as_a_duration_is_a_timer(text, after):
    intent = route(text, NOW)
    assert intent is not None and intent.name == "reminder_set" and intent.slots["when"] == after


@pytest.mark.parametrize("text", ["再说一遍", "你刚才说什么", "我没听清"])
def test_asking_to_hear_it_again_is_a_repeat(text):
    assert route(text, NOW).name == "repeat"


@pytest.mark.parametrize(("text", "likely"), [
    ("现在几点了", True),  # a command word
    ("现在几店了", True),  # a near miss of one
    ("三加五等于多少", True),  # the router answers it
    ("广州是广东省的省会城市", False),
    ("我小时候住在南京", True),  # 小时 is a command word: decoding it again with them costs little
    ("这本书讲的是一个人的一生", False),
])
def test_a_transcript_sounds_like_a_command_by_its_words_their_near_misses_or_the_router(text, likely):
    from assistant.tools.router import COMMAND_WORDS, LikelyCommand

    assert LikelyCommand(list(COMMAND_WORDS))(text) is likely
