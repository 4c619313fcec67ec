"""Session replay: a recording is the microphone, and the session's events, audio and summary
are written to a folder.

By default model compute takes zero session time (lockstep), so two replays write identical
events.jsonl. ``realtime`` paces the microphone at one second per second and runs the models
concurrently, so the latencies recorded are the true ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from assistant.audio.protocols import Samples
from assistant.audio.replay import ReplayDevice
from assistant.audio.wav import write_wav
from assistant.clock import SampleClock
from assistant.config import Config, ConfigError
from assistant.events import EventBus, JsonlRecorder, Subscriber
from assistant.phrase_cache import PhraseCache
from assistant.summary import SummaryBuilder
from models.worker import lockstep
from states.session import Backends, Session

if TYPE_CHECKING:
    from assistant.tools.answers import Tools

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


async def replay(cfg: Config, recording: Samples, out_dir: Path, backends: Backends, *,
                 echo: Echo | None = None, realtime: bool = False,
                 subscribers: Sequence[Subscriber] = (), clock: SampleClock | None = None,
                 phrase_cache: PhraseCache | None = None, reference: Samples | None = None,
                 tools: Tools | None = None, start: datetime | None = None) -> dict[str, Any]:
    """Run ``recording`` through a session; write played.wav, events.jsonl and summary.json.

    ``reference`` is the playback recorded with a room session (``assistant run --record``): the
    echo canceller is fed with it, since the recording holds the echo of that playback. The
    ``tools`` see the time as ``start`` (default: now) plus the session time, so timers set in a
    replay fall due in it.
    """
    rate = cfg.audio.sample_rate
    clock = clock or SampleClock(rate, realtime=realtime)
    echo = echo or Echo()
    device = ReplayDevice(recording, clock, cfg.audio.chunk_samples, echo_gain=echo.gain,
                          echo_delay_ms=echo.delay_ms, realtime=realtime, recorded_reference=reference)
    bus = EventBus(clock)
    began = start or datetime.now().astimezone()

    def now() -> datetime:
        return began + timedelta(seconds=clock.now())

    if tools is not None:
        tools.now = now
    session = Session(cfg, clock, bus, device, device.speaker, backends, phrase_cache,  # refuses a bad set-up first
                      tools=tools, now=now)
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
        (out_dir / "summary.json").write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n",
                                              encoding="utf-8")
    log.info("replay done", out=str(out_dir), turns=len(result["turns"]),
             session_s=round(clock.samples / rate, 2))
    return result
