"""Whisper's transcript mended where a second ear heard other syllables.

Whisper base in a room writes near-misses with confidence (等摩环节紧张 for 怎么缓解紧张, 月亮未神会发光
for 月亮为什么会发光, 后天北京能布朗 for 后天北京冷不冷), and when the right words are not among its
beam's readings no rescoring can bring them back. The keyword spotter's zipformer, trained on
10,000 hours of real Mandarin, hears syllables (``models.pinyin_ear``): in the same near room it got
the syllables of 怎么缓解紧张, 为什么, 冷不冷 right, and is wrong elsewhere (dian xian li de for 谢谢你的).
The two ears err in different places, so where they disagree the words are spelled from the
second ear's syllables (a pinyin lexicon: jieba's word list with its frequencies, read as data), and
the rescoring language model decides whether the spelled words make a likelier sentence:

    score = LM(text) − EAR_WEIGHT × distance(text, second ear) − WHISPER_WEIGHT × distance(text, Whisper)

The distances are syllable edit distances (a near syllable, zh/z or an/ang, costs 0.25–0.5). A
spelling replaces Whisper's words only when its score beats the transcript's by ``MARGIN``: the
language model must find it clearly likelier than the syllables it gives up (谢谢你的帮助 keeps its
words against 点线里的帮助). Transcripts with digits or Latin letters are left as they are: the
sums and their slips have their own repairs, and a digit has no syllable of its own.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pypinyin import lazy_pinyin

from assistant.text.hotwords import _distance

MAX_WORD = 4  # syllables of the longest lexicon word
MIN_FREQ = 30  # jieba's count below which a word is left out (rare words would only add wrong spellings)
SPELLINGS = 3  # spellings tried per disagreeing span (香蕉 is jieba's third "xiang jiao")
ROUNDS = 3  # spans mended one at a time, the best first, at most this many
WEIGHED = 8  # options a round weighs by the language model: those the two ears find nearest
EAR_WEIGHT = 2.5  # nats a syllable: how much the second ear's hearing counts
WHISPER_WEIGHT = 2.5  # nats a syllable: how much Whisper's hearing counts (the two ears alike)
EXTEND = 2  # syllables either side of a span that may be spelled again with it (未神 + 么 → 为什么)
MARGIN = 2.0  # nats: how much likelier a mended transcript must be
MAX_SYLLABLES = 24  # a longer transcript is kept as heard: requests are short, and each option costs a forward pass
MAX_DISAGREEMENT = 0.6  # of the syllables: beyond this the two ears heard different things; no mending
MAX_DROPPED = 1  # of Whisper's syllables a spelling may drop: the streaming ear misses a request's first ones
_HAN = re.compile(r"[\u4e00-\u9fff]")
_NOT_SPELLABLE = re.compile(r"[0-9A-Za-z０-９Ａ-Ｚａ-ｚ]")

Logprobs = Callable[[list[str]], list[float]]  # summed log-probabilities of texts (the rescoring model)


@lru_cache(maxsize=65536)
def _cost(a: str, b: str) -> float:
    return _distance(a, b)


def pinyin(text: str) -> list[str]:
    """Toneless syllables of ``text``'s Chinese characters, one per character."""
    return lazy_pinyin("".join(_HAN.findall(text)))


def alignment(heard: Sequence[str], ear: Sequence[str]) -> list[tuple[int, int, float]]:
    """The cheapest alignment of two syllable lists as steps (di, dj, cost): (1, 1) a pair, (1, 0) a
    syllable only ``heard`` has, (0, 1) one only ``ear`` has (each of these costs 1)."""
    n, m = len(heard), len(ear)
    table = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        table[i][0] = float(i)
    for j in range(1, m + 1):
        table[0][j] = float(j)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1,
                              table[i - 1][j - 1] + _cost(heard[i - 1], ear[j - 1]))
    steps: list[tuple[int, int, float]] = []
    i, j = n, m
    while i or j:
        if i and j and table[i][j] == table[i - 1][j - 1] + _cost(heard[i - 1], ear[j - 1]):
            steps.append((1, 1, _cost(heard[i - 1], ear[j - 1])))
            i, j = i - 1, j - 1
        elif i and table[i][j] == table[i - 1][j] + 1:
            steps.append((1, 0, 1.0))
            i -= 1
        else:
            steps.append((0, 1, 1.0))
            j -= 1
    return steps[::-1]


