"""PREDICTION of end of speech → first audio on an RK3576 board, per NPU layout; not a measurement.

    .venv/bin/python benchmarks/board_predict.py [--timings FILE] [--only NAME,...] [--set key=value ...] [--json FILE]

The real recordings of benchmarks/turn.py, each as 0.5 s of silence + the clip + 7 s of silence, go
through a full session as ``assistant replay --predict rk3576`` runs it: this machine's models make
the transcripts, replies and audio, and every ASR, LLM, TTS and turn-model call takes the session
time the board's timing table gives it (``assistant/board_pace.py``; the table and its sources in
``assistant/board_timing.py``; ``--timings FILE`` for a board's own ``benchmarks/models.py --json``).
So the numbers are deterministic, the same on any CPU, and as good as the table.

Four NPU layouts: serialised or concurrent (``npu.mode``), the LLM and the TTS on separate NPU
cores or on one. Per layout, p50/p95 of the end of speech (the last voiced VAD window, as the
session's summary has it) → the first reply sample, and its parts: the endpoint wait, the ASR
after the endpoint, the LLM to its first clause, the TTS to its first audio.

Settings as the board runs them where this machine can: wake.mode "always", no phrase cache (every
reply rendered), ``asr.rescore = ""`` (the board has no llama.cpp to rescore with), the models in
this process (lockstep needs it), the CPU gate off (the board's LLM is on the NPU).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import app, backends, board_timing, config, logs  # noqa: E402
from assistant.app import Parts  # noqa: E402
from assistant.audio.wav import read_wav  # noqa: E402
from assistant.board_pace import Layout, Prediction  # noqa: E402
from assistant.replay import replay  # noqa: E402
from benchmarks.models import machine  # noqa: E402

SHARED = ROOT.parent / "shared" / "audio"
REQUESTS = {  # the recordings of benchmarks/turn.py (real Mandarin speech, 16 kHz)
    "ask_who_are_you": SHARED / "real" / "ask_who_are_you.wav",
    "hey_xiaozhi": SHARED / "real" / "hey_xiaozhi.wav",
    "corpus_019": SHARED / "corpus" / "019.wav",
    "corpus_020": SHARED / "corpus" / "020.wav",
    "corpus_022": SHARED / "corpus" / "022.wav",
    "corpus_002": SHARED / "corpus" / "002.wav",
    "corpus_003": SHARED / "corpus" / "003.wav",
    "corpus_032": SHARED / "corpus" / "032.wav",
}
LEAD_S, TAIL_S = 0.5, 7.0
LAYOUTS = (Layout("serialised", "separate"), Layout("serialised", "shared"),
           Layout("concurrent", "separate"), Layout("concurrent", "shared"))
PARTS = ("endpoint_wait", "asr_after_endpoint", "llm_first_clause", "tts_first_audio", "total")
BOARD_SETTINGS = ["wake.mode='always'", "tts.phrase_cache=false", "log.level='error'", "worker.process=false",
                  "asr.rescore=''", "tts.llm_waits='never'"]


def padded(path: Path, rate: int) -> np.ndarray:
    clip = read_wav(path, rate)
    silence = np.zeros(int(LEAD_S * rate), np.float32), np.zeros(int(TAIL_S * rate), np.float32)
    return np.concatenate([silence[0], clip, silence[1]]).astype(np.float32)


def parts_of(out: Path) -> tuple[dict[str, float | None], str, str]:
    """The first turn's parts from a replay's events and summary (None where it never got there)."""
    records = [json.loads(line) for line in (out / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    if not summary["turns"]:
        return dict.fromkeys(PARTS), "", ""
    turn = summary["turns"][0]
    endpoint = turn["endpoint_t"]

    def first(kind: str) -> float | None:
        return next((r["t"] for r in records if r["type"] == kind and r["t"] >= endpoint), None)

    heard, chunk, audio = first("transcript"), first("text_chunk"), first("playback_started")

    def span(a: float | None, b: float | None) -> float | None:
        return round(b - a, 3) if a is not None and b is not None else None

    parts = {"endpoint_wait": turn["endpoint_wait_s"], "asr_after_endpoint": span(endpoint, heard),
             "llm_first_clause": span(heard, chunk), "tts_first_audio": span(chunk, audio),
             "total": turn["end_of_speech_to_first_audio_s"]}
    return parts, turn["transcript"] or "", turn["reply"] or ""


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return float(statistics.median(values)) if q == 0.5 else values[min(len(values) - 1, round(q * (len(values) - 1)))]


async def predict(cfg: config.Config, models: Any, prediction: Prediction, names: list[str],
                  out: Path) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        models.vad.reset()
        history = getattr(models.llm, "history", None)
        if history is not None:
            history.clear()
        folder = out / f"{prediction.layout.mode}-{prediction.layout.cores}" / name
        tools = backends.tools(cfg, data_dir=folder)
        await replay(Parts(cfg, models, tools), padded(REQUESTS[name], cfg.audio.sample_rate), folder,
                     predict=prediction)
        parts, heard, reply = parts_of(folder)
        rows.append({"name": name, "parts": parts, "transcript": heard, "reply": reply})
        print(f"  {prediction.layout}: {name} {parts['total']} s", file=sys.stderr)
    return rows


def table(by_layout: dict[str, list[dict[str, Any]]]) -> str:
    lines = ["| PREDICTION, NPU layout | " + " | ".join(f"{p.replace('_', ' ')} p50 / p95" for p in PARTS) + " |",
             "|---|" + "---|" * len(PARTS)]
    for layout, rows in by_layout.items():
        cells = []
        for p in PARTS:
            vals = [r["parts"][p] for r in rows if r["parts"][p] is not None]
            cells.append(f"{pct(vals, 0.5):.3f} / {pct(vals, 0.95):.3f}" if vals else "—")
        missing = sum(1 for r in rows if r["parts"]["total"] is None)
        lines.append(f"| {layout}{f' ({missing} unanswered)' if missing else ''} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def choice(by_layout: dict[str, list[dict[str, Any]]]) -> str:
    """The layout the prediction favours, and what the others cost beside it (p50 of the total)."""
    p50 = {layout: pct([r["parts"]["total"] for r in rows if r["parts"]["total"] is not None], 0.5)
           for layout, rows in by_layout.items() if any(r["parts"]["total"] is not None for r in rows)}
    best = min(p50, key=lambda layout: p50[layout])
    others = ", ".join(f"{layout} +{(t - p50[best]) * 1000:.0f} ms" for layout, t in p50.items() if layout != best)
    return f"PREDICTION, lowest p50 end of speech → first audio: {best} ({p50[best]:.3f} s); beside it: {others}."


def per_recording(rows: list[dict[str, Any]]) -> str:
    lines = ["| recording | " + " | ".join(p.replace("_", " ") for p in PARTS) + " | heard → reply |",
             "|---|" + "---|" * (len(PARTS) + 1)]
    for r in rows:
        cells = ["—" if r["parts"][p] is None else f"{r['parts'][p]:.3f}" for p in PARTS]
        lines.append(f"| {r['name']} | " + " | ".join(cells) + f" | {r['transcript']} → {r['reply'][:24]} |")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    cfg = config.load(args.config, [*BOARD_SETTINGS, *args.set])
    logs.setup(cfg.log.level, cfg.log.format)
    timings = board_timing.from_file(args.timings) if args.timings else board_timing.Timings()
    names = args.only.split(",") if args.only else list(REQUESTS)
    unknown = [n for n in names if n not in REQUESTS]
    if unknown:
        raise config.ConfigError(f"unknown recording {', '.join(unknown)}; known: {', '.join(REQUESTS)}")
    models = app.backends(cfg)
    out = Path(tempfile.mkdtemp(prefix="board-predict-"))
    by_layout: dict[str, list[dict[str, Any]]] = {}
    with app.loaded(*models.all()):
        for layout in LAYOUTS:
            by_layout[str(layout)] = await predict(cfg, models, Prediction(timings, layout), names, out)
    chunk_load = timings.vad_rtf + (timings.kws_rtf if cfg.wake.mode == "keyword" else 0.0)
    print(f"PREDICTION for an RK3576 board, not a measurement. Timings: {timings.source}.")
    print(f"Replayed on {machine()}; {len(names)} real recordings, wake.mode {cfg.wake.mode!r}, in seconds.\n")
    print(table(by_layout))
    print("\n" + choice(by_layout))
    first = str(LAYOUTS[0])
    print(f"\nPer recording, {first} (PREDICTION):\n")
    print(per_recording(by_layout[first]))
    lag_ms = chunk_load * cfg.audio.chunk_ms
    print(f"\nNot in these latencies: the VAD{' and KWS' if cfg.wake.mode == 'keyword' else ''} in the audio pump, "
          f"predicted at {chunk_load:.0%} of each chunk on the A72 (a lag of ≈ {lag_ms:.0f} ms on every decision "
          "the pump makes).")
    return {"label": "PREDICTION", "machine": machine(), "timings": Prediction(timings).describe()["timings"],
            "layouts": by_layout}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--timings", type=Path, default=None,
                        help="a board's timing file (TOML, or benchmarks/models.py --json output)")
    parser.add_argument("--only", default="", help="comma-separated recording names")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers to this file")
    args = parser.parse_args()
    try:
        result = asyncio.run(main_async(args))
    except (config.ConfigError, OSError) as exc:
        print(f"board_predict.py: {exc}", file=sys.stderr)
        return 2
    if args.json is not None:
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
