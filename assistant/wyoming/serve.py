"""``assistant serve``: Tingshuo's ASR, TTS and wake words as Wyoming services for Home Assistant,
on ``wyoming.uri`` (loopback unless the user sets an address), until Ctrl-C or SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from contextlib import suppress
from functools import partial

import structlog
from wyoming.server import AsyncServer, AsyncTcpServer

from assistant import app, systemd
from assistant.config import Config
from assistant.net import ListenError, probe
from assistant.wyoming.endpoint import advertise, server_for
from assistant.wyoming.handler import Handler, Services

log = structlog.get_logger("wyoming")


def run(cfg: Config) -> None:
    """Serve until stopped."""
    from assistant.status.web import page_for, with_page

    server = server_for(cfg.wyoming.uri)  # a bad or taken address is refused before the models load
    if isinstance(server, AsyncTcpServer):
        probe(server.host, server.port, "wyoming.uri")
    page = page_for(cfg, "serve", kinds=("asr", "tts", "kws"))
    with app.services(cfg) as services:
        services.board = page.board
        page.board.extra["wyoming_requests"] = lambda: dict(services.served)
        asyncio.run(with_page(page, lambda: serve(cfg, server, services)))


async def serve(cfg: Config, server: AsyncServer, services: Services, stop: asyncio.Event | None = None) -> None:
    """Answer connections on ``server`` until ``stop`` is set (or SIGINT/SIGTERM)."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await server.start(partial(Handler, services))
    except OSError as exc:
        raise ListenError(f"cannot listen on {cfg.wyoming.uri}: {exc.strerror or exc}") from None
    advertised = await advertise(server, cfg.wyoming.name, "wyoming") if cfg.wyoming.zeroconf else None
    log.info("wyoming services ready", uri=cfg.wyoming.uri, asr=services.info.asr[0].models[0].name,
             voices=len(services.info.tts[0].voices), wake_words=[m.name for w in services.info.wake for m in w.models])
    systemd.notify("READY=1")
    try:
        await stop.wait()
    finally:
        if advertised is not None:
            await advertised.async_close()
        await server.stop()
        log.info("wyoming services stopped")
