"""Benchmark of the hands-free echo defence: self-interruption rate and barge-in latency.

    .venv/bin/python benchmarks/echo.py [--sessions 6] [--barge-ins 6] [--double-talk 6] [--held-out 6]
                                        [--level-matched] [--room-remembered] [--defences 0,1]
                                        [--set KEY=VALUE ...]

Replayed sessions through the real models (silero VAD, keyword spotter, Whisper, Qwen 0.5B, Kokoro),
with the microphone hearing the reply at gain 0.5, 40 ms late, as the hands-free tests do.

- Self-interruption: one-turn sessions where nobody talks over the reply, each with another
  request and LLM seed, replayed with each echo-defence configuration. The LLM is loaded afresh
  for every run, so a session gets the same reply under every configuration. Any barge-in there
  is a self-interruption; a second turn is the assistant answering its own echo.
- Barge-in latency: 切换前视 said over the reply, ``after_s`` into it, all layers on. Latency is
  the barge-in event minus the speech onset (session time), and the wall time from the decision
  to the sink being cleared. The replies talked over are fixed texts (``REPLIES``), spoken by the
  real TTS, so that every case falls inside one whatever the LLM would write.
- Double talk: a real request (ask_who_are_you.wav, 告诉我，你是谁？你叫什么名字？) said over the
  reply, ``after_s`` after its first audio, with the linear canceller for the ASR off and on. Kept:
  the transcript still holds the request's first words (告诉我，你是谁 matches a span of it at 0.8 or
  better, pinyin-aware, so a homophone is no miss). Then the same over the session's second reply
  (the first request asked twice, the second time after the first reply has ended), all layers on:
  there the linear canceller has learnt the room from the first reply, as in a household's
  evening, where the first double talk above meets it still learning. The first reply is also
  talked over in a room the assistant heard before: the linear canceller starts from the room memory
  (``echo.remember_room``) that a primer session, answering another request in the same room, left.
- Held-out speakers: 切换前视 by the six speakers of cmd_qiehuan_2..7, which nothing was tuned on, over
  the same two replies at the same moments, each at its own recorded level (quieter than the tuned
  speaker; ``--level-matched``: scaled to its level). Counted per speaker: decided within 0.4 s, never
  decided.

The barge-in and held-out sessions start in a room nobody heard before: the linear canceller learns
it over the reply talked over. ``--room-remembered`` starts them from the primer session's room
memory instead, as a live session does once it has answered once in that room.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import backends, logs  # noqa: E402
from assistant.app import Parts  # noqa: E402
from assistant.audio import replay as replay_audio  # noqa: E402
from assistant.audio.room_memory import FILE as ROOM_FILE  # noqa: E402
from assistant.events import BargeIn, Subscriber  # noqa: E402
from assistant.replay import Echo, replay  # noqa: E402
from assistant.text.echo_match import match  # noqa: E402
from models.assets import Assets  # noqa: E402
from models.llama_llm import LlamaLlm  # noqa: E402
from models.protocols import Backends  # noqa: E402
from models.sherpa_vad import silero_model_path  # noqa: E402
from models.silero_vad import SileroVad  # noqa: E402
from tests import sessions  # noqa: E402
from tests.conftest import RATE, SHARED, make_config, real  # noqa: E402
from tests.doubles import ScriptedAsr, ScriptedLlm, ToneTts  # noqa: E402

ECHO = Echo(gain=0.5, delay_ms=40)
HANDS_FREE: tuple[str, ...] = ("wake.mode=keyword", 'wake.keywords=["小智"]', "echo.cancel=true",
                               "dialog.follow_up_s=4.0")
NO_AEC = ("echo.cancel=false",)
NO_WINDOW = (*NO_AEC, "speaking.echo_window_ms=0")
REMEMBERED = "all layers on, room remembered"  # from the room memory a primer session left (primed_room)
DEFENCES: list[tuple[str, tuple[str, ...]]] = [
    ("all layers on", ()),
    ("all on, ASR without the linear canceller", ("echo.linear=false",)),
    ("no canceller", NO_AEC),
    ("no canceller, no echo window", NO_WINDOW),
    ("all off", (*NO_WINDOW, "echo.transcript_filter=false", "echo.own_words=false")),
    (REMEMBERED, ()),
]
# Said by the TTS in one breath with the wake word (one_turn() says its request in a real recording).
QUESTIONS = ["北京是哪个国家的首都？", "给我讲一个很短的笑话。", "怎么做番茄炒蛋？", "推荐一本适合周末看的书。",
             "为什么天空是蓝色的？", "明天出门要带伞吗？"]
AFTER_S = [0.8, 1.0, 1.3, 1.6, 2.0, 2.5, 3.0, 3.5]
DOUBLE_TALK_AFTER_S = [1.0, 0.8, 1.3, 1.6, 2.0, 2.5, 3.0, 3.5]  # the held-out case first
FIRST_WORDS = "告诉我，你是谁"
LONG_REQUEST = "小智，怎么做番茄炒蛋？"
# What the assistant says to the two first requests of the barge-in and double-talk sessions: fixed
# replies (the real Kokoro voice), so that every case falls inside a reply whatever the LLM would write.
# The long one runs about 13 s, past the last case; the short one about 2 s.
REPLIES = {"short": "在的，有什么可以帮你？",
           "long": "番茄炒蛋很简单。先把两个番茄切块，三个鸡蛋打散，加一点盐。锅里放油，油热后倒入蛋液，"
                   "炒到凝固就盛出来。再放一点油，下番茄翻炒出汁，加少许糖和盐，最后倒回鸡蛋，翻匀就可以出锅了。"}
# What the primer session's reply says: the room memory of an earlier session (``echo.remember_room``).
PRIMER = "北京是中国的首都，也是一座历史悠久的城市。今天天气不错，我们去公园散步吧。"
KEPT = 0.8  # pinyin match of FIRST_WORDS against the transcript's best span
SEED = 1234
Models = dict[str, Any]
Events = list[dict[str, Any]]


async def quiet_turns(tts: Any, n: int) -> list[tuple[str, sessions.Layout]]:
    """``n`` one-turn sessions with different requests (cycled if ``n`` exceeds them)."""
    wake = await sessions.spoken(tts, "小智。")
    pool = [("real: 嘿，小智你在吗", sessions.one_turn()),
            ("tts 小智。 + real cmd_qiehuan_2", sessions.Layout().pause(0.5).add(wake).pause(0.4)
             .clip("cmd_qiehuan_2.wav", "request").pause(14.0))]
    for q in QUESTIONS:
        said = await sessions.spoken(tts, f"小智，{q}")
        pool.append((f"tts: 小智，{q}", sessions.Layout().pause(0.5).add(said, "request").pause(14.0)))
    return [pool[i % len(pool)] for i in range(n)]


def events_of(out: Path) -> Events:
    return [json.loads(line) for line in (out / "events.jsonl").read_text(encoding="utf-8").splitlines()]


async def run(models: Models, audio: Any, overrides: tuple[str, ...], out: Path, *, seed: int,
              subscribers: tuple[Subscriber, ...] = (), reply: str | None = None,
              replies: int = 1, room: Path | None = None) -> tuple[dict[str, Any], Events]:
    """One replay with the real models and a freshly loaded LLM (so its sampling starts from ``seed``),
    or with the first ``replies`` replies fixed to ``reply``; ``room``: the room memory it starts from
    and keeps (a live session's, ``echo.remember_room``), none by default, as in any replay."""
    llm: Any = LlamaLlm(models["gguf"], seed=seed, max_tokens=60) if reply is None else ScriptedLlm(*[reply] * replies)
    llm.load()
    models["vad"].reset()
    chain = Backends(vad=models["vad"], asr=models["asr"], llm=llm, tts=models["tts"], kws=models["kws"],
                     talk_vad=models["talk_vad"])
    try:
        summary = await replay(Parts(make_config(*HANDS_FREE, *overrides), chain, room=room), audio, out, echo=ECHO,
                               subscribers=subscribers)
    finally:
        llm.close()
    return summary, events_of(out)


async def self_interruptions(models: Models, n: int, out: Path,
                             defences: list[tuple[str, tuple[str, ...]]]) -> None:
    counts = {name: Counter[str]() for name, _ in defences}
    erle: dict[str, list[float]] = {name: [] for name, _ in defences}
    rows: list[str] = []
    primed = await primed_room(models, out) if any(name == REMEMBERED for name, _ in defences) else None
    for i, (label, layout) in enumerate(await quiet_turns(models["tts"], n)):
        cells: list[str] = []
        for d, (name, overrides) in enumerate(defences):
            room = remembered(primed, out / f"quiet{i}_{d}") if name == REMEMBERED else None
            summary, events = await run(models, layout.audio, overrides, out / f"quiet{i}_{d}", seed=SEED + i,
                                        room=room)
            count, defence, barges = counts[name], summary["echo_defence"], summary["barge_ins"]
            count.update(barged=bool(barges), extra=max(0, len(summary["turns"]) - 1),
                         **{k: defence[k] for k in ("echo_window", "leak", "transcript", "own_words")})
            if (aec := defence["canceller"]) is not None:
                count.update(acted=aec["acted_chunks"], echo=aec["echo_chunks"], marked=aec["double_talk_windows"] or 0)
                erle[name].append(aec["erle_db"])
            if d == 0:
                played = [e["t"] for e in events if e["type"] in ("playback_started", "playback_finished")]
                reply_s = played[1] - played[0] if len(played) > 1 else float("nan")
                print(f"session {i}: {label} -> {summary['turns'][0]['reply'] if summary['turns'] else None}",
                      file=sys.stderr)
            barged = ", ".join(f"{b['reason']}@{b['t']:.2f}" for b in barges) or "-"
            cells.append(f"{barged} ({len(summary['turns'])} turns)")
        rows.append(f"| {i} | {label} | {reply_s:.1f} | {' | '.join(cells)} |")
    print(f"\n## Self-interruption ({n} sessions nobody talks over, echo gain {ECHO.gain}, {ECHO.delay_ms:.0f} ms)\n")
    print("| defence | self-interruptions | extra turns | echo window | leak refusals | transcript filter | "
          "own words | canceller acted / echo chunks | mean ERLE (dB) | windows marked double talk |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, _ in defences:
        c = counts[name]
        aec = (f"{c['acted']} / {c['echo']} | {statistics.mean(erle[name]):.1f} | {c['marked']}" if erle[name]
               else "off | - | -")
        print(f"| {name} | {c['barged']} / {n} | {c['extra']} | {c['echo_window']} | {c['leak']} | {c['transcript']} | "
              f"{c['own_words']} | {aec} |")
    print("\nPer session: barge-ins (reason@session s) and turns, per defence configuration.\n")
    print(f"| # | request | reply (s) | {' | '.join(name for name, _ in defences)} |")
    print(f"|---|---|---|{'---|' * len(defences)}")
    print("\n".join(rows))


async def playback_start(models: Models, layout: sessions.Layout, out: Path, reply: str) -> float:
    """When the reply starts playing, from a quick probe run like playback_start() in test_hands_free."""
    models["vad"].reset()
    chain = Backends(vad=models["vad"], asr=ScriptedAsr("你在吗"), llm=ScriptedLlm(reply), tts=ToneTts(),
                     kws=models["kws"])
    await replay(Parts(make_config(*HANDS_FREE), chain), layout.audio, out)
    return float(next(e["t"] for e in events_of(out) if e["type"] == "playback_started"))


async def first_requests(models: Models) -> list[tuple[str, tuple[Any, float] | None]]:
    """The first request of the barge-in sessions: 嘿，小智你在吗 (a short reply), LONG_REQUEST (a long one)."""
    return [("short", None), ("long", (await sessions.spoken(models["tts"], LONG_REQUEST), 0.0))]


async def barge_in_latency(models: Models, m: int, out: Path, room: Path | None = None) -> None:
    """切换前视 (cmd_qiehuan_1) over the short and the long reply, at the first ``m`` moments; ``room``:
    the room memory every session starts from (``--room-remembered``), none by default."""
    requests = await first_requests(models)
    original = replay_audio.ReplaySpeaker.clear
    marks: dict[str, float] = {}  # wall clock of this run's barge-in decision, then of the next clear

    def on_event(t: float, event: object) -> None:
        if isinstance(event, BargeIn):
            marks.setdefault("decided", time.perf_counter())

    def timed_clear(self: replay_audio.ReplaySpeaker) -> None:
        if "decided" in marks:
            marks.setdefault("cleared", time.perf_counter())
        original(self)

    latencies: list[float] = []
    stops: list[float] = []
    cases = 0
    rows: list[str] = []
    min_speech_s = make_config(*HANDS_FREE).barge_in.min_speech_ms / 1000
    replay_audio.ReplaySpeaker.clear = timed_clear  # type: ignore[method-assign]
    try:
        for label, request in requests:
            start = await playback_start(models, sessions.interrupted_turn(0.0, 0.0, request), out / f"probe_{label}",
                                         REPLIES[label])
            for i, after_s in enumerate((AFTER_S + [AFTER_S[-1] + 0.5 * k for k in range(1, m)])[:m]):
                layout = sessions.interrupted_turn(start, after_s, request)
                onset = layout.marks["interruption"]
                marks.clear()
                case = out / f"barge_{label}{i}"
                summary, events = await run(models, layout.audio, (), case, seed=SEED, subscribers=(on_event,),
                                            reply=REPLIES[label], room=remembered(room, case))
                row = f"| {label} | {after_s} | {onset:.2f} |"
                heard = summary["turns"][1].get("transcript") or "-" if len(summary["turns"]) > 1 else "-"
                if reply_over(events, onset) and not summary["barge_ins"]:
                    rows.append(f"{row} none: the reply ended first | - | - | - | {heard} |")
                    continue
                cases += 1
                if not summary["barge_ins"]:
                    rows.append(f"{row} none | - | NO | - | {heard} |")
                    continue
                first = summary["barge_ins"][0]
                latencies.append(first["t"] - onset)
                stops.append((marks["cleared"] - marks["decided"]) * 1000 if "cleared" in marks else float("nan"))
                ok = "yes" if latencies[-1] <= 0.4 else "NO"
                early = " †" if latencies[-1] < min_speech_s else ""  # the run began before the user spoke
                rows.append(f"{row} {first['reason']}@{first['t']:.2f} | {latencies[-1]:.3f}{early} | {ok} | "
                            f"{stops[-1]:.2f} | {heard} |")
    finally:
        replay_audio.ReplaySpeaker.clear = original  # type: ignore[method-assign]
    print(f"\n## Barge-in latency (切换前视 over a short and a long reply ({LONG_REQUEST} → a fixed reply of "
          f"{len(REPLIES['long'])} characters), {REMEMBERED if room else 'all layers on'})\n")
    print("| reply | after_s | onset (s) | barge-in | latency (s) | ≤ 0.4 s | decision → sink cleared (ms) | "
          "transcript |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if latencies:
        print(f"\nLatency min / median / max: {min(latencies):.3f} / {statistics.median(latencies):.3f} / "
              f"{max(latencies):.3f} s; decision → sink cleared: {min(stops):.2f} / {statistics.median(stops):.2f} / "
              f"{max(stops):.2f} ms; {sum(x <= 0.4 for x in latencies)} / {cases} within 0.4 s (over the reply)")
    if min(latencies, default=1.0) < min_speech_s:
        print(f"\n† under barge_in.min_speech_ms ({min_speech_s:.2f} s): the run of speech that decided it began "
              "before the user's onset (such as residual echo of the reply running into it).")


def reply_over(events: Events, onset: float) -> bool:
    """Had the first reply finished playing before a barge-in could be decided (``barge_in.min_speech_ms``
    after the user's onset), so that there was nothing to interrupt? (A reply a barge-in stopped
    sooner than that was interrupted, not over.)"""
    ended = next((e["t"] for e in events if e["type"] == "playback_finished" and not e.get("interrupted")), None)
    return ended is not None and ended <= onset + make_config(*HANDS_FREE).barge_in.min_speech_ms / 1000


async def primed_room(models: Models, out: Path) -> Path | None:
    """The room memory an earlier session in the same room leaves: 嘿，小智你在吗 answered with
    ``PRIMER`` (another text than the replies talked over), nobody talking over it."""
    memory = out / "primer" / ROOM_FILE
    await run(models, sessions.one_turn().audio, (), out / "primer", seed=SEED, reply=PRIMER, room=memory)
    if not memory.is_file():
        print("\n(The primer session left no room memory: the canceller had not learnt the room.)")
        return None
    with np.load(memory) as kept:
        path = kept["response"]
        print(f"\nRoom memory from the primer session: {len(kept['played']) / 16000:.1f} s of its reply, and the echo "
              f"path it learnt, strongest at {int(np.argmax(np.abs(path))) / 16:.1f} ms (gain "
              f"{float(np.max(np.abs(path))):.2f}; the replay's echo is {ECHO.gain} at {ECHO.delay_ms:.0f} ms).")
    return memory


def remembered(memory: Path | None, out: Path) -> Path | None:
    """A copy of ``memory`` for the run into ``out``: every case starts from the same one (a session
    writes it anew after its reply)."""
    if memory is None:
        return None
    room = out / ROOM_FILE
    room.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(memory, room)
    return room


async def double_talk(models: Models, m: int, out: Path) -> None:
    replies = await first_requests(models)
    primed = await primed_room(models, out)
    rows: list[str] = []
    conditions = [("off", None), ("on", None)] + ([("on, room remembered", primed)] if primed else [])
    totals = {name: Counter[str]() for name, _ in conditions}
    cases = 0
    for label, request in replies:
        first = sessions.double_talk_turn(0.0, 0.0, request)  # the first request alone, for the probe
        start = await playback_start(models, first, out / f"probe_{label}", REPLIES[label])
        for i, after_s in enumerate(DOUBLE_TALK_AFTER_S[:m]):
            layout = sessions.double_talk_turn(start, after_s, request)
            onset = layout.marks["interruption"]
            counted = True
            for k, (name, memory) in enumerate(conditions):
                linear = f"echo.linear={'false' if name == 'off' else 'true'}"
                room = remembered(memory, out / f"dt_{label}{i}_{k}")
                summary, events = await run(models, layout.audio, (linear,), out / f"dt_{label}{i}_{k}", seed=SEED,
                                            reply=REPLIES[label], room=room)
                barges, turns = summary["barge_ins"], summary["turns"]
                latency = barges[0]["t"] - onset if barges else float("nan")
                heard = turns[1].get("transcript") or "" if len(turns) > 1 else ""
                kept = match(FIRST_WORDS, [heard]).score >= KEPT
                over = reply_over(events, onset)
                if over:
                    counted = False
                else:
                    totals[name].update(decided=bool(barges), fast=0 < latency <= 0.4, kept=kept)
                decision = "reply over" if over else f"{latency:.3f}"
                rows.append(f"| {label} | {after_s} | {name} | {decision} | {heard or '-'} | "
                            f"{'yes' if kept else 'NO'} |")
            cases += counted
    print(f"\n## Double talk: ask_who_are_you.wav over a short and a long reply ({LONG_REQUEST} → a fixed reply of "
          f"{len(REPLIES['long'])} characters)\n")
    print("| reply | after_s | linear canceller for the ASR | decision after the user's onset (s) | transcript | "
          "first words kept |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nOver the reply ({cases} sessions; 'reply over': it ended before a barge-in could be decided, "
          "not counted):")
    for name, c in totals.items():
        print(f"- linear canceller {name}: decided {c['decided']} / {cases}, within 0.4 s {c['fast']} / {cases}, "
              f"first words kept {c['kept']} / {cases}")


async def second_reply(models: Models, request: tuple[Any, float], out: Path,
                       reply: str) -> tuple[sessions.Layout, float]:
    """The request, and once its reply (``reply``, the real TTS) has ended the request again: the
    session up to the second request, and when the second reply starts playing (two probe runs)."""
    audio, onset = request

    async def probe(layout: sessions.Layout, name: str) -> Events:
        models["vad"].reset()
        chain = Backends(vad=models["vad"], asr=ScriptedAsr(LONG_REQUEST, LONG_REQUEST),
                         llm=ScriptedLlm(reply, reply), tts=models["tts"], kws=models["kws"])
        await replay(Parts(make_config(*HANDS_FREE), chain), layout.audio, out / name)
        return events_of(out / name)

    def asked(again_at: float | None) -> sessions.Layout:
        layout = sessions.Layout().pause(0.5).add(audio, "request", onset)
        return layout if again_at is None else layout.pause_until(again_at).add(audio, "again", onset)

    ended = next(e["t"] for e in await probe(asked(None).pause(20.0), "warm_probe1")
                 if e["type"] == "playback_finished")
    started = [e["t"] for e in await probe(asked(ended + 0.6).pause(20.0), "warm_probe2")
               if e["type"] == "playback_started"]
    return asked(ended + 0.6), started[1]


async def double_talk_warm(models: Models, m: int, out: Path) -> None:
    """The double talk over the session's second reply: the linear canceller has learnt the room."""
    request = (await sessions.spoken(models["tts"], LONG_REQUEST), 0.0)
    rows: list[str] = []
    c = Counter[str]()
    cases = 0
    for label in ("short", "long"):
        before, start = await second_reply(models, request, out, REPLIES[label])
        for i, after_s in enumerate(DOUBLE_TALK_AFTER_S[:m]):
            layout = sessions.Layout().add(before.audio)
            layout.pause_until(start + after_s - sessions.ONSET_S["ask_who_are_you.wav"])
            layout = layout.clip("ask_who_are_you.wav", "interruption").pause(12.0)
            onset = layout.marks["interruption"]
            summary, events = await run(models, layout.audio, (), out / f"dtw_{label}{i}", seed=SEED,
                                        reply=REPLIES[label], replies=2)
            barges, turns = summary["barge_ins"], summary["turns"]
            latency = barges[0]["t"] - onset if barges else float("nan")
            heard = turns[2].get("transcript") or "" if len(turns) > 2 else ""
            kept = match(FIRST_WORDS, [heard]).score >= KEPT
            over = reply_over([e for e in events if e["t"] > start - 0.01], onset)
            if not over:
                cases += 1
                c.update(decided=bool(barges), fast=0 < latency <= 0.4, kept=kept)
            rows.append(f"| {label} | {after_s} | {'reply over' if over else f'{latency:.3f}'} | {heard or '-'} | "
                        f"{'yes' if kept else 'NO'} |")
    print(f"\n## Double talk over the session's second reply ({LONG_REQUEST} asked again after the first reply; "
          "all layers on: the linear canceller has learnt the room)\n")
    print("| reply | after_s | decision after the user's onset (s) | transcript | first words kept |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nOver the second reply ({cases} sessions): decided {c['decided']} / {cases}, within 0.4 s "
          f"{c['fast']} / {cases}, first words kept {c['kept']} / {cases}")


async def clip_onset(models: Models, audio: Any) -> float:
    """Where speech begins in a clean clip: the first silero window reaching 0.5 (as ``sessions.ONSET_S``)."""
    vad = models["vad"]
    vad.reset()
    probs = await vad.accept(audio)
    vad.reset()
    return float(next((i for i, p in enumerate(probs) if p >= 0.5), 0) * vad.window_samples) / RATE


async def held_out_speakers(models: Models, m: int, out: Path, level_matched: bool = False,
                            room: Path | None = None) -> None:
    """切换前视 said over the reply by the six speakers the other sections never hear (cmd_qiehuan_2..7,
    each at its own recorded level, 7-13 dB under cmd_qiehuan_1, or ``level_matched`` to it), at the
    first ``m`` of AFTER_S; ``room``: the room memory every session starts from, none by default."""
    replies = []
    for label, request in await first_requests(models):
        start = await playback_start(models, sessions.interrupted_turn(0.0, 0.0, request), out / f"held_probe_{label}",
                                     REPLIES[label])
        replies.append((label, request or (sessions.wake_and_request(), sessions.ONSET_S["hey_xiaozhi.wav"]), start))
    lines: list[str] = []
    everyone: list[float] = []
    cases = undecided = 0
    for k in range(2, 8):
        name = f"cmd_qiehuan_{k}.wav"
        clip = real(name)
        if level_matched:
            clip = (clip * 10 ** ((level_db(real("cmd_qiehuan_1.wav")) - level_db(clip)) / 20)).astype(np.float32)
        onset_s = await clip_onset(models, clip)
        latencies: list[float] = []
        count = missed = 0
        for label, (audio, request_onset), start in replies:
            for i, after_s in enumerate(AFTER_S[:m]):
                layout = sessions.Layout().pause(0.5).add(audio, "request", request_onset)
                layout.pause_until(start + after_s - onset_s)
                layout = layout.add(clip, "interruption", onset_s).pause(10.0)
                onset = layout.marks["interruption"]
                case = out / f"held_{k}_{label}{i}"
                summary, events = await run(models, layout.audio, (), case, seed=SEED, reply=REPLIES[label],
                                            room=remembered(room, case))
                barges = summary["barge_ins"]
                if reply_over(events, onset) and not barges:
                    continue
                count += 1
                if barges:
                    latencies.append(barges[0]["t"] - onset)
                else:
                    missed += 1
        cases, undecided, everyone = cases + count, undecided + missed, everyone + latencies
        spread = (f"{min(latencies):.3f} / {statistics.median(latencies):.3f} / {max(latencies):.3f}"
                  if latencies else "-")
        lines.append(f"| {name} | {level_db(clip):.1f} | {count} | {sum(0 <= x <= 0.4 for x in latencies)} | "
                     f"{missed} | {spread} |")
    at = "scaled to cmd_qiehuan_1's level" if level_matched else "each at its own level"
    print(f"\n## Barge-in by the held-out speakers (切换前视 by six other speakers over the short and long replies, "
          f"{at}, {REMEMBERED if room else 'all layers on'})\n")
    print("| recording | level (dB, loud frames) | cases over the reply | within 0.4 s | never decided | "
          "latency min / median / max (s) |")
    print("|---|---|---|---|---|---|")
    print("\n".join(lines))
    median = statistics.median(everyone) if everyone else float("nan")
    print(f"\nAll held-out speakers: {cases} cases, within 0.4 s {sum(0 <= x <= 0.4 for x in everyone)} / {cases}, "
          f"never decided {undecided}, median {median:.3f} s (cmd_qiehuan_1, the speaker the other sections hear, "
          f"reads {level_db(real('cmd_qiehuan_1.wav')):.1f} dB).")


def level_db(audio: Any) -> float:
    """The level of a clip's loud frames: the 90th percentile of its 32 ms frames' power, in dB."""
    frames = np.asarray(audio, np.float64)[:len(audio) // 512 * 512].reshape(-1, 512)
    return float(np.percentile(10 * np.log10((frames ** 2).mean(axis=1) + 1e-12), 90))


def cpu_name() -> str:
    info = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in info.read_text().splitlines()
             if line.startswith("model name")] if info.is_file() else []
    return platform.processor() or (names[0] if names else "?")


async def main(args: argparse.Namespace) -> None:
    u = platform.uname()
    print("# Echo defence benchmark\n")
    print(f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} — {u.system} {u.release} {u.machine}, "
          f"processor {cpu_name()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    if args.set:
        print(f"\nSettings: {', '.join(args.set)}")
    assets = Assets([SHARED / "models"])
    cfg = make_config(*HANDS_FREE)
    models: Models = {"vad": SileroVad(silero_model_path(assets)), "kws": backends.kws(cfg, assets),
                      "asr": backends.asr(cfg, assets), "tts": backends.tts(cfg, assets),
                      "talk_vad": backends.talk_vad(cfg, assets)}
    for model in models.values():
        if model is not None:
            model.load()
    models["gguf"] = assets.path("qwen2.5-coder-0.5b-instruct-q4_k_m", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if args.sessions:
                await self_interruptions(models, args.sessions, Path(tmp), [DEFENCES[i] for i in args.defences])
            primed = args.room_remembered and (args.barge_ins or args.held_out)
            room = await primed_room(models, Path(tmp)) if primed else None
            if args.barge_ins:
                await barge_in_latency(models, args.barge_ins, Path(tmp), room)
            if args.double_talk:
                await double_talk(models, args.double_talk, Path(tmp))
                await double_talk_warm(models, args.double_talk, Path(tmp))
            if args.held_out:
                await held_out_speakers(models, args.held_out, Path(tmp), args.level_matched, room)
    finally:
        for name in ("vad", "kws", "asr", "tts", "talk_vad"):
            if models[name] is not None:
                models[name].close()
    print(f"\n(wall time {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6, help="quiet one-turn sessions per configuration")
    parser.add_argument("--barge-ins", type=int, default=6, help="sessions with speech over the reply")
    parser.add_argument("--double-talk", type=int, default=6, help="sessions with a real request over the reply")
    parser.add_argument("--held-out", type=int, default=6,
                        help="cases per reply for each of the six held-out speakers of 切换前视 (0: none)")
    parser.add_argument("--level-matched", action="store_true",
                        help="the held-out speakers scaled to the level of the speaker the other sections hear")
    parser.add_argument("--room-remembered", action="store_true",
                        help="the barge-in and held-out sessions start from the room memory a primer session left "
                        "(as a live session does after its first reply in the room)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config setting for every session (after the hands-free ones)")
    parser.add_argument("--defences", type=lambda text: [int(i) for i in text.split(",")],
                        default=list(range(len(DEFENCES))), help="which configurations of the self-interruption part "
                        "(indices into DEFENCES, e.g. 0,1)")
    logs.setup("error")
    arguments = parser.parse_args()
    HANDS_FREE = (*HANDS_FREE, *arguments.set)
    asyncio.run(main(arguments))
