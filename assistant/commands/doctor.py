"""``assistant doctor``: what this machine offers Tingshuo, and which known mismatches it has.

Each check is a small function returning rows (name, status, detail). ``ok``; ``absent`` (not here,
which is normal: an x86 box has no NPU); ``warn`` (a known problem) and ``error`` (a corrupt file,
or a check that failed) are *flagged*: ``--strict`` exits 1 on them. Nothing native is loaded:
library and model versions are read from the files' bytes, sherpa-onnx's RKNN support from its
ELF headers, and sound devices are opened with pyalsaaudio (never ``sherpa_onnx.Alsa``, which ends
the process when there is no sound card).

Known mismatches it flags, learned on the RK3576 and from upstream reports:

- librknnrt, rknn-toolkit-lite2 and the toolkit a .rknn model was compiled with must be one
  version (2.3.2 for all three worked);
- rknn-toolkit-lite2 has no wheel for Python 3.13, the board's system Python (pip finds no
  2.3.2 for cp313): ``setup.sh`` on the board builds the venv on Debian 12's python3.11;
- sherpa-onnx's RKNN models crash in ``rknn_run`` under librknnrt 2.3.x (k2-fsa/sherpa-onnx#3154,
  #2118); its maintainers pin librknnrt 2.2.0 (#2318);
- RKLLM 1.3.0 needs the RKNPU driver v0.9.8 (Rockchip RKLLM SDK 1.3.0 manual, section 2.4).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import mmap
import os
import platform
import re
import struct
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from assistant import budget
from assistant.config import Config
from models import sherpa_build

OK, WARN, ABSENT, ERROR = "ok", "warn", "absent", "error"
FLAGGED = (WARN, ERROR)
WORKED = "2.3.2"  # librknnrt = rknn-toolkit-lite2 = the models' compile toolkit on the RK3576
RKLLM_DRIVER = (0, 9, 8)
ARM_PARTS = {0xD03: "Cortex-A53", 0xD04: "Cortex-A35", 0xD05: "Cortex-A55", 0xD07: "Cortex-A57",
             0xD08: "Cortex-A72", 0xD09: "Cortex-A73", 0xD0A: "Cortex-A75", 0xD0B: "Cortex-A76",
             0xD0D: "Cortex-A77", 0xD41: "Cortex-A78"}
# `strings librknnrt.so | grep "librknnrt version"` → librknnrt version: 2.3.2 (429f97ae6b@2025-04-09T09:09:27)
RKNNRT_VERSION = re.compile(rb"librknnrt version: (\d+\.\d+\.\d+[\w.+-]*)(?: \(([^)\x00]*)\))?")
# A .rknn model's flatbuffer "compiler" string: "2.3.2+81f21f4d(compiler version: 2.3.2 (e045de294f@…))"
RKNN_COMPILER = re.compile(rb"(\d+\.\d+\.\d+[\w.+-]*)\(compiler version: [^\x00]{1,200}")
PACKAGES = ("numpy", "onnxruntime", "sherpa-onnx", "faster-whisper", "ctranslate2", "llama-cpp-python",
            "transitions", "pyalsaaudio", "structlog", "soxr", "pywebrtc-audio")
SHERPA_RKNN_ISSUES = ("sherpa-onnx's RKNN models crash in rknn_run under librknnrt 2.3.x (k2-fsa/sherpa-onnx#3154, "
                      "#2118); its maintainers pin librknnrt 2.2.0 (#2318)")


@dataclass(frozen=True)
class Row:
    name: str
    status: str  # ok, warn, absent, error
    detail: str


@dataclass(frozen=True)
class Env:
    """Where the doctor looks; tests point it at fake files."""

    proc: Path = Path("/proc")
    sysfs: Path = Path("/sys")
    dev: Path = Path("/dev")
    machine: str = field(default_factory=platform.machine)
    python: tuple[int, ...] = tuple(sys.version_info[:3])
    can_use: Callable[[Path], bool] = lambda node: os.access(node, os.R_OK | os.W_OK)  # a device node, as this user


# -- reading versions from files, without loading them ---------------------------------------------
def _search(path: Path, pattern: re.Pattern[bytes]) -> list[bytes] | None:
    """The match of ``pattern`` in the file's bytes: the whole match, then its groups ("" if unmatched)."""
    with path.open("rb") as f:
        if path.stat().st_size == 0:
            return None
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            found = pattern.search(data)
            return [found.group(0), *(g or b"" for g in found.groups())] if found else None


