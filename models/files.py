"""Finding model files and checking them before any runtime sees them.

Native runtimes can end the whole process on a missing or corrupt file, so every file is checked
here first: it exists, and its sha256 matches the one we ship with the backend.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

from models.protocols import ModelError

_verified: dict[tuple[Path, float, int], str] = {}


def sha256(path: Path) -> str:
    """The file's sha256, remembered per (path, mtime, size) so a restart-free reload is free."""
    st = path.stat()
    key = (path.resolve(), st.st_mtime, st.st_size)
    if key not in _verified:
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _verified[key] = h.hexdigest()
    return _verified[key]


def verified(path: Path, expected_sha256: str, what: str) -> Path:
    """``path`` if it exists and matches ``expected_sha256``; otherwise a ModelError for the user."""
    if not path.is_file():
        raise ModelError(f"{what}: model file not found: {path}")
    try:
        actual = sha256(path)
    except OSError as exc:
        raise ModelError(f"{what}: cannot read {path}: {exc}") from None
    if actual != expected_sha256:
        raise ModelError(f"{what}: {path} is corrupt or the wrong file "
                         f"(sha256 {actual[:12]}…, expected {expected_sha256[:12]}…); fix: delete it and run "
                         f"`assistant models fetch`")
    return path


def package_file(package: str, relative: str) -> Path | None:
    """A data file shipped inside an installed package, located without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / relative
        if candidate.is_file():
            return candidate
    return None


def forget_hashes() -> None:
    """Make the next check of every file read it again (``assistant models verify``)."""
    _verified.clear()


def runtime_dir() -> Path | None:
    """Where short-lived files go: in RAM (``$XDG_RUNTIME_DIR``, else /dev/shm), never the SD card;
    None if neither is writable (the system's temporary folder then)."""
    for candidate in (os.environ.get("XDG_RUNTIME_DIR", ""), "/dev/shm"):
        if candidate and os.access(candidate, os.W_OK | os.X_OK) and Path(candidate).is_dir():
            return Path(candidate)
    return None
