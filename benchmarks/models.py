"""Benchmark of the configured models: load time, real-time factors, LLM first token and speed, peak RSS.

    .venv/bin/python benchmarks/models.py [--config PATH] [--set key=value ...] [--json FILE]

On an RK3576 board, ``--config /etc/tingshuo/config.toml`` measures the NPU backends it selects
(Matcha + Vocos: RTF and first audio; RKLLM: first token and tokens/s) with the same numbers.

Prints one table (Markdown) for the README. Numbers come from real models on real recordings:
ASR on the shared Mandarin clips, KWS and VAD on the 68.8 s car-commands recording, TTS on three
sentences, the LLM on three questions.

``--json FILE`` also writes what was measured in the field names of the board timing table
(``assistant/board_timing.py``), so a run on the board paces ``assistant replay --predict
rk3576:FILE`` and ``benchmarks/board_predict.py --timings FILE`` with the board's own numbers. The
TTS fields are written only for Matcha + Vocos (the TTS the prediction models): its first piece, one
window's acoustic call, vocoder call and ISTFT together, goes into ``tts_acoustic_s`` (the vocoder's
and the ISTFT's fields are then 0: the NPU's share of it cannot be told apart here).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import backends, config, logs  # noqa: E402
from assistant.audio.wav import read_wav  # noqa: E402

REAL = ROOT.parent / "shared" / "audio" / "real"
SENTENCES = ["今天天气很好，我们一起去公园散步吧。", "现在是下午三点十五分。", "我是听说，一个离线的普通话语音助手。"]
QUESTIONS = ["你好，请用一句话介绍你自己。", "北京是哪个国家的首都？", "给我讲一个很短的笑话。"]


def timed_load(model: Any) -> float:
    started = time.perf_counter()
    model.load()
    return time.perf_counter() - started


async def stream_rtf(model: Any, audio: Any, chunk: int = 320) -> float:
    started = time.perf_counter()
    for i in range(0, len(audio), chunk):
        await model.accept(audio[i:i + chunk])
    return (time.perf_counter() - started) / (len(audio) / 16000)


async def asr_rtf(asr: Any, min_window_s: float) -> tuple[float, float]:
    """(RTF over the clips, seconds per second of the encoder window: the clip + 1 s, at least ``min_window_s``)."""
    clips = [read_wav(REAL / n, 16000) for n in ("ask_who_are_you.wav", "hey_xiaozhi.wav", "greeting_10s.wav")]
    await asr.transcribe(clips[0])  # warm-up
    spent = audio = window = 0.0
    for clip in clips:
        started = time.perf_counter()
        await asr.transcribe(clip)
        spent += time.perf_counter() - started
        audio += len(clip) / 16000
        window += min(30.0, max(min_window_s, len(clip) / 16000 + 1.0))
    return spent / audio, spent / window


def machine() -> str:
    """The CPU's model name (or the architecture) and the kernel's machine name."""
    try:
        names = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                 if line.startswith(("model name", "Hardware", "Model"))]
    except OSError:
        names = []
    return f"{names[0] if names else platform.processor() or 'unknown CPU'} ({platform.machine()})"


async def tts_numbers(tts: Any) -> tuple[float, float]:
    """(RTF over three sentences, median time to the first piece)."""
    async for _ in tts.synthesize("你好。"):  # warm-up
        pass
    spent = audio = 0.0
    firsts = []
    for text in SENTENCES:
        started = time.perf_counter()
        first = None
        async for piece in tts.synthesize(text):
            first = first or time.perf_counter() - started
            audio += len(piece) / tts.sample_rate
        spent += time.perf_counter() - started
        firsts.append(first or 0.0)
    return spent / audio, statistics.median(firsts)


async def llm_numbers(llm: Any) -> tuple[float, float]:
    """(median time to first piece, pieces per second after it) — pieces are tokens for llama.cpp."""
    firsts, rates = [], []
    for q in QUESTIONS:
        started = time.perf_counter()
        first, count = None, 0
        async for _ in llm.reply(q):
            count += 1
            if first is None:
                first = time.perf_counter()
        end = time.perf_counter()
        if first is not None:
            firsts.append(first - started)
            if count > 1:
                rates.append((count - 1) / (end - first))
    return statistics.median(firsts), statistics.median(rates)


async def main(cfg: config.Config) -> dict[str, Any]:
    """Print the table; return the board timing fields measured."""
    assets = backends.assets_for(cfg)
    car = read_wav(REAL / "car_commands_68s.wav", 16000)
    rows: list[tuple[str, str, str]] = []
    timings: dict[str, Any] = {"machine": f"{machine()}; models.py with tts {cfg.models.tts}, llm {cfg.models.llm}"}
    all_loaded = 0.0

    vad = backends.vad(cfg, assets)
    t = timed_load(vad)
    all_loaded += t
    timings["vad_rtf"] = await stream_rtf(vad, car)
    rows.append((f"VAD silero v5 ({cfg.models.vad})", f"{t:.2f}", f"RTF {timings['vad_rtf']:.4f}"))

    kws = backends.kws(cfg, assets)
    if kws is None:
        raise SystemExit("the benchmark needs the keyword spotter: keep wake.mode = \"keyword\"")
    t = timed_load(kws)
    all_loaded += t
    timings["kws_rtf"] = await stream_rtf(kws, car)
    rows.append(("KWS zipformer 3.3M (sherpa-onnx)", f"{t:.2f}", f"RTF {timings['kws_rtf']:.3f}"))

    asr = backends.asr(cfg, assets)
    t = timed_load(asr)
    all_loaded += t
    rtf, timings["asr_s_per_window_s"] = await asr_rtf(asr, cfg.asr.window_s)
    rows.append((f"ASR {cfg.asr.model} {cfg.asr.compute_type}, {cfg.asr.threads} threads", f"{t:.2f}",
                 f"RTF {rtf:.3f}"))

    tts = backends.tts(cfg, assets)
    t = timed_load(tts)
    all_loaded += t
    rtf, first = await tts_numbers(tts)
    if cfg.models.tts == "matcha-rknn":
        timings.update(tts_acoustic_s=first, tts_vocoder_s=0.0, tts_cpu_s=0.0)
    what = "Matcha + Vocos (NPU)" if cfg.models.tts == "matcha-rknn" else f"Kokoro int8, {cfg.tts.threads} threads"
    rows.append((f"TTS {what}", f"{t:.2f}",
                 f"RTF {rtf:.3f}, first piece {first:.2f} s"))

    llm = backends.llm(cfg, assets)
    t = timed_load(llm)
    all_loaded += t
    ttft, rate = await llm_numbers(llm)
    timings.update(llm_first_token_s=ttft, llm_tokens_per_s=rate)
    what = (f"RKLLM {Path(cfg.rkllm.model).name}" if cfg.models.llm == "rkllm"
            else f"{cfg.llm.model}, {cfg.llm.threads} threads")
    rows.append((f"LLM {what}", f"{t:.2f}",
                 f"first token {ttft:.2f} s, {rate:.1f} tokens/s"))

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("| backend | load (s) | speed |")
    print("|---|---|---|")
    for row in rows:
        print(f"| {' | '.join(row)} |")
    print(f"| all models | {all_loaded:.2f} | peak RSS of the whole chain {peak_mb:.0f} MB |")
    for m in (vad, kws, asr, tts, llm):
        m.close()
    return timings


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=Path, default=ROOT / "config.toml")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the measured numbers as board timing fields to this file")
    args = parser.parse_args()
    logs.setup("error")
    measured = asyncio.run(main(config.load(args.config, args.overrides)))
    if args.json is not None:
        args.json.write_text(json.dumps(measured, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json} (board timing fields: benchmarks/board_predict.py --timings {args.json})")
