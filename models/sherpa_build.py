"""Does the installed sherpa-onnx build have RKNN support? Read from its files, never by import.

sherpa-onnx built with ``-DSHERPA_ONNX_ENABLE_RKNN=ON`` links librknnrt.so (its RKNN install guide
checks ``ldd $(which sherpa-onnx)`` for ``librknnrt.so => /lib/librknnrt.so``); the PyPI build
does not, and asked for provider "rknn" it ends the whole process (exit code 255, "Please rebuild
sherpa-onnx with -DSHERPA_ONNX_ENABLE_RKNN=ON"). Asking the extension would run native code, so
the package's shared objects are found on disk and the DT_NEEDED entries of their ELF dynamic
sections read in pure Python (ELF32 and ELF64, either byte order).

``provider(requested, what)`` is what a backend asks: "rknn" only when requested and supported,
otherwise "cpu" and one log line. ``usable`` adds that the model files must be .rknn exports; the
sherpa backends pass their provider through it, so no caller can end the process by asking for
"rknn". The same checks serve every sherpa-onnx model (VAD, KWS, ASR).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import structlog

log = structlog.get_logger("sherpa_build")

RKNN_RUNTIME = "librknnrt.so"
DISTRIBUTIONS = ("sherpa-onnx", "sherpa-onnx-core")  # the Python package and the native libraries

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ = 0, 1, 5, 10
MAX_HEADERS = 4096  # more program headers or dynamic entries than this is no real library
MAX_STRTAB = 16 << 20


class NotElf(ValueError):
    """The file is not a (complete) ELF shared object."""


@dataclass(frozen=True)
class Support:
    """Whether the installed sherpa-onnx can run models on the NPU, and why (not)."""

    supported: bool
    detail: str  # which file needs librknnrt.so, or why none does
    version: str | None  # the installed sherpa-onnx version, None when it is not installed


def needed(path: Path) -> tuple[str, ...]:
    """The DT_NEEDED entries of an ELF file (the libraries the dynamic loader loads with it).

    Read from the PT_DYNAMIC segment, as the loader does, so a stripped library works too.
    Raises ``NotElf`` for anything that is not a complete ELF file, OSError if it cannot be read.
    """
    with path.open("rb") as f:
        ident = _read(f, 0, 16)
        if ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise NotElf("not an ELF file")
        wide, end = ident[4] == 2, "<" if ident[5] == 1 else ">"
        if wide:
            (phoff,) = struct.unpack(end + "Q", _read(f, 0x20, 8))
            phentsize, phnum = struct.unpack(end + "HH", _read(f, 0x36, 4))
            ph_format, dyn_format = end + "IIQQQQQQ", end + "qQ"
        else:
            (phoff,) = struct.unpack(end + "I", _read(f, 0x1C, 4))
            phentsize, phnum = struct.unpack(end + "HH", _read(f, 0x2A, 4))
            ph_format, dyn_format = end + "IIIIIIII", end + "iI"
        if phnum > MAX_HEADERS or (phnum and phentsize < struct.calcsize(ph_format)):
            raise NotElf("bad program header table")
        loads, dynamic = [], None
        for i in range(phnum):
            fields = struct.unpack(ph_format, _read(f, phoff + i * phentsize, struct.calcsize(ph_format)))
            # ELF64: type, flags, offset, vaddr, paddr, filesz, …; ELF32: type, offset, vaddr, paddr, filesz, …
            p_type, offset, vaddr, filesz = ((fields[0], fields[2], fields[3], fields[5]) if wide
                                             else (fields[0], fields[1], fields[2], fields[4]))
            if p_type == PT_LOAD:
                loads.append((vaddr, offset, filesz))
            elif p_type == PT_DYNAMIC:
                dynamic = (offset, filesz)
        if dynamic is None:
            return ()  # statically linked: needs nothing
        entries = _dynamic_entries(f, dynamic, dyn_format)
        names = [value for tag, value in entries if tag == DT_NEEDED]
        strtab = next((value for tag, value in entries if tag == DT_STRTAB), None)
        strsz = next((value for tag, value in entries if tag == DT_STRSZ), None)
        if not names:
            return ()
        if strtab is None or strsz is None or strsz > MAX_STRTAB:
            raise NotElf("no dynamic string table")
        table = _read(f, _file_offset(strtab, loads), strsz)
        return tuple(_string_at(table, i) for i in names)


def _read(f: BinaryIO, offset: int, size: int) -> bytes:
    f.seek(offset)
    data = f.read(size)
    if len(data) != size:
        raise NotElf("truncated ELF file")
    return data


def _dynamic_entries(f: BinaryIO, segment: tuple[int, int], fmt: str) -> list[tuple[int, int]]:
    offset, size = segment
    step = struct.calcsize(fmt)
    entries = []
    for i in range(min(size // step, MAX_HEADERS)):
        tag, value = struct.unpack(fmt, _read(f, offset + i * step, step))
        if tag == DT_NULL:
            break
        entries.append((tag, value))
    return entries


def _file_offset(address: int, loads: list[tuple[int, int, int]]) -> int:
    """Where a virtual address of a loaded segment lies in the file."""
    for vaddr, offset, filesz in loads:
        if vaddr <= address < vaddr + filesz:
            return address - vaddr + offset
    raise NotElf("the dynamic string table is outside every loaded segment")


def _string_at(table: bytes, index: int) -> str:
    end = table.find(b"\0", index)
    if index >= len(table) or end < 0:
        raise NotElf("a DT_NEEDED entry points outside the string table")
    return table[index:end].decode("utf-8", "replace")


def support_in(files: Iterable[Path], version: str | None = None) -> Support:
    """Whether any of ``files`` needs librknnrt.so; files that are not ELF count as not supporting."""
    checked, unreadable = 0, []
    for path in files:
        try:
            libraries = needed(path)
        except (NotElf, OSError) as exc:
            unreadable.append(f"{path.name}: {exc.strerror if isinstance(exc, OSError) else exc}")
            continue
        checked += 1
        if any(lib == RKNN_RUNTIME or lib.startswith(RKNN_RUNTIME + ".") for lib in libraries):
            return Support(True, f"{path.name} needs {RKNN_RUNTIME}", version)
    if checked:
        return Support(False, f"none of its {checked} shared objects needs {RKNN_RUNTIME} "
                              "(a build without RKNN, such as PyPI's)", version)
    if unreadable:
        return Support(False, "its shared objects could not be read: " + "; ".join(unreadable[:3]), version)
    return Support(False, "no shared objects found in the sherpa-onnx package", version)


def installed_files() -> list[Path]:
    """The shared objects of the installed sherpa-onnx, found without importing it."""
    found: set[Path] = set()
    for name in DISTRIBUTIONS:
        try:
            listed = importlib.metadata.distribution(name).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for entry in listed:
            if _is_shared_object(entry.name):
                found.add(Path(str(entry.locate())))
    # find_spec of a top-level name locates it without importing it
    spec = importlib.util.find_spec("sherpa_onnx")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for pattern in ("*.so*", "lib/*.so*"):
            found.update(p for p in Path(folder).glob(pattern) if _is_shared_object(p.name))
    old_layout = importlib.util.find_spec("_sherpa_onnx")  # older wheels put the extension at the top
    if old_layout is not None and old_layout.origin:
        found.add(Path(old_layout.origin))
    return sorted(p for p in found if p.is_file())


def _is_shared_object(name: str) -> bool:
    return name.endswith(".so") or ".so." in name


@functools.cache
def rknn_support() -> Support:
    """The installed sherpa-onnx build's RKNN support (read once per process)."""
    try:
        version: str | None = importlib.metadata.version("sherpa-onnx")
    except importlib.metadata.PackageNotFoundError:
        version = None
    files = installed_files()
    if version is None and not files:
        return Support(False, "sherpa-onnx is not installed", None)
    return support_in(files, version)


