"""The ``assistant`` command line: it parses the arguments and calls a front end or a command.

Every subcommand takes ``--config PATH`` and repeatable ``--set dotted.key=TOML_VALUE``. Bad input
(a bad wav, a bad config key, a missing model or sound card) is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from assistant import board_timing, live, logs, replay
from assistant.audio.protocols import AudioDeviceError
from assistant.audio.wav import BadAudioFile
from assistant.board_pace import Layout, Prediction
from assistant.commands import bench, doctor, jobs, models, npu, tools, tuning
from assistant.config import Config, ConfigError, load
from assistant.net import ListenError
from assistant.tools.store import StoreError
from models.protocols import ModelError

USER_ERRORS = (ConfigError, BadAudioFile, ModelError, AudioDeviceError, StoreError, ListenError)
SERVICES = ("run", "serve", "satellite")  # the long-running commands (they write log.file)


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
    sub.add_parser("serve", parents=[common],
                   help="offer the ASR, TTS and wake words to Home Assistant as Wyoming services (wyoming.uri)")
    sub.add_parser("satellite", parents=[common],
                   help="be a satellite of Home Assistant: wake word and playback here, its pipeline answers")
    rp = sub.add_parser("replay", parents=[common], help="run a recorded session through the assistant")
    rp.add_argument("session", type=Path,
                    help="the microphone recording (any wav), or a folder saved by `assistant run --record`")
    rp.add_argument("--out", type=Path, required=True, help="folder for played.wav, events.jsonl, summary.json")
    rp.add_argument("--echo", default=None, metavar="GAIN:DELAY_MS",
                    help="the mic also hears GAIN x the played audio, DELAY_MS later")
    rp.add_argument("--realtime", action="store_true", help="pace at 1x wall clock and record true latencies")
    rp.add_argument("--plot", action="store_true", help="also write a timeline PNG per turn into --out")
    rp.add_argument("--status", action="store_true", help="show the replay live on the status page (status.address)")
    rp.add_argument("--predict", default=None, metavar="rk3576[:FILE]",
                    help="PREDICTION: pace each model call by an RK3576's timings (published defaults, or a "
                         "TOML/JSON file such as `benchmarks/models.py --json` wrote on a board); npu.mode applies")
    rp.add_argument("--npu-cores", choices=("separate", "shared"), default="separate",
                    help="with --predict: the LLM and the TTS on separate NPU cores (default) or on one")
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
    tools.add_parsers(sub, common)
    mp = sub.add_parser("models", parents=[common], help="list, verify or fetch the model files")
    mp.add_argument("action", choices=("list", "verify", "fetch"))
    mp.add_argument("names", nargs="*", help="models (default: all for list/verify, the configured ones for fetch)")
    mp.add_argument("--from", dest="source", type=Path, default=None, metavar="DIR",
                    help="fetch from a local folder (a USB stick, an offline mirror) instead of the network")
    npu.add_parsers(sub, common)
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
        if args.command not in SERVICES:  # a log file is for the services, not for one-shot commands
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


def _run(cfg: Config, args: argparse.Namespace) -> int:
    live.run(cfg, args.record)
    return 0


def _serve(cfg: Config, args: argparse.Namespace) -> int:
    from assistant.wyoming import serve

    serve.run(cfg)
    return 0


def _satellite(cfg: Config, args: argparse.Namespace) -> int:
    from assistant.wyoming import satellite

    satellite.run(cfg)
    return 0


def _replay(cfg: Config, args: argparse.Namespace) -> int:
    predict = None
    if args.predict is not None:
        predict = Prediction(board_timing.load(args.predict), Layout(cfg.npu.mode, args.npu_cores))
    replay.run(cfg, args.session, args.out, args.echo, args.realtime, args.plot, args.status, predict)
    return 0


COMMANDS: dict[str, Callable[[Config, argparse.Namespace], int]] = {
    "run": _run, "serve": _serve, "satellite": _satellite, "replay": _replay, "vad": tuning.vad,
    "config": tuning.config, "normalize": tuning.normalize, "models": models.run, "bench": bench.command,
    "transcribe": jobs.transcribe, "say": jobs.say, "ask": jobs.ask, "file": jobs.answer_file,
    "todos": tools.todos, "reminders": tools.reminders, "doctor": doctor.run, "npu": npu.run,
}
