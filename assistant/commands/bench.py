"""``assistant bench``: first audio of whole-reply synthesis against the pipeline, same run.

A fixed set of replies (one short; two to three sentences; 80+ characters with numbers and a date)
is written out as an LLM would stream it, then spoken (a) whole — synthesized in one piece once the
text is complete, the published baseline — and (b) through the pipeline, several times each, with
the configured TTS. Time is wall-clock time; the sink plays at real speed on paper (audio is timed,
not sent to a device), so a chunk that arrives after the previous one ran out is a gap.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant import app
from assistant.audio.wav import NullSink
from assistant.clock import WallClock
from assistant.config import Config, ConfigError
from assistant.events import Event, EventBus, to_record
from assistant.pipeline import PipelineOptions, SpeechPipeline
from assistant.timeline import plot_turn
from models.protocols import Tts

REPLIES = (
    ("short", "好的，我记住了。"),
    ("three sentences", "今天天气不错，很适合出门散步。公园里的花都开了，红的黄的都有。记得带上水和帽子。"),
    ("numbers and a date", "您的会议安排在2026-12-03下午15:30，地点是3号楼205会议室，预计持续1.5小时。"
                           "会议资料共有12页，大约2.4MB，请提前10分钟到场，路上注意安全。"),
)


@dataclass
class FixedReply:
    """The bench's text source: a fixed reply streamed two characters at a time, as an LLM would,
    ``chars_per_s`` fast (the 0.5B model on this machine writes about 40 characters a second)."""

    text: str
    chars_per_s: float = 40.0

    def stop(self) -> None: ...

    async def reply(self, question: str) -> AsyncIterator[str]:
        for i in range(0, len(self.text), 2):
            await asyncio.sleep(2 / self.chars_per_s)
            yield self.text[i:i + 2]


async def one_run(tts: Tts, text: str, options: PipelineOptions) -> list[dict[str, Any]]:
    """Speak ``text`` once; the event records of the run, timed from its start."""
    clock = WallClock()
    bus = EventBus(clock)
    records: list[dict[str, Any]] = []

    def keep(t: float, event: Event) -> None:
        records.append(to_record(t, event))

    bus.subscribe(keep)
    pipeline = SpeechPipeline(FixedReply(text), tts, NullSink(tts.sample_rate), bus, options, lambda: None)
    await pipeline.run("")
    return records


def measure(records: list[dict[str, Any]]) -> dict[str, float]:
    first_text = next(r["t"] for r in records if r["type"] == "text_chunk")
    first_audio = next(r["t"] for r in records if r["type"] == "playback_started")
    chunks = [r for r in records if r["type"] == "tts_chunk"]
    gaps = [r["gap_s"] for r in records if r["type"] == "chunk_queued"]
    return {"first_audio_s": first_audio - first_text,
            "rtf": sum(c["synth_s"] for c in chunks) / max(sum(c["audio_s"] for c in chunks), 1e-9),
            "max_gap_s": max(gaps, default=0.0)}


def side(results: list[dict[str, float]]) -> dict[str, Any]:
    firsts = sorted(r["first_audio_s"] for r in results)
    return {"first_audio_p50_s": round(statistics.median(firsts), 3),
            "first_audio_p95_s": round(firsts[min(len(firsts) - 1, round(0.95 * (len(firsts) - 1)))], 3),
            "rtf": round(statistics.mean(r["rtf"] for r in results), 3),
            "max_gap_s": round(max(r["max_gap_s"] for r in results), 3),
            "runs": len(results)}


async def bench(tts: Tts, options: PipelineOptions, repeats: int, plots: Path | None) -> dict[str, Any]:
    whole_opts = PipelineOptions(**{**options.__dict__, "whole_reply": True})
    async for _ in tts.synthesize("你好。"):  # warm-up, not measured
        pass
    whole: list[dict[str, float]] = []
    piped: list[dict[str, float]] = []
    per_reply: dict[str, dict[str, Any]] = {}
    for name, text in REPLIES:
        w_runs, p_runs = [], []
        for _ in range(repeats):
            w_records = await one_run(tts, text, whole_opts)
            p_records = await one_run(tts, text, options)
            w_runs.append(measure(w_records))
            p_runs.append(measure(p_records))
        whole += w_runs
        piped += p_runs
        per_reply[name] = {"whole_reply": side(w_runs), "pipelined": side(p_runs)}
        if plots is not None:
            slug = name.replace(" ", "_")
            plot_turn(w_records, plots / f"bench_{slug}_whole.png", f"whole reply: {name}")
            plot_turn(p_records, plots / f"bench_{slug}_pipelined.png", f"pipelined: {name}")
    result = {"whole_reply": side(whole), "pipelined": side(piped), "replies": per_reply}
    result["ratio_first_audio_p50"] = round(
        result["pipelined"]["first_audio_p50_s"] / max(result["whole_reply"]["first_audio_p50_s"], 1e-9), 3)
    return result


def table(result: dict[str, Any]) -> str:
    lines = ["| reply | mode | first audio p50 (s) | p95 (s) | RTF | max gap (s) | runs |",
             "|---|---|---|---|---|---|---|"]
    for name, sides in [*result["replies"].items(), ("all", result)]:
        for mode in ("whole_reply", "pipelined"):
            s = sides[mode]
            lines.append(f"| {name} | {mode.replace('_', ' ')} | {s['first_audio_p50_s']:.3f} | "
                         f"{s['first_audio_p95_s']:.3f} | {s['rtf']:.3f} | {s['max_gap_s']:.3f} | {s['runs']} |")
    lines.append(f"\npipelined / whole-reply first audio (p50): {result['ratio_first_audio_p50']:.3f}")
    return "\n".join(lines)


def run(tts: Tts, options: PipelineOptions, repeats: int, plots: Path | None, as_json: bool) -> str:
    result = asyncio.run(bench(tts, options, repeats, plots))
    if as_json:
        return json.dumps({k: result[k] for k in ("whole_reply", "pipelined", "ratio_first_audio_p50")})
    return table(result)


def command(cfg: Config, args: argparse.Namespace) -> int:
    if args.repeats < 1:
        raise ConfigError("--repeats must be at least 1")
    with app.one_shot(cfg, "tts") as parts:
        print(run(parts.tts, PipelineOptions.from_config(cfg), args.repeats, args.plots, args.json))
    if not args.json:
        print(f"timelines: {args.plots}/bench_*.png")
    return 0
