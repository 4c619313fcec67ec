"""Soak: hundreds of hands-free turns through the real models, watching what the processes hold.

    .venv/bin/python benchmarks/soak.py [--turns 500] [--warmup 50] [--plot soak.png] [--json FILE]

Real recorded requests (a tool question, LLM questions, commands) are heard one after the other,
each followed by 6 s of silence, in real time (``--lockstep``: as fast as the models allow, but then
the latency is not measured), by one session on the loaded models — the worker process and the
main process live through all of it, as in a box left running. The microphone makes its audio as it
goes and the speaker keeps nothing it played, so the harness itself holds nothing that grows.
After every reply the RSS, open descriptors and threads of both processes are sampled
(``assistant/health.py``), and the turn's latency: from the last voiced sample to the first reply
sample.

Printed: the numbers at the end of the warm-up and at the end, the growth in per cent, the latency
per hundred turns; the plot shows RSS and latency per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import app, backends, config, health, logs  # noqa: E402
from assistant.audio.pacing import Pacer  # noqa: E402
from assistant.audio.protocols import Samples  # noqa: E402
from assistant.audio.replay import ReplaySpeaker  # noqa: E402
from assistant.audio.wav import read_wav  # noqa: E402
from assistant.clock import SampleClock  # noqa: E402
from assistant.events import EventBus, PlaybackStarted, SpeechEnded  # noqa: E402
from models.worker import lockstep  # noqa: E402

SHARED = ROOT.parent / "shared" / "audio"
CLIPS = [SHARED / "real" / "ask_who_are_you.wav", SHARED / "real" / "hey_xiaozhi.wav",
         *(SHARED / "corpus" / f"{n:03d}.wav" for n in (2, 3, 16, 19, 20, 22, 32))]
GAP_S = 6.0  # after each request: the reply is spoken, then quiet until the next
TAIL_S = 60.0  # after the last request: at most this long for the last reply to end


class Sampler:
    """A bus subscriber: one row per reply — both processes' health and the models' wall time."""

    def __init__(self, worker_pid: Any) -> None:
        self.worker_pid = worker_pid
        self.rows: list[dict[str, Any]] = []
        self._ended: float | None = None

    def __call__(self, t: float, event: object) -> None:
        if isinstance(event, SpeechEnded):
            self._ended = event.speech_end_t
        elif isinstance(event, PlaybackStarted) and self._ended is not None:
            took, self._ended = t - self._ended, None  # session time: wall time in a realtime replay
            snap = health.snapshot({"main": os.getpid(), "worker": self.worker_pid()})
            self.rows.append({"turn": len(self.rows) + 1, "latency_s": round(took, 3), **snap})


class Playlist:
    """The soak's microphone and speaker: ``turns`` requests, the clips in turn, each followed by
    ``GAP_S`` of silence; what is played is let go (no echo), so nothing here grows with the turns.
    """

    def __init__(self, clock: SampleClock, chunk_samples: int, turns: int, *, realtime: bool) -> None:
        self.sample_rate, self.chunk_samples, self.clock = clock.sample_rate, chunk_samples, clock
        self.speaker = ReplaySpeaker(self.sample_rate)
        self.clips = [read_wav(c, self.sample_rate) for c in CLIPS]
        self.turns, self.realtime = turns, realtime
        self.keep_going = lambda: False
        self._closed = False

    def _audio(self) -> Iterator[Samples]:
        """The whole session's audio, a piece at a time, then silence while ``keep_going()``."""
        gap = np.zeros(int(GAP_S * self.sample_rate), np.float32)
        yield gap[:self.sample_rate // 2]
        for i in range(self.turns):
            yield self.clips[i % len(self.clips)]
            yield gap
        for _ in range(int(TAIL_S / GAP_S)):
            if not self.keep_going():
                return
            yield gap

    async def chunks(self) -> AsyncIterator[Samples]:
        n, pacer, pos = self.chunk_samples, Pacer(self.sample_rate, realtime=self.realtime), 0
        for piece in self._audio():
            for start in range(0, len(piece) - n + 1, n):  # a clip's last partial chunk is dropped
                if self._closed:
                    return
                await pacer.until(pos + n)
                self.speaker.reference.push(self.speaker.play(n))
                pos += n
                self.clock.advance(n)
                yield piece[start:start + n].copy()

    def close(self) -> None:
        self._closed = True


def growth(rows: list[dict[str, Any]], warmup: int, proc: str, key: str) -> tuple[float, float, float]:
    """(value after the warm-up, value at the end, growth in per cent) of ``proc``'s ``key``."""
    values = [r[proc][key] for r in rows if proc in r]
    start = statistics.median(values[max(0, warmup - 5):warmup]) if len(values) > warmup else values[0]
    end = statistics.median(values[-5:])
    return start, end, round(100 * (end - start) / start, 2) if start else 0.0


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    turns = [r["turn"] for r in rows]
    fig, (mem, lat) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for proc in ("main", "worker"):
        mem.plot(turns, [r.get(proc, {}).get("rss_mb", float("nan")) for r in rows], label=f"{proc} RSS")
    mem.set_ylabel("RSS (MB)")
    mem.legend()
    lat.plot(turns, [r["latency_s"] for r in rows], ".", markersize=3)
    lat.set_ylabel("end of speech → first audio (s)")
    lat.set_xlabel("turn")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


async def soak(cfg: config.Config, models: Any, turns: int, realtime: bool) -> list[dict[str, Any]]:
    worker = models.worker
    sampler = Sampler(lambda: worker.pid if worker is not None else None)
    clock = SampleClock(cfg.audio.sample_rate, realtime=realtime)
    bus = EventBus(clock)
    bus.subscribe(sampler)
    bus.subscribe(Progress(sampler))
    room = Playlist(clock, cfg.audio.chunk_samples, turns, realtime=realtime)
    tools = backends.tools(cfg, data_dir=Path(tempfile.mkdtemp(prefix="soak-")))  # one database, as in a home
    session = app.Parts(cfg, models, tools).session(clock, bus, room, room.speaker)
    room.keep_going = lambda: session.state != "idle"
    with lockstep(not realtime):
        await session.run()
    return sampler.rows


class Progress:
    """A line on stderr every 20 replies, so a long soak shows it is alive."""

    def __init__(self, sampler: Sampler) -> None:
        self.sampler, self.said = sampler, 0

    def __call__(self, t: float, event: object) -> None:
        n = len(self.sampler.rows)
        if n and n % 20 == 0 and n != self.said:
            self.said = n
            row = self.sampler.rows[-1]
            print(f"  {n} replies, {t / 60:.0f} min; main {row['main']['rss_mb']} MB, "
                  f"worker {row.get('worker', {}).get('rss_mb', '-')} MB", file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--plot", type=Path, default=Path("soak.png"))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--lockstep", action="store_true", help="as fast as the models allow (no latency)")
    args = parser.parse_args()
    cfg = config.load(None, ["wake.mode='always'", "tts.phrase_cache=false", "log.level='error'",
                             "dialog.follow_up_s=0", *args.set])
    logs.setup(cfg.log.level, cfg.log.format)
    models = app.backends(cfg)
    loading = ExitStack()
    loading.enter_context(app.loaded(*models.all()))
    try:
        rows = asyncio.run(soak(cfg, models, args.turns, not args.lockstep))
    finally:
        loading.close()
    print("| process | what | after warm-up | at the end | growth |")
    print("|---|---|---|---|---|")
    for proc in ("main", "worker"):
        for key in ("rss_mb", "fds", "threads"):
            if any(proc in r for r in rows):
                start, end, pct = growth(rows, args.warmup, proc, key)
                print(f"| {proc} | {key} | {start:g} | {end:g} | {pct:+.2f} % |")
    print("\n| turns | end of speech → first audio, p50 (s) |\n|---|---|")
    for i in range(0, len(rows), 100):
        chunk = [r["latency_s"] for r in rows[i:i + 100]]
        print(f"| {i + 1}–{i + len(chunk)} | {statistics.median(chunk):.3f} |")
    plot(rows, args.plot)
    print(f"\n{len(rows)} replies; plot in {args.plot}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