def library_version(path: Path, pattern: re.Pattern[bytes] = RKNNRT_VERSION) -> str | None:
    """The version a runtime library carries in its strings, e.g. ``2.3.2 (429f97ae6b@…)``."""
    found = _search(path, pattern)
    if found is None:
        return None
    version, *more = (g.decode("ascii", "replace") for g in found[1:])
    return " ".join([version, *(f"({m})" for m in more if m)])


def rknn_compiler(path: Path) -> str | None:
    """The toolkit a .rknn model was compiled with, e.g. ``2.3.2+81f21f4d(compiler version: 2.3.2 …)``.

    A .rknn file is "RKNN", 4 bytes, a uint64 format version, a uint64 data size, 40 more header
    bytes (format ≥ 2), the model as a flatbuffer (identifier "RKNN"), then a JSON trailer. The
    string is field 7 ("compiler") of the flatbuffer's root table (netron's tools/rknn.fbs); only
    the bytes on the way are read. Falls back to a search of the file for the string itself.
    """
    with path.open("rb") as f:
        head = f.read(64)
        if len(head) < 24 or head[:4] != b"RKNN":
            return None
        fmt = struct.unpack("<Q", head[8:16])[0]
        start = 24 if fmt in (1, 0x1001) else 64

        def at(offset: int, layout: str) -> int:
            f.seek(offset)
            data = f.read(struct.calcsize(layout))
            if len(data) != struct.calcsize(layout):
                raise ValueError("truncated")
            return int(struct.unpack(layout, data)[0])

        try:
            table = start + at(start, "<I")
            vtable = table - at(table, "<i")
            if at(vtable, "<H") > 4 + 2 * 7 and (field_at := at(vtable + 4 + 2 * 7, "<H")):
                text = table + field_at + at(table + field_at, "<I")
                length = at(text, "<I")  # a flatbuffer string: its length, then its bytes
                value = f.read(min(length, 1024)).decode("utf-8", "replace")
                if "compiler version" in value:
                    return value
        except (ValueError, OSError, struct.error):
            pass
    found = _search(path, RKNN_COMPILER)
    return found[0].decode("utf-8", "replace") if found else None


