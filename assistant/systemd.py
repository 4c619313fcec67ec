"""Telling systemd how the service is doing (``Type=notify``, ``WatchdogSec``), without libsystemd.

``READY=1`` goes out once the models are loaded and the microphone is open; ``WATCHDOG=1`` from the
audio pump, so a loop that stops pumping (a capture device that hangs, a stuck state) gets the
service restarted. Outside systemd (no ``NOTIFY_SOCKET``) every call does nothing.
"""

from __future__ import annotations

import os
import socket
import time

import structlog

log = structlog.get_logger("systemd")


def notify(state: str) -> bool:
    """Send ``state`` (e.g. ``READY=1``) to the service manager; False when not run by one."""
    address = os.environ.get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(state.encode())
    except OSError as exc:
        log.warning("could not notify systemd", state=state, error=str(exc))
        return False
    return True


def watchdog_interval_s() -> float | None:
    """How often to ping the watchdog (half its timeout), or None if this process has none."""
    usec = os.environ.get("WATCHDOG_USEC", "")
    pid = os.environ.get("WATCHDOG_PID", "")
    if not usec.isdigit() or (pid.isdigit() and int(pid) != os.getpid()):
        return None
    return int(usec) / 2e6


class Heartbeat:
    """Pings the watchdog at most once per interval, each time it is called (once per audio chunk)."""

    def __init__(self, interval_s: float | None = None) -> None:
        self.interval_s = watchdog_interval_s() if interval_s is None else interval_s
        self._next = 0.0

    def __call__(self) -> None:
        if not self.interval_s:
            return
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self.interval_s
            notify("WATCHDOG=1")
