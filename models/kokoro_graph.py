"""Kokoro's decoder re-cut for an NPU: a CPU ``source``, a fixed-shape ``window``, and a CPU ``tail``.

The whole decoder cannot go to the RK3576: its generator runs at 120 columns a frame (one column
per 5 samples), 13,081 for a 109-frame piece, and one layer's time dimension is limited to 8191.
It is cut three ways here, with ``onnx.utils.extract_model`` as in ``models/kokoro_split.py``:

- ``source`` (CPU, any length): F0 → the harmonic source's STFT, ``HAR`` [1, 22, 120T + 1]. This is
  the part with the running phase (a cumulative sum over the whole piece), ``STFT`` and ``Atan``;
  run once over the whole piece, its slices give every window exactly the excitation the whole
  rendering has, so windows do not restart the sine's phase.
- ``window`` (NPU): aligned features [1, 512, W], F0 and energy [1, 2W], style [1, 256] and the
  ``HAR`` slice [1, 22, 120W + 1] → ``POST``, the generator's last convolution [1, 22, 120W + 1]
  (11 log-magnitudes, 11 phase inputs). Its inputs have fixed shapes: W = 64 keeps the longest
  time dimension at 7681.
- ``tail`` (CPU, any length): ``POST`` → audio, the export's own inverse STFT (magnitude ``exp``,
  phase ``sin``, then ``Sin``/``Cos`` and a ``ConvTranspose`` with a ``NonZero``/``ScatterND``
  normalisation, n_fft 20, hop 5): cheap, and not ops an NPU takes. It is the export's own graph
  because its normalisation is not torch.istft's (a plain ISTFT is 1.5x off in the middle).

The int8 export quantizes dynamically (``DynamicQuantizeLinear`` → ``ConvInteger``/``MatMulInteger``,
rescaled after), which the RKNN toolkit does not convert: ``dequantized`` rewrites each such op as
the float ``Conv``/``MatMul`` of its dequantized weights (plus the float bias), so the window is an
fp32 graph whose weights are the int8 ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FEATURES, F0, ENERGY, STYLE = ("/encoder/MatMul_1_output_0", "/encoder/Reshape_output_0",
                               "/encoder/Reshape_1_output_0", "style")
HAR = "/decoder/decoder/generator/Concat_3_output_0"  # the source's magnitude and phase, into noise_convs
POST = "/decoder/decoder/generator/conv_post/Conv_output_0"
AUDIO = "audio"
COLUMNS = 120  # generator columns per decoder frame (600 samples, hop 5)
BINS = 11  # n_fft 20 // 2 + 1
STYLE_DIM = 256
WINDOW_FRAMES = 64
NPU_TIME_LIMIT = 8191  # RK3576: one layer's time dimension
TOOLKIT_OPSET = 19  # the newest rknn-toolkit2 2.5.0 loads


@dataclass(frozen=True)
class WindowShapes:
    """The fixed input shapes of a window of ``frames`` decoder frames, by input name."""

    frames: int
    limit: int = NPU_TIME_LIMIT  # the longest time dimension allowed (0: none, for tests on the CPU)

    def __post_init__(self) -> None:
        if self.frames < 1 or (self.limit and self.columns > self.limit):
            raise ValueError(f"kokoro window: {self.frames} frames give {self.columns} generator columns; "
                             f"the NPU takes at most {self.limit} ({(self.limit - 1) // COLUMNS} frames)")

    @property
    def columns(self) -> int:
        return COLUMNS * self.frames + 1

    @property
    def inputs(self) -> dict[str, tuple[int, ...]]:
        return {FEATURES: (1, 512, self.frames), F0: (1, 2 * self.frames), ENERGY: (1, 2 * self.frames),
                STYLE: (1, STYLE_DIM), HAR: (1, 2 * BINS, self.columns)}


def _onnx() -> Any:
    try:
        import onnx
        import onnx.utils
    except ImportError as exc:
        raise RuntimeError(f"kokoro window: the onnx package is needed ({exc})") from None
    return onnx


def dequantized(model: Any) -> Any:
    """``model`` with every ConvInteger/MatMulInteger (and its rescaling) replaced by a float op."""
    onnx = _onnx()
    from onnx import helper, numpy_helper

    g = model.graph
    inits = {i.name: i for i in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    consumers: dict[str, list[Any]] = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)

    def array(name: str) -> np.ndarray:
        return numpy_helper.to_array(inits[name])

    removed: set[int] = set()
    added: list[tuple[int, list[Any]]] = []
    new_inits = []
    for index, n in enumerate(g.node):
        if n.op_type not in ("ConvInteger", "MatMulInteger"):
            continue
        quantize = producer[n.input[0]]
        chain, bias, tensor = [], None, n.output[0]
        while True:  # int op → [Add quantized bias] → Cast → Mul(scale): the float result is the Mul's
            (nxt,) = consumers[tensor]
            chain.append(nxt)
            if nxt.op_type == "Add":
                other = nxt.input[1] if nxt.input[0] == tensor else nxt.input[0]
                reshape = producer[other]
                div = producer[producer[producer[reshape.input[0]].input[0]].input[0]]  # Cast ← Floor ← Div
                bias = array(div.input[0]).reshape(array(reshape.input[1]))
            if nxt.op_type == "Mul":
                break
            tensor = nxt.output[0]
        mul = chain[-1]
        scales = producer[mul.input[1] if mul.input[0] == tensor else mul.input[0]]
        w_scale = next(array(i) for i in scales.input if i in inits)
        zero = array(n.input[3]).astype(np.float32) if len(n.input) > 3 and n.input[3] else np.float32(0)
        quantized = array(n.input[1]).astype(np.float32)
        if n.op_type == "ConvInteger":
            shape = (-1,) + (1,) * (quantized.ndim - 1)
            weight = (quantized - np.reshape(zero, shape if np.ndim(zero) else ())) * np.reshape(
                w_scale, shape if np.ndim(w_scale) else ())
        else:
            weight = (quantized - zero) * w_scale
        name = f"{n.input[1]}_dequantized"
        new_inits.append(numpy_helper.from_array(weight.astype(np.float32), name))
        out = mul.output[0]
        float_op = "Conv" if n.op_type == "ConvInteger" else "MatMul"
        nodes = [helper.make_node(float_op, [quantize.input[0], name], [out if bias is None else out + "_nobias"],
                                  name=n.name.replace("_quant", "_float"))]
        nodes[0].attribute.extend(n.attribute)
        if bias is not None:
            bias_name = f"{n.name}_float_bias"
            new_inits.append(numpy_helper.from_array(bias.astype(np.float32), bias_name))
            nodes.append(helper.make_node("Add", [out + "_nobias", bias_name], [out], name=f"{n.name}_float_add"))
        removed.add(index)
        for c in chain:
            removed.add(next(i for i, m in enumerate(g.node) if m is c))
        added.append((index, nodes))
    kept = []
    replacement = dict(added)
    for index, n in enumerate(g.node):
        if index in replacement:
            kept.extend(replacement[index])
        elif index not in removed:
            kept.append(n)
    del g.node[:]
    g.node.extend(kept)
    g.initializer.extend(new_inits)
    return onnx.ModelProto.FromString(model.SerializeToString())


def instance_norms(model: Any) -> Any:
    """Each instance norm the export spelled out over time — ``d = x - mean(x)``, ``d / sqrt(mean(d²) + eps)``
    (2 ReduceMean, Sub, Mul or Pow, Add, Sqrt, Div) — as one ``InstanceNormalization``. The NPU has a
    kernel for it; the spelled-out form kept rknn-toolkit2's reduce rules busy for most of its build."""
    onnx = _onnx()
    from onnx import helper, numpy_helper

    g = model.graph
    shapes = onnx.shape_inference.infer_shapes(model).graph
    channels = {v.name: v.type.tensor_type.shape.dim[1].dim_value for v in [*shapes.value_info, *shapes.input]
                if len(v.type.tensor_type.shape.dim) == 3}
    consts = {i.name: numpy_helper.to_array(i) for i in g.initializer if len(i.dims) <= 1}
    consumers: dict[str, list[Any]] = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)

    def users(tensor: str) -> list[Any]:
        return list({id(n): n for n in consumers.get(tensor, [])}.values())

    def only(tensor: str, op: str) -> Any:
        found = [n for n in users(tensor) if n.op_type == op]
        return found[0] if len(found) == 1 else None

    dropped: set[int] = set()
    added: dict[int, Any] = {}
    new_inits = []
    for n in g.node:
        if n.op_type != "ReduceMean" or n.input[0] not in channels or list(consts.get(n.input[1], [])) != [2]:
            continue
        x = n.input[0]
        sub = only(n.output[0], "Sub")
        if sub is None or list(sub.input) != [x, n.output[0]]:
            continue
        d = sub.output[0]
        square = only(d, "Mul") or only(d, "Pow")
        mean2 = square and only(square.output[0], "ReduceMean")
        add = mean2 and only(mean2.output[0], "Add")
        sqrt = add and only(add.output[0], "Sqrt")
        div = sqrt and only(sqrt.output[0], "Div")
        if not (div and list(div.input) == [d, sqrt.output[0]] and add.input[1] in consts):
            continue
        chain = [n, sub, square, mean2, add, sqrt, div]
        if len(users(d)) != 2 or any(len(users(m.output[0])) != 1 for m in chain[2:-1]):
            continue  # an intermediate is used elsewhere: leave this one spelled out
        c = channels[x]
        scale, bias = f"{n.name}_in_scale", f"{n.name}_in_bias"
        new_inits += [numpy_helper.from_array(np.ones(c, np.float32), scale),
                      numpy_helper.from_array(np.zeros(c, np.float32), bias)]
        eps = float(np.asarray(consts[add.input[1]]).reshape(-1)[0])
        added[id(div)] = helper.make_node("InstanceNormalization", [x, scale, bias], [div.output[0]],
                                          name=f"{n.name}_instance_norm", epsilon=eps)
        dropped.update(id(m) for m in chain)
    kept = [added.get(id(n), n) for n in g.node if id(n) not in dropped or id(n) in added]
    del g.node[:]
    g.node.extend(kept)
    g.initializer.extend(new_inits)
    return model


