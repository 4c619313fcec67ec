"""Whisper base's settings against its error rate, on real Mandarin: general speech and commands apart.

    .venv/bin/python benchmarks/asr_settings.py [--variants "NAME;..."] [--show]

General speech: the 25 real clips with a human reference (the 23 corpus clips of
``asr_refs.toml`` whose source publishes a human transcript, ask_who_are_you and hey_xiaozhi),
split in two by name order: the even ones are the tuning half, the odd ones the held-out half.
Commands: the seven cmd_qiehuan speakers and corpus 019 (换一首歌). Each variant is a set of config
overrides on today's defaults, one WhisperAsr each (one warm-up call, then every clip once).
Printed per variant: pooled CER (edits / reference characters, punctuation ignored) on each half,
on all 25, on the commands, and the median time per general clip.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import backends, logs  # noqa: E402
from assistant.audio.echo import EchoCanceller  # noqa: E402
from assistant.audio.linear_echo import LinearEchoCanceller  # noqa: E402
from assistant.config import load  # noqa: E402
from benchmarks.asr_window import clips  # noqa: E402
from benchmarks.commands import edits  # noqa: E402

PLAIN = ["asr.command_words=false", "asr.min_avg_logprob=-100.0", "asr.max_no_speech_prob=1.0"]
VARIANTS: dict[str, list[str]] = {
    "defaults": [],
    "command words always": ['asr.command_bias="always"'],
    "10 s window": ["asr.window_s=10.0"],
    "30 s window": ["asr.window_s=30.0"],
    "15 s window": ["asr.window_s=15.0"],
    "20 s window": ["asr.window_s=20.0"],
    "full window from 4 s": ["asr.full_window_from_s=4.0"],
    "full window from 5 s": ["asr.full_window_from_s=5.0"],
    "full window from 6 s": ["asr.full_window_from_s=6.0"],
    "full window from 8 s": ["asr.full_window_from_s=8.0"],
    "10 s window, no confidence check": ["asr.window_s=10.0", "asr.min_avg_logprob=-100.0",
                                         "asr.max_no_speech_prob=1.0"],
    "no confidence check": ["asr.min_avg_logprob=-100.0", "asr.max_no_speech_prob=1.0"],
    "temperature fallback": ["asr.fallback=true"],
    "beam 5": ["asr.beam_size=5"],
    "beam 5, no confidence check": ["asr.beam_size=5", "asr.min_avg_logprob=-100.0", "asr.max_no_speech_prob=1.0"],
    "no command words": ["asr.command_words=false"],
    "plain": PLAIN,
    "plain, 10 s": [*PLAIN, "asr.window_s=10.0"],
    "plain, 30 s": [*PLAIN, "asr.window_s=30.0"],
    "plain, beam 5": [*PLAIN, "asr.beam_size=5"],
    "plain, beam 5, 10 s": [*PLAIN, "asr.beam_size=5", "asr.window_s=10.0"],
    "plain, beam 5, 30 s": [*PLAIN, "asr.beam_size=5", "asr.window_s=30.0"],
    "plain, no prompt": [*PLAIN, 'asr.initial_prompt=""'],
    "no prompt": ['asr.initial_prompt=""'],
    "plain, beam 5, no prompt": [*PLAIN, "asr.beam_size=5", 'asr.initial_prompt=""'],
    "no command words, beam 5": ["asr.command_words=false", "asr.beam_size=5"],
    "no rescoring": ['asr.rescore=""'],
    "no second ear": ["asr.second_ear=false"],
    "beam 8": ["asr.beam_size=8", "asr.n_best=8"],
    "beam 10": ["asr.beam_size=10", "asr.n_best=10"],
    "pooled": ['asr.command_bias="pooled"'],
    "pooled, beam 8": ['asr.command_bias="pooled"', "asr.beam_size=8", "asr.n_best=8"],
    "no second ear, 30 s window": ["asr.second_ear=false", "asr.window_s=30.0"],
    "no second ear, no confidence check": ["asr.second_ear=false", "asr.min_avg_logprob=-100.0",
                                           "asr.max_no_speech_prob=1.0"],
    "plain, 30 s, no second ear": [*PLAIN, "asr.window_s=30.0", "asr.second_ear=false"],
    "rescore weight 0.2": ["asr.rescore_weight=0.2"],
    "rescore weight 0.5": ["asr.rescore_weight=0.5"],
    "rescore 3 best": ["asr.n_best=3"],
    "through the echo canceller": [],
    "through the echo canceller and noise suppression": ["echo.noise_suppression=true"],
    "through the linear canceller": [],
}
# Variants whose clips first pass the microphone's processing with nothing played: WebRTC AEC3 (only
# its filters act, and with echo.noise_suppression its suppressor), or the linear canceller alone.
PROCESSED = {"through the echo canceller": "aec3", "through the echo canceller and noise suppression": "aec3",
             "through the linear canceller": "linear"}
Clip = tuple[str, str, np.ndarray]


def split() -> tuple[list[Clip], list[Clip], list[Clip]]:
    """(tuning half, held-out half, commands) of the real clips."""
    general, commands = [], []
    for clip in clips():
        name = clip[0]
        (commands if "qiehuan" in name or name.startswith("corpus 019") else general).append(clip)
    general.sort(key=lambda c: c[0])
    return general[0::2], general[1::2], commands


def microphone(audio: np.ndarray, kind: str, noise_suppression: bool) -> np.ndarray:
    """``audio`` through a canceller with nothing played (``kind``: "aec3", as the states hear it, or
    "linear"): a few milliseconds late (buffering, AEC3's own delay), so 30 ms of silence keeps the end."""
    padded = np.concatenate([audio.astype(np.float32), np.zeros(480, np.float32)])
    if kind == "linear":
        linear = LinearEchoCanceller(16000)
        try:
            return linear.process(padded, np.zeros_like(padded))
        finally:
            linear.close()
    return EchoCanceller(16000, noise_suppression=noise_suppression).process(padded, np.zeros_like(padded))


def pooled(results: list[tuple[int, int]]) -> float:
    return sum(e for e, _ in results) / max(1, sum(n for _, n in results))


async def measure(name: str, halves: tuple[list[Clip], list[Clip], list[Clip]], show: bool) -> str:
    cfg = load(ROOT / "config.toml", VARIANTS[name])
    asr = backends.asr(cfg, backends.assets_for(cfg))
    asr.load()
    if name in PROCESSED:
        def through(part: list[Clip]) -> list[Clip]:
            return [(clip, ref, microphone(audio, PROCESSED[name], cfg.echo.noise_suppression))
                    for clip, ref, audio in part]
        halves = (through(halves[0]), through(halves[1]), through(halves[2]))
    try:
        await asr.transcribe(halves[0][0][2])  # warm-up
        scores: list[list[tuple[int, int]]] = []
        times: list[float] = []
        for i, part in enumerate(halves):
            scores.append([])
            for clip, ref, audio in part:
                started = time.perf_counter()
                heard = await asr.transcribe(audio)
                if i < 2:
                    times.append(time.perf_counter() - started)
                scores[-1].append(edits(ref, heard))
                if show:
                    print(f"  {name}: {clip}: {heard}  (ref {ref})", file=sys.stderr)
    finally:
        asr.close()
    tune, held, commands = (pooled(s) for s in scores)
    return (f"| {name} | {tune:.3f} | {held:.3f} | {pooled(scores[0] + scores[1]):.3f} | {commands:.3f} | "
            f"{statistics.median(times):.3f} |")


def main() -> int:
    logs.setup()  # the models' logs to stderr: stdout keeps the results
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=";".join(VARIANTS), help="names separated by ;")
    parser.add_argument("--show", action="store_true", help="print every transcript")
    args = parser.parse_args()
    names = args.variants.split(";")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        print(f"asr_settings.py: unknown variants {unknown}; known: {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    halves = split()
    print(f"general speech: {len(halves[0])} tuning + {len(halves[1])} held-out clips; "
          f"commands: {len(halves[2])} clips\n")
    print("| variant | CER tuning half | CER held-out half | CER all 25 | CER commands | time per clip p50 (s) |")
    print("|---|---|---|---|---|---|")
    for name in names:
        print(asyncio.run(measure(name, halves, args.show)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
