"""Session replay: a recording is the microphone, and the session's events, audio and summary
are written to a folder.

By default model compute takes zero session time (lockstep), so two replays write identical
events.jsonl. ``realtime`` paces the microphone at one second per second and runs the models
concurrently, so the latencies recorded are the true ones. ``predict`` is lockstep with each model
call taking the time an RK3576 board would take for it (``assistant.board_pace``): the latencies
recorded are then a PREDICTION of the board's, the same on every run and every machine.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import structlog

from assistant import app
from assistant.audio.protocols import Samples
from assistant.audio.replay import ReplayDevice
from assistant.audio.wav import read_wav, write_wav
from assistant.board_pace import BoardTime, PacedClock, Prediction, paced
from assistant.clock import SampleClock
from assistant.config import Config, ConfigError
from assistant.events import EventBus, JsonlRecorder, Subscriber
from assistant.summary import SummaryBuilder
from models.worker import lockstep

log = structlog.get_logger("replay")


@dataclass(frozen=True)
class Echo:
    """The acoustic loop: the mic hears ``gain`` x the played audio, ``delay_ms`` later."""

    gain: float = 0.0
    delay_ms: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Echo:
        gain, sep, delay = text.partition(":")
        try:
            echo = cls(float(gain), float(delay) if sep else 0.0)
        except ValueError:
            raise ConfigError(f"--echo {text!r}: expected GAIN:DELAY_MS, e.g. 0.3:40") from None
        if not (0.0 <= echo.gain <= 4.0 and 0.0 <= echo.delay_ms <= 2000.0):
            raise ConfigError(f"--echo {text!r}: gain must be 0..4 and delay 0..2000 ms")
        return echo


def run(cfg: Config, session: Path, out: Path, echo: str | None = None, realtime: bool = False,
        plot: bool = False, status: bool = False, predict: Prediction | None = None) -> None:
    """``assistant replay``: a wav, or a folder saved by ``run --record``, through the configured
    assistant; the results (and with ``plot`` a timeline PNG per turn) in ``out``. With ``status``
    the status page shows it as it runs; with ``predict``, paced by the board's timings."""
    from assistant.status.web import page_for, with_page

    mic, played = _session_files(session)
    recording = read_wav(mic, cfg.audio.sample_rate)  # before anything is written
    reference = read_wav(played, cfg.audio.sample_rate) if played is not None else None
    if predict is not None and realtime:
        raise ConfigError("--predict paces the models by the board's timings in session time: drop --realtime")
    if reference is not None and echo:
        raise ConfigError(f"{session} is a recorded room session: it has its echo already; drop --echo")
    loop = Echo.parse(echo) if echo else Echo()
    page = page_for(cfg, "replay") if status else None
    out.mkdir(parents=True, exist_ok=True)
    with app.conversation(cfg, data_dir=out) as parts:  # the replay's own database, not the user's
        if page is not None:
            page.board.pids = parts.pids
        shown = [page.board] if page is not None else []
        summary = asyncio.run(with_page(page, lambda: replay(parts, recording, out, echo=loop, realtime=realtime,
                                                             reference=reference, subscribers=shown,
                                                             predict=predict)))
    if plot:
        _plot(out)
    label = f"PREDICTION for an RK3576 ({predict.layout}): " if predict is not None else ""
    for i, turn in enumerate(summary["turns"], 1):
        print(f"turn {i}: {turn['transcript']!r} -> {turn['reply']!r} "
              f"({label}end of speech -> first audio {turn['end_of_speech_to_first_audio_s']} s)")
    if predict is not None:
        print(f"PREDICTION, not a measurement: timings from {predict.timings.source}")
    print(f"wrote {out}/played.wav, events.jsonl, summary.json")


def _session_files(session: Path) -> tuple[Path, Path | None]:
    """(microphone wav, recorded playback or None) for a wav or a folder from ``run --record``."""
    if not session.is_dir():
        return session, None
    mic, played = session / "mic.wav", session / "played.wav"
    if not mic.is_file():
        raise ConfigError(f"{session} is a folder without mic.wav: not a session saved by `assistant run --record`")
    return mic, played if played.is_file() else None


def _plot(out: Path) -> None:
    from assistant.timeline import plot_turn, turns

    records = [json.loads(line) for line in (out / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    for i, turn in enumerate(turns(records), 1):
        plot_turn(turn, out / f"turn{i}.png", f"turn {i}")


async def replay(parts: app.Parts, recording: Samples, out_dir: Path, *,
                 echo: Echo | None = None, realtime: bool = False,
                 subscribers: Sequence[Subscriber] = (), clock: SampleClock | None = None,
                 reference: Samples | None = None, start: datetime | None = None,
                 predict: Prediction | None = None) -> dict[str, Any]:
    """Run ``recording`` through a session; write played.wav, events.jsonl and summary.json.

    ``reference`` is the playback recorded with a room session (``assistant run --record``): the
    echo canceller is fed with it, since the recording holds the echo of that playback. The
    tools see the time as ``start`` (default: now) plus the session time, so timers set in a
    replay fall due in it. With ``predict`` the ASR, LLM, TTS and turn model take the board's time
    (lockstep, so not with ``realtime``), and summary.json says it is a prediction.
    """
    cfg, tools = parts.cfg, parts.tools
    rate = cfg.audio.sample_rate
    board = None
    if predict is not None:
        if realtime or clock is not None:
            raise ValueError("replay: a prediction brings its own clock and is never real time")
        clock = PacedClock(rate)
        board = BoardTime(predict.layout, clock)
        parts = replace(parts, backends=paced(parts.backends, board, predict.timings, cfg.asr.window_s))
    clock = clock or SampleClock(rate, realtime=realtime)
    echo = echo or Echo()
    device = ReplayDevice(recording, clock, cfg.audio.chunk_samples, echo_gain=echo.gain,
                          echo_delay_ms=echo.delay_ms, realtime=realtime, recorded_reference=reference,
                          pacer=board)
    bus = EventBus(clock)
    began = start or datetime.now().astimezone()

    def now() -> datetime:
        return began + timedelta(seconds=clock.now())

    if tools is not None:
        tools.now = now
    session = parts.session(clock, bus, device, device.speaker, now=now)  # refuses a bad set-up first
    out_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - before the session: nothing waits yet
    recorder = JsonlRecorder(out_dir / "events.jsonl")
    summary = SummaryBuilder()
    bus.subscribe(recorder)
    bus.subscribe(summary)
    for fn in subscribers:
        bus.subscribe(fn)
    device.keep_going = lambda: session.state != "idle"
    try:
        with lockstep(not realtime):
            await session.run()
    finally:
        recorder.close()
        write_wav(out_dir / "played.wav", device.played(), rate)
        result = summary.summary()
        if predict is not None:
            result["prediction"] = predict.describe()
        (out_dir / "summary.json").write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n",
                                              encoding="utf-8")
    log.info("replay done", out=str(out_dir), turns=len(result["turns"]),
             session_s=round(clock.samples / rate, 2))
    return result
