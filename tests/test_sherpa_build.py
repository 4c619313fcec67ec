"""RKNN support of the installed sherpa-onnx, read from ELF files: real libraries built with gcc,
hand-made ELF32/ELF64 in both byte orders, broken files, the PyPI build, and the fallback to the CPU
(one log line, and a process that lives on where sherpa-onnx itself would exit with code 255)."""

from __future__ import annotations

import importlib.metadata
import platform
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from models import sherpa_build
from models.sherpa_build import NotElf, Support, needed, support_in
from tests.conftest import REAL, ROOT, SHARED


@pytest.fixture(autouse=True)
def fresh() -> None:
    sherpa_build.forget()


def gcc(folder: Path, name: str, source: str, *extra: str) -> Path:
    (folder / f"{name}.c").write_text(source, encoding="utf-8")
    out = folder / f"lib{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(folder / f"{name}.c"), *extra],
                   check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fake librknnrt.so, a library linked against it, and one that is not."""
    d = tmp_path_factory.mktemp("elf")
    rknnrt = gcc(d, "rknnrt", "void rknn_init(void) {}\n")
    with_rknn = gcc(d, "x", "extern void rknn_init(void);\nvoid x(void) { rknn_init(); }\n", f"-L{d}", "-lrknnrt")
    without = gcc(d, "y", "#include <stdio.h>\nvoid y(void) { puts(\"y\"); }\n")
    return {"rknnrt": rknnrt, "with": with_rknn, "without": without}


def test_parser_finds_librknnrt_in_a_library_linked_against_it(libs: dict[str, Path]) -> None:
    assert "librknnrt.so" in needed(libs["with"])
    support = support_in([libs["without"], libs["with"]], "9.9.9")
    assert support == Support(True, "libx.so needs librknnrt.so", "9.9.9")


def test_parser_does_not_find_it_where_it_is_not_linked(libs: dict[str, Path]) -> None:
    libraries = needed(libs["without"])
    assert "libc.so.6" in libraries
    assert "librknnrt.so" not in libraries
    support = support_in([libs["without"], libs["rknnrt"]])
    assert not support.supported
    assert "none of its 2 shared objects" in support.detail


@pytest.mark.skipif(platform.machine() != "x86_64", reason="gcc -m32 builds i386 objects on x86_64 only")
def test_a_32_bit_library_built_by_gcc(tmp_path: Path) -> None:
    flags = ("-m32", "-nostdlib")
    gcc(tmp_path, "rknnrt", "void rknn_init(void) {}\n", *flags)
    lib = gcc(tmp_path, "x", "extern void rknn_init(void);\nvoid x(void) { rknn_init(); }\n",
              *flags, f"-L{tmp_path}", "-lrknnrt")
    assert lib.read_bytes()[4] == 1  # ELFCLASS32
    assert needed(lib) == ("librknnrt.so",)


def handmade_elf(wide: bool, big: bool, libraries: list[str]) -> bytes:
    """A minimal ELF shared object: header, PT_LOAD over the whole file, PT_DYNAMIC, its strings."""
    e = ">" if big else "<"
    header, phdr, dyn = (f"{e}16sHHIQQQIHHHHHH", f"{e}IIQQQQQQ", f"{e}qQ") if wide else \
        (f"{e}16sHHIIIIIHHHHHH", f"{e}IIIIIIII", f"{e}iI")
    base = 0x10000
    phoff = struct.calcsize(header)
    strtab_off = phoff + 2 * struct.calcsize(phdr)
    strtab = b"\0" + b"".join(name.encode() + b"\0" for name in libraries)
    dyn_off = strtab_off + len(strtab)
    offsets, at = [], 1
    for name in libraries:
        offsets.append(at)
        at += len(name) + 1
    entries = [(1, o) for o in offsets] + [(5, base + strtab_off), (10, len(strtab)), (0, 0)]
    dynamic = b"".join(struct.pack(dyn, tag, value) for tag, value in entries)
    size = dyn_off + len(dynamic)
    ident = b"\x7fELF" + bytes([2 if wide else 1, 2 if big else 1, 1]) + bytes(9)
    head = struct.pack(header, ident, 3, 183 if wide else 40, 1, 0, phoff, 0, 0, phoff,
                       struct.calcsize(phdr), 2, 0, 0, 0)
    if wide:  # type, flags, offset, vaddr, paddr, filesz, memsz, align
        load = struct.pack(phdr, 1, 5, 0, base, base, size, size, 0x1000)
        dynseg = struct.pack(phdr, 2, 6, dyn_off, base + dyn_off, base + dyn_off, len(dynamic), len(dynamic), 8)
    else:  # type, offset, vaddr, paddr, filesz, memsz, flags, align
        load = struct.pack(phdr, 1, 0, base, base, size, size, 5, 0x1000)
        dynseg = struct.pack(phdr, 2, dyn_off, base + dyn_off, base + dyn_off, len(dynamic), len(dynamic), 6, 4)
    return head + load + dynseg + strtab + dynamic


@pytest.mark.parametrize("wide", [True, False], ids=["elf64", "elf32"])
@pytest.mark.parametrize("big", [False, True], ids=["little", "big"])
def test_both_classes_and_byte_orders(tmp_path: Path, wide: bool, big: bool) -> None:
    lib = tmp_path / "libsherpa-onnx-c-api.so"
    lib.write_bytes(handmade_elf(wide, big, ["librknnrt.so", "libc.so.6"]))
    assert needed(lib) == ("librknnrt.so", "libc.so.6")
    assert support_in([lib]).supported


def test_non_elf_truncated_and_missing_files_are_not_supported(tmp_path: Path, libs: dict[str, Path]) -> None:
    text = tmp_path / "notes.so"
    text.write_text("not a library\n", encoding="utf-8")
    truncated = tmp_path / "libcut.so"
    truncated.write_bytes(libs["with"].read_bytes()[:100])  # the header, not the program headers
    empty = tmp_path / "libempty.so"
    empty.write_bytes(b"")
    for bad in (text, truncated, empty):
        with pytest.raises(NotElf):
            needed(bad)
    support = support_in([text, truncated, empty, tmp_path / "libgone.so"])
    assert not support.supported
    assert "could not be read" in support.detail


def test_a_dynamic_section_cut_short_is_not_supported(tmp_path: Path) -> None:
    data = handmade_elf(True, False, ["librknnrt.so"])
    lib = tmp_path / "libcut.so"
    lib.write_bytes(data[:-20])  # the dynamic entries end mid-way
    assert not support_in([lib]).supported


def test_the_installed_pypi_build_has_no_rknn_support_and_is_not_imported() -> None:
    script = ("import sys\nfrom models import sherpa_build\ns = sherpa_build.rknn_support()\n"
              "print(s.supported, s.version, 'sherpa_onnx' in sys.modules)\nprint(s.detail)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True)
    first, detail = out.stdout.splitlines()
    assert first == f"False {importlib.metadata.version('sherpa-onnx')} False"
    assert "needs librknnrt.so" in detail  # "none of its N shared objects needs librknnrt.so"
    assert any(p.name.startswith("_sherpa_onnx") for p in sherpa_build.installed_files())


def test_rknn_falls_back_to_the_cpu_with_one_log_line() -> None:
    with capture_logs() as logs:
        assert sherpa_build.provider("rknn", "kws") == "cpu"
        assert sherpa_build.provider("rknn", "kws") == "cpu"
    assert len(logs) == 1
    assert logs[0]["event"] == "sherpa-onnx has no RKNN support; running on the CPU"
    assert logs[0]["log_level"] == "warning"
    assert logs[0]["what"] == "kws"
    assert logs[0]["build"] == f"sherpa-onnx {importlib.metadata.version('sherpa-onnx')}"


def test_cpu_is_cpu_silently() -> None:
    with capture_logs() as logs:
        assert sherpa_build.provider("cpu", "vad") == "cpu"
        assert sherpa_build.usable("cpu", "vad", [Path("silero_vad.onnx")]) == "cpu"
    assert logs == []


def test_with_rknn_support_the_model_files_must_be_rknn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sherpa_build, "rknn_support", lambda: Support(True, "libx.so needs librknnrt.so", "9"))
    with capture_logs() as logs:
        assert sherpa_build.provider("rknn", "asr") == "rknn"
        assert sherpa_build.usable("rknn", "asr", [Path("encoder.rknn"), Path("decoder.rknn")]) == "rknn"
        assert sherpa_build.usable("rknn", "kws", [Path("encoder.int8.onnx")]) == "cpu"
    assert [(e["event"], e["what"]) for e in logs] == [("no .rknn export of this model; running on the CPU", "kws")]


KWS_SCRIPT = r"""
import asyncio, sys
from pathlib import Path
import numpy as np
from assistant import backends, logs
from assistant.audio.wav import read_wav
from assistant.config import load

