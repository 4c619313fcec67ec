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
    ("当前时间", "time", {}), ("今天几号", "date", {}), ("今天星期几", "date", {}), ("今天是几月几号？", "date", {}),
    ("今天礼拜几", "date", {}), ("今天周几", "date", {}),
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
    ("你有哪些功能", "help", {}),
]

FOR_THE_LLM = ["你是谁", "给我讲个笑话", "北京是哪个国家的首都", "今天天气怎么样", "你叫什么名字", "怎么做番茄炒蛋",
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
