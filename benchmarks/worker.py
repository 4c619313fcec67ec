"""What the process boundary costs: the same calls on the models in this process and in the worker process.

    .venv/bin/python benchmarks/worker.py [--rounds N]

Per variant (in-process threads, then the worker process), each round on a text or clip not used
before in that variant (the LLM's KV cache and the phrase cache cannot answer for it):

- call round trip: a call that does nothing in the worker (in-process: none);
- ASR: one real request transcribed (ask_who_are_you and corpus clips);
- LLM first token and tokens/s after it, on a new question;
- TTS first audio: a new first clause → its first piece of audio;
- stop: ``llm.stop()`` during a reply → the stream has ended;
- restart: a SIGKILLed worker → a new one answering (worker only).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import app, config, logs  # noqa: E402
from assistant.audio.wav import read_wav  # noqa: E402
from models.protocols import ModelError  # noqa: E402

SHARED = ROOT.parent / "shared" / "audio"
CLIPS = [SHARED / "real" / "ask_who_are_you.wav", *(SHARED / "corpus" / f"{n:03d}.wav" for n in (19, 20, 22, 2, 3))]
QUESTIONS = ["今天适合做什么运动？", "怎么泡一杯好喝的绿茶？", "周末可以去哪里玩？", "猫为什么喜欢晒太阳？",
             "早上吃什么比较健康？", "怎么让房间更安静？"]
CLAUSES = ["好的，", "今天天气不错，", "我想一想，", "这个问题很好，", "先说第一点，", "慢慢来，"]
LONG = "请详细讲一讲中国古代四大发明的历史和影响。"


def ms(values: list[float]) -> str:
    return f"{1000 * statistics.median(values):.1f}"


async def measure(models: Any, rounds: int) -> dict[str, str]:
    asr, llm, tts = models.asr, models.llm, models.tts
    out: dict[str, list[float]] = {"asr": [], "first_token": [], "tokens_s": [], "tts_first": [], "stop": [],
                                   "round_trip": []}
    for i in range(rounds):
        clip = read_wav(CLIPS[i % len(CLIPS)], asr.sample_rate)
        t = time.perf_counter()
        await asr.transcribe(clip)
        out["asr"].append(time.perf_counter() - t)
        llm.history.clear()
        t = time.perf_counter()
        stamps = [time.perf_counter() - t async for _ in llm.reply(QUESTIONS[i % len(QUESTIONS)])]
        out["first_token"].append(stamps[0])
        if len(stamps) > 2:
            out["tokens_s"].append((len(stamps) - 1) / (stamps[-1] - stamps[0]))
        t = time.perf_counter()
        async for _ in tts.synthesize(CLAUSES[i % len(CLAUSES)] + "第" + "一二三四五六七八九十"[i % 10] + "次。"):
            out["tts_first"].append(time.perf_counter() - t)
            break
        llm.history.clear()
        pieces, stopped_at = 0, 0.0
        async for _ in llm.reply(LONG + str(i)):
            pieces += 1
            if pieces == 5:
                llm.stop()
                stopped_at = time.perf_counter()
        out["stop"].append(time.perf_counter() - stopped_at)
        if models.worker is not None:
            t = time.perf_counter()
            with contextlib.suppress(ModelError):  # "no call": the answer is all that is timed
                await models.worker.call("asr", "ping")
            out["round_trip"].append(time.perf_counter() - t)
    return {k: (f"{statistics.median(v):.1f}" if k == "tokens_s" else ms(v)) if v else "—" for k, v in out.items()}


def restart_s(models: Any) -> float:
    w = models.worker
    pid = w.pid
    os.kill(pid, signal.SIGKILL)
    t = time.perf_counter()
    while w.pid == pid or not w.up:
        time.sleep(0.02)
    return time.perf_counter() - t


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    rows = []
    for label, process in (("in-process (threads)", False), ("worker process", True)):
        cfg = config.load(None, ["log.level='error'", "tts.phrase_cache=false",
                                 f"worker.process={str(process).lower()}", "worker.restart_backoff_s=0"])
        logs.setup(cfg.log.level, cfg.log.format)
        t = time.perf_counter()
        models = app.backends(cfg)
        loading = ExitStack()
        loading.enter_context(app.loaded(*models.all()))
        load_s = time.perf_counter() - t
        asyncio.run(measure(models, 1))  # warm-up: first calls pay for allocations
        result = asyncio.run(measure(models, args.rounds))
        result["load"] = f"{load_s:.1f} s"
        result["restart"] = f"{restart_s(models):.1f} s" if process else "—"
        loading.close()
        rows.append((label, result))
        print(f"  {label}: {result}", file=sys.stderr)
    keys = ["round_trip", "asr", "first_token", "tokens_s", "tts_first", "stop", "load", "restart"]
    heads = ["call round trip (ms)", "ASR (ms)", "LLM first token (ms)", "tokens/s", "TTS first audio (ms)",
             "stop → stream ended (ms)", "load", "restart after SIGKILL"]
    print("| variant (p50) | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(heads))
    for label, result in rows:
        print(f"| {label} | " + " | ".join(result[k] for k in keys) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
