"""What the second ear gains and costs: Whisper's transcript with and without ``asr.second_ear``.

    .venv/bin/python benchmarks/ear.py [--set tune|heldout] [--rooms near,clean,far] [--show]

Each request of the question set, spoken by the spoken evaluation's voices (round robin over the
six it keeps, the renders of ``benchmarks/spoken.py``'s cache) and played through the room, is
transcribed twice by the configured ASR: with the second ear off, then on. Printed per room: the
pooled CER of each (edits / reference characters, punctuation ignored), how many transcripts the
ear mended and how many of those came nearer the request or went further from it, and the time per
request (p50 / p90: the ear and the spelling it weighs are added to the ASR's time after the end of
speech). Time it on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import backends, logs  # noqa: E402
from assistant.answer_eval import load_questions  # noqa: E402
from assistant.app import loaded  # noqa: E402
from assistant.config import ConfigError, load  # noqa: E402
from benchmarks import rooms  # noqa: E402
from benchmarks.commands import edits  # noqa: E402
from benchmarks.spoken import RATE, SETS, Speaker  # noqa: E402

VOICES = ("zf_xiaobei", "zf_xiaoyi", "zm_yunjian", "zm_yunxi", "zm_yunxia", "zm_yunyang")  # spoken.py's kept six


def heard(room: str, speech: np.ndarray) -> np.ndarray:
    """One request as the microphone hears it in ``room``: half a second of room before, one after."""
    padded = np.concatenate([np.zeros(RATE // 2), speech.astype(np.float64), np.zeros(RATE)])
    return rooms.through(room, padded, rooms.voiced_power(speech))


def transcripts(asr: Any, audio: list[np.ndarray]) -> tuple[list[str], list[float]]:
    texts, times = [], []
    asyncio.run(asr.transcribe(audio[0]))  # warm-up
    for clip in audio:
        started = time.perf_counter()
        texts.append(asyncio.run(asr.transcribe(clip)))
        times.append(time.perf_counter() - started)
    return texts, times


def main() -> int:
    logs.setup()  # the models' logs to stderr: stdout keeps the results
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=sorted(SETS), default="tune")
    parser.add_argument("--rooms", default="near")
    parser.add_argument("--show", action="store_true", help="list every transcript the ear changed")
    args = parser.parse_args()
    try:
        cfg = load(ROOT / "config.toml", [])
    except ConfigError as exc:
        print(f"ear: {exc}", file=sys.stderr)
        return 2
    asks = [item.ask for item in load_questions(SETS[args.set])[1]]
    speaker = Speaker(cfg)
    spoken = [speaker.say(VOICES[i % len(VOICES)], ask) for i, ask in enumerate(asks)]
    speaker.close()
    print(f"| {args.set} half, {len(asks)} requests | CER, Whisper alone | CER, with the second ear | mended "
          "| nearer / further | time p50 / p90, alone (s) | time p50 / p90, with the ear (s) |")
    print("|---|---|---|---|---|---|---|")
    for room in args.rooms.split(","):
        audio = [heard(room, s) for s in spoken]
        results = {}
        for on in (False, True):
            variant = replace(cfg, asr=replace(cfg.asr, second_ear=on))
            asr = backends.asr(variant, backends.assets_for(variant))
            with loaded(asr, speaks=False):
                results[on] = transcripts(asr, audio)
        (alone, t_alone), (eared, t_eared) = results[False], results[True]
        before, after = [edits(a, t) for a, t in zip(asks, alone, strict=True)], \
                        [edits(a, t) for a, t in zip(asks, eared, strict=True)]
        changed = [i for i in range(len(asks)) if alone[i] != eared[i]]
        nearer = sum(after[i][0] < before[i][0] for i in changed)
        further = sum(after[i][0] > before[i][0] for i in changed)
        chars = sum(n for _, n in before)

        def spread(times: list[float]) -> str:
            return f"{statistics.median(times):.2f} / {sorted(times)[int(0.9 * (len(times) - 1))]:.2f}"

        print(f"| {room} | {sum(e for e, _ in before) / chars:.3f} | {sum(e for e, _ in after) / chars:.3f} "
              f"| {len(changed)} | {nearer} / {further} | {spread(t_alone)} | {spread(t_eared)} |")
        if args.show:
            for i in changed:
                print(f"  {asks[i]}: {alone[i]} → {eared[i]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