def distance(a: Sequence[str], b: Sequence[str]) -> float:
    return sum(cost for _, _, cost in alignment(a, b))


def disagreements(heard: Sequence[str], ear: Sequence[str]) -> list[tuple[int, int, int, int]]:
    """The spans where the two ears disagree, as (i0, i1, j0, j1): ``heard[i0:i1]`` against ``ear[j0:j1]``."""
    spans, i, j, start = [], 0, 0, None
    for di, dj, cost in alignment(heard, ear):
        if cost > 0 and start is None:
            start = (i, j)
        elif cost == 0 and start is not None:
            spans.append((start[0], i, start[1], j))
            start = None
        i, j = i + di, j + dj
    if start is not None:
        spans.append((start[0], i, start[1], j))
    return spans


class Lexicon:
    """Words by their toneless syllables, most frequent first."""

    def __init__(self, words: dict[str, list[tuple[str, int]]]) -> None:
        self._words = words
        self._total = float(sum(f for entries in words.values() for _, f in entries)) or 1.0

    @classmethod
    def from_counts(cls, counts: dict[str, int]) -> Lexicon:
        words: dict[str, list[tuple[str, int]]] = {}
        for word, freq in counts.items():
            words.setdefault(" ".join(lazy_pinyin(word)), []).append((word, freq))
        for entries in words.values():
            entries.sort(key=lambda e: -e[1])
        return cls(words)

    @classmethod
    def from_word_list(cls, path: Path, cache: Path | None = None) -> Lexicon:
        """From a word list of ``word count [tag]`` lines (jieba's dict.txt), kept as JSON in ``cache``
        (building it takes a few seconds: a pinyin per word)."""
        stamp = f"{path.stat().st_size}:{path.stat().st_mtime_ns}"
        if cache is not None and cache.is_file():
            try:
                kept = json.loads(cache.read_text(encoding="utf-8"))
                if kept.get("source") == stamp:
                    return cls({k: [(w, f) for w, f in v] for k, v in kept["words"].items()})
            except (OSError, ValueError, KeyError, TypeError):
                pass  # a damaged cache is built again
        counts: dict[str, int] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit() and int(parts[1]) >= MIN_FREQ \
                    and len(parts[0]) <= MAX_WORD and len(_HAN.findall(parts[0])) == len(parts[0]):
                counts[parts[0]] = int(parts[1])
        lexicon = cls.from_counts(counts)
        if cache is not None:
            try:
                cache.parent.mkdir(parents=True, exist_ok=True)
                cache.write_text(json.dumps({"source": stamp, "words": lexicon._words}, ensure_ascii=False),
                                 encoding="utf-8")
            except OSError:
                pass  # no cache: built again next time
        return lexicon

    def spellings(self, syllables: Sequence[str], k: int = SPELLINGS) -> list[tuple[str, float]]:
        """The ``k`` likeliest spellings of ``syllables`` as a run of words, each with its log-probability
        per syllable under the words' frequencies (为什么 for wei shen me before 未神么)."""
        beams: list[list[tuple[float, str]]] = [[] for _ in range(len(syllables) + 1)]
        beams[0] = [(0.0, "")]
        for i in range(len(syllables)):
            for score, text in beams[i]:
                for size in range(1, min(MAX_WORD, len(syllables) - i) + 1):
                    for word, freq in self._words.get(" ".join(syllables[i: i + size]), [])[:k]:
                        beams[i + size].append((score + math.log(freq / self._total), text + word))
            for later in beams[i + 1:]:
                later.sort(key=lambda e: -e[0])
                del later[k:]
        return [(text, score / len(syllables)) for score, text in beams[-1]]


@dataclass(frozen=True)
class Mended:
    text: str  # the transcript, mended or as heard
    tried: tuple[str, ...]  # the spellings weighed (their letters), for the log and the readings


