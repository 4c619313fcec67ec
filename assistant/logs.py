"""structlog set-up: human console or JSON lines, with turn_id and state on every line of a turn.

``turn_id`` is bound through contextvars when a turn starts, so every task of the turn carries it;
``state`` is read from the running session at the moment a line is logged.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

import structlog

if TYPE_CHECKING:
    from assistant.config import Config

_state_of_session: list[Callable[[], str]] = []


def follow_state(getter: Callable[[], str]) -> None:
    """Make ``state`` on every log line come from ``getter`` (the session's current state)."""
    _state_of_session[:] = [getter]


def _add_state(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    if _state_of_session and "state" not in event:
        event["state"] = _state_of_session[0]()
    return event


class RotatingFile:
    """A log file that never outgrows its caps: at ``max_bytes`` it is renamed ``NAME.1`` (``NAME.1``
    becomes ``NAME.2`` …) and a new one begins; files past ``total_bytes`` in all are deleted."""

    def __init__(self, path: Path, max_bytes: int, total_bytes: int) -> None:
        self.path, self.max_bytes = path, max(1, max_bytes)
        self.keep = max(0, total_bytes // self.max_bytes - 1)  # old files kept besides the current one
        path.parent.mkdir(parents=True, exist_ok=True)
        self._f: TextIO = path.open("a", encoding="utf-8")
        self._size = path.stat().st_size

    def write(self, text: str) -> None:
        size = len(text.encode("utf-8"))
        if self._size and self._size + size > self.max_bytes:
            self._rotate()
        self._f.write(text)
        self._f.flush()
        self._size += size

    def flush(self) -> None:
        self._f.flush()

    def _rotate(self) -> None:
        self._f.close()
        old = [self.path.with_name(f"{self.path.name}.{i}") for i in range(1, self.keep + 1)]
        if old:
            old[-1].unlink(missing_ok=True)  # the oldest: the next one would take the logs past the total
            for i in range(len(old) - 1, 0, -1):
                if old[i - 1].exists():
                    old[i - 1].replace(old[i])
            self.path.replace(old[0])
        else:
            self.path.unlink(missing_ok=True)
        self._f = self.path.open("a", encoding="utf-8")
        self._size = 0


def file_for(cfg: Config, process: str = "") -> RotatingFile | None:
    """The rotating log file of the main process (or of ``process``, e.g. "worker", beside it), if
    ``log.file`` is set; the two processes share ``log.total_max_mb``."""
    if not cfg.log.file:
        return None
    path = cfg.path(cfg.log.file)
    if process:
        path = path.with_name(f"{path.stem}-{process}{path.suffix}")
    mb = 1024 * 1024
    try:
        return RotatingFile(path, int(cfg.log.file_max_mb * mb), int(cfg.log.total_max_mb * mb / 2))
    except OSError as exc:
        from assistant.config import ConfigError

        raise ConfigError(f"log.file: cannot write {path}: {exc.strerror or exc}") from None


class Stderr:
    """Whatever ``sys.stderr`` is when a line is written, not when logging was set up (a stream
    replaced since, as a test's captured one is, must not take the log lines down with it)."""

    def write(self, text: str) -> None:
        sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


class Tee(Stderr):
    """Stderr, and a log file besides (the file without terminal colours)."""

    def __init__(self, file: RotatingFile) -> None:
        self.file = file

    def write(self, text: str) -> None:
        super().write(text)
        self.file.write(text)

    def flush(self) -> None:
        super().flush()
        self.file.flush()


def setup(level: str = "info", fmt: str = "console", file: RotatingFile | None = None) -> None:
    """Configure structlog for the process; logs go to stderr (and ``file``), stdout stays for results."""
    colors = sys.stderr.isatty() and file is None
    renderer: Any = (structlog.processors.JSONRenderer(ensure_ascii=False) if fmt == "json"
                     else structlog.dev.ConsoleRenderer(colors=colors))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            _add_state,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=False),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=cast(TextIO, Stderr() if file is None else Tee(file))),
        cache_logger_on_first_use=False,
    )
