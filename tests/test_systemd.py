"""sd_notify without libsystemd: READY and WATCHDOG reach a real datagram socket, nothing happens outside systemd."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant import systemd


@pytest.fixture
def manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A stand-in for the service manager's notify socket (a real AF_UNIX datagram socket)."""
    path = tmp_path / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(1.0)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    yield sock
    sock.close()


def test_ready_reaches_the_manager(manager: socket.socket) -> None:
    assert systemd.notify("READY=1")
    assert manager.recv(100) == b"READY=1"


def test_outside_systemd_nothing_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    assert not systemd.notify("READY=1")
    assert systemd.watchdog_interval_s() is None
    systemd.Heartbeat()()  # no watchdog: a no-op


def test_a_vanished_socket_is_a_warning_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone"))
    assert not systemd.notify("WATCHDOG=1")


def test_the_watchdog_is_pinged_at_half_its_timeout_and_only_for_this_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WATCHDOG_USEC", "30000000")
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert systemd.watchdog_interval_s() == 15.0
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid() + 1))  # meant for another process
    assert systemd.watchdog_interval_s() is None


def test_the_heartbeat_pings_once_per_interval(manager: socket.socket) -> None:
    beat = systemd.Heartbeat(interval_s=3600.0)
    for _ in range(50):  # fifty audio chunks
        beat()
    assert manager.recv(100) == b"WATCHDOG=1"
    manager.settimeout(0.05)
    with pytest.raises(TimeoutError):
        manager.recv(100)  # the other 49 chunks sent nothing
