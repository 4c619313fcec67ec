"""`assistant doctor`: runs on this NPU-less machine without failing; reads versions from fake
runtime libraries and .rknn files; flags mismatches; parses fake /proc files of an RK3576 board."""

from __future__ import annotations

import argparse
import dataclasses
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from assistant import config
from assistant.commands import doctor
from assistant.commands.doctor import ABSENT, ERROR, OK, WARN, Env, Row
from models.sherpa_build import Support
from tests.conftest import ROOT


def assistant(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assistant", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)


def by_name(rows: list[Row]) -> dict[str, Row]:
    return {r.name: r for r in rows}


def fake_library(path: Path, *strings: str) -> Path:
    """Bytes shaped like a shared object: an ELF magic, binary noise, and NUL-terminated strings."""
    noise = bytes(range(256)) * 64
    path.write_bytes(b"\x7fELF\x02\x01\x01" + noise + b"".join(s.encode() + b"\0" + noise for s in strings))
    return path


def fake_rknn(path: Path, compiler: str) -> Path:
    """A .rknn container (format 6) whose flatbuffer root table has field 7, "compiler", set."""
    text = compiler.encode()
    vtable = struct.pack("<HH8H", 4 + 2 * 8, 8, 0, 0, 0, 0, 0, 0, 0, 4)
    table = 8 + len(vtable)  # after the root offset, the "RKNN" identifier and the vtable
    flatbuffer = (struct.pack("<I", table) + b"RKNN" + vtable + struct.pack("<iI", table - 8, 4)
                  + struct.pack("<I", len(text)) + text + b"\0")
    trailer = b'{"target_platform": ["rk3576"]}'
    path.write_bytes(b"RKNN" + bytes(4) + struct.pack("<QQ", 6, len(flatbuffer)) + bytes(40) + flatbuffer
                     + struct.pack("<Q", len(trailer)) + trailer)
    return path


def test_doctor_runs_here_and_reports_the_npu_absent() -> None:
    result = assistant("doctor")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    rows = {line.split()[0]: line.split()[1] for line in lines[:-1]}
    assert rows["npu"] == ABSENT
    assert rows["librknnrt"] == ABSENT
    assert rows["librkllmrt"] == ABSENT
    assert rows["python"] == OK
    assert lines[-1].startswith(f"{len(lines) - 1} checks: ")


def test_json_is_one_valid_object() -> None:
    result = assistant("doctor", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    checks = by_name([Row(**c) for c in report["checks"]])
    assert checks["npu"].status == ABSENT
    assert "no RKNPU driver" in checks["npu"].detail
    assert checks["sherpa-onnx rknn"].status == ABSENT
    assert isinstance(report["flagged"], list)
    assert report["summary"].startswith(f"{len(report['checks'])} checks")


def test_runtime_versions_are_read_from_the_library_bytes(tmp_path: Path) -> None:
    rknnrt = fake_library(tmp_path / "librknnrt.so", "E RKNN: failed to open rknpu module",
                          "librknnrt version: 2.3.0 (c949ad889d@2024-11-07T11:35:33)")
    rkllmrt = fake_library(tmp_path / "librkllmrt.so", "rkllm-runtime version: %s, rknpu driver version: %s",
                           "rkllm-runtime version: 1.3.0")
    assert doctor.library_version(rknnrt) == "2.3.0 (c949ad889d@2024-11-07T11:35:33)"
    assert doctor.library_version(fake_library(tmp_path / "libother.so", "version: 9.9.9")) is None
    (tmp_path / "empty.so").write_bytes(b"")
    assert doctor.library_version(tmp_path / "empty.so") is None
    cfg = config.load(None, [f"npu.rknn_runtime='{rknnrt}'", f"rkllm.library='{rkllmrt}'"])
    rows = by_name(doctor.librknnrt(cfg, Env()) + doctor.librkllmrt(cfg, Env()))
    assert rows["librknnrt"] == Row("librknnrt", OK, f"2.3.0 (c949ad889d@2024-11-07T11:35:33) ({rknnrt})")
    assert rows["librkllmrt"] == Row("librkllmrt", OK, f"1.3.0 ({rkllmrt})")
    older = fake_library(tmp_path / "librkllmrt-1.2.3.so", "rkllm-runtime version: 1.2.3")
    row = doctor.librkllmrt(config.load(None, [f"rkllm.library='{older}'"]), Env())[0]
    assert row.status == WARN and "version strings 1.2.3; the binding needs 1.3.0" in row.detail


def test_the_compile_toolkit_is_read_from_an_rknn_file(tmp_path: Path) -> None:
    compiler = "2.3.2+81f21f4d(compiler version: 2.3.2 (e045de294f@2025-04-07T19:48:25))"
    assert doctor.rknn_compiler(fake_rknn(tmp_path / "m.rknn", compiler)) == compiler
    # Not where the flatbuffer says: found by searching the bytes instead.
    loose = fake_library(tmp_path / "loose.rknn", compiler)
    loose.write_bytes(b"RKNN" + bytes(60) + loose.read_bytes())
    assert doctor.base_version(doctor.rknn_compiler(loose)) == "2.3.2"
    assert doctor.rknn_compiler(fake_library(tmp_path / "notes.rknn", "hello")) is None


def test_librknnrt_2_3_0_against_a_model_compiled_by_2_3_2_is_flagged(tmp_path: Path) -> None:
    runtime = fake_library(tmp_path / "librknnrt.so", "librknnrt version: 2.3.0 (c949ad889d@2024-11-07T11:35:33)")
    model = fake_rknn(tmp_path / "matcha-s64.rknn", "2.3.2+81f21f4d(compiler version: 2.3.2 (e045de294f@2025))")
    cfg = config.load(None, [f"npu.rknn_runtime='{runtime}'", f"matcha.acoustic_model='{model}'"])
    [row] = doctor.rknn_versions(cfg, Env())
    assert row.status == WARN
    assert "mismatch: librknnrt 2.3.0, matcha-s64.rknn compiled by 2.3.2" in row.detail
    npu_files = by_name(doctor.npu_models(cfg, Env()))
    assert npu_files["matcha.acoustic_model"].status == OK
    assert "compiled by 2.3.2+81f21f4d" in npu_files["matcha.acoustic_model"].detail
    assert "sha256 " in npu_files["matcha.acoustic_model"].detail


def test_agreeing_versions_are_ok(tmp_path: Path) -> None:
    runtime = fake_library(tmp_path / "librknnrt.so", "librknnrt version: 2.3.2 (429f97ae6b@2025-04-09T09:09:27)")
    model = fake_rknn(tmp_path / "vocos.rknn", "2.3.2+81f21f4d(compiler version: 2.3.2 (e045de294f@2025))")
    cfg = config.load(None, [f"npu.rknn_runtime='{runtime}'", f"matcha.vocoder='{model}'"])
    assert doctor.rknn_versions(cfg, Env())[0].status == OK


def test_strict_exits_1_when_something_is_flagged(tmp_path: Path) -> None:
    runtime = fake_library(tmp_path / "librknnrt.so", "librknnrt version: 2.3.0 (c949ad889d@2024-11-07T11:35:33)")
    model = fake_rknn(tmp_path / "matcha-s64.rknn", "2.3.2+81f21f4d(compiler version: 2.3.2 (e045de294f@2025))")
    sets = ["--set", f"npu.rknn_runtime='{runtime}'", "--set", f"matcha.acoustic_model='{model}'"]
    strict = assistant("doctor", "--strict", *sets)
    assert strict.returncode == 1, strict.stderr
    assert "rknn versions" in strict.stdout.splitlines()[-1]  # the summary names what is flagged
    assert assistant("doctor", *sets).returncode == 0


def test_a_bad_setting_is_the_usual_one_line_error() -> None:
    result = assistant("doctor", "--set", "npu.mode=sideways")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith("assistant: npu.mode")


def rk3576(root: Path) -> Env:
    """Fake /proc of an RK3576 board: 4× Cortex-A53 (cores 0-3) and 4× Cortex-A72 (cores 4-7)."""
    proc = root / "proc"
    (proc / "device-tree").mkdir(parents=True)
    blocks = [f"processor\t: {i}\nBogoMIPS\t: 48.00\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
              f"CPU variant\t: 0x0\nCPU part\t: {'0xd03' if i < 4 else '0xd08'}\nCPU revision\t: 4\n"
              for i in range(8)]
    (proc / "cpuinfo").write_text("\n".join(blocks), encoding="ascii")
    (proc / "device-tree" / "compatible").write_bytes(b"radxa,rock-4d\0rockchip,rk3576\0")
    return Env(proc=proc, sysfs=root / "sys", dev=root / "dev", machine="aarch64", python=(3, 13, 5))


def test_rk3576_cpu_is_recognised(tmp_path: Path) -> None:
    [row] = doctor.cpu(config.load(None, []), rk3576(tmp_path))
    assert row == Row("cpu", OK, "8 cores: 4× Cortex-A53 + 4× Cortex-A72; SoC rockchip,rk3576 (board radxa,rock-4d)")


def test_x86_cpu_is_recognised(tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\n"
                                      "model name\t: AMD EPYC 7B13\n", encoding="ascii")
    [row] = doctor.cpu(config.load(None, []), Env(proc=tmp_path))
    assert row.detail == "2 cores: AMD EPYC 7B13"


def test_npu_driver_from_sysfs_and_debugfs(tmp_path: Path) -> None:
    env = rk3576(tmp_path)
    debugfs = env.sysfs / "kernel" / "debug" / "rknpu"
    debugfs.mkdir(parents=True)
    (debugfs / "version").write_text("RKNPU driver: v0.9.8\n", encoding="ascii")
    (env.dev / "dri" / "by-path").mkdir(parents=True)
    (env.dev / "dri" / "by-path" / "platform-27700000.npu-render").touch()
    [row] = doctor.npu(config.load(None, []), env)
    assert row.status == OK
    assert row.detail.startswith(f"RKNPU driver 0.9.8 ({debugfs / 'version'}); ")
    assert "platform-27700000.npu-render" in row.detail
    module = env.sysfs / "module" / "rknpu"
    module.mkdir(parents=True)
    (module / "version").write_text("0.9.6\n", encoding="ascii")
    [old] = doctor.npu(config.load(None, ["models.llm=rkllm"]), env)
    assert old.status == WARN
    assert "RKLLM 1.3.0 needs driver 0.9.8" in old.detail
    [locked] = doctor.npu(config.load(None, []), dataclasses.replace(env, can_use=lambda node: False))
    assert locked.status == WARN and "cannot open" in locked.detail and "render and video groups" in locked.detail


def test_no_npu_is_absent_not_a_failure(tmp_path: Path) -> None:
    [row] = doctor.npu(config.load(None, []), Env(proc=tmp_path, sysfs=tmp_path, dev=tmp_path))
    assert row.status == ABSENT


def test_sound_cards_are_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = rk3576(tmp_path)
    (env.proc / "asound").mkdir()
    (env.proc / "asound" / "cards").write_text(
        " 0 [rockchipes8388 ]: rockchip_es8388 - rockchip,es8388\n"
        "                      rockchip,es8388\n"
        " 1 [Device         ]: USB-Audio - USB PnP Sound Device\n"
        "                      C-Media Electronics Inc. USB PnP Sound Device at usb-xhci-hcd.0.auto-1\n",
        encoding="ascii")
    opened: list[tuple[str, str]] = []

    def fake_open(kind: str, device: str, rate: int) -> str | None:
        opened.append((kind, device))
        return None if kind == "playback" else "cannot open: No such device"

    monkeypatch.setattr(doctor, "open_pcm", fake_open)
    cfg = config.load(None, ["audio.capture_device='plughw:1,0'"])
    rows = by_name(doctor.sound(cfg, env))
    assert rows["sound cards"] == Row("sound cards", OK, "0: rockchipes8388 (rockchip_es8388 - rockchip,es8388); "
                                                         "1: Device (USB-Audio - USB PnP Sound Device)")
    assert opened == [("capture", "plughw:1,0"), ("playback", "default")]
    assert rows["capture device"].status == WARN
    assert rows["playback device"] == Row("playback device", OK, "'default': opens")


def test_no_sound_card_is_absent_and_no_device_is_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "open_pcm", lambda *_: pytest.fail("opened a device without a sound card"))
    (tmp_path / "asound").mkdir()
    (tmp_path / "asound" / "cards").write_text("--- no soundcards ---\n", encoding="ascii")
    rows = doctor.sound(config.load(None, []), Env(proc=tmp_path))
    assert [r.status for r in rows] == [ABSENT, ABSENT, ABSENT]


def test_python_3_13_on_the_board_without_the_toolkit_is_flagged(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "package_version", lambda name: None)
    [row] = doctor.rknn_toolkit_lite2(config.load(None, []), rk3576(tmp_path))
    assert row == Row("rknn-toolkit-lite2", WARN,
                      "no wheel for Python 3.13: run ./setup.sh on the board (it uses Python 3.11; see README)")


def test_sherpa_rknn_build_with_librknnrt_2_3_is_warned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor.sherpa_build, "rknn_support",
                        lambda: Support(True, "_sherpa_onnx.so needs librknnrt.so", "1.12.9"))
    runtime = fake_library(tmp_path / "librknnrt.so", "librknnrt version: 2.3.2 (429f97ae6b@2025-04-09T09:09:27)")
    [row] = doctor.sherpa_rknn(config.load(None, [f"npu.rknn_runtime='{runtime}'"]), Env())
    assert row.status == WARN
    assert "k2-fsa/sherpa-onnx#3154" in row.detail


