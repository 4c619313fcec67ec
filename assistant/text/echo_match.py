"""Echo filter: is an utterance transcript the assistant hearing itself through the room?

The transcript (Whisper, with its errors) is compared to the text the assistant is speaking or just spoke,
as toneless pinyin syllables, so homophones (在/再, 他/她/它, 是/事), traditional characters (語音) and
punctuation cost nothing. Arabic digits are read in Chinese first (3点 → 三点, as the TTS said it).
The transcript is aligned against its best contiguous window of each spoken text (semi-global edit
distance: the spoken text before and after the window is free); near-homophones an accent or the ASR
blurs (zh/z, ch/c, sh/s, n/l, in/ing, en/eng, an/ang, 二/两) cost half a substitution.

``score = 1 - distance / len(transcript syllables)``. The default ``threshold = 0.7`` sits in the gap of
the test table: echoes with a dropped/extra character or a near-homophone score ≥ 0.85 (one slip in 7
syllables), while real requests sharing words with the reply score ≤ 0.57 (今天天气怎么样 vs 今天天气很好…:
4 of 7 syllables) or 0.5 (切换前视 vs 切换到后视…). At 0.7 a 3-syllable transcript must match exactly (or
with one half-cost slip), a 4-syllable one may have one slip. Transcripts under ``min_syllables`` are never
echo, so a user's 好 or 停 always gets through; a 2-syllable one (好的) that the reply also contains is.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from pypinyin import lazy_pinyin

_DIGITS = "零一二三四五六七八九"
_TOKEN = re.compile(r"(?P<num>\d+(?:[.．]\d+)?[%％]?)|(?P<word>[A-Za-zＡ-Ｚａ-ｚ]+(?:[-'][A-Za-zＡ-Ｚａ-ｚ]+)*)|\S")
_INITIAL = re.compile(r"(zh|ch|sh|[bpmfdtnlgkhjqxrzcsyw]?)(.*)")
_FUZZY_INITIALS = {"zh": "z", "ch": "c", "sh": "s", "n": "l"}
_FUZZY_FINALS = {"ing": "in", "eng": "en", "ang": "an", "iang": "ian", "uang": "uan"}
_FUZZY_PAIRS = {frozenset(("er", "liang"))}  # 2 read 二 or 两


def _read_int(n: int) -> str:
    """Chinese reading of 0 ≤ n < 10^8, positional: 15 → 十五, 105 → 一百零五, 20000 → 二万."""
    if n >= 10000:
        high, low = divmod(n, 10000)
        return _read_int(high) + "万" + ("" if low == 0 else ("零" if low < 1000 else "") + _read_int(low))
    out, gap = "", False
    for value, unit in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit = n // value % 10
        if digit == 0:
            gap = bool(out)
            continue
        out += ("零" if gap else "") + ("" if (digit == 1 and value == 10 and not out) else _DIGITS[digit]) + unit
        gap = False
    return out or "零"


def _read_number(token: str, before: str, after: str) -> str:
    """Read a digit run as the TTS normalizer would, roughly: integers up to 8 digits positionally
    (3 → 三, 20 → 二十); digit by digit when it starts with 0, is longer, touches a letter (RK3576) or is
    a year (2026年). Decimals say 点 and their digits one by one (3.50 → 三点五); a trailing % becomes 百分之."""
    token = unicodedata.normalize("NFKC", token)
    percent = token.endswith("%")
    whole, _, frac = token.rstrip("%").partition(".")
    touches_letter = any(c.isascii() and c.isalpha() for c in before + after)
    per_digit = (len(whole) > 1 and whole.startswith("0")) or len(whole) > 8 or after == "年" or touches_letter
    said = "".join(_DIGITS[int(d)] for d in whole) if per_digit else _read_int(int(whole))
    if frac := frac.rstrip("0"):
        said += "点" + "".join(_DIGITS[int(d)] for d in frac)
    return ("百分之" if percent else "") + said


@lru_cache(maxsize=8192)
def _char_pinyin(char: str) -> str:
    """Toneless pinyin of one character in its default reading (no phrase context, so a fragment reads
    exactly as it did inside the whole text), or "" for anything that is not a Chinese character."""
    found = lazy_pinyin(char, errors="ignore")
    return found[0] if found and found[0].isascii() else ""


def _tokens(text: str) -> list[tuple[str, int, int]]:
    """(syllable, start, end) for each syllable, with the character span of ``text`` it came from."""
    out: list[tuple[str, int, int]] = []
    for m in _TOKEN.finditer(text):
        if m["num"]:
            said = _read_number(m["num"], text[m.start() - 1 : m.start()], text[m.end() : m.end() + 1])
            out += [(s, m.start(), m.end()) for s in map(_char_pinyin, said) if s]
        elif m["word"]:
            out.append((re.sub(r"[-']", "", unicodedata.normalize("NFKC", m["word"]).lower()), m.start(), m.end()))
        elif syllable := _char_pinyin(m[0]):
            out.append((syllable, m.start(), m.end()))
    return out


def syllables(text: str) -> list[str]:
    """Toneless pinyin syllables of ``text``: Chinese characters in their default reading, digit runs
    read in Chinese first, ASCII words lower-cased as single tokens; punctuation and spaces dropped."""
    return [s for s, _, _ in _tokens(text)]


@lru_cache(maxsize=4096)
def _fuzzy(syllable: str) -> tuple[str, str]:
    split = _INITIAL.fullmatch(syllable)
    initial, final = split.groups() if split else ("", syllable)
    return _FUZZY_INITIALS.get(initial, initial), _FUZZY_FINALS.get(final, final)


def _cost(a: str, b: str) -> float:
    if a == b:
        return 0.0
    if (a.isalpha() and b.isalpha() and _fuzzy(a) == _fuzzy(b)) or frozenset((a, b)) in _FUZZY_PAIRS:
        return 0.5
    return 1.0


@dataclass(frozen=True)
class EchoMatch:
    score: float  # 0..1 similarity of the transcript to its best-matching span of the spoken text
    span: str  # that span of spoken text (characters), for the log


def _align(heard: list[str], said: list[str]) -> tuple[float, int, int]:
    """Semi-global edit distance of ``heard`` against its best window of ``said``: (distance, first, last+1)."""
    prev = [0.0] * (len(said) + 1)  # row 0: any start in ``said`` is free
    prev_start = list(range(len(said) + 1))
    for i, h in enumerate(heard, 1):
        row, start = [float(i)], [0]
        for j, s in enumerate(said, 1):
            row.append(prev[j - 1] + _cost(h, s))
            start.append(prev_start[j - 1])
            if prev[j] + 1 < row[j]:  # a syllable heard but not said
                row[j], start[j] = prev[j] + 1, prev_start[j]
            if row[j - 1] + 1 < row[j]:  # a syllable said but not heard
                row[j], start[j] = row[j - 1] + 1, start[j - 1]
        prev, prev_start = row, start
    end = min(range(len(prev)), key=lambda j: (prev[j], j))
    return prev[end], prev_start[end], end


def match(transcript: str, spoken: Sequence[str]) -> EchoMatch:
    """The transcript's best fuzzy match against any contiguous window of any of the ``spoken`` texts."""
    heard = syllables(transcript)
    best = EchoMatch(0.0, "")
    if not heard:
        return best
    for text in spoken:
        tokens = _tokens(text)
        distance, first, last = _align(heard, [s for s, _, _ in tokens])
        score = max(0.0, 1.0 - distance / len(heard))
        if score > best.score:
            span = text[tokens[first][1] : tokens[last - 1][2]] if last > first else ""
            best = EchoMatch(score, span)
    return best


def is_echo(transcript: str, spoken: Sequence[str], *, threshold: float = 0.7, min_syllables: int = 2) -> bool:
    """True when the transcript has at least ``min_syllables`` syllables and matches a spoken text at
    ``threshold`` or better (see the module docstring for how 0.7 was chosen)."""
    return len(syllables(transcript)) >= max(1, min_syllables) and match(transcript, spoken).score >= threshold
