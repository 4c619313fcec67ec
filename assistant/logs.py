"""structlog set-up: human console or JSON lines, with turn_id and state on every line of a turn.

``turn_id`` is bound through contextvars when a turn starts, so every task of the turn carries it;
``state`` is read from the running session at the moment a line is logged.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, MutableMapping
from typing import Any

import structlog

_state_of_session: list[Callable[[], str]] = []


def follow_state(getter: Callable[[], str]) -> None:
    """Make ``state`` on every log line come from ``getter`` (the session's current state)."""
    _state_of_session[:] = [getter]


def _add_state(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    if _state_of_session and "state" not in event:
        event["state"] = _state_of_session[0]()
    return event


def setup(level: str = "info", fmt: str = "console") -> None:
    """Configure structlog for the process; logs go to stderr, stdout stays for results."""
    renderer: Any = (structlog.processors.JSONRenderer(ensure_ascii=False) if fmt == "json"
                     else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            _add_state,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=False),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
