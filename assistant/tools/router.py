"""The intent router in front of the LLM: the frequent commands, recognised by rules.

``route(text)`` names the intent of a transcript and its slots, or returns None and the LLM
answers. Rules are tried in order (the more specific first); each is a regular expression over
the transcript with its punctuation and spaces removed. A calculation and a timer are recognised
by their parsers (``calculator.parse_expression``, ``timeparse.parse_when``), not by a pattern.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from assistant.tools import calculator, limits, timeparse

_DROP = re.compile(r"[\s，。！？、,.!?；;：:“”\"'（）()]+")


@dataclass(frozen=True)
class Intent:
    name: str
    slots: dict[str, str] = field(default_factory=dict)


RULES: list[tuple[str, re.Pattern[str]]] = [
    ("help", re.compile(r"你(能|会|可以)(帮我|为我|给我)?(做|干)?(什么|啥)|你有(什么|哪些)功能|怎么用你")),
    ("reminder_cancel", re.compile(r"(取消|删除|删掉|关掉)(所有|全部|(?P<one>这个|那个|刚才的|刚才那个))?的?"
                                   r"(?P<which>提醒|定时器?|闹钟|计时器?|倒计时)")),
    ("reminder_list", re.compile(r"(看看|看一下|有哪些|有什么|有几个|列出|查看|查一下|我的)(我的)?"
                                 r"(提醒|定时器?|闹钟|计时器?)|(提醒|定时器?|闹钟)(有哪些|有几个|列表)")),
    ("todo_clear", re.compile(r"(清空|删除所有|删掉所有|清除)(的)?(待办|任务)")),
    ("todo_done", re.compile(r"(把)?(?P<item>.+?)(标记为|标成|设为)?(已)?(完成|做完)(了)?$")),
    ("todo_add", re.compile(r"(添加|加一个|加个|新建|记一下|记下|记个)(一个)?(待办|任务)(事项)?(?P<item>.+)"
                            r"|(待办|任务)(里|中)?(加上|添加|加)(?P<item2>.+)")),
    ("todo_list", re.compile(r"(看看|看一下|有哪些|有什么|列出|查看|查一下|我的)(我的)?(待办|任务)")),
    ("time", re.compile(r"(现在|当前)?几点(了|钟)?|(现在|当前)(的)?时间|什么时间|几点钟")),
    ("date", re.compile(r"(?P<day>今天|今日|明天|明日|后天|大后天|昨天|前天)(是)?"
                        r"(几号|几月几号|几月几日|星期几|礼拜几|周几)|(今天|今日)(是)?什么日子|(今天)?(的)?日期")),
    ("memory", re.compile(r"内存")),
    ("temperature", re.compile(r"(CPU|cpu|芯片|处理器|主板|系统|机器|设备)?(的)?温度")),
    ("ip", re.compile(r"(本机|本地|我的|设备|机器)?(的)?(IP|ip|Ip|网络地址|IP地址)")),
    ("load", re.compile(r"(CPU|cpu|处理器)(的)?(占用|使用率|负载)|系统负载|负载")),
    ("uptime", re.compile(r"(运行|开机)了?(多久|多长时间)")),
    ("status", re.compile(r"系统状态|设备状态|(你|机器)的?状态")),
    ("volume", re.compile(r"(?P<dir>大声|小声|调大|调小|调高|调低|增大|减小|降低|提高)(一)?点?(音量|声音)?"
                          r"|音量(?P<dir2>调大|调小|调高|调低|大一点|小一点|加大|减小)"
                          r"|音量(调到|设为|设置为|设到)(?P<level>[零一二两三四五六七八九十百\d]+)"
                          # heard through a slip (8音量掉小一点, 声音大一点): the level word and a direction
                          r"|(音量|声音)[^，。]{0,2}?(?P<dir3>大|小|高|低)(一)?点")),
]

# The tools' own requests come first (添加待办取快递 is a todo, not a parcel); then the honest limits
# (今天外面的温度 is the weather, not the CPU); then the rest.
FIRST_RULES = ("help", "reminder_cancel", "reminder_list", "todo_clear", "todo_done", "todo_add", "todo_list")
REPEAT = re.compile(r"^(请)?(再说一遍|再说一次|再讲一遍|重复一遍|重复一下|你刚才说(了)?(什么|啥)|你说(什么|啥)|"
                    r"刚才说的是什么|没听清楚?|我没听清楚?)$")
_AMOUNT = r"(?:[零一二两三四五六七八九十百\d]+个?半?|半个?)(?:小时|分钟|分|秒钟|秒)半?"
# A timer given as a duration: 设一个五分钟的定时器, 倒计时三分钟, 计时十秒.
TIMER = re.compile(rf"(?P<d>{_AMOUNT})(的)?(定时器?|计时器?|倒计时|闹钟)|(倒计时|计时|定时)(?P<d2>{_AMOUNT})")
# The words the rules are keyed on, for the pinyin correction of near-miss transcripts (几店 → 几点).
COMMAND_WORDS = ("几点", "几号", "一点", "星期", "乘以", "除以", "减去", "加上", "分钟", "小时", "提醒", "待办",
                 "定时器", "计时器", "闹钟", "名字", "笑话", "天气", "下雨", "客厅", "卧室", "音量", "谢谢你", "怎么样")
REMIND = re.compile(r"提醒我|叫我|定时|计时|倒计时|闹钟")


class LikelyCommand:
    """Whether a transcript sounds like a command: it has a command word, or a near miss of one by
    pinyin (几店 for 几点), or the router answers it. Whisper then hears it again with the command
    words as context (models/whisper_asr.py), and all other speech without them."""

    def __init__(self, words: list[str]) -> None:
        from assistant.text.hotwords import HotwordCorrector

        self.words = tuple(w for w in words if w)
        self._near = HotwordCorrector(self.words)

    def __call__(self, text: str) -> bool:
        if any(w in text for w in self.words):
            return True
        fixed, fixes = self._near.correct(text)
        return bool(fixes) or route(fixed, datetime.now().astimezone()) is not None


def clean(text: str) -> str:
    return _DROP.sub("", text)


def route(text: str, now: datetime, *, honest_limits: bool = True) -> Intent | None:
    """The intent of a transcript, or None for the LLM (``honest_limits=False``: the limits go to it too)."""
    t = clean(text)
    if not t:
        return None
    if (timer := TIMER.search(t)) is not None:
        after = f"{timer.group('d') or timer.group('d2')}后"
        if timeparse.parse_when(after, now) is not None:
            return Intent("reminder_set", {"what": "", "kind": "timer", "when": after})
    if REMIND.search(t) and (when := timeparse.parse_when(t, now)) is not None:
        what = REMIND.sub("", t.replace(when.text, "", 1)).strip("的我在") or ""
        return Intent("reminder_set", {"what": what, "kind": "reminder" if "提醒" in t or what else "timer"})
    if calculator.parse_expression(t) is not None:
        return Intent("calc", {"expression": t})
    if REPEAT.search(t):
        return Intent("repeat")
    first = [(name, pattern) for name, pattern in RULES if name in FIRST_RULES]
    limit = _limit(t) if honest_limits else None
    return _first_rule(t, first) or limit or _first_rule(t, [r for r in RULES if r[0] not in FIRST_RULES])


def _first_rule(t: str, rules: list[tuple[str, re.Pattern[str]]]) -> Intent | None:
    for name, pattern in rules:
        m = pattern.search(t)
        if m is None:
            continue
        slots = {k.rstrip("23"): v for k, v in m.groupdict().items() if v}
        if name == "todo_done" and not _looks_like_todo(slots.get("item", "")):
            continue
        return Intent(name, slots)
    return None


def _limit(t: str) -> Intent | None:
    found = limits.match(t)
    return None if found is None else Intent(found[0], {"detail": found[1]} if found[1] else {})


def _looks_like_todo(item: str) -> bool:
    """"买牛奶做完了" marks a todo; "作业完成了吗" or a bare "完成" does not."""
    return 0 < len(item) <= 20 and not item.endswith(("吗", "没有", "呢"))
