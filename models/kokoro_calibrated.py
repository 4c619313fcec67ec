"""Kokoro's decoder with its generator's convolutions calibrated to int8: about twice as fast on x86.

The shipped export quantizes its convolutions dynamically: ``ConvInteger`` on uint8 activations and
weights, their scale found again on every call. onnxruntime runs that on a slow path here (6.9–8 ms a
25 ms frame on two Xeon cores; README "Kokoro's decoder, calibrated"). This builds, once per machine, a
decoder that onnxruntime runs on its fast one:

1. the export's int8 weights dequantized to float (``kokoro_graph.dequantized``), onnxruntime's
   pre-processing applied, and the nodes no output depends on dropped (the dynamic quantizers the
   dequantized convolutions no longer read: their ``_scale`` outputs would clash with the names the
   quantizer gives);
2. the 48 convolutions of the generator's ``resblocks`` and ``noise_res`` — its upsampled part, where
   the time goes — quantized again statically, as QDQ pairs that onnxruntime fuses into ``QLinearConv``
   (uint8 activations × int8 weights per output channel): the activations' scale is calibrated once,
   on ``CALIBRATION``, at its 99.9th percentile (min–max scales: 2.36 dB from the export, this 1.37);
3. everything else left in float (the 128-channel resblocks carry most of the error, the 1024-channel
   blocks before the generator little of the time).

Measured on this Xeon (``benchmarks/kokoro_calibrated.py``, 20 pieces the calibration never saw):
4.25 ms a frame against 8.24, a first piece's early head 0.18 s against 0.33 s, 1.38 dB log-mel from
the export's decoder on average, 2.15 dB at most (the float graph of the same weights is 0.73 dB from
it), and Whisper base hears its twenty sentences as it hears the export's (CER 0.068 against 0.070).
The scales are calibrated in the voice configured when it is built; they serve the others (1.1–1.2 dB
for three other voices). It is built on this machine because its scales come from this machine's
rendering; the file is kept in the model store, named by the export's hash and ``RECIPE``, and a
failed build leaves nothing.
"""

from __future__ import annotations

import contextlib
import io
import os
import platform
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from models import kokoro_split as ks
from models.protocols import ModelError

RECIPE = "gen48-p99.9-v1"  # what ``build`` does; a change to it gives the file a new name
QUANTIZED = ("/generator/resblocks.", "/generator/noise_res.")  # in the name of a convolution's weight input
PERCENTILE = 99.9
WINDOW = 24  # frames per calibration window: the percentile's histograms need one shape
CALIBRATION = (  # replies of the kinds the assistant gives; none is a sentence any benchmark measures
    "早上好，今天是星期一，记得吃早饭。",
    "这道题的答案是七十二，你算对了。",
    "好的，十分钟以后提醒你关火。",
    "抱歉，我没有联网，查不到最新的消息。",
    "长城是中国古代修建的防御工程，全长两万多公里。",
    "你可以先休息一下，喝杯水，再慢慢想。",
    "下午四点要去接孩子，别忘了带钥匙。",
    "月亮绕地球一圈，大约需要二十七天。",
    "嗯，我明白你的意思了。",
    "周末去爬山吧？山上的空气特别新鲜！",
)


MEASURED_ON = ("x86_64", "AMD64")  # machines where it was measured faster and heard the same


def wanted(setting: str) -> bool:
    """Whether ``tts.decoder`` asks for the calibrated decoder here: "auto" only where it was measured."""
    return setting == "calibrated" or (setting == "auto" and platform.machine() in MEASURED_ON)


def path_for(store: Path, model_sha256: str) -> Path:
    """Where the calibrated decoder of the export with ``model_sha256`` is kept."""
    return store / "built" / f"kokoro-decoder-{model_sha256[:12]}-{RECIPE}.onnx"


def windows(feeds: Iterable[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    """Each decoder feed cut into ``WINDOW``-frame feeds (a shorter rest is dropped)."""
    out = []
    for feed in feeds:
        frames = feed[ks.FEATURES].shape[2]
        for start in range(0, frames - WINDOW + 1, WINDOW):
            out.append({ks.FEATURES: feed[ks.FEATURES][:, :, start:start + WINDOW],
                        ks.F0: feed[ks.F0][:, 2 * start:2 * (start + WINDOW)],
                        ks.ENERGY: feed[ks.ENERGY][:, 2 * start:2 * (start + WINDOW)], "style": feed["style"]})
    return out


def build(decoder: bytes, feeds: list[dict[str, np.ndarray]], out: Path) -> None:
    """Write the calibrated decoder made of the export's ``decoder`` to ``out`` (atomically)."""
    if not feeds:
        raise ModelError("tts: no calibration windows for Kokoro's decoder")
    try:
        import onnx
        import onnxruntime as ort
        from onnxruntime.quantization import (
            CalibrationDataReader,
            CalibrationMethod,
            QuantFormat,
            QuantType,
            quantize_static,
        )
        from onnxruntime.quantization.shape_inference import quant_pre_process
    except ImportError as exc:
        raise ModelError(f"tts: the calibrated decoder needs onnx and onnxruntime's quantization ({exc})") from None
    from models import kokoro_graph as kg

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._feeds = iter(feeds)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._feeds, None)

    ort.set_default_logger_severity(3)  # not a line for each initializer the pre-processing drops
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kokoro-decoder-", dir=out.parent) as work:
        floats, pre, kept = (Path(work) / name for name in ("float.onnx", "pre.onnx", "kept.onnx"))
        onnx.save(kg.dequantized(onnx.load_from_string(decoder)), str(floats))
        quant_pre_process(str(floats), str(pre), skip_symbolic_shape=True)
        model = live_nodes(onnx.load(str(pre)))
        onnx.save(model, str(kept))
        convs = [n.name for n in model.graph.node
                 if n.op_type == "Conv" and any(part in n.input[1] for part in QUANTIZED)]
        if not convs:
            raise ModelError("tts: none of the generator's convolutions found in Kokoro's decoder")
        partial = Path(work) / "calibrated.onnx"
        with contextlib.redirect_stdout(io.StringIO()):  # its calibration prints its histograms' settings
            quantize_static(str(kept), str(partial), Reader(), quant_format=QuantFormat.QDQ,
                            op_types_to_quantize=["Conv"], nodes_to_quantize=convs, per_channel=True,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                            calibrate_method=CalibrationMethod.Percentile,
                            extra_options={"ActivationSymmetric": False, "CalibPercentile": PERCENTILE})
        os.replace(partial, out)


def live_nodes(model: Any) -> Any:
    """``model`` without the nodes no graph output depends on, every node named after its place."""
    graph = model.graph
    producer = {name: node for node in graph.node for name in node.output}
    live: set[int] = set()
    pending = [o.name for o in graph.output]
    while pending:
        node = producer.get(pending.pop())
        if node is not None and id(node) not in live:
            live.add(id(node))
            pending += [name for name in node.input if name]
    nodes = [node for node in graph.node if id(node) in live]
    read = {name for node in nodes for name in node.input}
    initializers = [i for i in graph.initializer if i.name in read]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    for index, node in enumerate(graph.node):  # unique names the quantizer's own cannot clash with
        node.name = f"n{index}_{node.op_type}"
    return model