cfg = load(None, sys.argv[2:])
logs.setup(cfg.log.level, cfg.log.format)
assets = backends.assets_for(cfg)
kws, vad = backends.kws(cfg, assets), backends.vad(cfg, assets)
kws.load()
vad.load()
audio = np.concatenate([read_wav(Path(sys.argv[1]), 16000), np.zeros(16000, np.float32)])

async def feed():
    hits, speech = [], 0
    for i in range(0, len(audio), 320):
        if found := await kws.accept(audio[i:i + 320]):
            hits.append(found)
        speech += sum(1 for p in await vad.accept(audio[i:i + 320]) if p > 0.5)
    return hits, speech

hits, speech = asyncio.run(feed())
print(" ".join(hits), speech)
"""


def test_kws_and_vad_asked_for_rknn_load_and_spot_the_wake_word_on_the_cpu() -> None:
    overrides = ["models.sherpa_provider=rknn", "models.vad=sherpa-silero", "wake.keywords=['小智']",
                 "barge_in.enabled=false", f"models.dirs=['{SHARED / 'models'}']", "log.level=warning"]
    out = subprocess.run([sys.executable, "-c", KWS_SCRIPT, str(REAL / "hey_xiaozhi.wav"), *overrides],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr  # sherpa-onnx asked for "rknn" would have ended it with 255
    hits, speech = out.stdout.split()
    assert hits == "小智"
    assert int(speech) > 10
    fallbacks = [line for line in out.stderr.splitlines() if "no RKNN support" in line]
    assert len(fallbacks) == 2  # one line for the keyword spotter, one for the VAD
    assert any("what=kws" in line for line in fallbacks)
    assert any("what=vad" in line for line in fallbacks)


def test_what_the_check_prevents_sherpa_onnx_asked_for_rknn_ends_the_process() -> None:
    script = ("import sherpa_onnx\nc = sherpa_onnx.VadModelConfig()\nc.silero_vad.model = 'silero_vad.onnx'\n"
              "c.provider = 'rknn'\nsherpa_onnx.VadModel.create(c)\nprint('still here')")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 255
    assert "still here" not in out.stdout
    assert "SHERPA_ONNX_ENABLE_RKNN" in out.stderr