def test_the_pypi_build_asked_for_rknn_is_flagged() -> None:
    [row] = doctor.sherpa_rknn(config.load(None, ["models.sherpa_provider=rknn"]), Env())
    assert row.status == WARN
    assert "falls back to the CPU" in row.detail


def test_a_check_that_raises_becomes_an_error_row(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    def broken(cfg: config.Config, env: Env) -> list[Row]:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(doctor, "CHECKS", [("python", doctor.python), ("broken", broken)])
    rows = doctor.diagnose(config.load(None, []))
    assert rows[-1] == Row("broken", ERROR, "RuntimeError: boom")
    assert doctor.run(config.load(None, []), argparse.Namespace(json=False, strict=False)) == 0
    assert doctor.run(config.load(None, []), argparse.Namespace(json=False, strict=True)) == 1
    out = capsys.readouterr().out
    assert "flagged: broken" in out


def test_llama_cpp_is_only_missed_where_the_llm_is_llama_cpp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "package_version", lambda name: None if name == "llama-cpp-python" else "1.0")
    def llama_row(overrides: list[str]) -> Row:
        rows = doctor.packages(config.load(None, overrides), Env())
        return next(r for r in rows if r.name == "llama-cpp-python")

    assert llama_row([]).status == WARN  # the default LLM is llama.cpp
    board = llama_row(["models.llm='rkllm'"])  # a board on RKLLM installs without it (setup.sh)
    assert board.status == ABSENT and "rkllm" in board.detail
