"""The spoken evaluation, the measure of record for understanding: requests spoken in simulated rooms,
answered by the whole assistant, each answer counted right, asked again, or wrong.

    .venv/bin/python benchmarks/spoken.py [--set tune|heldout] [--rooms clean,near,far]
        [--modes session,single,typed] [--config key=value ...] [--json FILE] [--show]

- The requests: a question set (``spoken_tune.toml``, the half changes may be tuned on, or
  ``spoken_heldout.toml``, run only to report), each request spoken by a Kokoro voice other than the
  reply voice, round robin over the voices Whisper understands: every candidate voice first speaks
  twelve requests, which Whisper (30 s window, no context) transcribes, and a voice whose character
  error rate is over 0.35 is dropped and named. Renders are kept in ~/.cache/tingshuo/spoken.
- The rooms (``benchmarks/rooms.py``): clean; near (DRR about +5 dB, fan noise at 30 dB SNR); far
  (about −4 dB, 25 dB SNR).
- ``session``: every request on one microphone timeline, 12 s of room noise after each (a
  follow-up item's earlier turn just before it), through one ``replay`` of the configured assistant
  with wake.mode "always": a household's long evening, history and all. A request's answer is what
  the turns that ended within its 12 s replied.
- ``single``: each request (after its earlier turn, if any) through a replay of its own, the
  conversation history cleared before it.
- ``typed``: each request's text straight to the same answer path (benchmarks/answers.py's way).

Outcomes: **right** (the set's ``say``/``never`` and global rules pass), **asked again** (an honest
没听清/请再说一遍, or a confirmation question 你是说…吗), **unsure** (an honest 不太确定: not a wrong
fact said with confidence), and **wrong** (anything else, a parroted transcript, a wrong fact or a
claimed action included, and no answer at all). In session mode a tool's ``stores`` check is not
made (the tools' database is shared by the whole evening); its reply is still judged.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import logs  # noqa: E402
from assistant.answer_eval import OUTCOMES, Item, Rules, classify, judge, load_questions  # noqa: E402
from assistant.audio.resample import resample  # noqa: E402
from assistant.audio.wav import read_wav, write_wav  # noqa: E402
from assistant.text.cer import cer  # noqa: E402
from benchmarks import rooms  # noqa: E402

RATE = 16000
SETS = {"tune": ROOT / "benchmarks" / "spoken_tune.toml", "heldout": ROOT / "benchmarks" / "spoken_heldout.toml"}
VOICES = ("zf_xiaobei", "zf_xiaoni", "zf_xiaoxiao", "zf_xiaoyi", "zm_yunjian", "zm_yunxi", "zm_yunxia", "zm_yunyang")
MAX_VOICE_CER = 0.35
GAP_S = 12.0
CACHE = Path.home() / ".cache" / "tingshuo" / "spoken"


@dataclass
class Spoken:
    """One request as heard: its item, the voice, its answer and the outcome."""

    item: Item
    voice: str
    heard: list[str] = field(default_factory=list)
    reply: str = ""
    outcome: str = "wrong"
    problems: list[str] = field(default_factory=list)


def outcome(item: Item, reply: str, rules: Rules, heard: list[str]) -> tuple[str, list[str]]:
    """(right | asked | unsure | wrong, the problems) of a spoken request (the tools' saves not checked).
    A reply that begins by saying the request back (as asked or as heard) is wrong whatever follows:
    晚饭吃什么好？我来给你讲个故事吧 matches 饭, and answers nothing."""
    from dataclasses import replace

    from assistant.text.parrot import restates

    problems = judge(replace(item, stores=""), reply, rules)
    first = re.split(r"(?<=[，。！？,!?；;])", reply.strip(), maxsplit=1)[0]
    if any(restates(text, first) for text in [item.ask, *heard] if text):
        problems.append("says the request back")
    return classify(reply, problems)


# -- speaking ------------------------------------------------------------------------------------------
class Speaker:
    """Kokoro in each voice, its renders kept on disk by voice and text."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg
        self._tts: dict[str, Any] = {}

    def say(self, voice: str, text: str) -> np.ndarray:
        onset = self.cfg.tts.onset_frames  # by rendering too (tts.onset_frames; 0: the first renders' place)
        folder = CACHE / f"onset{onset}" if onset else CACHE
        path = folder / voice / f"{hashlib.sha1(text.encode()).hexdigest()[:16]}.wav"
        if path.is_file():
            return read_wav(path, RATE)
        tts = self._tts.get(voice)
        if tts is None:
            from dataclasses import replace

            from assistant import backends

            # the speakers are the household, not the assistant: the export's own decoder, whatever
            # tts.decoder the assistant speaks with (the renders kept on disk were made with it)
            cfg = replace(self.cfg, tts=replace(self.cfg.tts, voice=voice, decoder="dynamic"))
            tts = self._tts[voice] = backends.tts(cfg, backends.assets_for(cfg))
            tts.load()

        async def render() -> np.ndarray:
            pieces = [piece async for piece in tts.synthesize(text)]
            return np.concatenate(pieces) if pieces else np.zeros(0, np.float32)

        audio = resample(asyncio.run(render()), tts.sample_rate, RATE)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_wav(path, audio, RATE)
        return read_wav(path, RATE)  # as every later run reads it (16-bit)

    def close(self) -> None:
        for tts in self._tts.values():
            tts.close()


def usable_voices(cfg: Any, speaker: Speaker, checks: list[str], reply_voice: str) -> list[str]:
    """The voices (never the reply voice) Whisper understands, each checked on ``checks``; prints the table."""
    from dataclasses import replace

    from assistant import backends
    from assistant.app import loaded

    plain = replace(cfg, asr=replace(cfg.asr, window_s=30.0, command_words=False, min_avg_logprob=-100.0,
                                     max_no_speech_prob=1.0))
    asr = backends.asr(plain, backends.assets_for(plain))
    kept = []
    print("| voice | CER (12 requests, clean) | used |\n|---|---|---|")
    with loaded(asr, speaks=False):
        for voice in VOICES:
            if voice == reply_voice:
                continue
            rates = [cer(text, asyncio.run(asr.transcribe(speaker.say(voice, text)))) for text in checks]
            mean = sum(rates) / len(rates)
            ok = mean <= MAX_VOICE_CER
            kept += [voice] if ok else []
            print(f"| {voice} | {mean:.3f} | {'yes' if ok else 'no: Whisper base mishears it'} |")
    print(f"(the reply voice, {reply_voice}, is never a user's)\n")
    return kept


# -- answering ------------------------------------------------------------------------------------------
def _overrides(extra: list[str]) -> list[str]:
    return ['wake.mode="always"', *extra]


def _timeline(utterances: list[np.ndarray]) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The utterances one after another, 12 s apart (0.5 s lead-in); the sample span of each."""
    gap, lead = int(GAP_S * RATE), int(0.5 * RATE)
    total = lead + sum(len(u) + gap for u in utterances)
    out = np.zeros(total, np.float64)
    spans, at = [], lead
    for u in utterances:
        out[at: at + len(u)] = u
        spans.append((at, at + len(u)))
        at += len(u) + gap
    return out, spans


def _heard(timeline: np.ndarray, room: str, utterances: list[np.ndarray]) -> np.ndarray:
    voiced = float(np.mean([rooms.voiced_power(u) for u in utterances]))
    return rooms.through(room, timeline, voiced)


async def _replay(parts: Any, audio: np.ndarray, out: Path) -> list[dict[str, Any]]:
    from assistant.replay import replay

    summary = await replay(parts, audio, out)
    return list(summary["turns"])


def _answers(turns: list[dict[str, Any]], spans: list[tuple[int, int]]) -> list[tuple[list[str], str]]:
    """Per utterance: (transcripts, joined reply) of the turns whose speech ended within it or its gap."""
    found: list[tuple[list[str], str]] = []
    for i, (start, _) in enumerate(spans):
        until = spans[i + 1][0] if i + 1 < len(spans) else float("inf")
        mine = [t for t in turns if start / RATE <= t["speech_end_t"] < until / RATE]
        found.append(([t["transcript"] or "" for t in mine], "".join(t["reply"] or "" for t in mine)))
    return found


def _clear(parts: Any) -> None:
    history = getattr(parts.backends.llm, "history", None)
    if history is not None:
        history.clear()


async def run_session(parts: Any, spoken: list[Spoken], audio: dict[int, list[np.ndarray]], room: str, rules: Rules,
                out: Path) -> None:
    """Every request on one timeline, in one replay."""
    utterances, owner = [], []
    for i, one in enumerate(audio.values()):
        utterances += one
        owner += [i] * len(one)
    timeline, spans = _timeline(utterances)
    _clear(parts)
    turns = await _replay(parts, _heard(timeline, room, utterances), out)
    answers = _answers(turns, spans)
    last = {i: k for k, i in enumerate(owner)}  # the request is each item's last utterance
    for i, s in enumerate(spoken):
        s.heard, s.reply = answers[last[i]]
        s.outcome, s.problems = outcome(s.item, s.reply, rules, s.heard)


async def run_single(parts: Any, spoken: list[Spoken], audio: dict[int, list[np.ndarray]], room: str, rules: Rules,
               out: Path) -> None:
    """Each request in a replay of its own, its history cleared first."""
    for i, s in enumerate(spoken):
        timeline, spans = _timeline(audio[i])
        _clear(parts)
        turns = await _replay(parts, _heard(timeline, room, audio[i]), out / f"q{i:03d}")
        s.heard, s.reply = _answers(turns, spans)[-1]
        s.outcome, s.problems = outcome(s.item, s.reply, rules, s.heard)


async def run_typed(parts: Any, spoken: list[Spoken], rules: Rules) -> None:
    """Each request's text to the answer path, as benchmarks/answers.py puts it."""
    from assistant import respond
    from assistant.answer_eval import run_item

    responder = respond.for_config(parts.cfg, parts.backends.llm, parts.tools)
    store = parts.tools.store if parts.tools is not None else None
    for s in spoken:
        done = await run_item(responder, s.item, rules, store)
        s.heard, s.reply = [s.item.ask], done.reply
        s.outcome, s.problems = outcome(s.item, done.reply, rules, []) if done.problems == [] else \
            classify(done.reply, done.problems)


def _keep_weighing(asr: Any, weighed: dict[str, dict[str, Any]]) -> None:
    """Keep, per transcript, what the responder was told of it (Whisper's other readings, the rescoring
    model's likelihood per character), for the JSON: what a guard on the readings would have seen."""
    for name in ("readings", "char_logprob"):
        told = getattr(asr, name, None)
        if told is not None:
            setattr(asr, name, _kept(told, name, weighed))


def _kept(told: Any, name: str, weighed: dict[str, dict[str, Any]]) -> Any:
    """``told`` (an ASR's async method of a transcript), keeping each answer under ``weighed[text][name]``."""
    async def keeping(text: str) -> Any:
        value = await told(text)
        weighed.setdefault(text, {})[name] = value
        return value
    return keeping


# -- reporting ------------------------------------------------------------------------------------------
def table(results: dict[str, list[Spoken]]) -> None:
    cats = list(dict.fromkeys(s.item.cat for rows in results.values() for s in rows))
    print("| run | " + " | ".join(cats) + " | **right** | asked again | unsure | **wrong** | heard CER |")
    print("|---" * (len(cats) + 6) + "|")
    for name, rows in results.items():
        per: dict[str, list[str]] = defaultdict(list)
        for s in rows:
            per[s.item.cat].append(s.outcome)
        cells = [f"{sum(o == 'right' for o in per[c])}/{len(per[c])}" for c in cats]
        n = len(rows)
        share = {k: sum(s.outcome == k for s in rows) for k in OUTCOMES}
        pct = {k: f"{100 * v / n:.0f} % ({v})" for k, v in share.items()}
        heard = [cer(s.item.ask, "".join(s.heard)) for s in rows]
        print(f"| {name} | " + " | ".join(cells)
              + f" | **{pct['right']}** | {pct['asked']} | {pct['unsure']} | **{pct['wrong']}** "
              f"| {sum(heard) / n:.3f} |")


def show(results: dict[str, list[Spoken]]) -> None:
    for name, rows in results.items():
        print(f"\n{name}: not right")
        for s in rows:
            if s.outcome != "right":
                print(f"  [{s.item.cat}] {s.item.ask} ({s.voice}) heard {s.heard!r} → {s.reply!r}: "
                      f"{s.outcome}; {'; '.join(s.problems)}")


def main() -> int:
    logs.setup()  # the models' logs to stderr: stdout keeps the results
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=sorted(SETS), default="tune")
    parser.add_argument("--rooms", default="clean,near,far")
    parser.add_argument("--modes", default="session,single,typed")
    parser.add_argument("--config", action="append", default=[], help="a config override (key=value), repeatable")
    parser.add_argument("--json", type=Path, default=None,
                        help="every answer, as JSON, with what the responder was told of each transcript")
    parser.add_argument("--show", action="store_true", help="list every answer that was not right")
    args = parser.parse_args()

    from assistant import app
    from assistant.config import ConfigError, load

    try:
        cfg = load(ROOT / "config.toml", _overrides(args.config))
    except ConfigError as exc:
        print(f"spoken: {exc}", file=sys.stderr)
        return 2
    rules, items = load_questions(SETS[args.set])
    _, checks = load_questions(SETS["tune"])
    speaker = Speaker(cfg)
    voices = usable_voices(cfg, speaker, [i.ask for i in checks[:12]], cfg.tts.voice)
    audio: dict[int, list[np.ndarray]] = {}
    spoken_voice: list[str] = []
    for i, item in enumerate(items):
        voice = voices[i % len(voices)]
        spoken_voice.append(voice)
        audio[i] = [speaker.say(voice, t) for t in ([item.before] if item.before else []) + [item.ask]]
    speaker.close()
    results: dict[str, list[Spoken]] = {}

    async def evaluate(parts: Any, tmp: Path) -> None:
        started = time.perf_counter()
        for mode in args.modes.split(","):
            for room in args.rooms.split(",") if mode != "typed" else ["text"]:
                spoken = [Spoken(item, spoken_voice[i]) for i, item in enumerate(items)]
                out = tmp / f"{mode}-{room}"
                if mode == "session":
                    await run_session(parts, spoken, audio, room, rules, out)
                elif mode == "single":
                    await run_single(parts, spoken, audio, room, rules, out)
                else:
                    await run_typed(parts, spoken, rules)
                results[f"{args.set} · {mode} · {room}"] = spoken
                print(f"done {mode} {room} ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)

    weighed: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp, app.conversation(cfg, data_dir=Path(tmp)) as parts:
        _keep_weighing(parts.backends.asr, weighed)
        asyncio.run(evaluate(parts, Path(tmp)))
    for name in ("near", "far"):
        if name in args.rooms:
            a = rooms.acoustics(name)
            print(f"room {name}: RT60 {a.room.rt60_s} s, talker {a.distance_m} m away, DRR {a.drr_db} dB, "
                  f"SNR {a.room.snr_db} dB")
    print(f"voices: {', '.join(voices)}; config: {args.config or 'defaults'}\n")
    table(results)
    if args.show:
        show(results)
    if args.json is not None:
        args.json.write_text(json.dumps({k: [{"cat": s.item.cat, "ask": s.item.ask, "voice": s.voice,
                                              "heard": s.heard, "reply": s.reply, "outcome": s.outcome,
                                              "problems": s.problems,
                                              "weighed": [weighed.get(h, {}) for h in s.heard]}
                                          for s in v] for k, v in results.items()},
                                        ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
