"""Addresses the services listen on: loopback unless the user sets one, and the errors of listening."""

from __future__ import annotations

import ipaddress
import socket


class ListenError(OSError):
    """An address that cannot be listened on (taken, or not this machine's); the message names it."""


def is_loopback(host: str) -> bool:
    """Is ``host`` reachable from this machine only? (``localhost`` is; a name is taken as not.)"""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def lan_address() -> str | None:
    """The address this machine reaches the LAN from, or None without one (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("224.0.0.251", 5353))
            return str(probe.getsockname()[0])
        except OSError:
            return None


def probe(host: str, port: int, key: str) -> None:
    """Is ``host:port`` free to listen on? A ListenError naming ``key`` if not (nothing stays bound)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ListenError(f"{key}: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            raise ListenError(f"{key}: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
