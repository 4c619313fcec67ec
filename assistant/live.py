"""The sound-card front end (``assistant run``): conversations on the ALSA devices until Ctrl-C or
SIGTERM, optionally recorded for replay."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

import structlog

from assistant import app, health, systemd
from assistant.audio.alsa import AlsaSink, AlsaSource
from assistant.audio.protocols import AudioDeviceError, AudioSink, AudioSource
from assistant.audio.recorder import SessionRecorder
from assistant.clock import SampleClock
from assistant.config import Config
from assistant.events import EventBus, Subscriber
from assistant.tasks import TaskScope

log = structlog.get_logger("app")


def run(cfg: Config, record: Path | None = None) -> None:
    """Hold conversations on the configured devices; with ``record``, save each session under it."""
    from assistant.status.web import page_for, with_page

    page = page_for(cfg, "run")
    clock = SampleClock(cfg.audio.sample_rate, realtime=True)
    source, sink = open_devices(cfg, clock)  # before the models load: a missing card is found at once
    rec = None
    try:
        with app.conversation(cfg) as parts:
            page.board.pids = parts.pids
            if record is not None:
                rec = recorder(record, cfg.audio.sample_rate, cfg.audio.record_max_minutes, cfg.audio.record_keep)
            asyncio.run(with_page(page, lambda: hold(parts, clock, source, sink, [page.board], recorder=rec)))
    finally:
        source.close()
        sink.close()
        if rec is not None:
            rec.close()
            kept = f" (and {len(rec.folders) - 1} earlier folders beside it)" if len(rec.folders) > 1 else ""
            print(f"recorded this session in {rec.folder}{kept} (replay it with: assistant replay "
                  f"{rec.folder} --out OUT)")


def open_devices(cfg: Config, clock: SampleClock) -> tuple[AlsaSource, AlsaSink]:
    """The configured microphone and speaker; a missing sound card is one clear AudioDeviceError."""
    source = AlsaSource(cfg.audio.capture_device, clock, cfg.audio.chunk_samples)
    try:
        sink = AlsaSink(cfg.audio.playback_device, cfg.audio.playback_rate, cfg.audio.playback_buffer_ms)
    except Exception:
        source.close()
        raise
    return source, sink


def recorder(folder: Path, sample_rate: int, max_minutes: float = 0.0, keep: int = 0) -> SessionRecorder:
    """A new session folder under ``folder`` (named by the local start time) for ``run --record``;
    after ``max_minutes`` the next one begins, and only the last ``keep`` are kept."""
    path = _session_folder(folder)
    try:
        return SessionRecorder(path, sample_rate, max_s=60 * max_minutes, keep=keep,
                               next_folder=lambda: _session_folder(folder))
    except OSError as exc:
        raise AudioDeviceError(f"cannot record into {path}: {exc.strerror or exc}") from None


def _session_folder(folder: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"session-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"session-{stamp}-{n}"
    return path


async def hold(parts: app.Parts, clock: SampleClock, source: AudioSource, sink: AudioSink,
               subscribers: Sequence[Subscriber] = (), recorder: SessionRecorder | None = None) -> None:
    """Hold conversations on the given devices until the source ends (Ctrl-C or SIGTERM close it).

    With a ``recorder`` the microphone, the playback and the events are saved as they happen.
    """
    cfg = parts.cfg
    bus = EventBus(clock)
    for fn in subscribers:
        bus.subscribe(fn)
    if recorder is not None:
        bus.subscribe(recorder.event)
    session = parts.session(clock, bus, source, sink, tap=recorder)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, source.close)
    session.heartbeat = systemd.Heartbeat()  # WatchdogSec: pinged from the pump, so a stalled pump is restarted
    log.info("ready", wake=cfg.wake.mode, keywords=list(cfg.wake.keywords))
    systemd.notify("READY=1")
    watch = TaskScope("health")
    watch.spawn(health.report_every(cfg.log.health_interval_s, parts.pids), "health")
    try:
        await session.run()
    finally:
        await watch.cancel()
