"""``assistant npu build``: one-line errors for bad input, the simulator's scores, built models found
and verified like any other, and — where the toolkit's venv exists — a real .rknn built and parsed.

The slow tests need rknn-toolkit2 in its own venv (``deploy/rknn-toolkit.sh``) and are skipped,
with that reason, where it is absent.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from assistant.commands.npu import spoken_cer, toolkit_python
from assistant.text.cer import cer, ser
from models.assets import Assets
from models.files import sha256
from models.manifest import BUILT_MANIFEST, built
from models.protocols import ModelError
from models.rknn_build import compare
from models.rknn_model import read_io
from tests.test_cli import assistant, one_line_error

ROOT = Path(__file__).resolve().parent.parent
TOOLKIT = toolkit_python()
needs_toolkit = pytest.mark.skipif(not TOOLKIT.is_file(), reason=f"no rknn-toolkit2 venv at {TOOLKIT} "
                                   "(deploy/rknn-toolkit.sh installs it)")


# --- bad input ---

def test_an_unknown_target_is_one_line(tmp_path: Path) -> None:
    one_line_error(assistant("npu", "build", "--target", "rk9999", str(tmp_path / "out"), cwd=tmp_path),
                   "unknown target 'rk9999'", "rk3576")


def test_an_output_folder_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    one_line_error(assistant("npu", "build", "--target", "rk3576", str(blocker / "out"), cwd=tmp_path),
                   "cannot write to", str(blocker / "out"))


def test_a_missing_toolkit_says_how_to_install_it(tmp_path: Path) -> None:
    one_line_error(assistant("npu", "build", "--target", "rk3576", "--toolkit", str(tmp_path / "none" / "python"),
                             str(tmp_path / "out"), cwd=tmp_path),
                   "rknn-toolkit2 is not installed", "deploy/rknn-toolkit.sh")


def test_an_unknown_precision_is_one_line(tmp_path: Path) -> None:
    if not TOOLKIT.is_file():
        pytest.skip("the toolkit check comes first")
    one_line_error(assistant("npu", "build", "--target", "rk3576", "--precision", "int4", str(tmp_path / "out"),
                             cwd=tmp_path), "unknown precision int4")


# --- scores ---

def test_cosine_and_snr_of_a_known_error() -> None:
    signal = np.sin(np.linspace(0, 20, 1000)).astype(np.float32)
    noise = 0.01 * np.cos(np.linspace(0, 3000, 1000)).astype(np.float32)
    (same,), (noisy,) = compare([signal], [signal]), compare([signal], [signal + noise])
    assert same["cosine"] == 1.0 and same["snr_db"] >= 200
    expected_snr = 10 * np.log10(np.sum(signal.astype(np.float64) ** 2) / np.sum(noise.astype(np.float64) ** 2))
    assert noisy["snr_db"] == pytest.approx(expected_snr, abs=0.01)
    assert 0.999 < noisy["cosine"] < 1.0
    assert same["max_abs"] == 0 and noisy["max_abs"] == pytest.approx(0.01, rel=1e-3)
    (flipped,) = compare([signal], [-signal])
    assert flipped["cosine"] == -1.0


def test_a_number_heard_as_digits_is_not_an_error_of_the_voice() -> None:
    assert spoken_cer("再把空调调到二十六度。", "再把空调调到26度") == 0
    assert spoken_cer("明天早上七点叫我起床", "明天早上7点叫我气床") == 0.1
    assert cer("再把空调调到二十六度。", "再把空调调到26度") == 0.3  # as written: 二十六 against 26


def test_a_homophone_is_no_syllable_error() -> None:
    # Heard in the simulator's round trip: 香椒 sounds as 香蕉 does, 下隔 does not sound as 价格.
    assert ser("苹果和香蕉", "苹果和香椒") == 0 < cer("苹果和香蕉", "苹果和香椒")
    assert ser("价格也不贵", "下隔也不贵") == pytest.approx(1 / 5)
    assert ser("空调调到二十六度", "空调调到26度") == 0  # digits are read out as they are said


def test_a_rendering_is_scored_by_both_judges_and_read_back_by_the_benchmark(tmp_path: Path) -> None:
    from assistant.commands.npu import _rendering

    rng = np.random.default_rng(0)
    voice = rng.normal(0, 0.1, 24000).astype(np.float32)
    texts = ("我最喜欢的水果是苹果和香蕉", "这家饭馆的菜很好吃")
    beam = ["我最喜欢的水果是苹果和香蕉", "这家饭馆的菜很好吃"]
    greedy = ["我最喜欢的水果是苹果和香椒", "这家饭馆的菜很好"]
    scores = _rendering(texts, [voice, voice], [voice, voice * 0.5], beam, greedy)
    assert scores["cer"] == 0 and scores["judge"] == "Whisper base, int8, beam 5"
    assert scores["greedy"]["cer"] == pytest.approx((1 / 13 + 1 / 9) / 2, abs=1e-3)
    assert scores["greedy"]["ser"] == pytest.approx(1 / 18, abs=1e-3)  # 香椒 is no syllable error
    assert scores["sentences"][0]["log_mel_db"] == 0 < scores["sentences"][1]["log_mel_db"]
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"results": [{"model": "kokoro-decoder-window", "precision": "reference",
                                               "rendering": {"whole-cpu": scores}}]}, ensure_ascii=False))
    printed = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "npu_round_trip.py"), str(report)],
                             capture_output=True, text=True, check=True).stdout
    assert "| whole-cpu | Whisper base, int8, beam 5 | 2 | 0.000 | 0.000 | 0.000 |" in printed
    assert "| whole-cpu | Whisper base, int8, greedy | 2 | 0.094 | 0.094 | 0.056 |" in printed


def test_cer_counts_characters_and_ignores_punctuation() -> None:
    assert cer("今天天气不错。", "今天天气不错") == 0
    assert cer("今天天气不错", "今天天汽不错") == pytest.approx(1 / 6)
    assert cer("你好", "") == 1


# --- built models in the manifest ---

def built_folder(tmp_path: Path, payload: bytes = b"RKNN" + bytes(100)) -> tuple[Path, Path]:
    out = tmp_path / "npu"
    model = out / "kokoro-decoder-window-rk3576-fp16" / "kokoro-decoder-window-rk3576-fp16.rknn"
    model.parent.mkdir(parents=True)
    model.write_bytes(payload)
    (out / BUILT_MANIFEST).write_text(json.dumps([{
        "name": "kokoro-decoder-window-rk3576-fp16", "kind": "npu", "file": model.name, "sha256": sha256(model),
        "size": model.stat().st_size, "description": "kokoro-decoder-window for rk3576, fp16"}]))
    return out, model


def test_a_built_model_is_found_and_verified_like_any_other(tmp_path: Path) -> None:
    out, model = built_folder(tmp_path)
    (entry,) = built(out)
    assets = Assets(dirs=[out], store=tmp_path / "store")
    assert assets.path(entry.name, model.name) == model
    assert [s.state for s in assets.status(entry)] == ["ok"]
    model.write_bytes(b"RKNN" + bytes(99) + b"\1")  # same size, one byte changed
    from models.files import forget_hashes

    forget_hashes()
    with pytest.raises(ModelError, match="corrupt or the wrong file"):
        assets.path(entry.name, model.name)


def test_a_second_build_keeps_the_first_ones_files_listed(tmp_path: Path) -> None:
    """An earlier run's result names its file where it was built (OUT/<file>), a later run's build
    of another model is moved beside it; both are listed, and a file that is gone is said to be."""
    from assistant.commands.npu import _register

    out = tmp_path / "out"
    (out / "old-rk3576-fp16").mkdir(parents=True)
    (out / "old-rk3576-fp16" / "old-rk3576-fp16.rknn").write_bytes(b"RKNN old")
    (out / "new-rk3576-fp16.rknn").write_bytes(b"RKNN new")
    results = [{"model": "old", "precision": "fp16", "built": True, "file": str(out / "old-rk3576-fp16.rknn")},
               {"model": "new", "precision": "fp16", "built": True, "file": str(out / "new-rk3576-fp16.rknn")},
               {"model": "lost", "precision": "int8", "built": True, "file": str(out / "lost-rk3576-int8.rknn")}]
    _register(out, results, "rk3576")
    listed = {e["name"]: e for e in json.loads((out / BUILT_MANIFEST).read_text())}
    assert set(listed) == {"old-rk3576-fp16", "new-rk3576-fp16"}
    for r in results[:2]:
        assert Path(r["file"]).parent.name == f"{r['model']}-rk3576-fp16" and Path(r["file"]).is_file()
        assert listed[Path(r["file"]).parent.name]["sha256"] == sha256(Path(r["file"]))
    assert not results[2]["built"] and "is gone" in results[2]["error"]


def test_models_list_shows_the_built_models(tmp_path: Path) -> None:
    out, _ = built_folder(tmp_path)
    result = subprocess.run([sys.executable, "-m", "assistant", "models", "list"], cwd=tmp_path, text=True,
                            capture_output=True, check=False, timeout=120,
                            env={**__import__("os").environ, "TINGSHUO_MODELS": str(out)})
    assert result.returncode == 0, result.stderr
    assert "kokoro-decoder-window-rk3576-fp16  (npu" in result.stdout
    assert "ok           kokoro-decoder-window-rk3576-fp16.rknn" in result.stdout


def test_a_malformed_list_gives_no_models(tmp_path: Path) -> None:
    (tmp_path / BUILT_MANIFEST).write_text("{not json")
    assert built(tmp_path) == ()
    (tmp_path / BUILT_MANIFEST).write_text(json.dumps([{"name": "x"}]))
    assert built(tmp_path) == ()


# --- the real toolkit ---

TINY_BUILD = """
import sys
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
from rknn.api import RKNN
w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 4, 3)).astype(np.float32), "w")
graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1])], "tiny",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 50])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 50])], [w])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), sys.argv[1] + ".onnx")
rknn = RKNN(verbose=False)
rknn.config(target_platform="rk3576")
assert rknn.load_onnx(sys.argv[1] + ".onnx") == 0
assert rknn.build(do_quantization=False) == 0
assert rknn.export_rknn(sys.argv[1]) == 0
assert rknn.init_runtime() == 0
x = np.random.default_rng(1).standard_normal((1, 4, 50)).astype(np.float32)
(y,) = rknn.inference(inputs=[x])
np.save(sys.argv[1] + ".x.npy", x)
np.save(sys.argv[1] + ".y.npy", np.asarray(y))
"""


@pytest.fixture(scope="module")
def tiny_rknn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small Conv model built for rk3576 by the real toolkit, and run once in its simulator."""
    path = tmp_path_factory.mktemp("rknn") / "tiny.rknn"
    result = subprocess.run(["nice", "-n", "19", str(TOOLKIT), "-c", TINY_BUILD, str(path)], capture_output=True,
                            text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return path


@pytest.mark.slow
@needs_toolkit
def test_the_rknn_parser_reads_a_file_the_toolkit_just_built(tiny_rknn: Path) -> None:
    assert tiny_rknn.read_bytes()[:4] == b"RKNN"
    io = read_io(tiny_rknn)
    assert io is not None
    (inp,), (out,) = io
    assert sorted(inp.shape) == [1, 4, 50] and sorted(out.shape) == [1, 8, 50]


@pytest.mark.slow
@needs_toolkit
def test_the_simulator_computes_what_onnxruntime_does(tiny_rknn: Path) -> None:
    import onnxruntime as ort

    x = np.load(f"{tiny_rknn}.x.npy")
    (expected,) = ort.InferenceSession(f"{tiny_rknn}.onnx", providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = np.load(f"{tiny_rknn}.y.npy").reshape(expected.shape)
    (score,) = compare([expected], [got])
    assert score["cosine"] > 0.999 and score["snr_db"] > 30  # fp16 on the simulated NPU


@pytest.mark.slow
@needs_toolkit
def test_a_build_job_converts_simulates_and_scores_each_model_in_its_own_process(tiny_rknn: Path,
                                                                              tmp_path: Path) -> None:
    """models/rknn_build.py as `assistant npu build` runs it: one child per model and precision; a model
    the toolkit cannot load is recorded with the reason and the others still build."""
    x = np.load(f"{tiny_rknn}.x.npy")
    np.savez(tmp_path / "samples.npz", **{"0/x": x, "1/x": 2 * x})
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not an onnx file")
    job = {"target": "rk3576", "out": str(tmp_path / "out"), "work": str(tmp_path / "work"), "models": [
        {"name": "broken", "onnx": str(broken), "inputs": {"x": [1, 4, 50]}, "samples": str(tmp_path / "samples.npz"),
         "precisions": ["fp16"]},
        {"name": "tiny", "onnx": f"{tiny_rknn}.onnx", "inputs": {"x": [1, 4, 50]},
         "samples": str(tmp_path / "samples.npz"), "precisions": ["fp16", "int8"]}]}
    (tmp_path / "out").mkdir()
    (tmp_path / "job.json").write_text(json.dumps(job))
    done = subprocess.run(["nice", "-n", "19", str(TOOLKIT), "-m", "models.rknn_build", str(tmp_path / "job.json")],
                          cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    broken_result, fp16, int8 = json.loads((tmp_path / "work" / "results.json").read_text())
    assert not broken_result["built"] and broken_result["error"]
    for r in (fp16, int8):
        assert r["built"] and Path(r["file"]).read_bytes()[:4] == b"RKNN", r
        assert r["samples"] == 2
    assert fp16["outputs"]["y"]["cosine_min"] > 0.999
    assert int8["outputs"]["y"]["cosine_min"] > 0.98  # calibrated on the two samples themselves
    assert "npu build: tiny fp16: built in" in done.stderr


# --- silero VAD: its 16 kHz graph, and a whole recording in the simulator ---


def test_silero_without_its_ifs_computes_what_the_shipped_graph_does(assets: Assets) -> None:
    """The graph the toolkit is given: no If at any depth, no sample-rate input, and over a real
    recording, with the state carried from chunk to chunk, the very numbers of the shipped model."""
    import onnx
    import onnxruntime as ort

    from models.onnx_fixed import without_ifs
    from tests.conftest import real

    shipped = assets.path("silero-vad", "silero_vad.onnx")
    audio = real("hey_xiaozhi.wav")
    zero, rate = np.zeros((2, 1, 128), np.float32), np.array(16000, np.int64)
    fixed = without_ifs(onnx.load(str(shipped)), {"input": audio[None, :576], "state": zero, "sr": rate})
    assert [i.name for i in fixed.graph.input] == ["input", "state"]
    assert "If" not in {n.op_type for n in fixed.graph.node}
    a = ort.InferenceSession(str(shipped), providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(fixed.SerializeToString(), providers=["CPUExecutionProvider"])
    state_a = state_b = zero
    speech = []
    for s in range(0, audio.size - 576, 512):
        x = audio[None, s:s + 576]
        p_a, state_a = a.run(None, {"input": x, "state": state_a, "sr": rate})
        p_b, state_b = b.run(None, {"input": x, "state": state_b})
        np.testing.assert_array_equal(p_a, p_b)
        np.testing.assert_array_equal(state_a, state_b)
        speech.append(float(p_a.reshape(-1)[0]) > 0.5)
    assert 0.3 < np.mean(speech) < 0.95  # a real recording: speech and pauses


@pytest.mark.slow
@needs_toolkit
def test_the_vad_built_for_the_npu_follows_a_whole_recording(tmp_path: Path) -> None:
    """`assistant npu build --models silero-vad`: the 16 kHz graph converts at fp16, and over a whole
    held-out recording, each side carrying its own state, the simulator's speech decisions are the CPU's."""
    out = tmp_path / "out"
    done = subprocess.run(["nice", "-n", "19", sys.executable, "-m", "assistant", "npu", "build", "--target", "rk3576",
                           "--models", "silero-vad", "--precision", "fp16", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    (result,) = json.loads((out / "report.json").read_text())["results"]
    assert result["built"], result
    assert result["outputs"]["output"]["max_abs"] < 0.02 and result["outputs"]["stateN"]["cosine_min"] > 0.999
    assert len(result["values"]["output"]) == result["samples"]  # each sample's [onnx, simulator] probability
    assert all(abs(cpu - npu) < 0.02 for cpu, npu in result["values"]["output"])
    sequence = result["sequence"]
    assert sequence["chunks"] > 100 and sequence["decisions_agree"] >= 0.98 and sequence["max_abs"] < 0.1
    (entry,) = json.loads((out / BUILT_MANIFEST).read_text())
    assert entry["name"] == "silero-vad-rk3576-fp16"
    assert entry["sha256"] == sha256(out / entry["name"] / entry["file"])
