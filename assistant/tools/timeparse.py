"""Chinese time expressions for timers and reminders: "二十分钟后提醒我吃药" → now + 20 min.

jionlp (``extract_time``) finds and parses absolute expressions; relative ones (N分钟后, 过N分钟) are parsed here,
and jionlp's readings are corrected where a person means something else:
- a clock time already past today means the next one (下午三点 at 16:00 → tomorrow, ``assumed="明天"``);
- a 1–12 o'clock without 上午/下午 is the next such hour (三点 at 10:00 → 15:00, at 02:00 → 03:00); with a
  date (明天三点) it is a daytime hour (7–11 a.m., 12 noon, 1–6 p.m.); ``assumed`` names the period taken;
- a month-day already past means next year, a bare day (五号) next month, a bare weekday (周一) next week;
- no clock: a period gets its hour in ``PERIOD_HOURS`` (后天早上 → 8:00), a bare date 9:00 (``DATE_HOUR``);
- 明早/明晚 (jionlp reads 明早八点 as today), 十点五分 and 十点过五分 (jionlp: 十点 + a delta of 5 minutes);
- 三天后 keeps the clock (jionlp: midnight); 五分钟以后 and 过十分钟 are points (jionlp: a span, a delta).
Decisions: a date without a time that is today (今天, 今天天气怎么样) gives None: it is no time to remind at.
An explicitly dated time already past (今天下午三点 at 16:00) is returned as is, for the caller to say so.
Recurring times (每天早上八点) give None. Several assumptions are joined by "，" ("明年，上午九点").
"""

from __future__ import annotations

import calendar
import contextlib
import io
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import cn2an  # type: ignore[import-untyped]

PERIOD_HOURS = {"凌晨": 5, "清晨": 7, "早上": 8, "早晨": 8, "上午": 9, "中午": 12, "下午": 15, "傍晚": 18,
                "晚上": 20, "夜里": 21}
DATE_HOUR = 9
WEEKDAYS = "一二三四五六日"

_NUM = r"\d+|[零〇一二两三四五六七八九十百千]+"
_UNITS = {"秒钟": 1, "秒": 1, "分钟": 60, "分": 60, "刻钟": 900, "小时": 3600, "钟头": 3600, "天": 86400,
          "周": 604800, "星期": 604800, "礼拜": 604800, "个月": 0}
_UNIT = "|".join(_UNITS)
_PART = re.compile(rf"(?:({_NUM})个?(半)?|(半)个?)({_UNIT})")
_DUR = rf"(?:{_NUM})个?半?|半个?"
_RELATIVE = re.compile(rf"(?P<pre>(?<![点时])再?过)?(?P<dur>(?:{_DUR})(?:{_UNIT})(?:零?(?:{_DUR})(?:{_UNIT}))*半?)"
                       rf"(?P<post>以后|之后|过后|后)?")
_PERIOD = re.compile("|".join(PERIOD_HOURS))
_CLOCKISH = re.compile(rf"的?(?:{_PERIOD.pattern}|(?:{_NUM})[点:])")
_DATED = re.compile(r"[天日号]|周|星期|礼拜")  # a day is named (今天, 三天后, 五号, 周一); 今年, 下个月 are not
_WEEKDAY = re.compile(r"(?<![上下这本])(?<![上下这本]个)(?:周|星期|礼拜)[一二三四五六七日天1-7]")
_DAY_ONLY = re.compile(rf"(?:{_NUM})[号日]")
_NORM = re.compile(r"(?P<day>[今明])(?P<part>[早晚])上?|点过?(?=[一二三四五六七八九]分)"
                   r"|(?<=点)过(?=[零〇一二两三四五六七八九十\d])|：")

_jionlp: Any = None


@dataclass(frozen=True)
class When:
    at: datetime  # timezone-aware, in the tzinfo of ``now``
    relative: bool  # "二十分钟后" (True) vs "明天下午三点" (False)
    text: str  # the matched expression as it appeared in the input
    assumed: str | None  # how an ambiguity was resolved, for the confirmation ("明天", "下午", "上午九点")


def preload() -> None:
    """Import jionlp (≈0.6 s, prints a banner: silenced) and warm its parser (≈0.2 s more)."""
    _extract("明天下午三点", datetime(2024, 1, 1))


