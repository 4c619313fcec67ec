"""Character error rate of a transcript against its reference, the measure of what was heard; and its
syllable error rate, which does not count a homophone (香椒 for 香蕉) as a miss."""

from __future__ import annotations

import re
from collections.abc import Sequence

_COUNTED = re.compile(r"[\u4e00-\u9fff0-9A-Za-z]")


def _distance(r: Sequence[str], h: Sequence[str]) -> int:
    """Edit distance (substitutions, insertions, deletions) between two token sequences."""
    row = list(range(len(h) + 1))
    for i, rc in enumerate(r, 1):
        prev, row[0] = row[0], i
        for j, hc in enumerate(h, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (rc != hc))
    return row[-1]


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate over Chinese characters, letters and digits (punctuation and spaces ignored)."""
    r = _COUNTED.findall(reference)
    return _distance(r, _COUNTED.findall(hypothesis)) / max(1, len(r))


def ser(reference: str, hypothesis: str) -> float:
    """Syllable error rate over toneless pinyin (digits read out in Chinese, as ``echo_match.syllables``):
    what a listener heard wrong, not which of the characters that sound alike the recogniser wrote."""
    from assistant.text.echo_match import syllables

    r = syllables(reference)
    return _distance(r, syllables(hypothesis)) / max(1, len(r))
