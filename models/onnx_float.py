"""A QDQ-quantized ONNX graph (QuantizeLinear/DequantizeLinear pairs) turned back into a float one.

Smart Turn v3.2 ships as a statically quantized (QDQ) int8 export. rknn-toolkit2 2.5.0 loads such a
graph as a QAT model, and its compiler ended with SIGSEGV on it; the float graph converts like any
other. Here every DequantizeLinear of a constant becomes that constant dequantized (the int8 weights'
float values), and every QuantizeLinear → DequantizeLinear pair on an activation is removed, so
the graph computes in float with the int8 weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def without_qdq(model: Any) -> Any:
    """``model`` (an onnx ModelProto) without its Q/DQ nodes; raises ValueError on a pattern it does not know."""
    from onnx import helper, numpy_helper

    g = model.graph
    inits = {i.name: i for i in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    rename: dict[str, str] = {}
    dropped: set[int] = set()
    folded = []
    for n in g.node:
        if n.op_type != "DequantizeLinear":
            continue
        x, scale = n.input[0], n.input[1]
        zero = n.input[2] if len(n.input) > 2 and n.input[2] else None
        if x in inits:  # a constant: fold it
            q = numpy_helper.to_array(inits[x]).astype(np.float32)
            s = numpy_helper.to_array(inits[scale]).astype(np.float32)
            z = numpy_helper.to_array(inits[zero]).astype(np.float32) if zero else np.float32(0)
            axis = next((a.i for a in n.attribute if a.name == "axis"), 1)
            if np.ndim(s) and np.size(s) > 1:  # per channel along ``axis`` (a vector's only axis)
                axis = axis % q.ndim if q.ndim > 1 else 0
                shape = [1] * q.ndim
                shape[axis] = -1
                s, z = np.reshape(s, shape), np.reshape(z, shape) if np.ndim(z) else z
            folded.append(numpy_helper.from_array(((q - z) * s).astype(np.float32), n.output[0]))
        elif x in producer and producer[x].op_type == "QuantizeLinear":
            rename[n.output[0]] = producer[x].input[0]
            dropped.add(id(producer[x]))
        else:
            raise ValueError(f"onnx: DequantizeLinear {n.name} of a tensor that is neither constant nor quantized here")
        dropped.add(id(n))
    kept = [n for n in g.node if id(n) not in dropped]
    for n in kept:
        for i, name in enumerate(n.input):
            if name in rename:
                n.input[i] = rename[name]
    outputs = {o.name for o in g.output}
    extra = [helper.make_node("Identity", [rename[o]], [o]) for o in outputs if o in rename]
    del g.node[:]
    g.node.extend(kept + extra)
    names = {f.name for f in folded}
    used = {i for n in g.node for i in n.input}
    remaining = [i for i in g.initializer if i.name not in names and i.name in used]
    del g.initializer[:]
    g.initializer.extend(remaining + folded)
    return model