def for_toolkit(model: Any, opset: int = TOOLKIT_OPSET) -> Any:
    """``model`` declaring only the default domain at ``opset``: the export says 20 (and six other
    domains) but uses no operator that changed after 19, and rknn-toolkit2 takes at most 19."""
    onnx = _onnx()
    used = {n.domain for n in model.graph.node}
    if used - {"", "ai.onnx"}:
        raise ValueError(f"kokoro window: operators of domains {sorted(used - {'', 'ai.onnx'})} left in the graph")
    del model.opset_import[:]
    model.opset_import.extend([onnx.helper.make_opsetid("", opset)])
    return model


def _fix_inputs(model: Any, shapes: dict[str, tuple[int, ...]]) -> Any:
    for value in model.graph.input:
        if value.name in shapes:
            dims = value.type.tensor_type.shape.dim
            del dims[:]
            for d in shapes[value.name]:
                dims.add().dim_value = d
    return model


@dataclass(frozen=True)
class Parts:
    """The serialized ONNX parts: ``source`` and ``tail`` of any length, ``window`` of fixed shapes."""

    source: bytes
    window: bytes
    tail: bytes


def cut(model_path: Path, frames: int = WINDOW_FRAMES, limit: int = NPU_TIME_LIMIT) -> Parts:
    """The export at ``model_path`` cut into source, window (``frames`` long) and tail."""
    onnx = _onnx()
    shapes = WindowShapes(frames, limit)
    whole = dequantized(onnx.load(str(model_path)))
    extractor = onnx.utils.Extractor(whole)
    source = extractor.extract_model([F0], [HAR])
    window = _fix_inputs(extractor.extract_model([FEATURES, F0, ENERGY, STYLE, HAR], [POST]), shapes.inputs)
    window = for_toolkit(instance_norms(window))
    tail = extractor.extract_model([POST], [AUDIO])
    return Parts(source.SerializeToString(), window.SerializeToString(), tail.SerializeToString())
