"""One RKNNLite context (rknn-toolkit-lite2): load, pin to an NPU core, run, release — failures made clear.

RKNNLite reports failure by return value, not by exception: ``load_rknn`` and ``init_runtime``
return 0 or -1 and ``inference`` returns a list of arrays or None, with the reason only in its own
log. ``RknnModel`` turns each of these into a ``ModelError`` naming the file and the step, and adds a
hint for the usual cause. The module is imported lazily, inside ``load``: it exists only for
aarch64 and Python ≤ 3.12, and the rest of the assistant must import on any machine.

Shapes. rknn-toolkit-lite2 (2.5.0, read from the wheel) has no public query of a model's tensors:
``RKNNLite`` offers load_rknn, init_runtime, inference, get_sdk_version, list_devices,
list_support_target_platform and release (the C API's ``rknn_query`` is only reachable through its
private runtime object). The shapes are instead read from the .rknn file itself, which ends with a
JSON description of the model: after a header (``RKNN``, format version, length of the model data)
and the model data come 8 bytes of JSON length and the JSON, whose ``norm_tensor`` list gives each
tensor's ``size`` and whose ``graph`` list says which tensors are the inputs and outputs, in order.
When a file does not parse that way, ``inputs``/``outputs`` are None and the caller falls back on
its configured shapes; the first inference's outputs then give the output shapes, and any later
change of them is an error.

A context must be created, used and released on one thread: the caller runs every method on the
NPU core's worker (see models/npu.py), whose core mask pins the context to that core.
"""

from __future__ import annotations

import importlib
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import structlog

from models.protocols import ModelError

log = structlog.get_logger("rknn")

NOT_INSTALLED = "rknn-toolkit-lite2 is not installed (it exists for aarch64, Python ≤ 3.12)"
_MAGIC = b"RKNN"
_HEADER_SIZES = (64, 24, 72)  # seen in files of different toolkit versions; the one that adds up wins

Array = npt.NDArray[Any]


@dataclass(frozen=True)
class TensorInfo:
    """One input or output as the .rknn file describes it."""

    name: str
    shape: tuple[int, ...]
    dtype: str = ""  # the file's type name ("float16", "int64" …), "" when not given


def read_io(path: Path) -> tuple[list[TensorInfo], list[TensorInfo]] | None:
    """The inputs and outputs a .rknn file declares, in order; None if it has no readable description."""
    try:
        with path.open("rb") as f:
            head = f.read(24)
            size = path.stat().st_size
            if len(head) < 24 or head[:4] != _MAGIC:
                return None
            data_len = struct.unpack_from("<Q", head, 16)[0]
            for header in _HEADER_SIZES:
                at = header + data_len
                if at + 8 > size:
                    continue
                f.seek(at)
                json_len = struct.unpack("<Q", f.read(8))[0]
                if at + 8 + json_len != size:
                    continue
                return _tensors(json.loads(f.read(json_len).decode("utf-8")))
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return None
    return None


def _tensors(doc: dict[str, Any]) -> tuple[list[TensorInfo], list[TensorInfo]] | None:
    by_id = {int(t["tensor_id"]): t for t in doc["norm_tensor"]}
    found: dict[str, dict[int, TensorInfo]] = {"input": {}, "output": {}}
    for link in doc["graph"]:
        side = link.get("left")
        if side in found and link.get("right") == "norm_tensor":
            t = by_id[int(link["right_tensor_id"])]
            dtype = t.get("dtype", {})
            found[side][int(link["left_tensor_id"])] = TensorInfo(
                name=str(t.get("url", "")), shape=tuple(int(d) for d in t["size"]),
                dtype=str(dtype.get("vx_type", "")) if isinstance(dtype, dict) else "")
    inputs = [found["input"][i] for i in sorted(found["input"])]
    outputs = [found["output"][i] for i in sorted(found["output"])]
    return (inputs, outputs) if inputs and outputs else None


class RknnModel:
    """One .rknn model in one RKNNLite context, pinned to one NPU core by ``core_mask``."""

    def __init__(self, path: Path, core_mask: int, role: str) -> None:
        self.path = path
        self.core_mask = core_mask
        self.role = role  # for messages: "acoustic model", "vocoder"
        self.inputs: list[TensorInfo] | None = None
        self.outputs: list[TensorInfo] | None = None
        self._rknn: Any = None  # rknnlite.api.RKNNLite, used only on the core's worker thread
        self._seen_outputs: list[tuple[int, ...]] | None = None

    def _fail(self, step: str, hint: str = "") -> ModelError:
        return ModelError(f"{self.role}: {self.path}: {step} failed" + (f" ({hint})" if hint else ""))

    def load(self) -> None:
        """Read the file's shapes, load it into a context and start the runtime on the core."""
        if not self.path.is_file():
            raise ModelError(f"{self.role}: {self.path} is missing")
        try:
            api = importlib.import_module("rknnlite.api")
        except ImportError:
            raise ModelError(f"{self.role}: {NOT_INSTALLED}; cannot run {self.path}") from None
        io = read_io(self.path)
        if io is None:
            log.info("the .rknn file does not describe its tensors; shapes come from config and the first run",
                     model=str(self.path))
        else:
            self.inputs, self.outputs = io
        try:
            rknn = api.RKNNLite()
        except Exception as exc:
            raise self._fail("RKNNLite()", repr(exc)) from None
        if rknn.load_rknn(str(self.path)) != 0:
            rknn.release()
            raise self._fail("load_rknn", "not a readable .rknn model")
        if rknn.init_runtime(core_mask=self.core_mask) != 0:
            rknn.release()
            raise self._fail(f"init_runtime(core_mask={self.core_mask})",
                             "needs an RK3576 with /usr/lib/librknnrt.so matching rknn-toolkit-lite2 and the "
                             "toolkit that compiled the model")
        self._rknn = rknn

    def infer(self, inputs: Sequence[Array]) -> list[Array]:
        """One inference; the outputs as float arrays of the shapes the model gives."""
        if self._rknn is None:
            raise ModelError(f"{self.role}: {self.path} used before load()")
        try:
            outputs = self._rknn.inference(inputs=list(inputs))
        except Exception as exc:  # RKNNLite catches its own errors; this is a guard against odd builds
            raise self._fail("inference", repr(exc)) from None
        if outputs is None:
            given = ", ".join(str(list(np.shape(x))) for x in inputs)
            raise self._fail("inference", f"returned None for inputs {given}")
        arrays = [np.asarray(o) for o in outputs]
        shapes = [tuple(a.shape) for a in arrays]
        expected = self._seen_outputs or ([o.shape for o in self.outputs] if self.outputs else None)
        if expected is not None and [_squeezed(s) for s in shapes] != [_squeezed(s) for s in expected]:
            raise self._fail("inference", f"outputs of shapes {shapes}, expected {expected}")
        self._seen_outputs = shapes
        return arrays

    @property
    def output_shapes(self) -> list[tuple[int, ...]] | None:
        """The output shapes: from the file, else from the first inference, else None."""
        if self.outputs is not None:
            return [o.shape for o in self.outputs]
        return self._seen_outputs

    def release(self) -> None:
        if self._rknn is not None:
            rknn, self._rknn = self._rknn, None
            rknn.release()


def _squeezed(shape: Sequence[int]) -> tuple[int, ...]:
    """A shape without its size-1 axes: the file and the runtime may differ in a leading batch axis."""
    return tuple(d for d in shape if d != 1)
