"""What serialised NPU use costs: TTS first audio and LLM speed when both want the NPU at once.

A simulation, not a measurement of the board: the real code (models/npu.py, the RKLLM binding, the
Matcha + Vocos backend) runs against the stand-ins of tests/stand_ins, slowed to the published
RK3576 timings — acoustic model 293.6 ms a call, vocoder 54.7 ms a call, the LLM 27 tokens/s. So
it shows the scheduling (who waits for whom, and how long), which is this project's own doing;
the NPU's speed is the published build's.

    .venv/bin/python benchmarks/npu_schedule.py [--runs 5]

In ``serialised`` mode (the default) the LLM holds the NPU while it writes and hands it over
between tokens: a TTS call waits at most one token, and the LLM pauses for each TTS call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pypinyin import Style, lazy_pinyin  # noqa: E402

from assistant import logs  # noqa: E402
from models.matcha_rknn_tts import MatchaRknnTts  # noqa: E402
from models.npu import NpuScheduler  # noqa: E402
from models.rkllm_llm import RkllmLlm  # noqa: E402
from tests.stand_ins import rknnlite as stand_in_package  # noqa: E402
from tests.stand_ins.rknnlite import api as stand_in  # noqa: E402

ACOUSTIC_S, VOCODER_S, TOKEN_MS = 0.2936, 0.0547, 37  # the published RK3576 build
TEXT = "你好，我是听说。"
SPOKEN = "你好我是听说一二三四五六七八九十"


def slowed(model: stand_in.Model, seconds: float) -> stand_in.Model:
    def run(arrays: stand_in.Arrays) -> stand_in.Arrays:
        started = time.perf_counter()
        out = model.run(arrays)
        time.sleep(max(0.0, seconds - (time.perf_counter() - started)))
        return out

    return stand_in.Model(model.input_shapes, run)


def models(folder: Path, npu: NpuScheduler) -> tuple[RkllmLlm, MatchaRknnTts]:
    library = folder / "librkllmrt.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-pthread", "-O2", "-o", str(library),
                    str(ROOT / "tests" / "stand_ins" / "librkllmrt.c")], check=True)
    (folder / "qwen.rkllm").write_bytes(b"RKLLM-STANDIN model\n")
    sys.modules["rknnlite"], sys.modules["rknnlite.api"] = stand_in_package, stand_in
    stand_in.SCRIPT.models["matcha.rknn"] = slowed(stand_in.matcha(), ACOUSTIC_S)
    stand_in.SCRIPT.models["vocos.rknn"] = slowed(stand_in.vocos(), VOCODER_S)
    acoustic = stand_in.write_rknn(folder / "matcha.rknn", [(1, 64), (1,), (1,), (1,)], [(1, 80, 599)])
    vocoder = stand_in.write_rknn(folder / "vocos.rknn", [(1, 80, 600)], [(1, 513, 600), (1, 513, 600)])
    syllables = {c: lazy_pinyin(c, style=Style.TONE3)[0] for c in SPOKEN}
    symbols = [" ", "_", ",", ".", "!", "?", *sorted(set(syllables.values()))]
    (folder / "tokens.txt").write_text("".join(f"{s} {i}\n" for i, s in enumerate(symbols)), "utf-8")
    (folder / "lexicon.txt").write_text("".join(f"{c} {s}\n" for c, s in syllables.items()), "utf-8")
    llm = RkllmLlm(library, folder / "qwen.rkllm", npu=npu, history_turns=0, max_tokens=400)
    tts = MatchaRknnTts(acoustic, vocoder, folder / "lexicon.txt", folder / "tokens.txt", npu=npu)
    llm.load()
    tts.load()
    return llm, tts


async def first_audio(tts: MatchaRknnTts) -> float:
    started = time.perf_counter()
    async for _ in tts.synthesize(TEXT):
        return time.perf_counter() - started
    raise RuntimeError("no audio")


async def while_writing(llm: RkllmLlm, tts: MatchaRknnTts) -> tuple[float, float, float]:
    """TTS first audio while the LLM writes; the LLM's tokens/s before and during that TTS call."""
    stamps: list[float] = []

    async def write() -> None:
        async for _ in llm.reply(f"[[long]][[token_ms={TOKEN_MS}]]数一数"):
            stamps.append(time.perf_counter())

    writer = asyncio.ensure_future(write())
    await asyncio.sleep(0.5)  # the LLM is well into its reply
    started = time.perf_counter()
    took = await first_audio(tts)
    ended = started + took
    llm.stop()
    await writer
    before = [t for t in stamps if started - 0.4 <= t < started]
    during = [t for t in stamps if started <= t < ended]
    return took, len(before) / 0.4, len(during) / took


async def measure(llm: RkllmLlm, tts: MatchaRknnTts, runs: int) -> dict[str, list[float]]:
    alone = [await first_audio(tts) for _ in range(runs)]
    together = [await while_writing(llm, tts) for _ in range(runs)]
    return {"alone": alone, "together": [t[0] for t in together],
            "llm before": [t[1] for t in together], "llm during": [t[2] for t in together]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    logs.setup("error")
    npu = NpuScheduler("serialised")
    with tempfile.TemporaryDirectory() as tmp:
        llm, tts = models(Path(tmp), npu)
        try:
            r = asyncio.run(measure(llm, tts, args.runs))
        finally:
            tts.close()
            llm.close()

    def p50(xs: list[float]) -> float:
        return float(statistics.median(xs))

    print("| serialised NPU (simulated RK3576 timings) | median | max |\n|---|---|---|")
    print(f"| TTS first audio, NPU free | {p50(r['alone']):.3f} s | {max(r['alone']):.3f} s |")
    print(f"| TTS first audio, LLM writing | {p50(r['together']):.3f} s | {max(r['together']):.3f} s |")
    print(f"| LLM tokens/s before the TTS call | {p50(r['llm before']):.1f} | {max(r['llm before']):.1f} |")
    print(f"| LLM tokens/s during the TTS call | {p50(r['llm during']):.1f} | {max(r['llm during']):.1f} |")
    print(f"(waited for the NPU in total: {', '.join(f'{k} {v:.2f} s' for k, v in npu.waited_s.items())})")


if __name__ == "__main__":
    main()
