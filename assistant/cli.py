"""The ``assistant`` command: run, replay, vad, config.

Every subcommand takes ``--config PATH`` and repeatable ``--set dotted.key=TOML_VALUE``. Bad input
(a bad wav, a bad config key, a missing model or sound card) is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from assistant import app, backends, budget, doctor, jobs, logs, models_cmd, tools_cmd
from assistant.audio.protocols import AudioDeviceError
from assistant.audio.wav import BadAudioFile, read_wav
from assistant.clock import SampleClock
from assistant.config import Config, ConfigError, describe, load
from assistant.tools.store import StoreError
from models.protocols import ModelError

USER_ERRORS = (ConfigError, BadAudioFile, ModelError, AudioDeviceError, StoreError)


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", type=Path, default=argparse.SUPPRESS,
                        help="config file (default: $TINGSHUO_CONFIG, else ./config.toml if present)")
    common.add_argument("--set", dest="overrides", action="append", default=argparse.SUPPRESS,
                        metavar="KEY=VALUE", help="override one setting, e.g. --set vad.threshold=0.6")
    parser = argparse.ArgumentParser(prog="assistant", parents=[common],
                                     description="Tingshuo (听说): offline hands-free Mandarin voice assistant")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", parents=[common], help="hold conversations on the sound card")
    run.add_argument("--record", type=Path, default=None, metavar="DIR",
                     help="save the microphone, the playback and the events of this session under DIR")
    rp = sub.add_parser("replay", parents=[common], help="run a recorded session through the assistant")
    rp.add_argument("session", type=Path,
                    help="the microphone recording (any wav), or a folder saved by `assistant run --record`")
    rp.add_argument("--out", type=Path, required=True, help="folder for played.wav, events.jsonl, summary.json")
    rp.add_argument("--echo", default=None, metavar="GAIN:DELAY_MS",
                    help="the mic also hears GAIN x the played audio, DELAY_MS later")
    rp.add_argument("--realtime", action="store_true", help="pace at 1x wall clock and record true latencies")
    rp.add_argument("--plot", action="store_true", help="also write a timeline PNG per turn into --out")
    bp = sub.add_parser("bench", parents=[common], help="first audio: whole-reply synthesis against the pipeline")
    bp.add_argument("--repeats", type=int, default=3, help="runs per reply and mode (default 3)")
    bp.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    bp.add_argument("--plots", type=Path, default=Path("bench-timelines"),
                    help="folder for the timeline PNGs (default ./bench-timelines)")
    vp = sub.add_parser("vad", parents=[common], help="print the utterances the VAD and endpointing find")
    vp.add_argument("wav", type=Path)
    tp = sub.add_parser("transcribe", parents=[common], help="print path<TAB>text for each recording")
    tp.add_argument("wavs", type=Path, nargs="+")
    np_ = sub.add_parser("normalize", parents=[common], help="print a text exactly as it will be spoken")
    np_.add_argument("text", help="the text (each line is normalized on its own line)")
    sp = sub.add_parser("say", parents=[common], help="speak a text")
    sp.add_argument("text")
    ap = sub.add_parser("ask", parents=[common], help="ask the language model; print and speak the answer")
    ap.add_argument("--text", required=True, help="the question")
    fp = sub.add_parser("file", parents=[common], help="answer the request in a recording (ASR → LLM → TTS)")
    fp.add_argument("wav", type=Path)
    for p in (sp, ap, fp):
        p.add_argument("-o", "--output", type=Path, default=None, help="write the audio here instead of playing it")
    tools_cmd.add_parsers(sub, common)
    mp = sub.add_parser("models", parents=[common], help="list, verify or fetch the model files")
    mp.add_argument("action", choices=("list", "verify", "fetch"))
    mp.add_argument("names", nargs="*", help="models (default: all for list/verify, the configured ones for fetch)")
    mp.add_argument("--from", dest="source", type=Path, default=None, metavar="DIR",
                    help="fetch from a local folder (a USB stick, an offline mirror) instead of the network")
    sub.add_parser("config", parents=[common], help="print every setting with its value and meaning")
    dp = sub.add_parser("doctor", parents=[common], help="check this machine: CPU, NPU, runtimes, sound, models")
    dp.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    dp.add_argument("--strict", action="store_true", help="exit 1 when anything is flagged (warn or error)")
    return parser


def _config(args: argparse.Namespace) -> Config:
    path = getattr(args, "config", None)
    if path is None:
        env = os.environ.get("TINGSHUO_CONFIG")
        path = Path(env) if env else (Path("config.toml") if Path("config.toml").is_file() else None)
    return load(path, getattr(args, "overrides", []))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        cfg = _config(args)
        if args.command != "run":  # a log file is for the service, not for one-shot commands
            cfg = replace(cfg, log=replace(cfg.log, file=""))
        logs.setup(cfg.log.level, cfg.log.format, logs.file_for(cfg))
        return COMMANDS[args.command](cfg, args)
    except USER_ERRORS as exc:
        print(f"assistant: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


def cmd_run(cfg: Config, args: argparse.Namespace) -> int:
    clock = SampleClock(cfg.audio.sample_rate, realtime=True)
    source, sink = app.open_devices(cfg, clock)  # before the models load: a missing card is found at once
    recorder = None
    try:
        budget.check(cfg)
        models = backends.conversation(cfg)
        app.load(models)
        try:
            if args.record is not None:
                recorder = app.recorder(args.record, cfg.audio.sample_rate, cfg.audio.record_max_minutes,
                                        cfg.audio.record_keep)
            cache = backends.phrase_cache(cfg, backends.assets_for(cfg))
            tools = backends.tools(cfg)
            asyncio.run(app.run_live(cfg, clock, source, sink, models, phrase_cache=cache, recorder=recorder,
                                     tools=tools))
        finally:
            app.close(models)
    finally:
        source.close()
        sink.close()
        if recorder is not None:
            recorder.close()
            kept = f" (and {len(recorder.folders) - 1} earlier folders beside it)" if len(recorder.folders) > 1 else ""
            print(f"recorded this session in {recorder.folder}{kept} (replay it with: assistant replay "
                  f"{recorder.folder} --out OUT)")
    return 0


def cmd_replay(cfg: Config, args: argparse.Namespace) -> int:
    from assistant.replay import Echo, replay

    mic, played = _session_files(args.session)
    recording = read_wav(mic, cfg.audio.sample_rate)  # before anything is written
    reference = read_wav(played, cfg.audio.sample_rate) if played is not None else None
    if reference is not None and args.echo:
        raise ConfigError(f"{args.session} is a recorded room session: it has its echo already; drop --echo")
    echo = Echo.parse(args.echo) if args.echo else Echo()
    budget.check(cfg)
    models = backends.conversation(cfg)
    app.load(models)
    try:
        cache = backends.phrase_cache(cfg, backends.assets_for(cfg))
        args.out.mkdir(parents=True, exist_ok=True)
        tools = backends.tools(cfg, data_dir=args.out)  # the replay's own database, not the user's
        summary = asyncio.run(replay(cfg, recording, args.out, models, echo=echo, realtime=args.realtime,
                                     phrase_cache=cache, reference=reference, tools=tools))
    finally:
        app.close(models)
    if args.plot:
        _plot_replay(args.out)
    for i, turn in enumerate(summary["turns"], 1):
        print(f"turn {i}: {turn['transcript']!r} -> {turn['reply']!r} "
              f"(end of speech -> first audio {turn['end_of_speech_to_first_audio_s']} s)")
    print(f"wrote {args.out}/played.wav, events.jsonl, summary.json")
    return 0


def _session_files(session: Path) -> tuple[Path, Path | None]:
    """(microphone wav, recorded playback or None) for a wav or a folder from ``run --record``."""
    if not session.is_dir():
        return session, None
    mic, played = session / "mic.wav", session / "played.wav"
    if not mic.is_file():
        raise ConfigError(f"{session} is a folder without mic.wav: not a session saved by `assistant run --record`")
    return mic, played if played.is_file() else None


def _plot_replay(out: Path) -> None:
    import json

    from assistant.timeline import plot_turn, turns

    records = [json.loads(line) for line in (out / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    for i, turn in enumerate(turns(records), 1):
        plot_turn(turn, out / f"turn{i}.png", f"turn {i}")


def cmd_bench(cfg: Config, args: argparse.Namespace) -> int:
    from assistant.bench import run
    from assistant.pipeline import PipelineOptions

    if args.repeats < 1:
        raise ConfigError("--repeats must be at least 1")
    tts = backends.tts(cfg, backends.assets_for(cfg))
    with jobs.loaded(tts):
        print(run(tts, PipelineOptions.from_config(cfg), args.repeats, args.plots, args.json))
    if not args.json:
        print(f"timelines: {args.plots}/bench_*.png")
    return 0


def cmd_normalize(cfg: Config, args: argparse.Namespace) -> int:
    from assistant.text.normalize import normalize

    for line in args.text.splitlines() or [""]:
        print(normalize(line))
    return 0


def cmd_vad(cfg: Config, args: argparse.Namespace) -> int:
    from assistant.segments import find_utterances

    audio = read_wav(args.wav, cfg.audio.sample_rate)
    vad = backends.vad(cfg, backends.assets_for(cfg))
    vad.load()
    try:
        found = asyncio.run(find_utterances(cfg, vad, audio))
    finally:
        vad.close()
    rate = cfg.audio.sample_rate
    for start, end, reason in found:
        print(f"{start / rate:7.2f} s – {end / rate:7.2f} s  ({(end - start) / rate:.2f} s, ended by {reason})")
    print(f"{len(found)} utterance(s) in {len(audio) / rate:.2f} s of audio")
    return 0


def cmd_config(cfg: Config, args: argparse.Namespace) -> int:
    for key, _, doc in describe():
        value: object = cfg
        for part in key.split("."):
            value = getattr(value, part)
        shown = list(value) if isinstance(value, tuple) else value
        print(f"{key} = {shown!r}  # {doc}")
    return 0


COMMANDS: dict[str, Callable[[Config, argparse.Namespace], int]] = {
    "run": cmd_run, "replay": cmd_replay, "vad": cmd_vad, "config": cmd_config, "models": models_cmd.run,
    "bench": cmd_bench, "normalize": cmd_normalize, "transcribe": jobs.transcribe, "say": jobs.say,
    "ask": jobs.ask, "file": jobs.answer_file, "todos": tools_cmd.todos, "reminders": tools_cmd.reminders,
    "doctor": doctor.run,
}
