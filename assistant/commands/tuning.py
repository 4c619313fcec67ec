"""The tuning commands: what listening would cut from a recording (``vad``), how a text will be
spoken (``normalize``), and every setting with its meaning (``config``)."""

from __future__ import annotations

import argparse
import asyncio

from assistant import app
from assistant.audio.wav import read_wav
from assistant.config import Config, describe


def vad(cfg: Config, args: argparse.Namespace) -> int:
    from assistant.segments import find_utterances

    audio = read_wav(args.wav, cfg.audio.sample_rate)
    with app.one_shot(cfg, "vad") as parts:
        found = asyncio.run(find_utterances(cfg, parts.vad, audio))
    rate = cfg.audio.sample_rate
    for start, end, reason in found:
        print(f"{start / rate:7.2f} s – {end / rate:7.2f} s  ({(end - start) / rate:.2f} s, ended by {reason})")
    print(f"{len(found)} utterance(s) in {len(audio) / rate:.2f} s of audio")
    return 0


def normalize(cfg: Config, args: argparse.Namespace) -> int:
    from assistant.text.normalize import normalize

    for line in args.text.splitlines() or [""]:
        print(normalize(line))
    return 0


def config(cfg: Config, args: argparse.Namespace) -> int:
    for key, _, doc in describe():
        value: object = cfg
        for part in key.split("."):
            value = getattr(value, part)
        shown = list(value) if isinstance(value, tuple) else value
        print(f"{key} = {shown!r}  # {doc}")
    return 0