def base_version(text: str | None) -> str | None:
    found = re.match(r"v?(\d+\.\d+\.\d+)", text or "")
    return found.group(1) if found else None


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _progress(text: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[K{text}")
        sys.stderr.flush()


# -- the checks -------------------------------------------------------------------------------------
def python(cfg: Config, env: Env) -> list[Row]:
    return [Row("python", OK, f"{'.'.join(map(str, env.python))} on {env.machine} ({sys.executable})")]


def cpu(cfg: Config, env: Env) -> list[Row]:
    fields = [tuple(p.strip() for p in line.split(":", 1))
              for line in (env.proc / "cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
              if ":" in line]
    cores = sum(1 for k, _ in fields if k == "processor")
    parts = Counter(int(v, 16) for k, v in fields if k == "CPU part")
    names = [v for k, v in fields if k in ("model name", "Hardware")]
    if parts:
        what = " + ".join(f"{n}× {ARM_PARTS.get(p, hex(p))}" for p, n in sorted(parts.items()))
    else:
        what = names[0] if names else "unknown CPU"
    detail = f"{cores or sum(parts.values())} cores: {what}"
    try:
        compatible = [c for c in (env.proc / "device-tree" / "compatible").read_bytes().decode(
            "ascii", "replace").split("\0") if c]
    except OSError:
        compatible = []
    if compatible:
        detail += f"; SoC {compatible[-1]}" + (f" (board {compatible[0]})" if len(compatible) > 1 else "")
    return [Row("cpu", OK, detail)]


def memory(cfg: Config, env: Env) -> list[Row]:
    available = budget.mem_available(env.proc / "meminfo")
    need = sum(i.bytes for i in budget.needs(cfg))
    if available is None:
        return [Row("memory", ABSENT, f"no MemAvailable; the configured assistant needs {need / budget.MB:.0f} MB")]
    room = available - cfg.budget.reserve_mb * budget.MB
    detail = (f"{available / budget.MB:.0f} MB available, the configured assistant needs {need / budget.MB:.0f} MB "
              f"(+ {cfg.budget.reserve_mb} MB kept back)")
    return [Row("memory", OK if need <= room else WARN, detail)]


def npu_driver(env: Env) -> tuple[str | None, Path | None, list[Path]]:
    """(version, where it was read, files that need root) of the RKNPU kernel driver."""
    denied = []
    for path in (env.sysfs / "module" / "rknpu" / "version", env.sysfs / "kernel" / "debug" / "rknpu" / "version",
                 env.proc / "rknpu" / "version"):
        try:
            text = path.read_text(encoding="ascii", errors="replace")  # "0.9.8" or "RKNPU driver: v0.9.8"
        except PermissionError:
            denied.append(path)
            continue
        except OSError:
            continue
        if version := base_version(text.split(":")[-1].strip()):
            return version, path, denied
    return None, None, denied


def npu(cfg: Config, env: Env) -> list[Row]:
    version, where, denied = npu_driver(env)
    nodes = [p for p in (env.dev / "rknpu",) if p.exists()] + sorted((env.dev / "dri" / "by-path").glob("*npu*"))
    root = f"; {', '.join(map(str, denied))} needs root (sudo)" if denied else ""
    if version is None and not nodes:
        return [Row("npu", ABSENT, f"no RKNPU driver or device ({env.sysfs}/module/rknpu, {env.dev}/rknpu, "
                                   f"{env.dev}/dri/by-path/*npu*){root}: the CPU backends run")]
    shown = ", ".join(str(n) for n in nodes) or "no device node"
    if version is None:
        return [Row("npu", OK, f"driver version unreadable{root}; {shown}")]
    detail = f"RKNPU driver {version} ({where}); {shown}"
    if locked := [n for n in nodes if not env.can_use(n)]:
        return [Row("npu", WARN, f"{detail}; this user cannot open {', '.join(map(str, locked))}: add it to the "
                                 "render and video groups (deploy/tingshuo.service runs with them)")]
    uses_rkllm = cfg.models.llm == "rkllm" or cfg.path(cfg.rkllm.library).is_file()
    if uses_rkllm and tuple(int(p) for p in version.split(".")) < RKLLM_DRIVER:
        return [Row("npu", WARN, detail + "; RKLLM 1.3.0 needs driver 0.9.8 (Rockchip RKLLM SDK 1.3.0 manual, 2.4)")]
    return [Row("npu", OK, detail)]


def _library(name: str, path: Path, pattern: re.Pattern[bytes], needed: bool) -> Row:
    if not path.is_file():
        return Row(name, WARN if needed else ABSENT, f"{path} not found")
    version = library_version(path, pattern)
    return Row(name, OK, f"{version} ({path})" if version else f"{path} (no version string found in it)")


def librknnrt(cfg: Config, env: Env) -> list[Row]:
    return [_library("librknnrt", cfg.path(cfg.npu.rknn_runtime), RKNNRT_VERSION,
                     cfg.models.tts in ("matcha-rknn", "kokoro-rknn"))]


def librkllmrt(cfg: Config, env: Env) -> list[Row]:
    """The RKLLM runtime, read as the binding reads it (models/rkllm_abi.py): 1.3.0 or refused."""
    from models import rkllm_abi

    path, needed = cfg.path(cfg.rkllm.library), cfg.models.llm == "rkllm"
    if not path.is_file():
        return [Row("librkllmrt", WARN if needed else ABSENT, f"{path} not found")]
    versions = rkllm_abi.runtime_versions(path)
    if versions is None:
        return [Row("librkllmrt", WARN, f"{path} is not an RKLLM runtime (no 'rkllm-runtime version' banner)")]
    if rkllm_abi.VERSION in versions:
        return [Row("librkllmrt", OK, f"{rkllm_abi.VERSION} ({path})")]
    found = ", ".join(sorted(versions)) or "none"
    return [Row("librkllmrt", WARN, f"{path}: version strings {found}; the binding needs {rkllm_abi.VERSION}")]


def rknn_toolkit_lite2(cfg: Config, env: Env) -> list[Row]:
    version = package_version("rknn-toolkit-lite2")
    if version:
        return [Row("rknn-toolkit-lite2", OK, version)]
    if env.machine != "aarch64":
        return [Row("rknn-toolkit-lite2", ABSENT, f"not installed (its wheels are for aarch64; this is {env.machine})")]
    if env.python >= (3, 13):
        return [Row("rknn-toolkit-lite2", WARN, f"no wheel for Python {env.python[0]}.{env.python[1]}: run "
                                                "./setup.sh on the board (it uses Python 3.11; see README)")]
    wanted = base_version(library_version(p) if (p := cfg.path(cfg.npu.rknn_runtime)).is_file() else None)
    needed = cfg.models.tts in ("matcha-rknn", "kokoro-rknn")
    return [Row("rknn-toolkit-lite2", WARN if needed else ABSENT,
                f"not installed: pip install rknn-toolkit-lite2=={wanted or WORKED}")]


def rknn_versions(cfg: Config, env: Env) -> list[Row]:
    """librknnrt, rknn-toolkit-lite2 and each .rknn model's compile toolkit must agree."""
    found: dict[str, str] = {}
    runtime = cfg.path(cfg.npu.rknn_runtime)
    if runtime.is_file() and (v := base_version(library_version(runtime))):
        found["librknnrt"] = v
    if v := base_version(package_version("rknn-toolkit-lite2")):
        found["rknn-toolkit-lite2"] = v
    for model in (cfg.path(cfg.matcha.acoustic_model), cfg.path(cfg.matcha.vocoder)):
        if model.is_file() and (v := base_version(rknn_compiler(model))):
            found[f"{model.name} compiled by"] = v
    if len(found) < 2:
        return [Row("rknn versions", ABSENT, "fewer than two of librknnrt, rknn-toolkit-lite2 and a .rknn model "
                                             "here: nothing to compare")]
    listed = ", ".join(f"{k} {v}" for k, v in found.items())
    if len(set(found.values())) == 1:
        return [Row("rknn versions", OK, f"all {next(iter(found.values()))}: {listed}")]
    return [Row("rknn versions", WARN, f"mismatch: {listed}; they must be one version ({WORKED} for all worked)")]


def rknn_toolkit2(cfg: Config, env: Env) -> list[Row]:
    """The PC's rknn-toolkit2, in its own venv, that ``assistant npu build`` converts the models with."""
    from assistant.commands.npu import toolkit_python

    if env.machine != "x86_64":
        return [Row("rknn-toolkit2", ABSENT, f"the NPU models are built on an x86_64 PC (this is {env.machine})")]
    python = toolkit_python()
    install = python.parent.parent.parent / "install.json"
    if not python.is_file() or not install.is_file():
        return [Row("rknn-toolkit2", ABSENT, "not installed; only `assistant npu build` needs it: "
                    "deploy/rknn-toolkit.sh "
                    "(its own venv, about 3 GB of downloads)")]
    info = json.loads(install.read_text("utf-8"))
    return [Row("rknn-toolkit2", OK, f"{info.get('rknn_toolkit2')} with torch {info.get('torch')} "
                f"(Python {info.get('python')}) in {python.parent.parent}; its models need librknnrt and "
                f"rknn-toolkit-lite2 {info.get('rknn_toolkit2')} on the board")]


def sherpa_rknn(cfg: Config, env: Env) -> list[Row]:
    support = sherpa_build.rknn_support()
    build = f"sherpa-onnx {support.version or 'not installed'}"
    if not support.supported:
        asked = cfg.models.sherpa_provider == "rknn"
        tail = ": models.sherpa_provider = rknn falls back to the CPU" if asked else ""
        return [Row("sherpa-onnx rknn", WARN if asked else ABSENT, f"{build}: {support.detail}{tail}")]
    runtime = cfg.path(cfg.npu.rknn_runtime)
    rt = base_version(library_version(runtime)) if runtime.is_file() else None
    if rt and rt.startswith(("2.3.", "2.4.")):
        return [Row("sherpa-onnx rknn", WARN, f"{build} ({support.detail}) with librknnrt {rt}: {SHERPA_RKNN_ISSUES}")]
    return [Row("sherpa-onnx rknn", OK, f"{build}: {support.detail}")]


def sound(cfg: Config, env: Env) -> list[Row]:
    try:
        text = (env.proc / "asound" / "cards").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    cards = [f"{m[1]}: {m[2]} ({m[3].strip()})"
             for m in re.finditer(r"^\s*(\d+)\s+\[(\S+)\s*\]:\s*(.*)$", text, re.MULTILINE)]
    if not cards:
        none = [Row("sound cards", ABSENT, f"no sound card ({env.proc}/asound/cards lists none)")]
        return none + [Row(f"{kind} device", ABSENT, f"{name!r}: no sound card") for kind, name in
                       (("capture", cfg.audio.capture_device), ("playback", cfg.audio.playback_device))]
    rows = [Row("sound cards", OK, "; ".join(cards))]
    for kind, name in (("capture", cfg.audio.capture_device), ("playback", cfg.audio.playback_device)):
        problem = open_pcm(kind, name, cfg.audio.sample_rate)
        rows.append(Row(f"{kind} device", WARN if problem else OK, f"{name!r}: {problem or 'opens'}"))
    return rows


def open_pcm(kind: str, device: str, rate: int) -> str | None:
    """Why ``device`` cannot be opened as the assistant opens it, or None when it can."""
    try:
        import alsaaudio
    except ImportError as exc:
        return f"pyalsaaudio is not installed ({exc})"
    from assistant.audio.alsa import silence_alsa_lib

    silence_alsa_lib()
    pcm_type = alsaaudio.PCM_CAPTURE if kind == "capture" else alsaaudio.PCM_PLAYBACK
    try:
        pcm = alsaaudio.PCM(pcm_type, alsaaudio.PCM_NONBLOCK, device=device, rate=rate, channels=1,
                            format=alsaaudio.PCM_FORMAT_S16_LE)
    except alsaaudio.ALSAAudioError as exc:
        return f"cannot open: {exc}"
    pcm.close()
    return None


def models(cfg: Config, env: Env) -> list[Row]:
    from assistant.backends import assets_for, configured_models

    assets, rows = assets_for(cfg), []
    for model in configured_models(cfg):
        _progress(f"doctor: checking {model.name}…")
        name, states = f"model {model.name}", assets.status(model)  # hashes each file found
        bad = [s for s in states if s.state == "bad hash"]
        missing = [s for s in states if s.state == "missing"]
        if bad:
            rows.append(Row(name, ERROR, f"hash mismatch: {bad[0].where}; run `assistant models fetch`"))
        elif missing:
            rows.append(Row(name, WARN, f"missing {', '.join(s.file for s in missing)}; run "
                                        f"`assistant models fetch {model.name}`"))
        else:
            where = sorted({str(Path(s.where).parent) if s.state == "ok" else s.where for s in states})
            rows.append(Row(name, OK, f"{len(states)} file(s), sha256 verified: {'; '.join(where)}"))
    _progress("")
    return rows


def npu_models(cfg: Config, env: Env) -> list[Row]:
    matcha, rkllm = cfg.models.tts == "matcha-rknn", cfg.models.llm == "rkllm"
    files = [("matcha.acoustic_model", cfg.matcha.acoustic_model, matcha),
             ("matcha.vocoder", cfg.matcha.vocoder, matcha), ("matcha.lexicon", cfg.matcha.lexicon, matcha),
             ("matcha.tokens", cfg.matcha.tokens, matcha), ("rkllm.model", cfg.rkllm.model, rkllm)]
    rows = []
    for key, value, used in files:
        path = cfg.path(value)
        if not path.is_file():
            rows.append(Row(key, WARN if used else ABSENT, f"{path} not found"))
            continue
        _progress(f"doctor: hashing {path.name}…")
        detail = f"{path} ({path.stat().st_size / 1e6:.1f} MB, sha256 {_sha256(path)})"
        if path.suffix == ".rknn":
            compiler = rknn_compiler(path)
            detail += f"; compiled by {compiler}" if compiler else "; no toolkit version found (not an .rknn file?)"
        rows.append(Row(key, OK, detail))
    _progress("")
    return rows


def packages(cfg: Config, env: Env) -> list[Row]:
    """The runtime packages' versions; llama-cpp-python is only missed when the LLM is llama.cpp (a board
    on RKLLM installs without it)."""
    rows = []
    for name in PACKAGES:
        if v := package_version(name):
            rows.append(Row(name, OK, v))
        elif name == "llama-cpp-python" and cfg.models.llm != "llama":
            rows.append(Row(name, ABSENT, f"not installed (models.llm = {cfg.models.llm!r} does not use it)"))
        else:
            rows.append(Row(name, WARN, "not installed"))
    return rows


CHECKS: list[tuple[str, Callable[[Config, Env], list[Row]]]] = [
    ("python", python), ("cpu", cpu), ("memory", memory), ("npu", npu), ("librknnrt", librknnrt),
    ("librkllmrt", librkllmrt), ("rknn-toolkit-lite2", rknn_toolkit_lite2), ("rknn versions", rknn_versions),
    ("rknn-toolkit2", rknn_toolkit2), ("sherpa-onnx rknn", sherpa_rknn), ("sound", sound), ("models", models),
    ("npu models", npu_models),
    ("packages", packages),
]


def diagnose(cfg: Config, env: Env | None = None) -> list[Row]:
    """Every check's rows; a check that raises becomes one ``error`` row with the exception's first line."""
    env = env or Env()
    rows: list[Row] = []
    for name, check in CHECKS:
        try:
            rows += check(cfg, env)
        except Exception as exc:  # a doctor must finish: the failure is reported, not raised
            message = (str(exc).strip().splitlines() or [""])[0]
            rows.append(Row(name, ERROR, f"{type(exc).__name__}: {message}" if message else type(exc).__name__))
    return rows


def summary(rows: list[Row]) -> str:
    counts = Counter(r.status for r in rows)
    flagged = [r.name for r in rows if r.status in FLAGGED]
    head = f"{len(rows)} checks: " + ", ".join(f"{counts[s]} {s}" for s in (OK, WARN, ABSENT, ERROR))
    return head + (f"; flagged: {', '.join(flagged)}" if flagged else "; nothing flagged")


def table(rows: list[Row]) -> str:
    width = max((len(r.name) for r in rows), default=0)
    return "\n".join(f"{r.name:<{width}}  {r.status:<6}  {r.detail}" for r in rows)


def run(cfg: Config, args: argparse.Namespace) -> int:
    rows = diagnose(cfg)
    flagged = [r for r in rows if r.status in FLAGGED]
    if getattr(args, "json", False):
        print(json.dumps({"checks": [asdict(r) for r in rows], "summary": summary(rows),
                          "flagged": [r.name for r in flagged]}, ensure_ascii=False, indent=1))
    else:
        print(table(rows))
        print(summary(rows))
    return 1 if flagged and getattr(args, "strict", False) else 0
