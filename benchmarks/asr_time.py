"""The configured ASR's time per request, and its transcripts, on real and spoken Mandarin.

    .venv/bin/python benchmarks/asr_time.py [--json FILE] [--against EARLIER.json]

The requests: the real clips of ``asr_settings.py`` (25 with a human reference, 8 commands), and the
tuning half of the spoken evaluation (``spoken.py``: each request in its Kokoro voice, through the
near room, 0.3 s of room either side). Each is transcribed once by the ASR as configured (after one
warm-up call), and its transcript weighed as Mandarin (``char_logprob``, what the responder asks).
Printed: the time per request (p50, mean, p90) and the character error rate (mean per request).
``--json`` keeps every transcript; ``--against`` counts the transcripts that differ from an earlier
run's (another commit's, in a worktree): a change meant to be faster and nothing else changes none.
Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import backends, logs  # noqa: E402
from assistant.answer_eval import load_questions  # noqa: E402
from assistant.config import load  # noqa: E402
from assistant.text.cer import cer  # noqa: E402
from benchmarks import rooms, spoken  # noqa: E402
from benchmarks.asr_settings import split  # noqa: E402

SPEAKERS = ("zf_xiaobei", "zf_xiaoyi", "zm_yunjian", "zm_yunxi", "zm_yunxia", "zm_yunyang")  # Whisper hears them


def requests(cfg: Any) -> list[tuple[str, str, np.ndarray]]:
    """(name, reference, audio at 16 kHz) of every request."""
    tune, held, commands = split()
    out = [(f"real {name}", ref, audio) for name, ref, audio in tune + held + commands]
    _, items = load_questions(spoken.SETS["tune"])
    speaker = spoken.Speaker(cfg)
    try:
        for i, item in enumerate(items):
            voice = SPEAKERS[i % len(SPEAKERS)]
            dry = speaker.say(voice, item.ask)
            room = np.zeros(int(0.3 * spoken.RATE), np.float32)
            heard = rooms.through("near", np.concatenate([room, dry, room]), rooms.voiced_power(dry))
            out.append((f"spoken {i} {voice}", item.ask, heard))
    finally:
        speaker.close()
    return out


async def measure(cfg: Any, chosen: list[tuple[str, str, np.ndarray]]) -> list[dict[str, Any]]:
    asr = backends.asr(cfg, backends.assets_for(cfg))
    asr.load()
    try:
        await asr.transcribe(chosen[0][2])  # warm-up
        rows = []
        for name, ref, audio in chosen:
            started = time.perf_counter()
            text = await asr.transcribe(audio)
            spent = time.perf_counter() - started
            rows.append({"name": name, "ref": ref, "text": text, "seconds": round(spent, 4),
                         "char_logprob": await asr.char_logprob(text)})
        return rows
    finally:
        asr.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None, help="keep every transcript here")
    parser.add_argument("--against", type=Path, default=None, help="an earlier run's --json, to compare")
    args = parser.parse_args()
    earlier = None
    if args.against is not None:
        try:
            earlier = {r["name"]: r for r in json.loads(args.against.read_text("utf-8"))}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"asr_time: cannot read {args.against}: {exc}", file=sys.stderr)
            return 2
    cfg = load(ROOT / "config.toml", [])
    logs.setup(cfg.log.level, cfg.log.format)  # to stderr; stdout keeps the results
    rows = asyncio.run(measure(cfg, requests(cfg)))
    seconds = sorted(r["seconds"] for r in rows)
    print(f"{len(rows)} requests: ASR time p50 {statistics.median(seconds):.3f} s, mean "
          f"{statistics.mean(seconds):.3f} s, p90 {seconds[int(0.9 * len(seconds))]:.3f} s; "
          f"CER {statistics.mean(cer(r['ref'], r['text']) for r in rows):.3f}")
    if earlier is not None:
        changed = [r for r in rows if r["name"] in earlier and earlier[r["name"]]["text"] != r["text"]]
        print(f"transcripts unlike {args.against.name}'s: {len(changed)} of {len(rows)}")
        for r in changed:
            print(f"  {r['name']}: {earlier[r['name']]['text']} -> {r['text']}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
