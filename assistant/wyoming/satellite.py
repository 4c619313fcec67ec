"""``assistant satellite``: the hands-free front end as a satellite of a Home Assistant house.

Home Assistant connects to ``satellite.uri`` and sends ``run-satellite``. From then on the session
runs here as always (wake word, endpointing, echo defence, barge-in, earcon, playback); each request
is answered by a run of Home Assistant's voice pipeline (``assistant.wyoming.link``), and when its
answer has been played, ``played`` tells Home Assistant so. Timers Home Assistant sets through the
satellite ring here when they finish. Only the small models load: the VAD, the keyword spotter and
the end-of-turn model.
"""

from __future__ import annotations

import asyncio
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING

import numpy as np
import structlog
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong
from wyoming.satellite import PauseSatellite, RunSatellite
from wyoming.server import AsyncEventHandler, AsyncServer, AsyncTcpServer

from assistant import app, frontend
from assistant.audio.earcon import chime
from assistant.audio.protocols import AudioSink, AudioSource
from assistant.clock import SampleClock
from assistant.config import Config
from assistant.events import Event as Happened
from assistant.events import PlaybackFinished
from assistant.net import ListenError, probe
from assistant.status.board import StatusBoard
from assistant.tasks import TaskScope
from assistant.wyoming.endpoint import advertise, server_for
from assistant.wyoming.info import satellite_info
from assistant.wyoming.link import HaLink, Timer

if TYPE_CHECKING:
    from zeroconf.asyncio import AsyncZeroconf

log = structlog.get_logger("satellite")


def run(cfg: Config) -> None:
    """Be a satellite on the sound card until Ctrl-C or SIGTERM."""
    server = server_for(cfg.satellite.uri, "satellite.uri")  # a bad or taken address: before anything loads
    if isinstance(server, AsyncTcpServer):
        probe(server.host, server.port, "satellite.uri")
    from assistant.status.web import page_for, with_page

    page = page_for(cfg, "satellite", kinds=("vad", "kws", "turn"))
    clock = SampleClock(cfg.audio.sample_rate, realtime=True)
    source, sink = frontend.open_devices(cfg, clock)
    link = HaLink(cfg.satellite.reply_timeout_s)
    page.board.extra["home_assistant"] = lambda: home_status(link)
    try:
        with app.satellite(cfg, link) as parts:
            asyncio.run(with_page(page, lambda: _hold(parts, link, server, clock, source, sink, page.board)))
    finally:
        source.close()
        sink.close()


def home_status(link: HaLink) -> dict[str, object]:
    """The satellite's side of the house, for the status page."""
    return {"connected": link.send is not None, "paused": link.paused,
            "timers": [vars(t) for t in link.timers.values()]}


async def _hold(parts: app.Parts, link: HaLink, server: AsyncServer, clock: SampleClock, source: AudioSource,
                sink: AudioSink, board: StatusBoard) -> None:
    async with Satellite(parts.cfg, link, server, sink) as satellite:
        await frontend.hold(parts, clock, source, sink, subscribers=[satellite, board])


class Satellite:
    """The server Home Assistant connects to, and a bus subscriber that reports played replies."""

    def __init__(self, cfg: Config, link: HaLink, server: AsyncServer, sink: AudioSink | None = None) -> None:
        self.cfg, self.link, self.server, self.sink = cfg, link, server, sink
        self.info = satellite_info(cfg)
        self.tasks = TaskScope("satellite")
        self.advertised: AsyncZeroconf | None = None
        link.on_timer_finished = self._ring

    async def __aenter__(self) -> Satellite:
        try:
            await self.server.start(partial(Handler, self.link, self.info))
        except OSError as exc:
            raise ListenError(f"cannot listen on {self.cfg.satellite.uri}: {exc.strerror or exc}") from None
        if self.cfg.satellite.zeroconf:
            self.advertised = await advertise(self.server, self.cfg.satellite.name, "satellite")
        log.info("satellite ready for Home Assistant", uri=self.cfg.satellite.uri)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.tasks.cancel()
        if self.advertised is not None:
            await self.advertised.async_close()
        await self.server.stop()

    def __call__(self, t: float, event: Happened) -> None:
        if isinstance(event, PlaybackFinished):
            self.tasks.spawn(self.link.played(), "played")

    def _ring(self, timer: Timer) -> None:
        """A timer finished: three chimes (Home Assistant says nothing of it to a satellite)."""
        if self.sink is None:
            return
        rate = self.sink.sample_rate
        gap = np.zeros(rate // 4, np.float32)
        alarm = np.concatenate([chime(rate, 240, 0.3), gap] * 3).astype(np.float32)
        self.tasks.spawn(self.sink.write(alarm), "timer")


class Handler(AsyncEventHandler):
    """One connection from Home Assistant (the one that sent ``run-satellite`` runs the satellite)."""

    def __init__(self, link: HaLink, info: Info, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__(reader, writer)
        self.link, self.info = link, info

    async def handle_event(self, event: Event) -> bool:
        if Describe.is_type(event.type):
            await self.write_event(self.info.event())
        elif Ping.is_type(event.type):
            await self.write_event(Pong(text=Ping.from_event(event).text).event())
        elif RunSatellite.is_type(event.type):
            self.link.attach(self.write_event)
        elif PauseSatellite.is_type(event.type):
            self.link.paused = True
            log.info("paused by Home Assistant")
        elif self.link.send == self.write_event:
            self.link.receive(event)
        return True

    async def disconnect(self) -> None:
        self.link.detach(self.write_event)