_fell_back: set[str] = set()


def provider(requested: str, what: str) -> str:
    """The provider a sherpa-onnx model of kind ``what`` may use: "rknn" only when requested and
    this build has RKNN support; otherwise "cpu", saying so once per kind."""
    if requested != "rknn":
        return "cpu"
    support = rknn_support()
    if support.supported:
        return "rknn"
    _fall_back(what, "sherpa-onnx has no RKNN support; running on the CPU",
               build=f"sherpa-onnx {support.version or 'not installed'}", detail=support.detail)
    return "cpu"


def usable(requested: str, what: str, files: Iterable[Path]) -> str:
    """What a backend actually passes to sherpa-onnx: ``provider(requested, what)``, and "rknn" only
    if the model's files are .rknn exports too (sherpa-onnx's RKNN code reads nothing else)."""
    chosen = provider(requested, what)
    if chosen != "rknn":
        return chosen
    not_rknn = [p.name for p in files if p.suffix != ".rknn"]
    if not not_rknn:
        return "rknn"
    _fall_back(what, "no .rknn export of this model; running on the CPU", files=", ".join(not_rknn))
    return "cpu"


def _fall_back(what: str, message: str, **facts: str) -> None:
    if what not in _fell_back:
        _fell_back.add(what)
        log.warning(message, what=what, **facts)


def forget() -> None:
    """Read the build again and log fallbacks anew (tests; a reinstalled package)."""
    rknn_support.cache_clear()
    _fell_back.clear()
