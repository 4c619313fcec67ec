"""The Kokoro round trip of an ``assistant npu build`` report, scored again from its stored transcripts.

    .venv/bin/python benchmarks/npu_round_trip.py [docs/npu-report-rk3576.json]

For every rendering the report holds (the whole graph on the CPU, the windows on the CPU, the windows
in the simulator), the ten sentences as Whisper base heard them (with beam 5, as the assistant hears,
and greedy, the first reports' judge), scored three ways: the character
error rate of what was heard read out in words (the report's ``cer``), as written, and the syllable
error rate over toneless pinyin (``assistant.text.cer.ser``), which does not count a homophone that
Whisper chose (香椒 for 香蕉, 首度 for 首都) against the voice. Nothing is run again: no toolkit needed.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant.commands.npu import spoken_cer  # noqa: E402
from assistant.text.cer import cer, ser  # noqa: E402

OLD_JUDGE = "Whisper base, int8, greedy"  # the judge of reports written before the beam's


def renderings(node: Any, name: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, its scores) for every rendering anywhere in the report."""
    if isinstance(node, dict):
        if isinstance(node.get("sentences"), list):
            yield name, node
        for key, value in node.items():
            yield from renderings(value, key if key != "rendering" else name)
    elif isinstance(node, list):
        for item in node:
            built = isinstance(item, dict) and item.get("built")
            label = f"windowed, simulator ({item.get('precision')} .rknn)" if built else name
            yield from renderings(item, label or name)


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "npu-report-rk3576.json"
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"npu_round_trip: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    print("| rendering | judge | sentences | CER (read out) | CER as written | syllable error rate |\n"
          "|---|---|---|---|---|---|")
    for name, rendering in renderings(report):
        sentences = rendering["sentences"]
        judged = [(rendering.get("judge", OLD_JUDGE), [(s["text"], s["heard"]) for s in sentences])]
        if all("greedy" in s for s in sentences):
            judged.append((OLD_JUDGE, [(s["text"], s["greedy"]["heard"]) for s in sentences]))
        for judge, pairs in judged:
            scores = [statistics.mean(f(t, h) for t, h in pairs) for f in (spoken_cer, cer, ser)]
            print(f"| {name} | {judge} | {len(pairs)} | " + " | ".join(f"{x:.3f}" for x in scores) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
