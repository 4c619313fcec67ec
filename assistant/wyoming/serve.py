"""``assistant serve``: Tingshuo's ASR, TTS and wake words as Wyoming services for Home Assistant,
on ``wyoming.uri`` (loopback unless the user sets an address), until Ctrl-C or SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from contextlib import suppress
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import structlog
from wyoming.server import AsyncServer, AsyncTcpServer

from assistant import app, systemd
from assistant.config import Config, ConfigError
from assistant.net import ListenError, is_loopback, lan_address, probe
from assistant.wyoming.handler import Handler, Services

if TYPE_CHECKING:
    from zeroconf.asyncio import AsyncZeroconf

log = structlog.get_logger("wyoming")


def server_for(uri: str, key: str = "wyoming.uri") -> AsyncServer:
    """The Wyoming server for a ``tcp://HOST:PORT`` or ``unix://PATH`` address, or a ConfigError."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("tcp", "unix") or (parsed.scheme == "tcp" and not parsed.hostname):
        raise ConfigError(f"{key}: {uri!r} is not tcp://HOST:PORT or unix://PATH")
    try:
        return AsyncServer.from_uri(uri)
    except ValueError as exc:
        raise ConfigError(f"{key}: {uri!r}: {exc}") from None


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


async def advertise(server: AsyncServer, name: str, section: str) -> AsyncZeroconf | None:
    """Announce ``NAME._wyoming._tcp.local.`` on the LAN (Home Assistant discovers it), or say why not."""
    import socket

    from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

    if not isinstance(server, AsyncTcpServer):
        log.warning(f"{section}.zeroconf: only a tcp:// address can be advertised")
        return None
    host: str | None = server.host
    if host in ("0.0.0.0", "::", ""):
        host = lan_address()
    if host is None:
        raise ConfigError(f"{section}.zeroconf: this machine has no LAN address to advertise")
    if is_loopback(host):
        log.warning(f"{section}.zeroconf: a loopback address is not advertised; set a LAN address in {section}.uri")
        return None
    try:
        packed = socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
    except OSError:
        raise ConfigError(f"{section}.zeroconf: {host!r} is not an IP address to advertise") from None
    zc = AsyncZeroconf()
    info: Any = AsyncServiceInfo("_wyoming._tcp.local.", f"{name}._wyoming._tcp.local.",
                                 addresses=[packed], port=server.port)
    await zc.async_register_service(info)
    log.info("advertised by mDNS", name=name, host=host, port=server.port)
    return zc
