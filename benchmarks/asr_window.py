"""Whisper's encoder window against its error rate and time, on real Mandarin with known texts.

    .venv/bin/python benchmarks/asr_window.py [--windows 30,15,10,8] [--show]

Clips: the command recordings of benchmarks/commands.py (their texts known) and every corpus clip
with a published human reference in benchmarks/asr_refs.toml (24 clips; the ones whose source
publishes only a recogniser's output are left out). Each window setting is one WhisperAsr with
the configured options (command words as context); ``30`` is faster-whisper's own 30 s loop, the
others the utterance + 1 s with that many seconds at least (``asr.window_s``). Printed per setting:
character error rate (pooled: edits / reference characters, punctuation ignored), mean per-clip
CER, wall time per clip (median, p95 on the longest) and the real-time factor; one warm-up call
each, then every clip once.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
import tomllib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import backends, logs  # noqa: E402
from assistant.audio.wav import read_wav  # noqa: E402
from assistant.config import load  # noqa: E402
from benchmarks.commands import CORPUS, command_clips, edits  # noqa: E402

REFS = Path(__file__).resolve().parent / "asr_refs.toml"


def clips() -> list[tuple[str, str, np.ndarray]]:
    out = list(command_clips())
    if REFS.is_file():
        for name, entry in sorted(tomllib.loads(REFS.read_text("utf-8")).items()):
            if entry.get("kind") != "recognised":  # another recogniser's output is no reference
                text = re.sub(r"<[^>]*>", "", entry["text"])  # sound tags such as <music>
                out.append((f"corpus {name}", text, read_wav(CORPUS / name, 16000)))
    return out


async def measure(window: float, chosen: list[tuple[str, str, np.ndarray]], show: bool) -> str:
    cfg = load(ROOT / "config.toml", [f"asr.window_s={window}"])
    asr = backends.asr(cfg, backends.assets_for(cfg))
    asr.load()
    await asr.transcribe(chosen[0][2])  # warm-up
    times, rates, per_clip = [], [], []
    total_edits = total_chars = 0
    for name, ref, audio in chosen:
        started = time.perf_counter()
        heard = await asr.transcribe(audio)
        spent = time.perf_counter() - started
        e, n = edits(ref, heard)
        total_edits, total_chars = total_edits + e, total_chars + n
        per_clip.append(e / max(1, n))
        times.append(spent)
        rates.append(spent / (len(audio) / 16000))
        if show:
            print(f"  {window:>4} s {name}: {e / max(1, n):.2f}  {heard}  (ref {ref})", file=sys.stderr)
    asr.close()
    label = "30 (faster-whisper)" if window >= 30 else f"≥ {window:g} (utterance + 1 s)"
    rtf = sum(times) / sum(len(c[2]) / 16000 for c in chosen)
    return (f"| {label} | {total_edits / max(1, total_chars):.3f} | {statistics.mean(per_clip):.3f} | "
            f"{statistics.median(times):.3f} | {max(times):.3f} | {rtf:.3f} |")


async def main_async(windows: list[float], show: bool) -> None:
    chosen = clips()
    seconds = sum(len(c[2]) for c in chosen) / 16000
    print(f"{len(chosen)} clips, {seconds:.1f} s of speech, {sum(len(c[1]) for c in chosen)} reference characters\n")
    print("| encoder window (s) | CER (pooled) | CER (mean of clips) | time per clip p50 (s) | max (s) | RTF |")
    print("|---|---|---|---|---|---|")
    for window in windows:
        print(await measure(window, chosen, show), flush=True)


def main() -> int:
    logs.setup()  # the models' logs to stderr: stdout keeps the results
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default="30,15,10,8")
    parser.add_argument("--show", action="store_true", help="print every transcript")
    args = parser.parse_args()
    try:
        windows = [float(w) for w in args.windows.split(",")]
    except ValueError:
        print(f"asr_window.py: --windows {args.windows!r}: expected numbers like 30,15,10", file=sys.stderr)
        return 2
    asyncio.run(main_async(windows, args.show))
    return 0


if __name__ == "__main__":
    sys.exit(main())
