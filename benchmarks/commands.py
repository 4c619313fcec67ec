"""Commands as Whisper hears them: the command error rate on real command recordings, without and with the
command vocabulary as Whisper's context, and how often the confidence check asks again.

    .venv/bin/python benchmarks/commands.py [--show]

Command clips with a known text: cmd_qiehuan_1 … _7 (切换前视, seven speakers), corpus 019 (换一首歌),
and the two real requests ask_who_are_you and hey_xiaozhi (their texts from shared/README.md).
car_commands_68s is not used: no reference transcript of it is available here. Character error rate
(edit distance / reference length, punctuation ignored) and the share of commands
heard exactly. Then every corpus clip (001–038, real speech) and three non-speech sounds through the
confidence check: how many real utterances it would wrongly ask again, how many non-speech
"transcripts" it stops.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assistant.audio.wav import read_wav
from assistant.config import load
from models.assets import Assets
from models.whisper_asr import WhisperAsr, repeats

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
REAL = SHARED / "audio" / "real"
CORPUS = SHARED / "audio" / "corpus"


def edits(ref: str, hyp: str) -> tuple[int, int]:
    """(edit distance, reference length) over letters and digits only."""
    ref, hyp = (("".join(ch for ch in s if ch.isalnum())) for s in (ref, hyp))
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1], len(ref)


def cer(ref: str, hyp: str) -> float:
    distance, length = edits(ref, hyp)
    return distance / max(1, length)


def command_clips() -> list[tuple[str, str, np.ndarray]]:
    clips = [(f"cmd_qiehuan_{i}", "切换前视", read_wav(REAL / f"cmd_qiehuan_{i}.wav", 16000)) for i in range(1, 8)]
    clips.append(("corpus 019", "换一首歌", read_wav(CORPUS / "019.wav", 16000)))
    clips.append(("ask_who_are_you", "告诉我你是谁你叫什么名字", read_wav(REAL / "ask_who_are_you.wav", 16000)))
    clips.append(("hey_xiaozhi", "嘿小智你在吗今天怎么样", read_wav(REAL / "hey_xiaozhi.wav", 16000)))
    return clips


def noises(rate: int = 16000) -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    t = np.arange(2 * rate) / rate
    return [("white noise", (0.1 * rng.standard_normal(2 * rate)).astype(np.float32)),
            ("440 Hz tone", (0.2 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)),
            ("hum and clicks", (0.05 * np.sin(2 * np.pi * 50 * t) + 0.5 * (rng.random(2 * rate) > 0.999))
             .astype(np.float32))]


async def run(show: bool) -> None:
    cfg = load(ROOT / "config.toml", [])
    from assistant.tools.router import COMMAND_WORDS

    folder = Assets(cfg.model_dirs()).folder(cfg.asr.model)
    # no context; the built-in command words (the default); those plus a car user's tools.hotwords
    asrs = [WhisperAsr(folder, threads=cfg.asr.threads, hotwords=" ".join(words))
            for words in ([], COMMAND_WORDS, [*COMMAND_WORDS, "切换前视", "切换后视", "换一首歌"])]
    for asr in asrs:
        asr.load()
    context = asrs[1]
    rows = []
    for name, ref, audio in command_clips():
        heard = [await asr.transcribe(audio) for asr in asrs]
        rows.append((ref, heard))
        if show:
            print(f"{name}\t{ref}\t" + "\t".join(heard))
    print("| command clips | CER: no context | CER: built-in command words | CER: + the user's hot words "
          "| heard exactly (each) |")
    print("|---|---|---|---|---|")
    for label, chosen in (("切换前视 ×7, 换一首歌", rows[:8]), ("two real requests", rows[8:]), ("all", rows)):
        rates = [statistics.mean(cer(ref, heard[k]) for ref, heard in chosen) for k in range(3)]
        exact = [sum(ref in "".join(ch for ch in heard[k] if ch.isalnum()) for ref, heard in chosen) for k in range(3)]
        print(f"| {label} ({len(chosen)}) | " + " | ".join(f"{r:.3f}" for r in rates)
              + f" | {' / '.join(map(str, exact))} of {len(chosen)} |")

    print("\nconfidence of real speech (corpus 001–038) and of non-speech, with the command words as context:")
    scores = []
    for path in sorted(CORPUS.glob("0[0-3][0-9].wav"))[:38]:
        text = await context.transcribe(read_wav(path, 16000))
        assert context.last_scores is not None
        scores.append((path.stem, text, *context.last_scores))
    speech = list(scores)
    for name, audio in noises():
        text = await context.transcribe(audio)
        assert context.last_scores is not None
        scores.append((name, text, *context.last_scores))
    other = scores[len(speech):]
    if show:
        for name, text, lp, ns in scores:
            print(f"  {name}\tlogprob {lp:.2f}\tno_speech {ns:.2f}\t{text[:60]}")
    print("| check (min mean log-prob, max no-speech prob) | real utterances asked again | non-speech stopped |")
    print("|---|---|---|")
    for lo, ns in ((-0.8, 0.6), (-1.0, 0.8), (-1.2, 0.9)):
        asked = sum(lp < lo or n > ns and repeats(t) for _, t, lp, n in speech if t)
        stopped = sum(not t or lp < lo or n > ns and repeats(t) for _, t, lp, n in other)
        print(f"| {lo}, {ns} | {asked} of {len(speech)} | {stopped} of {len(other)} |")
    for asr in asrs:
        asr.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", action="store_true", help="print every transcript and score")
    asyncio.run(run(parser.parse_args().show))
