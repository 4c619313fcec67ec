"""How Whisper base hears a request's first syllable, and whether context before it helps.

    .venv/bin/python benchmarks/first_syllable.py [--room clean|near|far] [--leads 0.05,0.2,0.6]
        [--lead-in 请问] [--gap 0.15]

Each request of the spoken tuning half (``spoken_tune.toml``), spoken by the evaluation's voices in
turn (renders cached as ``benchmarks/spoken.py`` keeps them), is transcribed alone by the configured
ASR: after each amount of leading silence in ``--leads``, and once more after a spoken lead-in
(``--lead-in``, rendered in the reply voice at the request's level, ``--gap`` seconds before it),
whose characters are then taken off the transcript. Printed per run: the character error rate and
how many transcripts begin with the request's first character.
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

from assistant import logs  # noqa: E402
from benchmarks import rooms  # noqa: E402
from benchmarks.spoken import SETS, Speaker  # noqa: E402

VOICES = ["zf_xiaobei", "zf_xiaoyi", "zm_yunjian", "zm_yunxi", "zm_yunxia", "zm_yunyang"]
RATE = 16000


def letters(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum())


def level(audio: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(audio))))


def heard_as(request: np.ndarray, room: str, lead_s: float) -> np.ndarray:
    """The request after ``lead_s`` of silence and before 1 s of it, through ``room``."""
    margin = RATE // 2  # the room's noise and reverberation need a run-up
    padded = np.concatenate([np.zeros(margin + int(lead_s * RATE)), request, np.zeros(RATE)])
    if room != "clean":
        padded = rooms.through(room, padded, rooms.voiced_power(request))
    return padded[margin:].astype(np.float32)


def score(refs: list[str], texts: list[str]) -> tuple[float, int]:
    from assistant.text.cer import cer

    first = sum(bool(t) and t[0] == r[0] for r, t in zip(refs, texts, strict=True))
    return statistics.mean(cer(r, t) for r, t in zip(refs, texts, strict=True)), first


def main() -> int:
    logs.setup()  # the models' logs to stderr: stdout keeps the results
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--room", default="clean", choices=["clean", "near", "far"])
    parser.add_argument("--leads", default="0.05,0.2,0.6", help="seconds of silence before the request")
    parser.add_argument("--lead-in", default="请问", help="words spoken before the request ('' for none)")
    parser.add_argument("--gap", type=float, default=0.15, help="seconds between the lead-in and the request")
    args = parser.parse_args()

    from assistant import backends
    from assistant.answer_eval import load_questions
    from assistant.app import loaded
    from assistant.config import load

    cfg = load(ROOT / "config.toml", [])
    _, items = load_questions(SETS["tune"])
    speaker = Speaker(cfg)
    requests = [speaker.say(VOICES[i % len(VOICES)], item.ask).astype(np.float64) for i, item in enumerate(items)]
    lead_in = speaker.say(cfg.tts.voice, args.lead_in).astype(np.float64) if args.lead_in else None
    speaker.close()
    refs = [letters(item.ask) for item in items]
    asr = backends.asr(cfg, backends.assets_for(cfg))
    with loaded(asr, speaks=False):
        def hear(audio: np.ndarray) -> str:
            return letters(asyncio.run(asr.transcribe(audio)))

        print(f"{len(items)} requests of the tuning half, {args.room} room\n")
        print("| before the request | CER | first character right |")
        print("|---|---|---|")
        for lead_s in (float(x) for x in args.leads.split(",")):
            rate, first = score(refs, [hear(heard_as(r, args.room, lead_s)) for r in requests])
            print(f"| {lead_s:.2f} s of silence | {rate:.3f} | {first} of {len(items)} |", flush=True)
        if lead_in is not None:
            voiced = np.flatnonzero(np.abs(lead_in) > 0.02 * np.abs(lead_in).max())
            words = lead_in[: voiced[-1] + 1]
            cut = len(letters(args.lead_in))
            texts = []
            for r in requests:
                said = words * (level(r) / level(words))
                gap = np.zeros(int(args.gap * RATE))
                texts.append(hear(np.concatenate([said.astype(np.float32), gap.astype(np.float32),
                                                  heard_as(r, args.room, 0.2)]))[cut:])
            rate, first = score(refs, texts)
            print(f"| {args.lead_in} ({cfg.tts.voice}), then {args.gap:.2f} s | {rate:.3f} | {first} of {len(items)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
