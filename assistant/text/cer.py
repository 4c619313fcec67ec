"""Character error rate of a transcript against its reference, the measure of what was heard."""

from __future__ import annotations

import re

_COUNTED = re.compile(r"[\u4e00-\u9fff0-9A-Za-z]")


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate over Chinese characters, letters and digits (punctuation and spaces ignored)."""
    r, h = _COUNTED.findall(reference), _COUNTED.findall(hypothesis)
    row = list(range(len(h) + 1))
    for i, rc in enumerate(r, 1):
        prev, row[0] = row[0], i
        for j, hc in enumerate(h, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (rc != hc))
    return row[-1] / max(1, len(r))
