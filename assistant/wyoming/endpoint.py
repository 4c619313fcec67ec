"""The address a Wyoming front end listens on (``assistant serve``, ``assistant satellite``): its
server, refused with a ConfigError when the address is bad, and its announcement by mDNS."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import structlog
from wyoming.server import AsyncServer, AsyncTcpServer

from assistant.config import ConfigError
from assistant.net import is_loopback, lan_address

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
