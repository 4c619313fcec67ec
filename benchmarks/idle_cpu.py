"""Idle: what the assistant costs while nobody talks to it, in CPU per second of audio heard.

    .venv/bin/python benchmarks/idle_cpu.py [--seconds 120] [--set KEY=VALUE ...] [--json FILE]

People talking near the box without the wake word: real Mandarin recordings (the corpus clips, one
after another, 2 s apart) are heard by one session on the configured models, in lockstep (as fast
as the pump goes), for ``--seconds`` of audio. The main process's CPU time (user + system) over the
session, divided by the audio's length, is what each second of waiting costs; the pump's parts
(each model's ``accept``, the echo cancellers) are timed on the wall clock around each call. The
worker process (ASR, LLM, TTS) has nothing to do: a wake-up is counted and spoils the run. Run it
on a quiet machine: the parts are wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import app, config, logs  # noqa: E402
from assistant.audio.replay import ReplayDevice  # noqa: E402
from assistant.audio.wav import read_wav  # noqa: E402
from assistant.clock import SampleClock  # noqa: E402
from assistant.events import EventBus, StateChanged  # noqa: E402
from models.worker import lockstep  # noqa: E402

CORPUS = ROOT.parent / "shared" / "audio" / "corpus"
GAP_S = 2.0


def room_talk(seconds: float, rate: int) -> np.ndarray:
    """``seconds`` of the corpus clips in turn, each followed by ``GAP_S`` of silence."""
    clips = [read_wav(p, rate) for p in sorted(CORPUS.glob("*.wav"))]
    if not clips:
        sys.exit(f"idle_cpu: no recordings in {CORPUS}")
    gap, pieces, total, i = np.zeros(int(GAP_S * rate), np.float32), [], 0, 0
    while total < seconds * rate:
        clip = clips[i % len(clips)]
        pieces += [clip, gap]
        total += len(clip) + len(gap)
        i += 1
    return np.concatenate(pieces)[:int(seconds * rate)]


def timed(spent: dict[str, float], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (sync or async), its wall time added to ``spent[name]``."""
    if asyncio.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def run_async(*args: Any) -> Any:
            t = time.perf_counter()
            try:
                return await fn(*args)
            finally:
                spent[name] += time.perf_counter() - t
        return run_async

    @functools.wraps(fn)
    def run(*args: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args)
        finally:
            spent[name] += time.perf_counter() - t
    return run


def cpu_s() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


async def listen(parts: app.Parts, audio: np.ndarray) -> dict[str, Any]:
    cfg = parts.cfg
    clock = SampleClock(cfg.audio.sample_rate, realtime=False)
    bus = EventBus(clock)
    wakes: list[str] = []
    bus.subscribe(lambda t, e: wakes.append(e.to) if isinstance(e, StateChanged) and e.to != "idle" else None)
    device = ReplayDevice(audio, clock, cfg.audio.chunk_samples)
    session = parts.session(clock, bus, device, device.speaker)
    spent: dict[str, float] = defaultdict(float)
    models = session.models
    for name, model in (("vad", models.vad), ("talk_vad", models.talk_vad), ("kws", models.kws)):
        if model is not None:
            model.accept = timed(spent, name, model.accept)  # type: ignore[method-assign]
    session.echo.clean = timed(spent, "echo cancellers", session.echo.clean)  # type: ignore[method-assign]
    start, wall = cpu_s(), time.perf_counter()
    with lockstep(True):
        await session.run()
    seconds = len(audio) / cfg.audio.sample_rate
    return {"audio_s": seconds, "cpu_ms_per_s": 1000 * (cpu_s() - start) / seconds,
            "wall_ms_per_s": 1000 * (time.perf_counter() - wall) / seconds,
            "parts_ms_per_s": {k: 1000 * v / seconds for k, v in sorted(spent.items())}, "wakes": wakes}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    cfg = config.load(None, ["log.level='error'", "tts.phrase_cache=false", *args.set])
    logs.setup(cfg.log.level, cfg.log.format)
    audio = room_talk(args.seconds, cfg.audio.sample_rate)
    models = app.backends(cfg)
    with ExitStack() as loading:
        loading.enter_context(app.loaded(*models.all()))
        result = asyncio.run(listen(app.Parts(cfg, models), audio))
    print(f"{result['audio_s']:.0f} s of people talking without the wake word "
          f"(wake.mode {cfg.wake.mode!r}); wake-ups: {len(result['wakes'])}\n")
    print("| what | ms per second of audio |\n|---|---|")
    print(f"| main process CPU (user + system) | {result['cpu_ms_per_s']:.1f} |")
    print(f"| the session's wall time | {result['wall_ms_per_s']:.1f} |")
    for name, ms in result["parts_ms_per_s"].items():
        print(f"| {name} (wall) | {ms:.1f} |")
    if args.json:
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=1))
    return 1 if result["wakes"] else 0


if __name__ == "__main__":
    sys.exit(main())