def mend(text: str, ear: Sequence[str], lexicon: Lexicon, logprobs: Logprobs) -> Mended:
    """``text`` with the spans where ``ear`` heard other syllables spelled as the ear heard them, where
    the language model (``logprobs``) finds the result clearly likelier; else ``text``."""
    heard = pinyin(text)
    if not heard or not ear or len(heard) > MAX_SYLLABLES or _NOT_SPELLABLE.search(text) \
            or distance(heard, ear) > MAX_DISAGREEMENT * max(len(heard), len(ear)):
        return Mended(text, ())
    current, tried, best = text, [], math.nan
    for _ in range(ROUNDS):
        spelled = _options(current, ear, lexicon)
        heard_now = {o: _acoustic(o, heard, ear) for o in spelled}
        options = sorted(spelled, key=lambda o: (spelled[o][0], heard_now[o], *spelled[o][1:]))[:WEIGHED]
        if not options:
            break
        if math.isnan(best):  # the transcript itself, weighed only once there is something to weigh it against
            best = logprobs([text])[0] - _acoustic(text, heard, ear)
        tried += options
        scores = [lm - heard_now[o] for o, lm in zip(options, logprobs(options), strict=True)]
        top = max(range(len(options)), key=lambda n: scores[n])
        if scores[top] < best + MARGIN:
            break
        current, best = options[top], scores[top]
    return Mended(current, tuple(tried))


def _options(text: str, ear: Sequence[str], lexicon: Lexicon) -> dict[str, tuple[int, int, float]]:
    """``text`` with one disagreeing span (or it and up to ``EXTEND`` syllables either side) spelled
    from ``ear``; each with the characters it changes and its spelling's negated log-probability per
    syllable, so that the fewest changes and the likeliest words sort first (把音量调小一点 before
    把银两调小一点, which spells the agreeing 音量 again)."""
    chars = [m.start() for m in _HAN.finditer(text)]
    heard = pinyin(text)
    found: dict[str, tuple[int, int, float]] = {}
    for i0, i1, j0, j1 in disagreements(heard, ear):
        for before in range(EXTEND + 1):
            for after in range(EXTEND + 1):
                a, b = i0 - before, i1 + after
                spoken = j1 + after - (j0 - before)  # the ear's syllables that spell the span
                if a < 0 or b > len(heard) or j0 - before < 0 or j1 + after > len(ear) or spoken == 0 \
                        or (b - a) - spoken > MAX_DROPPED:
                    continue  # 无讯是哪国人 is not mended to 是哪国人 where the ear missed 鲁迅
                start = chars[a] if a < len(chars) else len(text)
                end = chars[b - 1] + 1 if b > a else start
                for rank, (spelled, likely) in enumerate(lexicon.spellings(ear[j0 - before: j1 + after])):
                    option, replaced = text[:start] + spelled + text[end:], text[start:end]
                    changed = abs(len(spelled) - len(replaced)) + sum(
                        x != y for x, y in zip(spelled, replaced, strict=False))
                    if option != text and (rank, changed, -likely) < found.get(option, (SPELLINGS, 0, 0.0)):
                        found[option] = (rank, changed, -likely)
    return found


def _acoustic(option: str, heard: Sequence[str], ear: Sequence[str]) -> float:
    """How far ``option``'s syllables are from what the two ears heard, in nats."""
    syllables = pinyin(option)
    return EAR_WEIGHT * distance(syllables, ear) + WHISPER_WEIGHT * distance(syllables, heard)


class Mender:
    """``mend`` with its lexicon, for the ASR: ``load()`` reads the word list (or its cache) once."""

    def __init__(self, word_list: Path, cache: Path | None = None) -> None:
        self.word_list = word_list
        self.cache = cache
        self._lexicon: Lexicon | None = None

    def load(self) -> None:
        if self._lexicon is None:
            self._lexicon = Lexicon.from_word_list(self.word_list, self.cache)

    def __call__(self, text: str, ear: Sequence[str], logprobs: Logprobs) -> str:
        if self._lexicon is None:
            raise RuntimeError("ear repair: used before load()")
        return mend(text, ear, self._lexicon, logprobs).text


def jieba_word_list() -> Path | None:
    """jieba's dict.txt (word, count, tag), read as data (jieba itself is never imported), if installed."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        path = Path(str(distribution("jieba").locate_file("jieba/dict.txt")))
    except PackageNotFoundError:
        return None
    return path if path.is_file() else None
