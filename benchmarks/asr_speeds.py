"""Would Whisper base hear a request better slightly faster or slower? An oracle over the spoken set.

    .venv/bin/python benchmarks/asr_speeds.py [--set tune|heldout] [--room near|clean|far]

Each request of the spoken evaluation (``benchmarks/spoken.py``: the same voices, the same room, the
same timeline) is cut out of the room's recording (0.3 s either side) and transcribed by the
assistant's own ASR path five times: as heard, and resampled to 0.9, 0.95, 1.05 and 1.1 of its speed
(pitch with it). Printed: each request's CER as heard and its best over the five, and the mean CER
per speed and of the best. The best is an oracle (nothing here could pick it); if even the oracle
does not mend the requests the assistant asks again, choosing among such readings cannot either.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import backends, logs  # noqa: E402
from assistant.app import loaded  # noqa: E402
from assistant.audio.resample import resample  # noqa: E402
from assistant.config import load  # noqa: E402
from assistant.text.cer import cer  # noqa: E402
from benchmarks import spoken  # noqa: E402

SPEEDS = (1.0, 0.9, 0.95, 1.05, 1.1)
MARGIN = int(0.3 * spoken.RATE)


def main() -> int:
    logs.setup()  # the models' logs to stderr: stdout keeps the results
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(spoken.SETS), default="tune")
    parser.add_argument("--room", choices=("clean", "near", "far"), default="near")
    args = parser.parse_args()

    cfg = load(ROOT / "config.toml", spoken._overrides([]))
    _, items = spoken.load_questions(spoken.SETS[args.set])
    _, checks = spoken.load_questions(spoken.SETS["tune"])
    speaker = spoken.Speaker(cfg)
    voices = spoken.usable_voices(cfg, speaker, [i.ask for i in checks[:12]], cfg.tts.voice)
    utterances, texts = [], []
    for i, item in enumerate(items):
        for text in ([item.before] if item.before else []) + [item.ask]:
            utterances.append(speaker.say(voices[i % len(voices)], text))
            texts.append(text)
    speaker.close()
    timeline, spans = spoken._timeline(utterances)
    heard = spoken._heard(timeline, args.room, utterances)

    asr = backends.asr(cfg, backends.assets_for(cfg))
    rates: dict[float, list[float]] = {speed: [] for speed in SPEEDS}
    best: list[float] = []
    print("| request | CER as heard | best CER | at each speed |\n|---|---|---|---|")
    with loaded(asr, speaks=False):
        for text, (start, end) in zip(texts, spans, strict=True):
            clip = heard[max(0, start - MARGIN): end + MARGIN].astype(np.float32)
            readings = {speed: asyncio.run(asr.transcribe(
                clip if speed == 1.0 else resample(clip, round(spoken.RATE * speed), spoken.RATE)))
                for speed in SPEEDS}
            scores = {speed: cer(text, reading) for speed, reading in readings.items()}
            for speed, score in scores.items():
                rates[speed].append(score)
            best.append(min(scores.values()))
            shown = " · ".join(f"{speed}: {readings[speed] or '-'}" for speed in SPEEDS)
            print(f"| {text} | {scores[1.0]:.2f} | {best[-1]:.2f} | {shown} |", flush=True)
    print(f"\n{args.set} half, {args.room} room, {len(texts)} utterances:")
    for speed in SPEEDS:
        print(f"- speed {speed}: mean CER {statistics.mean(rates[speed]):.3f}")
    print(f"- the best of the five (an oracle): mean CER {statistics.mean(best):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
