"""Kokoro's calibrated decoder: the graph surgery on small graphs, the build on the real export."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from assistant.audio.metrics import log_mel_distance
from models import kokoro_calibrated as kc
from models import kokoro_split as ks
from models.kokoro_tts import SILENT, KokoroTts
from models.protocols import ModelError
from tests.conftest import KokoroFiles

# Over 20 pieces the calibration never saw (benchmarks/kokoro_calibrated.py) the calibrated decoder is
# 1.4 dB log-mel from the export's on average, 2.2 dB at most; the float graph of the same weights is
# 0.7 dB from it. A broken scale (min–max calibration of every convolution) reads 10 dB.
CALIBRATED_MAX_DB = 2.5


def test_live_nodes_drops_what_no_output_reads_and_names_every_node() -> None:
    w = helper.make_tensor("w", TensorProto.FLOAT, [1], [2.0])
    unused = helper.make_tensor("unused", TensorProto.FLOAT, [1], [3.0])
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="same"),
             helper.make_node("Mul", ["x", "unused"], ["dead"], name="same"),
             helper.make_node("Mul", ["y", "w"], ["z"], name="")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1])], [w, unused])
    model = kc.live_nodes(helper.make_model(graph))
    assert [n.op_type for n in model.graph.node] == ["Relu", "Mul"]
    assert [i.name for i in model.graph.initializer] == ["w"]
    assert [n.name for n in model.graph.node] == ["n0_Relu", "n1_Mul"]
    onnx.checker.check_model(model)


def test_windows_cut_each_feed_into_equal_shapes() -> None:
    frames = 2 * kc.WINDOW + 5
    feed = {ks.FEATURES: np.arange(512 * frames, dtype=np.float32).reshape(1, 512, frames),
            ks.F0: np.arange(2 * frames, dtype=np.float32).reshape(1, -1),
            ks.ENERGY: -np.arange(2 * frames, dtype=np.float32).reshape(1, -1), "style": np.ones((1, 256), np.float32)}
    out = kc.windows([feed, {k: v[..., :2 * 5] if k != "style" else v for k, v in feed.items()}])
    assert len(out) == 2  # the rest of 5 frames, and the short feed, are dropped
    assert all(w[ks.FEATURES].shape == (1, 512, kc.WINDOW) and w[ks.F0].shape == (1, 2 * kc.WINDOW) for w in out)
    assert out[1][ks.FEATURES][0, 0, 0] == kc.WINDOW and out[1][ks.ENERGY][0, 0] == -2 * kc.WINDOW


def test_no_calibration_windows_is_an_error_and_leaves_no_file(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="no calibration windows"):
        kc.build(b"", [], tmp_path / "d.onnx")
    assert list(tmp_path.iterdir()) == []


def test_its_name_follows_the_export_and_the_recipe(tmp_path: Path) -> None:
    a, b = kc.path_for(tmp_path, "ab" * 32), kc.path_for(tmp_path, "cd" * 32)
    assert a != b and a.parent == b.parent == tmp_path / "built" and kc.RECIPE in a.name


@pytest.mark.slow
def test_the_calibrated_decoder_sounds_like_the_export_and_is_built_once(kokoro_files: KokoroFiles,
                                                                       tts: KokoroTts, tmp_path: Path) -> None:
    path = tmp_path / "built" / "decoder.onnx"
    calibrated = KokoroTts(kokoro_files.model, kokoro_files.vocab, kokoro_files.voice, calibrated=path)
    calibrated.load()
    try:
        built = onnx.load(str(path))
        stored = {i.name: i.data_type for i in built.graph.initializer}
        weights = [stored[n.input[0]] for n in built.graph.node
                   if n.op_type == "DequantizeLinear" and n.input[0] in stored]
        assert weights.count(TensorProto.INT8) == 48  # the generator's resblocks and noise_res, per channel
        assert [p.name for p in path.parent.iterdir()] == ["decoder.onnx"]  # its work folder is gone
        for text in ("北京是中国的首都，也是一座历史悠久的城市。", "好的，十分钟以后提醒你关火。"):
            phonemes = tts.pieces(text)[0]
            front = tts.front(phonemes)
            s = ks.span(front, phonemes, SILENT, 2)
            ours, theirs = (ks.played(m._worker.call(m._decode, front, s.start, s.end, _options()), s)
                            for m in (calibrated, tts))
            assert ours.shape == theirs.shape
            assert log_mel_distance(ours, theirs) < CALIBRATED_MAX_DB
    finally:
        calibrated.close()
    when = path.stat().st_mtime_ns
    again = KokoroTts(kokoro_files.model, kokoro_files.vocab, kokoro_files.voice, calibrated=path)
    again.load()
    again.close()
    assert path.stat().st_mtime_ns == when  # found, not built again


def _options() -> object:
    import onnxruntime as ort

    return ort.RunOptions()


def test_auto_means_calibrated_only_where_it_was_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    for machine, auto in (("x86_64", True), ("aarch64", False)):
        monkeypatch.setattr(kc.platform, "machine", lambda m=machine: m)
        assert kc.wanted("auto") is auto
        assert kc.wanted("calibrated") and not kc.wanted("dynamic")
