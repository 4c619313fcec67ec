"""Addresses the services listen on: loopback unless the user sets one, and the errors of listening."""

from __future__ import annotations

import ipaddress
import os
import socket
import stat
from pathlib import Path


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


class SecretError(ValueError):
    """A secret's file that cannot be used (unreadable, empty, or readable by others)."""


def read_secret(path: Path | None, key: str, env: str) -> str | None:
    """A token from ``path`` (a file only its owner may read), else from ``$env``; None if neither.
    The token itself is never logged or put in a message."""
    if path is None:
        return os.environ.get(env, "").strip() or None
    try:
        mode = path.stat().st_mode
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise SecretError(f"{key}: cannot read {path}: {exc.strerror or exc}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecretError(f"{key}: {path} can be read by others; run `chmod 600 {path}`")
    if not token:
        raise SecretError(f"{key}: {path} is empty")
    return token
