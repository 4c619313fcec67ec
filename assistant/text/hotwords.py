"""Hot-word correction: near-miss spans of an ASR transcript are rewritten to a configured command vocabulary.

Each window of the transcript with as many syllables as a hot word is compared to it as toneless pinyin
(see :mod:`assistant.text.echo_match`; hot words are read as phrases, so 空调 is kong tiao). A syllable is
split into initial and final (y/w spelled out as the glides i/u/ü, ü written v); a pair costs
``0.5 × initial + 0.5 × final``, where a part costs 0 when equal, 0.5 when near (zh/z, ch/c, sh/s, n/l;
finals equal after dropping a leading glide and a trailing -ng: uan/an/ian/üan, ang/an, ing/in, iu/ou,
uo/o, ui/ei; or ie/ian, üe/üan) and 1 otherwise. ``score = 1 - cost / syllables``.

The default ``threshold = 0.8`` sits in the gap of the test table: 千万前世 → 切换前视 (two slips:
qian/qie, wan/huan) scores 0.81, everything that must stay put scores ≤ 0.75 (切换前面, 打开蓝色). At 0.8 a
2-syllable hot word accepts only near-homophones (客停, 客听), never a syllable with another initial
(客灵 is 0.75), so 人停 in 客人停车 stays. Guards, all conservative: a window that already is a hot word
(same characters) is kept and blocks every overlapping correction (卧室灯 never becomes 卧室灯带); the
winner must beat the runner-up hot word for that window by ``margin``; with ``anchored`` (default) the
window must share a character with the hot word, so pure homophones in everyday speech (我是等你 vs 卧室灯)
are left alone; only runs of adjacent Chinese characters are touched (digits, Latin words and punctuation
never are). Corrections are applied best first (then longest first), non-overlapping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from pypinyin import lazy_pinyin

from assistant.text.echo_match import _FUZZY_INITIALS, _INITIAL, _char_pinyin, _tokens

_NEAR_FINALS = {frozenset(("ie", "ian")), frozenset(("ve", "van"))}


@dataclass(frozen=True)
class Correction:
    heard: str  # the span of the transcript that was replaced
    word: str  # the hot word put in its place
    score: float  # 0..1 similarity


@lru_cache(maxsize=4096)
def _split(syllable: str) -> tuple[str, str]:
    """Initial and final with the spelling conventions undone: wan → ("", "uan"), you → ("", "iou"), qu → ("q", "v")."""
    found = _INITIAL.fullmatch(syllable)
    initial, final = found.groups() if found else ("", syllable)
    if initial == "w":
        initial, final = "", final if final.startswith("u") else "u" + final
    elif initial == "y":
        initial = ""
        final = final if final.startswith("i") else "v" + final[1:] if final.startswith("u") else "i" + final
    elif initial in ("j", "q", "x") and final.startswith("u"):
        final = "v" + final[1:]
    final = {"iu": "iou", "ui": "uei", "un": "vn" if initial in ("j", "q", "x") else "uen"}.get(final, final)
    return initial, final


def _core(final: str) -> str:
    core = final[1:] if len(final) > 1 and final[0] in "iuv" else final
    return core[:-1] if core.endswith("ng") else core


def _part(a: str, b: str, near: bool) -> float:
    return 0.0 if a == b else 0.5 if near else 1.0


def _distance(a: str, b: str) -> float:
    """0..1 cost of hearing syllable ``a`` for ``b``."""
    if a == b:
        return 0.0
    (ia, fa), (ib, fb) = _split(a), _split(b)
    near_initial = _FUZZY_INITIALS.get(ia, ia) == _FUZZY_INITIALS.get(ib, ib)
    near_final = _core(fa) == _core(fb) or frozenset((fa, fb)) in _NEAR_FINALS
    return 0.5 * _part(ia, ib, near_initial) + 0.5 * _part(fa, fb, near_final)


def _similarity(heard: Sequence[str], word: Sequence[str]) -> float:
    return 1.0 - sum(map(_distance, heard, word)) / len(word)


class HotwordCorrector:
    """Rewrites near-miss spans of a transcript to the configured hot words (see the module docstring)."""

    def __init__(
        self, hotwords: Sequence[str], *, threshold: float = 0.8, margin: float = 0.1, anchored: bool = True
    ) -> None:
        self.threshold, self.margin, self.anchored = threshold, margin, anchored
        self._words: dict[str, list[str]] = {}
        for word in dict.fromkeys(hotwords):
            pinyin = lazy_pinyin(word)  # read as a phrase: 空调 is kong tiao, not kong diao
            if word and len(pinyin) == len(word) and all(_char_pinyin(c) for c in word):
                self._words[word] = pinyin  # Chinese characters only

    def correct(self, text: str) -> tuple[str, list[Correction]]:
        """The transcript with its near-miss spans replaced, and the corrections made (in text order)."""
        tokens = [t for t in _tokens(text) if t[2] - t[1] == 1 and _char_pinyin(text[t[1]])]  # Chinese characters
        lengths = sorted({len(s) for s in self._words.values()})
        blocked: set[int] = set()
        candidates: list[tuple[float, int, int, str]] = []  # score, first token, end token, word
        for n in lengths:
            for i in range(len(tokens) - n + 1):
                window = tokens[i : i + n]
                if any(window[k][2] != window[k + 1][1] for k in range(n - 1)):
                    continue  # not one run of adjacent characters
                heard = text[window[0][1] : window[-1][2]]
                if heard in self._words:
                    blocked.update(range(i, i + n))
                    continue
                syllables = [s for s, _, _ in window]
                same_length = [(word, pinyin) for word, pinyin in self._words.items() if len(pinyin) == n]
                ranked = sorted(((_similarity(syllables, pinyin), word) for word, pinyin in same_length), reverse=True)
                score, word = ranked[0]
                runner_up = ranked[1][0] if len(ranked) > 1 else 0.0
                if self.anchored and not set(heard) & set(word):
                    continue
                if score >= self.threshold and score - runner_up >= self.margin:
                    candidates.append((score, i, i + n, word))
        chosen: list[tuple[int, int, str, float]] = []
        for score, first, end, word in sorted(candidates, key=lambda c: (-c[0], -(c[2] - c[1]), c[1])):
            if blocked.isdisjoint(range(first, end)):
                blocked.update(range(first, end))
                chosen.append((first, end, word, score))
        out, corrections, cursor = [], [], 0
        for first, end, word, score in sorted(chosen):
            start, stop = tokens[first][1], tokens[end - 1][2]
            out += [text[cursor:start], word]
            corrections.append(Correction(text[start:stop], word, round(score, 3)))
            cursor = stop
        return "".join(out) + text[cursor:], corrections
