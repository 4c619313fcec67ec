"""The whole turn, from the user's last voiced sample to the first reply sample, against a naive chain
and a pipecat bot on the same model files.

    .venv/bin/python benchmarks/turn.py [--set key=value ...] [--only NAME,...] [--no-naive] [--no-pipecat]
        [--no-status] [--json FILE]

Each real recorded request is played as 0.5 s of silence + the clip + 7 s of silence through a full
session (``replay --realtime``: the microphone paced at one second per second, the models running
beside it, wake.mode "always", no phrase cache, so every reply is rendered fresh). The end of speech
is the clip's last voiced VAD window (the configured VAD, offline, at vad.threshold), the same
point for both chains. Per recording and as p50/p95:

- endpoint wait: end of speech → the endpoint decision;
- ASR after endpoint: the decision → the transcript;
- LLM first clause: the transcript → the first chunk of reply text (tool and fixed answers: ≈ 0);
- TTS first audio: the first chunk of text → its first sample handed to the sink;
- total: end of speech → first reply sample.

A reply prepared ahead (``dialog.preempt``: started on the speculative transcript before the
endpoint, played only once the endpoint confirms it) counts in each part only its time after the
endpoint; its row says "prepared ahead", and the run says how many were used and dropped.

The naive chain runs on the same model objects in the same run, one step after the other: an
endpoint 0.5 s of silence after the last voiced sample, Whisper over its full 30 s window, the whole
reply from the same answer path, then Kokoro (the whole export as shipped, every frame) on the reply's first
clause. Its total is 0.5 s plus
those three measured times.

The pipecat peer (``benchmarks/pipecat_peer.py``, in its own venv: ``benchmarks/pipecat-venv.sh``) runs
after both, with Tingshuo's models closed, on the same recordings paced at one second per second, the
same end of speech, and the configuration's own Whisper, LLM GGUF, Kokoro file, voice and system
prompt, built as pipecat recommends (``benchmarks/peer.py`` reads its numbers). Where its venv is
not installed it is left out, and the run says so. The last lines are the ratios of the p50s.

As in ``assistant run``, the status page is served beside the session and hears all its events
(``--no-status``: without it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the assistant sets it (assistant/__init__.py)
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import app, backends, config, logs  # noqa: E402
from assistant.app import Parts  # noqa: E402
from assistant.audio.resample import resample  # noqa: E402
from assistant.audio.wav import read_wav  # noqa: E402
from assistant.events import to_record  # noqa: E402
from assistant.replay import replay  # noqa: E402
from assistant.respond import for_config  # noqa: E402
from assistant.status.web import page_for  # noqa: E402
from benchmarks import peer  # noqa: E402
from models.kokoro_tts import clauses  # noqa: E402

SHARED = ROOT.parent / "shared" / "audio"
REQUESTS = {  # name: recording (all real Mandarin speech, 16 kHz)
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
NAIVE_END_SILENCE_S = 0.5
PARTS = ("endpoint_wait", "asr_after_endpoint", "llm_first_clause", "tts_first_audio", "total")
GAPS = ("max_gap", "underruns")


@dataclass
class Turn:
    name: str
    speech_end: float
    parts: dict[str, float | None]
    transcript: str = ""
    reply: str = ""
    note: str = ""
    gaps: dict[str, float] | None = None  # playback running dry after the first sound (Tingshuo only)
    preempted: dict[str, int] | None = None  # replies prepared ahead, used and dropped (Tingshuo only)


def padded(path: Path, rate: int) -> np.ndarray:
    clip = read_wav(path, rate)
    return np.concatenate([np.zeros(int(LEAD_S * rate), np.float32), clip,
                           np.zeros(int(TAIL_S * rate), np.float32)]).astype(np.float32)


async def last_voiced(vad: Any, audio: np.ndarray, rate: int, threshold: float) -> float:
    """Seconds into ``audio`` where its last window with speech probability ≥ threshold ends."""
    vad.reset()
    probs = await vad.accept(resample(audio, rate, vad.sample_rate))
    vad.reset()
    voiced = [i for i, p in enumerate(probs) if p >= threshold]
    if not voiced:
        raise SystemExit("turn.py: the VAD found no speech in a request recording")
    return (voiced[-1] + 1) * vad.window_samples / vad.sample_rate


def parts_of(records: list[dict[str, Any]], speech_end: float) -> tuple[dict[str, float | None], str, str, str]:
    """The turn's parts from its event records: the first reply after the endpoint that follows
    ``speech_end``. A reply prepared before the endpoint publishes its kept events once committed,
    stamped when they happened: they are found by their order after the endpoint, not their time."""
    ended = [r for r in records if r["type"] == "speech_ended"]
    note = f"{len(ended)} utterances" if len(ended) != 1 else ""
    endpoint = next((r for r in ended if r["t"] >= speech_end - 0.05), None)
    if endpoint is None:
        return dict.fromkeys(PARTS), "", "", "no endpoint after the end of speech"
    later = records[records.index(endpoint):]
    if any(r["type"] == "preempted" and r["used"] for r in later):
        note = ", ".join(filter(None, [note, "prepared ahead"]))

    def first(kind: str) -> dict[str, Any] | None:
        return next((r for r in later if r["type"] == kind), None)

    text, chunk, audio, reply = (first(kind) for kind in ("transcript", "text_chunk", "playback_started",
                                                          "reply_text"))

    def span(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
        """From ``a`` to ``b``, counting only time after the endpoint (a reply prepared ahead did part
        of its work before it: that part costs the turn nothing)."""
        if a is None or b is None:
            return None
        return round(max(0.0, b["t"] - max(a["t"], endpoint["t"])), 3)

    parts = {"endpoint_wait": round(endpoint["t"] - speech_end, 3), "asr_after_endpoint": span(endpoint, text),
             "llm_first_clause": span(text, chunk), "tts_first_audio": span(chunk, audio),
             "total": round(audio["t"] - speech_end, 3) if audio is not None else None}
    return parts, text["text"] if text else "", reply["text"] if reply else "", note


async def tingshuo(cfg: config.Config, models: Any, name: str, audio: np.ndarray, speech_end: float,
                   out: Path, board: Any = None) -> Turn:
    records: list[dict[str, Any]] = []

    def keep(t: float, event: Any) -> None:
        records.append(to_record(t, event))

    models.vad.reset()
    models.llm.history.clear()
    tools = backends.tools(cfg, data_dir=out / name)
    watchers = [keep] if board is None else [keep, board]  # the status page hears the session, as in `run`
    summary = await replay(Parts(cfg, models, tools), audio, out / name, realtime=True, subscribers=watchers)
    parts, heard, reply, note = parts_of(records, speech_end)
    spoken = [t for t in summary["turns"] if t["first_audio_t"] is not None]
    gaps = {"max_gap": max((t["max_gap_s"] or 0.0 for t in spoken), default=0.0),
            "underruns": float(sum(t["underruns"] for t in spoken))}
    return Turn(name, speech_end, parts, heard, reply, note, gaps, summary["preempted"])


async def naive(cfg: config.Config, models: Any, asr30: Any, tts: Any, name: str, audio: np.ndarray,
                speech_end: float) -> Turn:
    """Endpoint after 0.5 s of silence, Whisper's 30 s window, the whole reply, then the first clause."""
    rate = cfg.audio.sample_rate
    utterance = audio[: int((speech_end + NAIVE_END_SILENCE_S) * rate)]
    models.llm.history.clear()
    tools = backends.tools(cfg, data_dir=Path(tempfile.mkdtemp(prefix="naive-")))
    responder = for_config(cfg, models.llm, tools)
    started = time.perf_counter()
    heard = (await asr30.transcribe(resample(utterance, rate, asr30.sample_rate))).strip()
    asr_s = time.perf_counter() - started
    answer = responder.answer(heard) if heard else None
    text = ""
    if answer is not None:
        text = "".join([piece async for piece in answer.source.reply(answer.text)])
    llm_s = time.perf_counter() - started - asr_s
    from assistant.text.normalize import normalize

    first_clause = normalize(clauses(text)[0][0]) if text.strip() else ""
    async for _ in tts.synthesize(first_clause or "没听清。"):
        break
    tts_s = time.perf_counter() - started - asr_s - llm_s
    parts = {"endpoint_wait": NAIVE_END_SILENCE_S, "asr_after_endpoint": round(asr_s, 3),
             "llm_first_clause": round(llm_s, 3), "tts_first_audio": round(tts_s, 3),
             "total": round(NAIVE_END_SILENCE_S + asr_s + llm_s + tts_s, 3)}
    return Turn(name, speech_end, parts, heard, text)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pipecat(cfg: config.Config, clips: list[tuple[str, Path, float]]) -> list[Turn]:
    """The pipecat bot over ``clips`` (name, recording, end of speech), after a warm-up recording."""
    python = peer.python()
    if python is None:
        peer.say("the pipecat peer is not installed (benchmarks/pipecat-venv.sh makes its venv): not in this run")
        return []
    warm = ("warmup", SHARED / "corpus" / "016.wav", 0.0)  # its first turn pays for the models' first calls
    records = peer.run(python, peer.spec(cfg, [warm, *clips], LEAD_S, TAIL_S))[1:]
    return [Turn(r["name"], r["speech_end"], peer.parts(r), r.get("transcript", "").strip(), r.get("reply", ""))
            for r in records]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def table(title: str, turns: list[Turn]) -> str:
    gaps = all(t.gaps is not None for t in turns)
    header = " | ".join(p.replace("_", " ") for p in PARTS) + (" | max gap | underruns" if gaps else "")
    columns = len(PARTS) + 1 + (2 if gaps else 0)
    lines = [f"### {title}", "", f"| recording | {header} | heard → reply |", "|---|" + "---|" * columns]
    for t in turns:
        cells = ["—" if t.parts[p] is None else f"{t.parts[p]:.3f}" for p in PARTS]
        if t.gaps is not None:
            cells += [f"{t.gaps['max_gap']:.3f}", f"{t.gaps['underruns']:.0f}"]
        said = f"{t.transcript} → {t.reply[:24]}" + (f" ({t.note})" if t.note else "")
        lines.append(f"| {t.name} | " + " | ".join(cells) + f" | {said} |")
    for label, q in (("p50", 0.5), ("p95", 0.95)):
        cells = []
        for p in PARTS:
            vals = [t.parts[p] for t in turns if t.parts[p] is not None]
            cells.append(f"{(statistics.median(vals) if q == 0.5 else pct(vals, q)):.3f}" if vals else "—")
        if gaps:
            g = [t.gaps["max_gap"] for t in turns if t.gaps is not None]
            cells += [f"{(statistics.median(g) if q == 0.5 else pct(g, q)):.3f}", ""]
        lines.append(f"| **{label}** | " + " | ".join(cells) + " | |")
    return "\n".join(lines)