def _module() -> Any:
    global _jionlp
    if _jionlp is None:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            import jionlp  # type: ignore[import-untyped]
        _jionlp = jionlp
    return _jionlp


def _extract(text: str, base: datetime) -> list[dict[str, Any]]:
    try:
        found: list[dict[str, Any]] = _module().ner.extract_time(text, time_base=base, with_parsing=True)
    except Exception:  # jionlp raises on some odd inputs: treat them as no time
        return []
    return found


def _normalize(text: str) -> tuple[str, list[tuple[int, int]]]:
    """Rewrite what jionlp misreads; for each output character, the span of input it came from."""
    out: list[str] = []
    src: list[tuple[int, int]] = []
    pos = 0
    for m in _NORM.finditer(text):
        out.append(text[pos:m.start()])
        src.extend((i, i + 1) for i in range(pos, m.start()))
        rep = f"{m['day']}天{m['part']}上" if m["day"] else "点零" if m[0][0] == "点" else ":" if m[0] == "：" else ""
        out.append(rep)
        src.extend([(m.start(), m.end())] * len(rep))
        pos = m.end()
    out.append(text[pos:])
    src.extend((i, i + 1) for i in range(pos, len(text)))
    return "".join(out), src


def _number(s: str | None) -> float:
    return float(cn2an.cn2an(s, "smart")) if s else 0.0


def _add_months(at: datetime, months: int) -> datetime:
    years, month0 = divmod(at.month - 1 + months, 12)
    year = at.year + years
    return at.replace(year=year, month=month0 + 1, day=min(at.day, calendar.monthrange(year, month0 + 1)[1]))


def _relative(norm: str, now: datetime) -> tuple[datetime, int, int] | None:
    for m in _RELATIVE.finditer(norm):
        if not (m["pre"] or m["post"]) or _CLOCKISH.match(norm, m.end()):
            continue  # a bare duration, or 两天后下午三点 (jionlp reads that one right)
        seconds, months, unit = 0.0, 0, 0
        try:
            for part in _PART.finditer(m["dur"]):
                n, unit = _number(part[1]) + (0.5 if part[2] or part[3] else 0.0), _UNITS[part[4]]
                months += int(n) if not unit else 0
                seconds += n * unit
        except (ValueError, KeyError):
            continue
        seconds += unit / 2 if m["dur"].endswith("半") else 0
        if seconds <= 0 and months <= 0:
            continue
        try:
            at = (_add_months(now, months).astimezone(UTC) + timedelta(seconds=seconds)).astimezone(now.tzinfo)
        except (OverflowError, ValueError):  # 九千九百天后: beyond the calendar
            continue
        return at, m.start(), m.end()
    return None


def _resolve(span: str, at: datetime, now: datetime) -> tuple[datetime, str | None] | None:
    """Fix jionlp's reading ``at`` of ``span`` (naive, wall clock of ``now``), as a person would mean it."""
    period, dated = _PERIOD.search(span), _DATED.search(span)
    assumed: list[str] = []
    if not re.search(r"[点时:]", span):  # no clock: a default hour
        if period:
            at = at.replace(hour=PERIOD_HOURS[period[0]], minute=0, second=0)
        elif dated and at.date() != now.date():
            at = at.replace(hour=DATE_HOUR, minute=0, second=0)
        else:
            return None  # 今天 / 现在: no time to remind at
        assumed.append(_period(at.hour) + _clock(at.hour, 0))
    elif not period and 1 <= at.hour <= 12:  # 三点: a.m. or p.m.?
        if dated:
            at = at.replace(hour=at.hour % 12 + 12 if at.hour <= 6 else at.hour)
            assumed.append(_period(at.hour))
        else:
            day = at.replace(hour=at.hour % 12)
            at = min(c for d in (0, 1) for h in (0, 12) if (c := day + timedelta(days=d, hours=h)) > now)
            midnight = (at.hour, at.minute) == (0, 0)  # said back as 今天晚上十二点
            assumed.append("晚上" if midnight else ("明天" if at.date() > now.date() else "") + _period(at.hour))
    if not dated and at <= now:
        at += timedelta(days=1)
        assumed.insert(0, "明天")
    elif at.date() < now.date():
        with contextlib.suppress(ValueError):  # 2月29号, 31号 in a short month: left as jionlp read it
            if "月" in span and not re.search(r"[年上下这本]个?月", span):
                at, ahead = at.replace(year=at.year + 1), "明年"
            elif _WEEKDAY.search(span):
                at, ahead = at + timedelta(days=7), "下周" + WEEKDAYS[at.weekday()]
            elif _DAY_ONLY.search(span) and "月" not in span:
                at, ahead = _add_months(at, 1), "下个月"
            else:
                ahead = ""
            if ahead:
                assumed.insert(0, ahead)
    return at, "，".join(assumed) or None


