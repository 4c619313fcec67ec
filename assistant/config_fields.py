"""The building blocks of the config tree: the error every bad key raises, and one field with its
doc and its range or choices (read by ``assistant.config``)."""

from __future__ import annotations

from dataclasses import field
from typing import Any


class ConfigError(ValueError):
    """A config file or override that cannot be used; the message names the key."""


def opt(default: Any, doc: str, *, lo: float | None = None, hi: float | None = None,
         choices: tuple[str, ...] | None = None, allow_empty: bool = False) -> Any:
    meta = {"doc": doc, "lo": lo, "hi": hi, "choices": choices, "allow_empty": allow_empty, "default": default}
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata=meta)
    return field(default=default, metadata=meta)
