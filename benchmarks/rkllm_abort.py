"""Barge-in on the RKLLM backend: stop() → rkllm_run returned, in prefill and while generating.

Runs the real ctypes binding (models/rkllm_llm.py) against the stand-in runtime in C
(tests/stand_ins/librkllmrt.c, built here with gcc), which checks its abort flag every 2 ms. So
this measures what the binding adds to an abort — the thread hand-off, the lock, the callback's
pause — not the NPU's own abort time (rknn-llm#400 saw 1.3 s in prefill; measure it on the board
with this same script and the real library: --library /usr/lib/librkllmrt.so --model …).

    .venv/bin/python benchmarks/rkllm_abort.py [--runs 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.rkllm_llm import RkllmLlm

SOURCE = Path(__file__).resolve().parent.parent / "tests" / "stand_ins" / "librkllmrt.c"


def build(folder: Path) -> Path:
    out = folder / "librkllmrt.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-pthread", "-O2", "-o", str(out), str(SOURCE)], check=True)
    return out


async def stopped_after(llm: RkllmLlm, text: str, pieces_first: int, wait_s: float) -> float:
    """Start a reply, stop it after ``pieces_first`` pieces (or ``wait_s`` when 0), return the abort time."""
    stream = llm.reply(text)
    if pieces_first:
        got = 0
        async for _ in stream:
            got += 1
            if got >= pieces_first:
                break
    else:
        consumer = asyncio.ensure_future(anext(stream, None))
        await asyncio.sleep(wait_s)
        llm.stop()
        await consumer
    await stream.aclose()  # leaving the stream early stops the reply, as a barge-in does
    for _ in range(500):  # the abort thread records the time once rkllm_run has returned
        if llm.last_abort_s is not None:
            break
        await asyncio.sleep(0.01)
    took = llm.last_abort_s
    llm.last_abort_s = None
    if took is None:
        raise RuntimeError("the reply was not aborted")
    return took


async def measure(llm: RkllmLlm, runs: int) -> dict[str, list[float]]:
    cases = {"prefill (3 s long)": ("[[prefill_ms=3000]]你好", 0, 0.2),
             "generation (50 ms/token)": ("[[token_ms=50]]你好", 2, 0.0)}
    return {name: [await stopped_after(llm, text, pieces, wait) for _ in range(runs)]
            for name, (text, pieces, wait) in cases.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--library", type=Path, default=None, help="a real librkllmrt.so (default: the stand-in)")
    parser.add_argument("--model", type=Path, default=None, help="the .rkllm model for a real library")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        library = args.library or build(Path(tmp))
        model = args.model or Path(tmp) / "model.rkllm"
        if args.model is None:
            model.write_bytes(b"RKLLM-STANDIN model\n")  # the magic the stand-in checks
        print("| rkllm_abort | phase | median (ms) | max (ms) | runs |\n|---|---|---|---|---|")
        for blocking in ("0", "1"):
            os.environ["STANDIN_RKLLM_ABORT_BLOCKS"] = blocking
            llm = RkllmLlm(library, model, history_turns=0)
            llm.load()
            try:
                results = asyncio.run(measure(llm, args.runs))
            finally:
                llm.close()
            mode = "waits for the run to stop" if blocking == "1" else "returns at once"
            for phase, times in results.items():
                print(f"| {mode} | {phase} | {statistics.median(times) * 1000:.2f} | {max(times) * 1000:.2f} "
                      f"| {len(times)} |")


if __name__ == "__main__":
    main()
