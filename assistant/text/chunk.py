"""Cutting a streamed reply into chunks for the TTS: short first, longer after, never mid-number.

The chunker works on the raw text as the LLM writes it. It cuts after clause punctuation
(。！？；，、： and their ASCII forms, newlines) — but never inside a protected span (a number, date,
time, IP, unit expression or English word, as the normalizer reports them; a span that reaches the
end of the text so far may still be growing, so nothing after its start is cut yet) and never inside
a code fence. The first chunk is cut at the first clause boundary, however short; only when a clause
runs past ``first_max`` characters is it cut at the last safe point before that. Later chunks gather
whole clauses up to a limit, flushing at each sentence end.

The limit grows with what has been said: a chunk may be at most ``growth`` times as long as all the
chunks before it (never less than ``first_max``, never more than ``chunk_max``). Synthesis is serial,
so chunk n+1 must be ready before chunks 1..n have finished playing; at an RTF below 1/(1+growth)
this keeps the sink fed from the first chunk on, where a fixed long limit would starve it after a
short first clause. ``growth = 0`` turns this off.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Spans = Callable[[str], list[tuple[int, int]]]

CLAUSE_END = set("。！？；，、：!?;,:.\n…")
SENTENCE_END = set("。！？!?\n…")
CLOSERS = set("”’」』）)》】\"'")
_FENCE = re.compile(r"```")
_SPEAKABLE = re.compile(r"\w")  # a chunk of punctuation alone is not cut off


def no_spans(_: str) -> list[tuple[int, int]]:
    return []


class Chunker:
    """Feed text as it streams in; take complete chunks out; flush at the end of the reply."""

    def __init__(self, first_max: int = 12, chunk_max: int = 40, protected: Spans = no_spans,
                 growth: float = 1.0) -> None:
        if first_max < 1 or chunk_max < 1 or growth < 0:
            raise ValueError("chunk lengths must be at least 1 and growth not negative")
        self.first_max = first_max
        self.chunk_max = chunk_max
        self.growth = growth
        self._said = 0
        self.protected = protected
        self._buf = ""
        self._emitted = 0

    def feed(self, text: str) -> list[str]:
        """Add streamed text; return the chunks that are now complete."""
        self._buf += text
        out = []
        while (cut := self._next_cut(final=False)) is not None:
            out.append(self._take(cut))
        return out

    def flush(self) -> list[str]:
        """The end of the reply: whatever is left, cut by the same rules."""
        out = []
        while (cut := self._next_cut(final=True)) is not None:
            out.append(self._take(cut))
        if self._buf:
            out.append(self._take(len(self._buf)))
        return out

    # -- where to cut ---------------------------------------------------------------------------
    def _take(self, cut: int) -> str:
        chunk, self._buf = self._buf[:cut], self._buf[cut:]
        self._emitted += 1
        self._said += len(chunk)
        return chunk

    def _limit(self) -> int:
        if self._emitted == 0:
            return self.first_max
        if not self.growth:
            return self.chunk_max
        return min(self.chunk_max, max(self.first_max, int(self.growth * self._said)))

    def _blocked(self, final: bool) -> list[bool]:
        """blocked[i] is true when a cut at position i (between text[i-1] and text[i]) is unsafe."""
        text = self._buf
        blocked = [False] * (len(text) + 1)
        spans = list(self.protected(text))
        spans += _fences(text)
        for start, end in spans:
            still_growing = end >= len(text) and not final
            for i in range(start + 1, len(text) + 1 if still_growing else end):
                blocked[i] = True
        return blocked

    def _boundaries(self, blocked: list[bool], final: bool) -> list[tuple[int, bool]]:
        """Clause boundaries (cut position, ends a sentence), after any closing quotes."""
        text, out, i = self._buf, [], 0
        while i < len(text):
            if text[i] in CLAUSE_END:
                j = i + 1
                while j < len(text) and (text[j] in CLAUSE_END or text[j] in CLOSERS):
                    j += 1
                if j == len(text) and not final and text[j - 1].isascii():
                    break  # "3." or "1," may be a number still being written
                if not blocked[j] and not blocked[i + 1] and _SPEAKABLE.search(text, 0, i):
                    out.append((j, any(c in SENTENCE_END for c in text[i:j])))
                i = j
            else:
                i += 1
        return out

    def _next_cut(self, final: bool) -> int | None:
        text = self._buf
        if not text:
            return None
        blocked = self._blocked(final)
        bounds = self._boundaries(blocked, final)
        if self._emitted == 0:
            if bounds and bounds[0][0] <= self.first_max:
                return bounds[0][0]
            return _safe_point(text, blocked, self.first_max) if len(text) > self.first_max else None
        soft, hard = self._limit(), self.chunk_max
        fitting = [b for b in bounds if b[0] <= soft]
        sentence = [pos for pos, ends in fitting if ends]
        if sentence:
            return sentence[-1] if len(text) > soft or final else sentence[0]
        if fitting and (len(text) > soft or bounds[-1][0] > soft):
            return fitting[-1][0]
        # No clause ends within the growth limit: rather than cut a clause, take the first clause end
        # within chunk_max; only a clause longer than that is cut at a safe point.
        if not fitting and len(text) > soft and bounds and bounds[0][0] <= hard:
            return bounds[0][0]
        return _safe_point(text, blocked, hard) if len(text) > hard else None


def _safe_point(text: str, blocked: list[bool], limit: int) -> int | None:
    """The last unblocked cut at or before ``limit`` that splits no English word; else the first
    unblocked cut after it (a protected span longer than the limit forces a longer chunk)."""

    def ok(i: int) -> bool:
        return not blocked[i] and not (text[i - 1].isascii() and text[i - 1].isalnum()
                                       and i < len(text) and text[i].isascii() and text[i].isalnum())

    for i in range(min(limit, len(text) - 1), 0, -1):
        if ok(i):
            return i
    for i in range(limit + 1, len(text)):
        if ok(i):
            return i
    return None


def _fences(text: str) -> list[tuple[int, int]]:
    """Code fences (```…```), the last one to the end of the text if it is still open."""
    marks = [m.start() for m in _FENCE.finditer(text)]
    spans = []
    for k in range(0, len(marks), 2):
        end = marks[k + 1] + 3 if k + 1 < len(marks) else len(text)
        spans.append((marks[k], end))
    return spans