def _absolute(norm: str, now: datetime) -> tuple[datetime, int, int, str | None] | None:
    base = now.replace(tzinfo=None)
    for ent in _extract(norm, base):
        detail = ent["detail"]
        if detail["type"] not in ("time_point", "time_span"):
            continue  # time_delta (bare duration), time_period (每天…: recurring)
        start, end = ent["offset"]
        while end < len(norm) and norm[end] in "分钟":  # 十点三十分: jionlp stops before 分
            end += 1
        try:
            at = datetime.strptime(detail["time"][0], "%Y-%m-%d %H:%M:%S")
        except (TypeError, ValueError):  # an open start ('-inf')
            continue
        resolved = _resolve(norm[start:end], at, base)
        if resolved:
            return resolved[0].replace(tzinfo=now.tzinfo), start, end, resolved[1]
    return None


def parse_when(text: str, now: datetime) -> When | None:
    """The time expression in an utterance ("提醒我明天下午三点开会"), None when there is none."""
    norm, src = _normalize(text)
    rel = _relative(norm, now)
    if rel:
        return When(rel[0], True, text[src[rel[1]][0]:src[rel[2] - 1][1]], None)
    found = _absolute(norm, now)
    if found is None:
        return None
    at, start, end, assumed = found
    return When(at, False, text[src[start][0]:src[end - 1][1]], assumed)


def _count(n: int) -> str:
    return "两" if n == 2 else str(cn2an.an2cn(n))


def _period(hour: int) -> str:
    return "凌晨" if hour < 6 else "早上" if hour < 9 else "上午" if hour < 12 else "中午" if hour < 13 \
        else "下午" if hour < 18 else "晚上"


def _clock(hour: int, minute: int) -> str:
    said = f"{_count(hour % 12 or 12)}点"
    if minute == 30:
        return said + "半"
    return said + (f"{'零' if minute < 10 else ''}{cn2an.an2cn(minute)}分" if minute else "")


def _day(at: datetime, now: datetime) -> str:
    days = (at.date() - now.date()).days
    if -2 <= days <= 2:
        return ("前天", "昨天", "今天", "明天", "后天")[days + 2]
    weeks = (days + now.weekday()) // 7
    if days > 0 and weeks <= 1:
        return ("周" if weeks == 0 else "下周") + WEEKDAYS[at.weekday()]
    year = "" if at.year == now.year else "明年" if at.year == now.year + 1 else \
        "".join("〇一二三四五六七八九"[int(c)] for c in str(at.year)) + "年"
    return f"{year}{cn2an.an2cn(at.month)}月{cn2an.an2cn(at.day)}号"


def say_when(at: datetime, now: datetime) -> str:
    """``at`` as said back relative to ``now``, in characters only: "明天早上八点", "下周一上午九点半"."""
    at = at.astimezone(now.tzinfo)
    if at.hour == 0 and at.minute == 0:  # midnight: the night before's 晚上十二点
        return _day(at - timedelta(days=1), now) + "晚上十二点"
    return _day(at, now) + _period(at.hour) + _clock(at.hour, at.minute)


def say_duration(seconds: int) -> str:
    """A duration as said: "二十分钟", "一个半小时", "三天", "一小时零五分钟"."""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if not days and not secs and minutes == 30:
        return f"{_count(hours)}个半小时" if hours else "半小时"
    out, gap = "", False
    for n, unit in ((days, "天"), (hours, "小时"), (minutes, "分钟"), (secs, "秒")):
        if n:
            out += ("零" if out and unit in ("分钟", "秒") and (gap or n < 10) else "") + _count(n) + unit
        gap = bool(out) and not n
    return out or "零秒"