def p50_total(turns: list[Turn]) -> float:
    vals = [t.parts["total"] for t in turns if t.parts["total"] is not None]
    return statistics.median(vals) if vals else float("nan")


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    overrides = ["wake.mode='always'", "tts.phrase_cache=false", "log.level='error'", *args.set]
    cfg = config.load(args.config, overrides)
    logs.setup(cfg.log.level, cfg.log.format)
    models = app.backends(cfg)
    loading = ExitStack()
    loading.enter_context(app.loaded(*models.all()))
    plain = None
    if not args.no_naive:  # Whisper over its 30 s window; Kokoro rendering every frame in one call
        naive_cfg = replace(cfg, asr=replace(cfg.asr, window_s=30.0),
                            tts=replace(cfg.tts, voiced_only=False, first_frames=0, decoder="dynamic"))
        assets = backends.assets_for(cfg)
        plain = (backends.asr(naive_cfg, assets), backends.tts(naive_cfg, assets))
        for model in plain:
            model.load()
    rate = cfg.audio.sample_rate
    names = args.only.split(",") if args.only else list(REQUESTS)
    unknown = [n for n in names if n not in REQUESTS]
    if unknown:
        raise SystemExit(f"turn.py: unknown recording {', '.join(unknown)}; known: {', '.join(REQUESTS)}")
    pages = AsyncExitStack()
    board = None
    if not args.no_status:  # as `assistant run` serves it (on a free port here)
        page = page_for(replace(cfg, status=replace(cfg.status, address=f"127.0.0.1:{free_port()}")), "run")
        page.board.pids = Parts(cfg, models).pids
        await pages.enter_async_context(page)
        board = page.board
    # warm-up on a recording not measured: the first call of each model pays for allocations
    warm = padded(SHARED / "corpus" / "016.wav", rate)
    out = Path(tempfile.mkdtemp(prefix="turn-"))
    await tingshuo(cfg, models, "warmup", warm, await last_voiced(models.vad, warm, rate, cfg.vad.threshold), out,
                   board)
    ours: list[Turn] = []
    theirs: list[Turn] = []
    ends: list[tuple[str, Path, float]] = []
    for name in names:
        audio = padded(REQUESTS[name], rate)
        end = await last_voiced(models.vad, audio, rate, cfg.vad.threshold)
        ends.append((name, REQUESTS[name], end))
        ours.append(await tingshuo(cfg, models, name, audio, end, out, board))
        print(f"  {name}: {ours[-1].parts['total']} s", file=sys.stderr)
        if plain is not None:
            theirs.append(await naive(cfg, models, *plain, name, audio, end))
    await pages.aclose()
    loading.close()
    for model in plain or ():
        model.close()
    bot = [] if args.no_pipecat else pipecat(cfg, ends)  # alone on the cores: Tingshuo's models are closed
    result: dict[str, Any] = {"tingshuo": [t.__dict__ for t in ours], "tingshuo_p50_s": p50_total(ours)}
    print(table("Tingshuo (pipelined)", ours))
    used, dropped = (sum(t.preempted[k] for t in ours if t.preempted is not None) for k in ("used", "dropped"))
    result.update(preempted_used=used, preempted_dropped=dropped)
    print(f"\nReplies prepared ahead of the endpoint: {used} used, {dropped} dropped (the speaker went on)")
    if theirs:
        print()
        print(table("Naive sequential chain (same models, same run)", theirs))
        ratio = p50_total(ours) / p50_total(theirs)
        result.update(naive=[t.__dict__ for t in theirs], naive_p50_s=p50_total(theirs), ratio=round(ratio, 3))
        print(f"\nTingshuo p50 {p50_total(ours):.3f} s, naive p50 {p50_total(theirs):.3f} s, ratio {ratio:.2f}")
    if bot:
        print()
        print(table("pipecat 1.14 bot (same model files, same run; its LLM column is the first token, its TTS "
                    "column from that token to the first audio)", bot))
        ratio = p50_total(ours) / p50_total(bot)
        result.update(pipecat=[t.__dict__ for t in bot], pipecat_p50_s=p50_total(bot), pipecat_ratio=round(ratio, 3))
        print(f"\nTingshuo p50 {p50_total(ours):.3f} s, pipecat p50 {p50_total(bot):.3f} s, ratio {ratio:.2f}")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--only", default="", help="comma-separated recording names")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive chain")
    parser.add_argument("--no-pipecat", action="store_true", help="skip the pipecat peer")
    parser.add_argument("--no-status", action="store_true", help="without the status page (`run` serves one)")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers to this file")
    args = parser.parse_args()
    try:
        result = asyncio.run(main_async(args))
    except (config.ConfigError, OSError, RuntimeError) as exc:
        print(f"turn.py: {exc}", file=sys.stderr)
        return 2
    if args.json is not None:
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
