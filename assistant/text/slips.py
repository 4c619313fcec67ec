"""Commands heard through a slip: near-miss syllables put right where the grammar of a command says
what they must be.

Whisper base, on a short request in a room, often gets one syllable of a sum wrong (十五加二十七 →
植物加27; 100减去38是多少 → 100减去38十多少). A word-list correction cannot fix these — 植物 is a
good word — but the grammar around them can: next to an operator (加, 减, 乘以, 除以) only a number
makes sense, so a one- or two-character span there whose every syllable is a near-miss of a
numeral's (same final, an initial of the same place: zh/ch/sh/z/c/s/r, j/q/x, b/p, d/t, g/k, n/l,
f/h) is read as that numeral; and a 十/事/市… right after a digit, before 多少 or 几, is 是 (after a
Chinese numeral too, where it cannot go on: 三十八十多少). Between two numbers, in turn, only an
operator makes sense: a one- or two-character span there that is one's homophone, syllable for
syllable (toneless; a near syllable is not enough: 三下五除二 is an idiom), is that operator (88剪19 → 88减19,
一千楚以八 → 一千除以八, 二十五成以四 → 二十五乘以四).

``repair(text)`` returns the text with those spans replaced, and what was replaced. Nothing else is
touched: outside an arithmetic context, or when a span is a numeral already, the text is as heard.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pypinyin import lazy_pinyin

from assistant.text.hotwords import _core, _split

NUMERALS = "零一二两三四五六七八九十百千万"
_OPERATOR = r"加上|加|减去|减掉|减|乘以|乘|除以|除"
_GROUPS = ("zh ch sh r", "z c s", "j q x", "b p", "d t", "g k", "n l", "f h", "m", "")
_RETROFLEX = {"zh": "z", "ch": "c", "sh": "s"}
# A span of one or two Chinese characters, not numerals, next to an operator with a number on its other side.
_BEFORE_OP = re.compile(rf"(?<![\u4e00-\u9fff])(?P<span>[^\W\d{NUMERALS}]{{1,2}})(?=(?:{_OPERATOR})[\d{NUMERALS}])")
_AFTER_OP = re.compile(rf"(?<=[\d{NUMERALS}])(?P<op>{_OPERATOR})(?!以|上|去|掉)(?P<span>[^\W\d{NUMERALS}]{{1,2}})"
                       rf"(?=[\d{NUMERALS}]|$|等于|是|得|多少|几)")
# A span of one or two Chinese characters between two numbers (not a decimal point: 三点五).
_BETWEEN = re.compile(rf"(?<=[\d{NUMERALS}])(?P<span>[^\W\d{NUMERALS}点]{{1,2}})(?=[\d{NUMERALS}])")
# 是 heard as 十 (or a near-miss) after a digit; after a Chinese numeral only as 十, and only where no
# numeral could go on (三十八十多少: nothing follows 三十八 with 十), so 十八时几分 stays a time.
_IS = re.compile(r"(?<=\d)(十|事|市|式|时|实|使|四)(?=多少|几)|(?<=十[一二三四五六七八九])十(?=多少|几)")
_SPACE = re.compile(r"(?<=[\u4e00-\u9fff])\s+|\s+(?=[\u4e00-\u9fff])")  # beside a Chinese character (not 25 14)


@lru_cache(maxsize=64)
def _group(initial: str) -> int:
    return next(i for i, g in enumerate(_GROUPS) if initial in g.split() or initial == g)


def _near(a: str, b: str, tier: int) -> bool:
    """Tier 1: the same initial's place and kind (zhi/shi, ji/qi, bo/po); tier 2: retroflex or not
    as well (zhi/zi/si)."""
    (ia, fa), (ib, fb) = _split(a), _split(b)
    if not (fa == fb or _core(fa) == _core(fb)):
        return False
    if tier == 1:
        return _group(ia) == _group(ib)
    return _RETROFLEX.get(ia, ia) == _RETROFLEX.get(ib, ib) or _group(ia) == _group(ib)


_NUMERAL_SYLLABLES = {ch: lazy_pinyin(ch)[0] for ch in "一二三四五六七八九十百千"}


def _as_numerals(span: str) -> str | None:
    """The numerals ``span`` sounds like, syllable for syllable, or None (十 is preferred over 四 …)."""
    out = []
    for syllable in lazy_pinyin(span):
        for tier in (0, 1, 2):
            found = [ch for ch, ref in _NUMERAL_SYLLABLES.items() if (syllable == ref if tier == 0
                                                                       else _near(syllable, ref, tier))]
            if found:
                break
        if len(found) != 1:
            return None  # no numeral, or more than one as near: a guess, not a repair
        out.append(found[0])
    return "".join(out)


_OPERATOR_SYLLABLES = {op: tuple(lazy_pinyin(op)) for op in _OPERATOR.split("|")}
_HOMOPHONES = {syllables: op for op, syllables in _OPERATOR_SYLLABLES.items()}


def _as_operator(span: str) -> str | None:
    """The operator ``span`` is a homophone of, or None (it is one already, or none sounds so)."""
    heard = tuple(lazy_pinyin(span))
    return None if span in _OPERATOR_SYLLABLES else _HOMOPHONES.get(heard)


def repair(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``text`` with a sum's near-miss numerals and 是 put right; the (heard, put) pairs."""
    fixes: list[tuple[str, str]] = []

    def numeral(m: re.Match[str]) -> str:
        span = m["span"]
        put = _as_numerals(span)
        if put is None:
            return m[0]
        fixes.append((span, put))
        return m[0].replace(span, put)

    def operator(m: re.Match[str]) -> str:
        put = _as_operator(m["span"])
        if put is None:
            return m[0]
        fixes.append((m["span"], put))
        return put

    def copula(m: re.Match[str]) -> str:
        fixes.append((m[0], "是"))
        return "是"

    joined = _SPACE.sub("", text)  # Whisper's spaces inside a sentence (100 减去 38 十多 少) mean nothing
    joined = _BETWEEN.sub(operator, joined)
    joined = _BEFORE_OP.sub(numeral, joined)
    joined = _AFTER_OP.sub(numeral, joined)
    joined = _IS.sub(copula, joined)
    return (joined, fixes) if fixes else (text, fixes)


_DAYS = {"jin": "今天", "ming": "明天", "hou": "后天", "zuo": "昨天"}
_DOUBTFUL_DATE = re.compile(r"^(?P<x>[\u4e00-\u9fff]{1,3}?)(是)?(?P<ask>几号|几月几号|星期几|礼拜几|周几)$")
YES = re.compile(r"^(是|是的|是啊|是呀|对|对的|对啊|对对|嗯|嗯嗯|没错|就是|就是这个|没错就是)$")
NO = re.compile(r"^(不是|不对|不是的|没有|错了|不|不用了?)$")


def doubtful(text: str) -> str | None:
    """The request ``text`` most likely was, when a command's grammar is there but one span of it is
    not a word the command takes (铃铭是几号: a date question for a day that is no day; 铃 ming → 明天):
    to be confirmed, not guessed. None when nothing is in doubt."""
    m = _DOUBTFUL_DATE.match(text)
    if m is None or m["x"] in _DAYS.values():
        return None
    days = {_DAYS[s] for s in lazy_pinyin(m["x"]) if s in _DAYS}
    return f"{days.pop()}是{m['ask']}" if len(days) == 1 else None
