"""An ONNX graph specialised to fixed inputs: each ``If`` replaced by the branch those inputs take.

silero VAD v5 is one ``If`` on its sample-rate input wrapping a graph per rate, each with nested
``If``s on shapes (batch of one or not, state given or not) around its ``LSTM``. rknn-toolkit2 2.5.0
refused the graph as it is (``The 'input' in inputs=['input', 'state', 'sr'] is invalid!``); the NPU
model has fixed shapes and one sample rate anyway. Here the conditions are computed by onnxruntime
on real inputs of the fixed shapes, the branch taken is spliced into the graph in the ``If``'s place
(its nested ``If``s come up a level and are decided in the next round), and what no output needs
any more — the sample-rate input with its comparison, the other branches — is dropped.

Only conditions that the fixed shapes and constant inputs decide belong here: a condition on the
audio's values would be decided for all audio by the one probe.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_ROUNDS = 32  # nesting depth at most (silero's is 4)


def without_ifs(model: Any, feeds: dict[str, np.ndarray]) -> Any:
    """``model`` (an onnx ModelProto) with no ``If`` left, as it runs on ``feeds``; unused inputs dropped."""
    from onnx import helper

    g = model.graph
    for _ in range(_ROUNDS):
        ifs = [n for n in g.node if n.op_type == "If"]
        if not ifs:
            break
        taken = _conditions(model, [n.input[0] for n in ifs], feeds)
        nodes = []
        for n in g.node:
            if n.op_type != "If":
                nodes.append(n)
                continue
            branch = next(a.g for a in n.attribute if a.name == ("then_branch" if taken[n.input[0]] else "else_branch"))
            nodes.extend(branch.node)
            g.initializer.extend(branch.initializer)
            nodes.extend(helper.make_node("Identity", [inner.name], [outer], name=f"{n.name}/taken/{i}")
                         for i, (inner, outer) in enumerate(zip(branch.output, n.output, strict=True)))
        del g.node[:]
        g.node.extend(nodes)
    else:
        raise ValueError(f"onnx: If nodes still nested {_ROUNDS} deep")
    _prune(g)
    return model


def _conditions(model: Any, names: list[str], feeds: dict[str, np.ndarray]) -> dict[str, bool]:
    """The value of each condition tensor in ``names`` when ``model`` runs on ``feeds``."""
    import onnx
    import onnxruntime as ort

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    known = {o.name for o in probe.graph.output}
    probe.graph.output.extend(onnx.ValueInfoProto(name=n) for n in dict.fromkeys(names) if n not in known)
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    wanted = {i.name for i in session.get_inputs()}
    values = session.run(list(dict.fromkeys(names)), {k: v for k, v in feeds.items() if k in wanted})
    return {n: bool(np.asarray(v).reshape(-1)[0]) for n, v in zip(dict.fromkeys(names), values, strict=True)}


def _prune(g: Any) -> None:
    """Drop the nodes, initializers and inputs that no graph output depends on."""
    producer = {o: n for n in g.node for o in n.output}
    needed: set[str] = set()
    stack = [o.name for o in g.output]
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        needed.add(name)
        node = producer.get(name)
        if node is not None:
            stack.extend(i for i in node.input if i)
    kept = [n for n in g.node if any(o in needed for o in n.output)]
    del g.node[:]
    g.node.extend(kept)
    for field in (g.initializer, g.input):
        kept_items = [x for x in field if x.name in needed]
        del field[:]
        field.extend(kept_items)
