"""Commands heard through a slip, by their whole sound.

Whisper base in a room often hears a short command as other words of nearly the same sound:
今天是星期几 → 今天是兄弟姐, 取消定时器 → 去消病直气, 关掉客厅的灯 → 玩掉客厅的动. No word of these is
near enough a command word for the hot-word correction (each slip is in a different syllable), but
the whole transcript is near one of the few phrasings a command is said in. ``heard_as(text)`` aligns
the transcript's toneless pinyin with every phrasing of ``FORMS`` and returns the nearest, with its
score: ``1 - cost / syllables of the phrasing``, where a syllable heard for another costs
``hotwords._distance`` (0 equal, 0.25–0.5 near, 1 unrelated) and one heard too many or missing costs 1.

A phrasing is written with alternatives (``{今天|明天}``, ``{是|}`` for an optional word) and with ``*``
for a free span of one or two syllables (a room, a city) and ``…`` for the rest of the request (a
todo's item, up to ``REST_MAX`` syllables); both keep the characters as heard. A free span is short
so that it cannot take a request's own words (你在吗今天怎么样 is not a question about the weather of
你在吗). The caller decides what a score means: sure enough to answer, near enough to
ask back (你是说“今天是星期几”吗？), or not a command.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from pypinyin import lazy_pinyin

from assistant.text.echo_match import _tokens
from assistant.text.hotwords import _distance
from assistant.tools.router import route

_cost = lru_cache(maxsize=16384)(_distance)

WILD, REST = "*", "…"
FREE_MAX = {WILD: 2, REST: 12}  # syllables a free span may take
# A phrasing meaning something else this near (调高 beside 调小, 今天 beside 明天) leaves the nearest in doubt.
MARGIN = 0.1
_ALTERNATIVES = re.compile(r"\{([^{}]*)\}")

# (intent, phrasings): how the router's commands and honest limits are said, in their own words.
FORMS: tuple[tuple[str, str], ...] = (
    ("date", "{今天|明天|后天|昨天}{是|}{几号|星期几|几月几号|礼拜几}"),
    ("time", "{现在|}几点{了|钟|}"),
    ("time", "现在{是|}什么时间"),
    ("reminder_cancel", "{取消|删除|删掉|关掉}{定时器|提醒|闹钟|计时器|倒计时}"),
    ("reminder_list", "{看看|我的|有哪些}{提醒|定时器|闹钟}"),
    ("todo_list", "{看看|我的|有哪些}待办"),
    ("todo_add", "{添加|加个|新建|记个}待办…"),
    ("volume", "{把|}{音量|声音}{调大|调小|调高|调低}{一点|}"),
    ("volume", "{把|}{音量|声音}{大|小}一点"),
    ("volume", "{大声|小声}{一点|}"),
    ("help", "你{能|会|可以}{帮我|}{做|干}什么"),
    ("help", "你有什么功能"),
    ("repeat", "{再说一遍|你说什么|你刚才说什么}"),
    ("no_device", "{打开|关掉|关闭|关上}{*的|}{灯|电视|空调|窗帘|风扇}"),
    ("no_device", "把{*的|}{灯|电视|空调|窗帘|风扇}{打开|关掉|关上|关了}"),
    ("no_network", "{今天|明天|后天}{*|}{冷不冷|热不热}"),
    ("no_network", "{今天|明天|后天|}{*|}{天气怎么样|会下雨吗}"),
)


@dataclass(frozen=True)
class Heard:
    text: str  # the phrasing, free spans filled with the characters heard
    intent: str
    score: float  # 0..1
    rival: float  # the best score of a phrasing that means something else (调高 for 调小), 0 if none
    item: str = ""  # what the rest of the request (``…``: a todo's item) took, as heard


@dataclass(frozen=True)
class _Form:
    intent: str
    meaning: str  # what the router makes of the phrasing (intent and slots): phrasings alike in it are one
    pieces: tuple[str, ...]  # Chinese characters, or WILD / REST
    syllables: tuple[str, ...]  # per fixed character, WILD / REST for a free span


def _expand(pattern: str) -> list[str]:
    parts = _ALTERNATIVES.split(pattern)  # text, choices, text, choices, …
    options = [p.split("|") if i % 2 else [p] for i, p in enumerate(parts)]
    return ["".join(chosen) for chosen in itertools.product(*options)]


@lru_cache(maxsize=1)
def _forms() -> tuple[_Form, ...]:
    forms = []
    for intent, pattern in FORMS:
        for phrasing in dict.fromkeys(_expand(pattern)):
            pieces: list[str] = []
            syllables: list[str] = []
            for run in re.split(r"([*…])", phrasing):
                if run in FREE_MAX:
                    pieces.append(run)
                    syllables.append(run)
                elif run:
                    pieces += list(run)
                    syllables += lazy_pinyin(run)  # read as a phrase: 调小 is tiao, not diao
            forms.append(_Form(intent, _meaning(phrasing), tuple(pieces), tuple(syllables)))
    return tuple(forms)


def _meaning(phrasing: str) -> str:
    found = route(phrasing.replace(WILD, "客厅").replace(REST, "买牛奶"), datetime(2026, 1, 1).astimezone())
    return "" if found is None else f"{found.name} {sorted(found.slots.items())}"


def prepare() -> None:
    """Read every phrasing (once per process), so that the first request does not wait for it."""
    _forms()


def _align(heard: list[str], form: tuple[str, ...]) -> tuple[float, list[tuple[int, int, int]]]:
    """Least cost of hearing ``heard`` for ``form``, and for each free span of the form the
    (form index, first heard, end heard) it took."""
    n, m = len(heard), len(form)
    inf = float("inf")
    cost = [[inf] * (m + 1) for _ in range(n + 1)]
    back: list[list[tuple[int, int] | None]] = [[None] * (m + 1) for _ in range(n + 1)]
    cost[0][0] = 0.0
    for i in range(n + 1):
        for j in range(m + 1):
            here = cost[i][j]
            if here == inf:
                continue
            if j < m and form[j] in FREE_MAX:
                for k in range(1, min(FREE_MAX[form[j]], n - i) + 1):
                    if here < cost[i + k][j + 1]:
                        cost[i + k][j + 1], back[i + k][j + 1] = here, (i, j)
                continue
            steps = []
            if i < n and j < m:
                steps.append((i + 1, j + 1, _cost(heard[i], form[j])))
            if i < n:
                steps.append((i + 1, j, 1.0))  # a syllable heard too many
            if j < m:
                steps.append((i, j + 1, 1.0))  # a syllable not heard
            for a, b, c in steps:
                if here + c < cost[a][b]:
                    cost[a][b], back[a][b] = here + c, (i, j)
    spans = []
    i, j = n, m
    while (i, j) != (0, 0):
        step = back[i][j]
        if step is None:
            return inf, []
        pi, pj = step
        if pj < m and form[pj] in FREE_MAX and pj + 1 == j:
            spans.append((pj, pi, i))
        i, j = pi, pj
    return cost[n][m], spans[::-1]


def heard_as(text: str) -> Heard | None:
    """The command phrasing ``text`` sounds nearest to (ties: the first in ``FORMS``), or None when
    it has no Chinese syllable."""
    tokens = [t for t in _tokens(text) if t[0].isalpha()]
    heard = [s for s, _, _ in tokens]
    if not heard:
        return None
    scored: list[tuple[float, _Form, list[tuple[int, int, int]]]] = []
    for form in _forms():
        fixed = sum(s not in FREE_MAX for s in form.syllables)
        if abs(len(heard) - fixed) > fixed // 2 + sum(FREE_MAX.get(s, 0) for s in form.syllables):
            continue  # too long or too short to be near
        cost, spans = _align(heard, form.syllables)
        scored.append((1.0 - cost / fixed, form, spans))
    if not scored:
        return None
    score, form, spans = max(scored, key=lambda s: s[0])  # the first of equals
    rival = max((s for s, f, _ in scored if f.meaning != form.meaning), default=0.0)
    filled = {j: text[tokens[a][1] : tokens[b - 1][2]] for j, a, b in spans}
    said = "".join(filled.get(j, piece) for j, piece in enumerate(form.pieces))
    item = "".join(filled.get(j, "") for j, piece in enumerate(form.pieces) if piece == REST)
    return Heard(said, form.intent, round(score, 3), round(rival, 3), item)
